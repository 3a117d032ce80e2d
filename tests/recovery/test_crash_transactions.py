"""SIGKILL at every step of a transaction's end, then a restart: each transaction is
committed or aborted in every partition, never half (issue 14).

Fault points (storage/fault_injection.py): after the PrepareCommit is logged and before any
marker (`txn.markers`), after one of two partitions' markers (`txn.marker`), after every
marker and before CompleteCommit is logged (`txn.complete`). A kill after the records are
produced and before EndTxn leaves an open transaction the restarted broker aborts once its
timeout passes.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from asyncbroker.testing import BrokerProcess

pytestmark = pytest.mark.timeout(180)

TOPIC = "txn-crash"
OVERRIDES = ["transaction.abort.timed.out.transaction.cleanup.interval.ms=200"]


def wait_until(condition, timeout: float, message: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(message)
        time.sleep(0.05)


def read_all(bootstrap: str, isolation: str) -> list[tuple[int, bytes]]:
    """Every record both partitions show a consumer of this isolation level, waiting until
    read_committed is no longer held back by an open transaction."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{time.monotonic_ns()}",
                         "isolation.level": isolation, "enable.partition.eof": True,
                         "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in (0, 1)])
        got: list[tuple[int, bytes]] = []
        eof: set[int] = set()
        deadline = time.monotonic() + 30
        while len(eof) < 2 and time.monotonic() < deadline:
            m = consumer.poll(0.2)
            if m is None:
                continue
            if m.error():
                eof.add(m.partition())
                continue
            got.append((m.partition(), m.value()))
        assert len(eof) == 2, "the partitions never reached their end"
        return sorted(got)
    finally:
        consumer.close()


def settled(bootstrap: str) -> bool:
    """No open transaction left: for both partitions the last stable offset (latest under
    read_committed) has reached the high watermark."""
    ends = []
    for isolation in ("read_committed", "read_uncommitted"):
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe", "isolation.level": isolation})
        try:
            ends.append([consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)[1] for p in (0, 1)])
        finally:
            consumer.close()
    return ends[0] == ends[1]


def create_topic(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until its futures complete
    for future in admin.create_topics([NewTopic(TOPIC, 2, 1)]).values():
        future.result(30)


def start(log_dir: Path, fault: str | None) -> BrokerProcess:
    env = {k: v for k, v in os.environ.items() if k != "BROKER_FAULT_POINT"}
    if fault is not None:
        env["BROKER_FAULT_POINT"] = fault
    return BrokerProcess(OVERRIDES, log_dir=log_dir, env=env).start()


def transaction(bootstrap: str, commit: bool, *, timeout_s: float = 10.0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "crash-tx",
                         "transaction.timeout.ms": 5000, "message.timeout.ms": 5000})
    producer.init_transactions(30)
    producer.begin_transaction()
    for p in (0, 1):
        producer.produce(TOPIC, b"in-txn-%d" % p, partition=p)
    producer.flush(10)
    if commit:
        producer.commit_transaction(timeout_s)


@pytest.mark.parametrize("point", ["txn.markers", "txn.marker", "txn.complete"])
def test_a_commit_interrupted_by_a_crash_is_finished_at_restart(tmp_path: Path, point: str) -> None:
    broker = start(tmp_path, f"{point}:1")
    try:
        create_topic(broker.bootstrap)
        try:
            transaction(broker.bootstrap, commit=True)
        except KafkaException:
            pass  # the answer may be lost with the broker; the decision is in the log either way
        wait_until(lambda: broker.returncode is not None, 30, f"the broker did not die at {point}")
        assert broker.kill() == -9
        broker.env = {k: v for k, v in os.environ.items() if k != "BROKER_FAULT_POINT"}
        broker.start()
        # The logged decision was COMMIT: after the restart both partitions show the records.
        wait_until(lambda: settled(broker.bootstrap), 60, "the transaction never completed")
        assert read_all(broker.bootstrap, "read_committed") == [(0, b"in-txn-0"), (1, b"in-txn-1")]
        # The coordinator finished it too: the id takes a new producer and its next transaction.
        next_one = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "crash-tx"})
        next_one.init_transactions(30)
        next_one.begin_transaction()
        next_one.produce(TOPIC, b"after", partition=0)
        next_one.commit_transaction(30)
        assert read_all(broker.bootstrap, "read_committed") == [(0, b"after"), (0, b"in-txn-0"), (1, b"in-txn-1")]
    finally:
        broker.cleanup()


def test_an_open_transaction_of_a_killed_broker_is_aborted_after_its_timeout(tmp_path: Path) -> None:
    broker = start(tmp_path, None)
    try:
        create_topic(broker.bootstrap)
        transaction(broker.bootstrap, commit=False)
        assert broker.kill() == -9
        broker.start()
        assert read_all(broker.bootstrap, "read_uncommitted") == [(0, b"in-txn-0"), (1, b"in-txn-1")]
        # read_committed stays behind the open transaction until the broker aborts it.
        wait_until(lambda: settled(broker.bootstrap), 30, "the timed-out transaction was not aborted")
        assert read_all(broker.bootstrap, "read_committed") == []
    finally:
        broker.cleanup()


def test_an_abort_survives_a_crash_and_recovery(tmp_path: Path) -> None:
    """Recovery empties a segment's .txnindex and must refill it from the markers: after an
    abort and a SIGKILL, a read_committed consumer still sees none of the aborted records."""
    broker = start(tmp_path, None)
    try:
        create_topic(broker.bootstrap)
        producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "abort-tx"})
        producer.init_transactions(30)
        producer.begin_transaction()
        for p in (0, 1):
            producer.produce(TOPIC, b"aborted-%d" % p, partition=p)
        producer.flush(10)
        producer.abort_transaction(30)
        producer.begin_transaction()
        producer.produce(TOPIC, b"committed", partition=0)
        producer.commit_transaction(30)
        wait_until(lambda: settled(broker.bootstrap), 30, "the transactions never completed")
        assert read_all(broker.bootstrap, "read_committed") == [(0, b"committed")]
        assert broker.kill() == -9  # no clean shutdown: every segment is recovered at the next start
        broker.start()
        assert read_all(broker.bootstrap, "read_uncommitted") == [(0, b"aborted-0"), (0, b"committed"),
                                                                  (1, b"aborted-1")]
        assert read_all(broker.bootstrap, "read_committed") == [(0, b"committed")]
    finally:
        broker.cleanup()
