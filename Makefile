# The README's two commands: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
RUN_STAMP := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test
# The C extensions are compiled by pip install: editing one reinstalls.
INSTALL_INPUTS := pyproject.toml setup.py wire/_record_walker.c wire/_receive_buffer.c cleaner/_offset_map.c

# Apache Kafka 4.4, its tools and our Java harness, fetched by Maven into the git-ignored
# .cache/m2 (tests/jvm/pom.xml); each module's classpath lands in tests/jvm/<module>/target/.
MVN := mvn -q -B -f tests/jvm/pom.xml -Dmaven.repo.local=$(CURDIR)/.cache/m2
JVM_STAMP := tests/jvm/target/.built
JVM_INPUTS := $(shell find tests/jvm -name pom.xml -o -name '*.java' -o -name '*.properties' 2>/dev/null)

# The Node.js clients (tests/node/package.json, locked), installed into the git-ignored node_modules.
NODE_STAMP := tests/node/node_modules/.installed
CKJS := tests/node/node_modules/@confluentinc/kafka-javascript
LIBRDKAFKA := $(CURDIR)/.cache/librdkafka
LIBRDKAFKA_BUILD_DEPS := build-essential libssl-dev libsasl2-dev zlib1g-dev libzstd-dev liblz4-dev
# Node's headers from the machine's installation (node-gyp would download them otherwise).
NODE_HEADERS := $(shell dirname "$$(dirname "$$(readlink -f "$$(command -v node)")")")

# Bytecode for the broker's own packages, written once rather than compiled at every start: where
# PYTHONDONTWRITEBYTECODE is set (CI machines, containers), imports never write it, and compiling
# ~60 modules was a third of the time from start to the first Metadata answer. Only stale files
# are compiled again.
BYTECODE := $(PY) -m compileall -q asyncbroker storage wire cleaner pipeline

.PHONY: run test bench torture kcat ss jdk jvm node browser clean

# apt-get install of the packages named, as root or through sudo. `make test` runs its installs
# side by side, and two apt-get runs at once fail on dpkg's lock: flock makes them take turns.
define apt_install
if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  flock /tmp/asyncbroker-apt.lock $$SUDO sh -c 'apt-get update -qq && apt-get install -y -qq $(1)'
endef

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# `make run` needs only the broker's own dependencies.
$(RUN_STAMP): $(INSTALL_INPUTS) | $(PY)
	$(PY) -m pip install -q -e .
	touch $@

# `make test` adds the clients the integration tests drive and PySpark (Java 17 is on the machine).
$(TEST_STAMP): $(INSTALL_INPUTS) | $(PY)
	$(PY) -m pip install -q -e '.[test,spark]'
	touch $@ $(RUN_STAMP)

kcat:
	@command -v kcat >/dev/null 2>&1 || { \
	  $(call apt_install,kcat); }

# iproute2's ss: the socket tests read the broker's accepted sockets as the kernel keeps them.
ss:
	@command -v ss >/dev/null 2>&1 || { \
	  $(call apt_install,iproute2); }

# Java 17 and Maven are on the machine; install them where they are not.
jdk:
	@{ command -v java >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1; } || { \
	  $(call apt_install,openjdk-17-jdk-headless maven); }

# A second run finds the stamp (and the jars in .cache/m2) and downloads nothing.
$(JVM_STAMP): $(JVM_INPUTS) | jdk
	$(MVN) package
	mkdir -p $(@D) && touch $@

jvm: $(JVM_STAMP)

# Node.js and npm are on the machine; install them where they are not. The packages install
# without their scripts; then the native ones are compiled against Node's headers here:
# @confluentinc/kafka-javascript against a librdkafka built from the source it carries
# (tests/node/build_librdkafka.sh says why), and lz4 (kafkajs-lz4's codec) from its own. The
# script runs its own parallel make: an empty MAKEFLAGS keeps this make's -j4 (`make test`)
# from reaching it, where it would fall back to one job.
$(NODE_STAMP): tests/node/package.json tests/node/package-lock.json tests/node/build_librdkafka.sh
	@{ command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; } || { \
	  $(call apt_install,nodejs npm); }
	@dpkg -s $(LIBRDKAFKA_BUILD_DEPS) >/dev/null 2>&1 || { \
	  $(call apt_install,$(LIBRDKAFKA_BUILD_DEPS)); }
	npm ci --prefix tests/node --ignore-scripts --no-audit --no-fund --loglevel=error
	MAKEFLAGS= tests/node/build_librdkafka.sh $$(node -p 'require("./$(CKJS)/package.json").version') $(LIBRDKAFKA)
	cd tests/node && BUILD_LIBRDKAFKA=0 npm_config_nodedir=$(NODE_HEADERS) \
	  CXXFLAGS="-I$(LIBRDKAFKA)/include/librdkafka -I$(LIBRDKAFKA)/include" \
	  LDFLAGS="-L$(LIBRDKAFKA)/lib -Wl,-rpath,$(LIBRDKAFKA)/lib" \
	  npm rebuild @confluentinc/kafka-javascript lz4 --loglevel=error
	touch $@

node: $(NODE_STAMP)

# The web console's browser tests (tests/browser): Debian's chromium, driven by playwright-core
# (tests/browser/package.json, locked) with executablePath /usr/bin/chromium; no browser download.
BROWSER_STAMP := tests/browser/node_modules/.installed
$(BROWSER_STAMP): tests/browser/package.json tests/browser/package-lock.json
	@test -x /usr/bin/chromium || { \
	  $(call apt_install,chromium); }
	npm ci --prefix tests/browser --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

browser: $(BROWSER_STAMP)

# The web console on 127.0.0.1:9093 (the broker's listener is 127.0.0.1:9092; nothing else of
# `make run` listens: no --monitor, no --metrics-port).
CONSOLE_PORT ?= 9093

run: $(RUN_STAMP)
	@$(BYTECODE)
	@echo "asyncbroker: Kafka listener 127.0.0.1:9092, web console http://127.0.0.1:$(CONSOLE_PORT)/"
	$(VENV)/bin/asyncbroker serve --console-port $(CONSOLE_PORT)

# Three pytest-xdist workers on this 2-CPU machine, a file each at a time (module-scoped brokers
# start once): much of the suite waits on brokers, JVMs and clients rather than computing. With
# two, pytest took 18:08-18:13 at 130% CPU and `make test` on a fresh machine 20:42; with three,
# 16:16-16:42 at 144-146% (the tests' summed time grows by a third from contention). Each worker
# starts the session-wide brokers its tests ask for, and checks their log dirs at its end.
TEST_WORKERS ?= 3

# The installs run side by side (pip and Maven mostly download; librdkafka, for the Node.js
# client, compiles), then the suite.
test:
	@$(MAKE) --no-print-directory -j4 $(TEST_STAMP) kcat ss jvm node browser
	@$(BYTECODE)
	$(PY) -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile --check-session-log-dirs

bench: $(TEST_STAMP) jvm
	@$(BYTECODE)
	$(PY) -m bench

# The long forms of the fault harnesses: 1,000 crash kills, 5,000 live fuzz cases, 10 min of atheris.
torture: $(TEST_STAMP) kcat jvm node
	$(PY) -m pip install -q -e '.[test,spark,torture]'
	$(PY) -m pytest -q -p no:cacheprovider tests/recovery --torture
	FUZZ_EXAMPLES=5000 $(PY) -m pytest -q -p no:cacheprovider tests/fuzz
	$(PY) tests/fuzz/atheris_wire.py -max_total_time=600 -print_final_stats=1

clean:
	rm -rf $(VENV) build *.egg-info wire/*.so cleaner/*.so
