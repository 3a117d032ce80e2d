"""A share group's state (KIP-932) moves with the log directories both ways: what its members
acknowledged on asyncbroker (`__share_group_state`, and the group's records in
`__consumer_offsets`) is what Kafka 4.4 serves the group from after `asyncbroker migrate
--to-kafka`, and what they acknowledged on Kafka is what asyncbroker serves it from when it
opens the directory Kafka wrote (Kafka's ShareSnapshot and ShareUpdate records).

Six one-record batches: on asyncbroker a member accepts 0-1 and releases 2-5; on Kafka the
group gets 2-5 again, delivered a second time, and accepts 2-3 and releases 4-5; back on
asyncbroker it gets 4-5, delivered a third time."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from asyncbroker.testing import BrokerProcess
from jvm.kafka_jvm import KafkaServer

pytestmark = pytest.mark.timeout(300)

TOPIC, GROUP = "jobs", "workers"


def take(bootstrap: str, count: int, accept: set[int]) -> list[tuple[int, int]]:
    """One share consumer receives `count` records; it accepts the offsets in `accept` and
    releases the others. (offset, delivery count) of each record received."""
    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "share.acknowledgement.mode": "explicit"})
    got: list[tuple[int, int]] = []
    try:
        c.subscribe([TOPIC])
        deadline = time.monotonic() + 60
        while len(got) < count:
            assert time.monotonic() < deadline, f"only {got} within 60 s"
            for m in c.poll(0.5) or []:
                assert m.error() is None, m.error()
                got.append((m.offset(), m.delivery_count()))
                c.acknowledge(m, AcknowledgeType.ACCEPT if m.offset() in accept else AcknowledgeType.RELEASE)
        c.commit_sync()
    finally:
        c.close()
    return sorted(got)


def migrate(data: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "asyncbroker", "migrate", str(data), "--to-kafka"],
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr


def test_share_group_state_moves_both_ways(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with BrokerProcess(["group.share.assignment.interval.ms=0"], log_dir=data) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
        resource = ConfigResource(ConfigResource.Type.GROUP, GROUP, incremental_configs=[ConfigEntry(
            "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([resource])[resource].result(30)
        p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0})
        for i in range(6):
            p.produce(TOPIC, f"job-{i}".encode())
            p.flush(10)  # one batch each
        assert take(b.bootstrap, 6, {0, 1}) == [(i, 1) for i in range(6)]
        assert b.stop() == 0
    migrate(data)

    kafka = KafkaServer({"group.share.assignment.interval.ms": "0"})
    try:
        kafka.start_unformatted(data)
        assert take(kafka.bootstrap, 4, {2, 3}) == [(i, 2) for i in range(2, 6)]
    finally:
        kafka.shutdown()

    with BrokerProcess(["group.share.assignment.interval.ms=0"], log_dir=data) as b:
        assert take(b.bootstrap, 2, {4, 5}) == [(4, 3), (5, 3)]
    kafka.stop()
