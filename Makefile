# The README's two commands: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test bench torture venv kcat clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test,spark]'
	touch $(STAMP)

venv: $(STAMP)

kcat:
	@command -v kcat >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq kcat; }

run: $(STAMP)
	$(VENV)/bin/asyncbroker serve

test: $(STAMP) kcat
	$(PY) -m pytest -q -p no:cacheprovider

bench: $(STAMP)
	$(PY) -m bench

torture: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider tests/recovery --torture

clean:
	rm -rf $(VENV) build *.egg-info
