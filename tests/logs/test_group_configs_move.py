"""Group configs (per-group settings, KIP-848) survive a restart and move with the log
directories both ways: asyncbroker keeps them in its log dirs, `asyncbroker migrate
--to-kafka` writes them into the bootstrap metadata as ConfigRecords of GROUP resources,
Kafka 4.4 describes and changes them, and asyncbroker, opening the directory Kafka wrote,
reads them from Kafka's metadata log."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from asyncbroker.testing import BrokerProcess
from jvm.kafka_jvm import KafkaServer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "oracle"))
from differential import Connection, entity, request_class_name  # noqa: E402

pytestmark = pytest.mark.timeout(300)

GROUP_RESOURCE, SET = 32, 0
KEYS = ("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms")


def describe(bootstrap: str, group: str) -> dict[str, tuple[str, int]]:
    """The group's consumer keys: value and config source (8: the group's own)."""
    conn = Connection(bootstrap)
    try:
        resource = entity(32, 4, "DescribeConfigsResource", resource_type=GROUP_RESOURCE, resource_name=group,
                          configuration_keys=KEYS)
        r = conn.receive(32, 4, conn.send(entity(32, 4, request_class_name(32, 4), resources=(resource,),
                                                 include_synonyms=False, include_documentation=False)))
        return {c.name: (c.value, int(c.config_source)) for c in r.results[0].configs}
    finally:
        conn.close()


def set_config(bootstrap: str, group: str, key: str, value: str) -> None:
    conn = Connection(bootstrap)
    try:
        resource = entity(44, 1, "AlterConfigsResource", resource_type=GROUP_RESOURCE, resource_name=group,
                          configs=(entity(44, 1, "AlterableConfig", name=key, config_operation=SET, value=value),))
        r = conn.receive(44, 1, conn.send(entity(44, 1, request_class_name(44, 1), resources=(resource,),
                                                 validate_only=False)))
        assert r.responses[0].error_code.value == 0, r
    finally:
        conn.close()


def test_group_configs_survive_a_restart_and_move_both_ways(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with BrokerProcess([], log_dir=data) as b:
        set_config(b.bootstrap, "orders", "consumer.session.timeout.ms", "50000")
        b.restart(kill=True)
        assert describe(b.bootstrap, "orders")["consumer.session.timeout.ms"] == ("50000", 8)
    migrated = subprocess.run([sys.executable, "-m", "asyncbroker", "migrate", str(data), "--to-kafka"],
                              capture_output=True, text=True, timeout=120, check=False)
    assert migrated.returncode == 0, migrated.stderr

    kafka = KafkaServer()
    try:
        kafka.start_unformatted(data)
        assert describe(kafka.bootstrap, "orders") == {"consumer.session.timeout.ms": ("50000", 8),
                                                       "consumer.heartbeat.interval.ms": ("5000", 5)}
        set_config(kafka.bootstrap, "orders", "consumer.heartbeat.interval.ms", "6000")
        set_config(kafka.bootstrap, "billing", "consumer.session.timeout.ms", "55000")
        deadline = time.monotonic() + 30  # Kafka's broker applies what its controller committed
        while describe(kafka.bootstrap, "billing")["consumer.session.timeout.ms"] != ("55000", 8):
            assert time.monotonic() < deadline, "Kafka's broker never applied the group config"
            time.sleep(0.1)  # polling a condition with a deadline
    finally:
        kafka.shutdown()

    with BrokerProcess([], log_dir=data) as b:
        assert describe(b.bootstrap, "orders") == {"consumer.session.timeout.ms": ("50000", 8),
                                                   "consumer.heartbeat.interval.ms": ("6000", 8)}
        assert describe(b.bootstrap, "billing")["consumer.session.timeout.ms"] == ("55000", 8)
    kafka.stop()
