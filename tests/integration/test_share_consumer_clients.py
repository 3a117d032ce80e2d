"""Share groups (KIP-932) with confluent-kafka's ShareConsumer (librdkafka 2.16) on Kafka 4.4 and
on asyncbroker, the same steps on both and the outcomes compared: two members share one
partition and each accepted record is delivered once; a record released is delivered again
with its delivery count raised; a record whose acquisition lock runs out goes to the other
member with its delivery count raised. librdkafka's own log must show no error from the
broker, closing included (a member's last acknowledgements travel beside its leaving
heartbeat, and the broker must not have ended its share session by then).

The lock test lowers share.record.lock.duration.ms for its group to 1 s, which needs
group.share.min.record.lock.duration.ms at 1000 on both brokers (ORACLE_SETTINGS).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from asyncbroker.testing import BrokerProcess
from jvm.kafka_jvm import ORACLE_SETTINGS, KafkaServer

pytestmark = pytest.mark.timeout(240)

SETTINGS = ["group.share.min.record.lock.duration.ms=" + ORACLE_SETTINGS["group.share.min.record.lock.duration.ms"],
            "group.share.assignment.interval.ms=0"]


@pytest.fixture(scope="module")
def ours() -> Iterator[BrokerProcess]:
    with BrokerProcess(SETTINGS) as b:
        yield b


class LogCapture(logging.Handler):
    """librdkafka's log lines for one client (it logs through a Python logger when given one)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def logger_for(capture: LogCapture) -> logging.Logger:
    logger = logging.getLogger(f"share-consumer-{uuid.uuid4().hex[:8]}")
    logger.propagate = False
    logger.addHandler(capture)
    return logger


def broker_errors(capture: LogCapture) -> list[str]:
    return [line for line in capture.lines if "reply error" in line or "Broker:" in line]


def share_topic(bootstrap: str, count: int, lock_ms: int | None = None) -> tuple[str, str]:
    """A one-partition topic with `count` records, and a share group reading it from the earliest offset."""
    topic, group = f"share-{uuid.uuid4().hex[:8]}", f"share-g-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    configs = [ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)]
    if lock_ms is not None:
        configs.append(ConfigEntry("share.record.lock.duration.ms", str(lock_ms),
                                   incremental_operation=AlterConfigOpType.SET))
    resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=configs)
    admin.incremental_alter_configs([resource])[resource].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(count):
        producer.produce(topic, f"v{i}".encode())
    assert producer.flush(30) == 0
    return topic, group


def member(bootstrap: str, group: str, capture: LogCapture, mode: str = "implicit") -> ShareConsumer:
    return ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "share.acknowledgement.mode": mode,
                          "logger": logger_for(capture)})


def poll_until(consumers: list[ShareConsumer], done: Any, timeout: float = 60.0) -> list[tuple[int, Any]]:
    """Polls the consumers in turn until `done(got)`; every (consumer index, message) received."""
    got: list[tuple[int, Any]] = []
    deadline = time.monotonic() + timeout
    while not done(got) and time.monotonic() < deadline:
        for i, c in enumerate(consumers):
            for m in c.poll(0.2) or []:
                assert m.error() is None, m.error()
                got.append((i, m))
    return got


def pair(bootstrap: str) -> dict[str, Any]:
    topic, group = share_topic(bootstrap, 200)
    capture = LogCapture()
    a, b = member(bootstrap, group, capture), member(bootstrap, group, capture)
    try:
        for c in (a, b):
            c.subscribe([topic])
        got = poll_until([a, b], lambda got: len({m.offset() for _, m in got}) >= 200)
        for c in (a, b):
            c.commit_sync()
    finally:
        a.close()
        b.close()
    deliveries = Counter(m.value() for _, m in got)
    return {"distinct": len(deliveries), "each_once": set(deliveries.values()) == {1},
            "broker_errors": broker_errors(capture)}


def released(bootstrap: str) -> dict[str, Any]:
    topic, group = share_topic(bootstrap, 3)
    capture = LogCapture()
    a = member(bootstrap, group, capture, "explicit")
    try:
        a.subscribe([topic])
        first = poll_until([a], lambda got: len(got) >= 3)
        for _, m in first:
            a.acknowledge(m, AcknowledgeType.RELEASE if m.offset() == 1 else AcknowledgeType.ACCEPT)
        a.commit_sync()
        again = poll_until([a], lambda got: len(got) >= 1)
        for _, m in again:
            a.acknowledge(m, AcknowledgeType.ACCEPT)
        a.commit_sync()
    finally:
        a.close()
    return {"first": sorted((m.offset(), m.delivery_count()) for _, m in first),
            "again": [(m.offset(), m.delivery_count()) for _, m in again],
            "broker_errors": broker_errors(capture)}


def lock_timed_out(bootstrap: str) -> dict[str, Any]:
    topic, group = share_topic(bootstrap, 2, lock_ms=1000)
    capture = LogCapture()
    a, b = member(bootstrap, group, capture, "explicit"), member(bootstrap, group, capture)
    try:
        a.subscribe([topic])
        held = poll_until([a], lambda got: len(got) >= 2)
        # a holds both records and never acknowledges them: once the 1 s lock has run out
        # they are b's, delivered a second time.
        b.subscribe([topic])
        taken = poll_until([b], lambda got: len(got) >= 2)
        b.commit_sync()
    finally:
        b.close()
        a.close()
    return {"held": sorted((m.offset(), m.delivery_count()) for _, m in held),
            "taken": sorted((m.offset(), m.delivery_count()) for _, m in taken)}


@pytest.mark.parametrize("scenario", [pair, released, lock_timed_out], ids=lambda f: f.__name__)
def test_share_consumers_as_on_kafka(scenario: Any, kafka: KafkaServer, ours: BrokerProcess) -> None:
    expected = scenario(kafka.bootstrap)
    got = scenario(ours.bootstrap)
    assert got == expected
    expected_by_scenario = {
        "pair": {"distinct": 200, "each_once": True, "broker_errors": []},
        "released": {"first": [(0, 1), (1, 1), (2, 1)], "again": [(1, 2)], "broker_errors": []},
        "lock_timed_out": {"held": [(0, 1), (1, 1)], "taken": [(0, 2), (1, 2)]},
    }
    assert got == expected_by_scenario[scenario.__name__]
