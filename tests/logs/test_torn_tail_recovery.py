"""Issue 20: a torn active segment after a clean shutdown is recovered (stricter than Kafka,
see KD-500 and tests/oracle/test_torn_tail.py for Kafka's side).

Stop cleanly, cut 7 bytes off the active segment, restart: the survivors are a prefix of
what was produced, no offset is served twice (before or after the next append), and the files
pass Kafka's DumpLogSegments.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from asyncbroker.testing import BrokerProcess
from jvm.dump_log_check import check_log_dir, describe
from log_dirs_testlib import stop_cleanly

pytestmark = pytest.mark.timeout(120)


def produce_batches(bootstrap: str, topic: str, batches: list[list[bytes]]) -> None:
    """Each inner list is flushed on its own, so it lands as one batch."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "enable.idempotence": True})
    for values in batches:
        for v in values:
            p.produce(topic, key=v, value=v)
        assert p.flush(15) == 0


def consume_all(bootstrap: str, topic: str, end: int) -> list[tuple[int, bytes]]:
    """(offset, value) of every record from the start up to `end` (the log end offset)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "torn", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 50})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        out: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + 20
        while (not out or out[-1][0] < end - 1) and time.monotonic() < deadline:
            for m in c.consume(100, 0.2):
                assert not m.error(), m.error()
                out.append((m.offset(), m.value()))
        return out
    finally:
        c.close()


def high_watermark(bootstrap: str, topic: str) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "torn-probe"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    finally:
        c.close()


def test_torn_tail_after_clean_shutdown_is_recovered() -> None:
    with BrokerProcess(["num.partitions=1"]) as broker:
        produced = [[b"a%d" % i for i in range(3)], [b"b%d" % i for i in range(4)], [b"c%d" % i for i in range(2)]]
        produce_batches(broker.bootstrap, "torn", produced)
        assert high_watermark(broker.bootstrap, "torn") == 9
        log_dir = stop_cleanly(broker)
        active = sorted((log_dir / "torn-0").glob("*.log"))[-1]
        with open(active, "r+b") as f:
            f.truncate(active.stat().st_size - 7)
        broker.start()
        assert any("did not end on a whole batch after a clean shutdown" in line for line in broker.log_lines)

        end = high_watermark(broker.bootstrap, "torn")
        survivors = consume_all(broker.bootstrap, "torn", end)
        everything = [v for values in produced for v in values]
        assert [o for o, _ in survivors] == list(range(end)) and end == 7  # the torn batch is gone
        assert [v for _, v in survivors] == everything[:end]  # a prefix

        produce_batches(broker.bootstrap, "torn", [[b"d0", b"d1"]])
        after = consume_all(broker.bootstrap, "torn", end + 2)
        assert [o for o, _ in after] == list(range(end + 2))  # each offset once, in order
        assert [v for _, v in after] == everything[:end] + [b"d0", b"d1"]

        report = check_log_dir(stop_cleanly(broker))
        assert not report.findings, describe(report.findings)
        assert report.files.get(".log", 0) >= 1
