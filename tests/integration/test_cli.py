"""The `asyncbroker serve` command: config errors stop startup naming the key; a
server.properties file, ASYNCBROKER_* variables, --metrics-port and --monitor work."""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic, ResourceType

from asyncbroker.testing import BrokerProcess
from asyncbroker.testing.broker import free_port_block

pytestmark = pytest.mark.timeout(90)

TIMEOUT = 15.0


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ASYNCBROKER_")}
    return subprocess.run(
        [sys.executable, "-m", "asyncbroker", "serve", *args],
        env={**clean, **(env or {})}, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (["--override", "log.retention.hourz=5"], {}, "log.retention.hourz"),
        (["--override", "num.partitions=0"], {}, "num.partitions"),
        (["--override", "listeners=PLAINTEXT://0.0.0.0:9092"], {}, "advertised.listeners"),
        ([], {"ASYNCBROKER_MESSAGE_MAX_BYTES": "big"}, "ASYNCBROKER_MESSAGE_MAX_BYTES"),
        ([], {"ASYNCBROKER_NO_SUCH_KEY": "1"}, "ASYNCBROKER_NO_SUCH_KEY"),
    ],
)
def test_bad_config_stops_startup_naming_the_key(tmp_path: Path, args: list[str], env: dict[str, str], named: str) -> None:
    log_dir = tmp_path / "logs"
    result = run_cli("--override", f"log.dirs={log_dir}", *args, env=env)
    assert result.returncode != 0
    assert named in result.stderr
    assert not log_dir.exists()  # refused before touching storage


def test_bad_key_in_properties_file(tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    props.write_text(f"log.dirs={tmp_path / 'logs'}\nauto.create.topics.enable=maybe\n")
    result = run_cli(str(props))
    assert result.returncode != 0
    assert "auto.create.topics.enable" in result.stderr and "maybe" in result.stderr


class CliBroker(BrokerProcess):
    """BrokerProcess started with a properties file and extra CLI flags."""

    def __init__(self, *args: object, properties: Path | None = None, flags: list[str] | None = None,
                 **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.properties = properties
        self.flags = flags or []

    def command(self) -> list[str]:
        cmd = super().command()
        if self.properties is not None:
            at = cmd.index("serve") + 1
            cmd[at:at] = [str(self.properties)]
            # let the file provide the listener and log dir
            cmd = cmd[: at + 1] + [a for a in cmd[at + 1 :] if a != "--override" and not a.startswith(("listeners=", "log.dirs="))]
        return cmd + self.flags


def broker_config(bootstrap: str) -> dict:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    node_id = admin.describe_cluster(request_timeout=TIMEOUT).result(TIMEOUT).nodes[0].id
    fut = admin.describe_configs([ConfigResource(ResourceType.BROKER, str(node_id))], request_timeout=TIMEOUT)
    return next(iter(fut.values())).result(TIMEOUT)


def partitions_of_new_topic(bootstrap: str, name: str) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    next(iter(admin.create_topics([NewTopic(name)], request_timeout=TIMEOUT).values())).result(TIMEOUT)
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        t = admin.list_topics(timeout=TIMEOUT).topics.get(name)
        if t is not None and t.error is None and t.partitions:
            return len(t.partitions)
        time.sleep(0.05)
    raise AssertionError("topic did not appear")


def test_server_properties_file(tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    props.write_text(
        "# a Kafka-style file\n"
        "listeners=PLAINTEXT://127.0.0.1:0\n"
        f"log.dirs={tmp_path / 'data'}\n"
        "num.partitions=3\n"
        "log.retention.hours=24\n"
    )
    with CliBroker(properties=props, log_dir=tmp_path / "unused", env={"PATH": os.environ.get("PATH", "")}) as b:
        assert partitions_of_new_topic(b.bootstrap, "from-file") == 3
        cfg = broker_config(b.bootstrap)
        assert cfg["log.retention.hours"].value == "24"
        assert cfg["log.retention.hours"].source == ConfigSource.STATIC_BROKER_CONFIG.value
        assert (tmp_path / "data" / "from-file-0").is_dir()


def test_environment_override(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASYNCBROKER_")}
    env["ASYNCBROKER_NUM_PARTITIONS"] = "4"
    with BrokerProcess(log_dir=tmp_path, env=env) as b:
        assert partitions_of_new_topic(b.bootstrap, "from-env") == 4
        assert broker_config(b.bootstrap)["num.partitions"].value == "4"


def test_override_wins_over_environment(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASYNCBROKER_")}
    env["ASYNCBROKER_NUM_PARTITIONS"] = "4"
    with BrokerProcess(["num.partitions=5"], log_dir=tmp_path, env=env) as b:
        assert partitions_of_new_topic(b.bootstrap, "from-override") == 5


def test_metrics_endpoint(tmp_path: Path) -> None:
    with CliBroker(log_dir=tmp_path, flags=["--metrics-port", "0"]) as b:
        deadline = time.monotonic() + TIMEOUT
        port = None
        while port is None and time.monotonic() < deadline:
            m = re.search(r"Prometheus metrics on http://[^:]+:(\d+)/metrics", b.output())
            port = int(m.group(1)) if m else None
            if port is None:
                time.sleep(0.05)
        assert port is not None, b.output()
        partitions_of_new_topic(b.bootstrap, "metered")
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=TIMEOUT).read().decode()
        assert 'asyncbroker_requests_total{api="CreateTopics"}' in body
        assert "asyncbroker_bytes_in_total" in body and "asyncbroker_bytes_out_total" in body
        assert re.search(r"^asyncbroker_partitions 1\.0$", body, re.M)
        assert 'asyncbroker_log_size_bytes{topic="metered"}' in body


def test_monitor_console(tmp_path: Path) -> None:
    port = free_port_block(3)
    with CliBroker(log_dir=tmp_path, flags=["--monitor", "--monitor-port", str(port)]) as b:
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
                    s.settimeout(5)
                    assert s.recv(1024)  # the console greets (telnet negotiation / banner)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError("monitor console not reachable:\n" + b.output()) from None
                time.sleep(0.05)


def test_a_monitor_web_ui_port_already_taken_stops_startup_with_a_message(tmp_path: Path) -> None:
    """The monitor's web UI port (port+1) taken: the broker used to listen and then hang,
    answering nothing and ignoring SIGTERM (aiomonitor waited, on the loop, for a UI thread
    that had failed). Now startup stops with exit code 1, naming the ports."""
    port = free_port_block(3)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port + 1))
        holder.listen()
        done = run_cli("--override", f"log.dirs={tmp_path}", "--override", "listeners=PLAINTEXT://127.0.0.1:0",
                       "--monitor", "--monitor-host", "127.0.0.1", "--monitor-port", str(port))
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"The aiomonitor console could not start on 127.0.0.1:{port}-{port + 2}" in done.stdout + done.stderr


def test_broker_process_takes_other_monitor_ports_when_one_is_taken(tmp_path: Path) -> None:
    """BrokerProcess(monitor=True) picks free ports that another process may take before the
    broker binds them (it happened in CI, under pytest-xdist): it starts again on others."""
    port = free_port_block(3)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port + 1))
        holder.listen()
        broker = BrokerProcess(log_dir=tmp_path, monitor=True)
        broker.monitor_port = port
        with broker:
            assert broker.monitor_port != port
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            admin.create_topics([NewTopic("served", 1)])["served"].result(TIMEOUT)
