"""docker-compose.yml and Dockerfile agree with the CLI, the config keys and the ports.

No Docker engine runs in CI, so the files are parsed and checked against the
code: the container's configuration (Dockerfile ENV + compose environment +
command) must load with KafkaConfig, bind 0.0.0.0 on the published port and
advertise an address kcat can reach.
"""
from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from asyncbroker.cli import build_parser
from asyncbroker.config import KafkaConfig

ROOT = Path(__file__).resolve().parents[3]


def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in (ROOT / "Dockerfile").read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        instr, _, args = line.partition(" ")
        out.append((instr.upper(), args.strip()))
    return out


def instructions(name: str) -> list[str]:
    return [args for instr, args in dockerfile() if instr == name]


def exec_form(args: str) -> list[str]:
    return json.loads(args) if args.startswith("[") else shlex.split(args)


def dockerfile_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for args in instructions("ENV"):
        for token in shlex.split(args):
            key, sep, value = token.partition("=")
            assert sep, f"ENV without key=value: {args}"
            env[key] = value
    return env


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def broker_service(compose: dict[str, Any]) -> dict[str, Any]:
    return compose["services"]["broker"]


def container_config(compose: dict[str, Any]) -> tuple[KafkaConfig, Any]:
    """The configuration the broker container runs with, as the CLI would load it."""
    svc = broker_service(compose)
    env = {**dockerfile_env(), **{k: str(v) for k, v in svc.get("environment", {}).items()}}
    argv = [*exec_form(instructions("ENTRYPOINT")[-1]), *svc.get("command", exec_form(instructions("CMD")[-1]))]
    assert argv[:2] == ["asyncbroker", "serve"]
    args = build_parser().parse_args(argv[1:])
    return KafkaConfig.load(args.config, args.override, env), args


def published(svc: dict[str, Any]) -> dict[int, int]:
    """container port -> host port."""
    out: dict[int, int] = {}
    for item in svc.get("ports", []):
        host, _, container = str(item).rpartition(":")
        out[int(container.split("/")[0])] = int(host)
    return out


def test_broker_built_from_dockerfile(compose: dict[str, Any]) -> None:
    build = broker_service(compose)["build"]
    assert (ROOT / build.get("context", ".") / build.get("dockerfile", "Dockerfile")).resolve() == ROOT / "Dockerfile"


def test_dockerfile_copies_existing_sources() -> None:
    for args in instructions("COPY"):
        *sources, _dest = shlex.split(args)
        for src in sources:
            assert (ROOT / src).exists(), src
    for package in ("wire", "storage", "asyncbroker"):
        assert any(shlex.split(a)[0] == package for a in instructions("COPY")), package


def test_container_listens_on_all_interfaces_and_advertises(compose: dict[str, Any]) -> None:
    config, _ = container_config(compose)
    host, port = config.listener_host_port()
    assert host == "0.0.0.0" and port == 9092
    adv_host, adv_port = config.advertised_host_port()
    assert adv_host not in ("0.0.0.0", "127.0.0.1", "")
    # The advertised port is the published one, so host clients reach it.
    assert published(broker_service(compose))[port] == adv_port == 9092


def test_dockerfile_alone_is_a_working_container_config() -> None:
    env = dockerfile_env()
    config = KafkaConfig.load(None, [], env)
    assert config.listener_host_port() == ("0.0.0.0", 9092)
    assert "9092" in " ".join(instructions("EXPOSE")).split()


def test_default_outside_a_container_stays_loopback() -> None:
    assert KafkaConfig.load(None, [], {}).listener_host_port() == ("127.0.0.1", 9092)


def test_log_dir_on_a_volume(compose: dict[str, Any]) -> None:
    config, _ = container_config(compose)
    svc = broker_service(compose)
    targets = {}
    for v in svc["volumes"]:
        source, _, target = str(v).partition(":")
        targets[target.split(":")[0]] = source
    assert config.log_dirs[0] in targets
    assert targets[config.log_dirs[0]] in (compose.get("volumes") or {})  # a named volume
    assert config.log_dirs[0] in " ".join(instructions("VOLUME"))


def test_metrics_port_published(compose: dict[str, Any]) -> None:
    _, args = container_config(compose)
    assert args.metrics_port is not None
    assert args.metrics_port in published(broker_service(compose))
    assert str(args.metrics_port) in " ".join(instructions("EXPOSE")).split()


def test_kcat_reaches_the_advertised_address(compose: dict[str, Any]) -> None:
    config, _ = container_config(compose)
    kcat = compose["services"]["kcat"]
    assert "kcat" in kcat["image"]
    # Sharing the broker's network namespace makes `localhost` the broker for kcat too.
    assert kcat["network_mode"] == "service:broker"
    assert config.advertised_host_port()[0] == "localhost"
    command = kcat["command"]
    bootstrap = command[command.index("-b") + 1]
    assert bootstrap == "{}:{}".format(*config.advertised_host_port())
    assert kcat["depends_on"]["broker"]["condition"] == "service_healthy"


def test_stop_signal_is_sigterm(compose: dict[str, Any]) -> None:
    assert broker_service(compose).get("stop_signal", "SIGTERM") == "SIGTERM"
    assert instructions("STOPSIGNAL") in ([], ["SIGTERM"])
