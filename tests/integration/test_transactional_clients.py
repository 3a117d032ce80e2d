"""Transactions with real clients (issue 14): confluent-kafka's and kafka-python's
transactional producers, read_committed and read_uncommitted consumers, offsets sent to the
transaction, zombie fencing, and a transaction the broker aborts at its timeout."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaProducer

from asyncbroker.testing import BrokerProcess

from wait_for import wait_until

pytestmark = pytest.mark.timeout(120)

PARTITIONS = 3


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    # The timeout check every 200 ms instead of 10 s, so a timed-out transaction is aborted soon.
    with BrokerProcess(["transaction.abort.timed.out.transaction.cleanup.interval.ms=200"]) as b:
        yield b


def new_topic(broker: BrokerProcess, partitions: int = PARTITIONS) -> str:
    name = f"txn-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        future.result(30)
    return name


def read(broker: BrokerProcess, topic: str, isolation: str, partitions: int = PARTITIONS
         ) -> dict[int, list[bytes]]:
    """Each partition's values, in order, as a consumer of this isolation level sees them."""
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"r-{uuid.uuid4().hex[:6]}",
                         "isolation.level": isolation, "enable.partition.eof": True,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
        eof: set[int] = set()
        deadline = time.monotonic() + 30
        while len(eof) < partitions and time.monotonic() < deadline:
            m = consumer.poll(0.2)
            if m is None:
                continue
            if m.error():
                eof.add(m.partition())
                continue
            out[m.partition()].append(m.value())
        assert len(eof) == partitions
        return out
    finally:
        consumer.close()


def settled(broker: BrokerProcess, topic: str, partitions: int = PARTITIONS) -> bool:
    """No open transaction: read_committed's end (the LSO) is the high watermark everywhere."""
    ends = []
    for isolation in ("read_committed", "read_uncommitted"):
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "probe", "isolation.level": isolation})
        try:
            ends.append([c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)])
        finally:
            c.close()
    return ends[0] == ends[1]


def producer(broker: BrokerProcess, txn_id: str, **conf: object) -> Producer:
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": txn_id, **conf})
    p.init_transactions(30)
    return p


def test_confluent_commit_abort_and_offsets(broker: BrokerProcess) -> None:
    topic = new_topic(broker)
    p = producer(broker, f"cf-{uuid.uuid4().hex[:6]}")
    group = f"g-{uuid.uuid4().hex[:6]}"
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False})
    expected: dict[int, list[bytes]] = {i: [] for i in range(PARTITIONS)}
    everything: dict[int, list[bytes]] = {i: [] for i in range(PARTITIONS)}
    for n in range(6):
        p.begin_transaction()
        for i in range(PARTITIONS * 2):
            value = b"t%d-%d" % (n, i)
            p.produce(topic, value, partition=i % PARTITIONS)
            everything[i % PARTITIONS].append(value)
            if n % 2 == 0:
                expected[i % PARTITIONS].append(value)
        if n % 2 == 0:
            p.send_offsets_to_transaction([TopicPartition(topic, 0, 10 * (n + 1))],
                                          consumer.consumer_group_metadata(), 30)
            p.commit_transaction(30)
        else:
            p.send_offsets_to_transaction([TopicPartition(topic, 0, 999)], consumer.consumer_group_metadata(), 30)
            p.flush(10)
            p.abort_transaction(30)
    wait_until(lambda: settled(broker, topic), 30, message="transactions still open")
    assert read(broker, topic, "read_committed") == expected  # committed always, aborted never, in order
    assert read(broker, topic, "read_uncommitted") == everything
    # The last committed transaction's offsets count; the aborted ones' never did.
    assert consumer.committed([TopicPartition(topic, 0)], 10)[0].offset == 50
    consumer.close()


def test_kafka_python_transactional_producer(broker: BrokerProcess) -> None:
    topic = new_topic(broker)
    kp = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=f"kp-{uuid.uuid4().hex[:6]}")
    try:
        kp.init_transactions()
        kp.begin_transaction()
        kp.send(topic, b"kept", partition=0)
        kp.send(topic, b"kept-too", partition=1)
        kp.commit_transaction()
        kp.begin_transaction()
        kp.send(topic, b"dropped", partition=0)
        kp.flush()
        kp.abort_transaction()
    finally:
        kp.close(timeout=10)
    wait_until(lambda: settled(broker, topic), 30, message="transactions still open")
    assert read(broker, topic, "read_committed") == {0: [b"kept"], 1: [b"kept-too"], 2: []}
    assert read(broker, topic, "read_uncommitted") == {0: [b"kept", b"dropped"], 1: [b"kept-too"], 2: []}


def test_a_second_producer_fences_the_zombie(broker: BrokerProcess) -> None:
    topic = new_topic(broker)
    txn_id = f"zombie-{uuid.uuid4().hex[:6]}"
    zombie = producer(broker, txn_id)
    zombie.begin_transaction()
    zombie.produce(topic, b"zombie", partition=0)
    zombie.flush(10)
    successor = producer(broker, txn_id)  # aborts the zombie's open transaction first
    successor.begin_transaction()
    successor.produce(topic, b"successor", partition=0)
    successor.commit_transaction(30)
    with pytest.raises(KafkaException) as caught:
        zombie.commit_transaction(10)
    assert caught.value.args[0].fatal() or "fenced" in str(caught.value).lower()
    wait_until(lambda: settled(broker, topic), 30, message="transactions still open")
    assert read(broker, topic, "read_committed")[0] == [b"successor"]


def test_the_broker_aborts_a_transaction_open_past_its_timeout(broker: BrokerProcess) -> None:
    topic = new_topic(broker)
    p = producer(broker, f"slow-{uuid.uuid4().hex[:6]}", **{"transaction.timeout.ms": 1000,
                                                             "message.timeout.ms": 1000})
    p.begin_transaction()
    p.produce(topic, b"too-late", partition=0)
    p.flush(10)
    wait_until(lambda: settled(broker, topic), 30, message="the timed-out transaction was never aborted")
    with pytest.raises(KafkaException):
        p.commit_transaction(10)
    assert read(broker, topic, "read_committed")[0] == []
    assert read(broker, topic, "read_uncommitted")[0] == [b"too-late"]


def test_the_readme_snippet(broker: BrokerProcess) -> None:
    """The transactions example of README.md runs as written (but for the address)."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    (snippet,) = [b for b in blocks if "transactional.id" in b]
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic("orders", 3, 1)]).values():
        future.result(30)
    exec(snippet.replace("127.0.0.1:9092", broker.bootstrap), {"Producer": Producer})  # noqa: S102
    wait_until(lambda: settled(broker, "orders"), 30, message="the snippet's transaction is still open")
    values = read(broker, "orders", "read_committed")
    assert sorted(v for vs in values.values() for v in vs) == [b"paid"]
