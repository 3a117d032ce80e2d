"""Retention on a real broker with real clients.

The size test runs the scheduled job as production does (small intervals). The time-based
tests use the harness's levers (`BrokerProcess(monitor=True)`: `advance_clock`,
`run_retention`, both driving the broker's aiomonitor console), so `retention.ms=7d` and
`file.delete.delay.ms` take milliseconds.
"""
from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    OffsetSpec,
)

from asyncbroker.testing import BrokerProcess
from wait_for import wait_until

pytestmark = pytest.mark.timeout(120)

MIB = 1 << 20
DAY_MS = 86_400_000


def create_topic(bootstrap: str, name: str, partitions: int = 1, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, 1, config=dict(configs))], operation_timeout=10)
    futures[name].result(15)


def produce(bootstrap: str, topic: str, count: int, value_size: int, **conf: object) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 64 * 1024,
                  "queue.buffering.max.kbytes": 64 * 1024, **conf})
    errors: list = []
    value = b"x" * value_size
    for i in range(count):
        while True:
            try:
                p.produce(topic, key=b"%d" % i, value=value, on_delivery=lambda e, m: e and errors.append(e))
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(60) == 0
    assert not errors, errors[:3]


def first_consumed_offset(bootstrap: str, topic: str, timeout: float = 20) -> tuple[int, tuple[int, int]]:
    """Offset of the first record a consumer from earliest gets, and the (low, high) watermarks."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 100})
    try:
        watermarks = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = c.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                raise KafkaException(msg.error())
            return msg.offset(), watermarks
        raise AssertionError("no record consumed")
    finally:
        c.close()


def deleted_from(run: object, topic: str) -> int:
    """Segments a retention pass deleted from `topic` (the lever broker holds other topics too)."""
    return sum(len(d.base_offsets) for d in run.deletions if d.topic == topic)  # type: ignore[attr-defined]


def live_log_bytes(partition_dir: Path) -> int:
    """Bytes in the partition's live segment files (not `.deleted` ones)."""
    total = 0
    for p in partition_dir.glob("*.log"):
        try:
            total += p.stat().st_size
        except FileNotFoundError:
            pass  # renamed `.deleted` meanwhile
    return total


def test_retention_bytes_keeps_three_to_four_mib_and_consumers_start_at_the_new_log_start() -> None:
    """segment.bytes=1MiB, retention.bytes=3MiB, 20 MiB produced: Kafka keeps the newest
    segments whose total stays within 3 MiB + one segment."""
    overrides = ["log.initial.task.delay.ms=0", "log.retention.check.interval.ms=200",
                 "log.segment.delete.delay.ms=500"]
    with BrokerProcess(overrides) as broker:
        create_topic(broker.bootstrap, "sized", **{"segment.bytes": str(MIB), "retention.bytes": str(3 * MIB)})
        produce(broker.bootstrap, "sized", 2048, 10 * 1024)  # 20 MiB of values
        partition_dir = broker.log_dir / "sized-0"
        wait_until(lambda: 3 * MIB <= live_log_bytes(partition_dir) <= 4 * MIB, timeout=30,
                   message=f"(live bytes {live_log_bytes(partition_dir)})")
        wait_until(lambda: not list(partition_dir.glob("*.deleted")), timeout=30)  # after the delete delay
        first, (low, high) = first_consumed_offset(broker.bootstrap, "sized")
        assert high == 2048 and 0 < low < high
        assert first == low  # a consumer from earliest starts at the new log start offset
        out = broker.output()
        assert "retention size" in out  # the rule, logged by storage
        # LogJobs logs which segments, sizes and offsets
        assert "[UnifiedLog partition=sized-0" in out and "Log cleanup completed." in out
        # kafka-delete-logs reschedules itself: the deleted topic's directory goes after the
        # 500 ms log.segment.delete.delay.ms without any lever.
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.delete_topics(["sized"], operation_timeout=10)["sized"].result(15)
        assert list(broker.log_dir.glob("sized-0.*-delete"))
        wait_until(lambda: not list(broker.log_dir.glob("sized-0.*-delete")), timeout=10)


# -- with the clock lever ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def lever_broker() -> Iterator[BrokerProcess]:
    # Jobs scheduled far out: everything below happens through the levers, deterministically.
    with BrokerProcess(["log.initial.task.delay.ms=3600000", "log.segment.delete.delay.ms=60000"],
                       monitor=True) as broker:
        yield broker


def test_retention_ms_of_seven_days_takes_milliseconds(lever_broker: BrokerProcess) -> None:
    b = lever_broker.bootstrap
    create_topic(b, "week", **{"segment.bytes": str(MIB), "retention.ms": str(7 * DAY_MS)})
    produce(b, "week", 400, 10 * 1024)  # ~4 MiB: four segments
    assert deleted_from(lever_broker.run_retention(), "week") == 0
    lever_broker.advance_clock(7 * DAY_MS + 60_000)
    assert deleted_from(lever_broker.run_retention(), "week") >= 4
    partition_dir = lever_broker.log_dir / "week-0"
    assert list(partition_dir.glob("*.log.deleted"))  # renamed, waiting for file.delete.delay.ms
    lever_broker.advance_clock(60_000)
    assert not list(partition_dir.glob("*.deleted"))
    produce(b, "week", 5, 100)
    first, (low, high) = first_consumed_offset(b, "week")
    assert low == first == 400 and high == 405  # everything old went; the log restarted at its end


def test_topic_config_change_takes_effect_on_the_next_run(lever_broker: BrokerProcess) -> None:
    b = lever_broker.bootstrap
    create_topic(b, "resized", **{"segment.bytes": str(MIB), "retention.ms": "-1"})
    produce(b, "resized", 500, 10 * 1024)
    assert deleted_from(lever_broker.run_retention(), "resized") == 0
    admin = AdminClient({"bootstrap.servers": b})
    resource = ConfigResource(ConfigResource.Type.TOPIC, "resized", incremental_configs=[
        ConfigEntry("retention.bytes", str(2 * MIB), incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(15)
    assert deleted_from(lever_broker.run_retention(), "resized") >= 2
    assert 2 * MIB <= live_log_bytes(lever_broker.log_dir / "resized-0") <= 3 * MIB


def test_deleted_topic_is_unlinked_after_the_delay_and_its_name_reusable_at_once(lever_broker: BrokerProcess) -> None:
    b = lever_broker.bootstrap
    create_topic(b, "gone", 2)
    produce(b, "gone", 50, 100)
    admin = AdminClient({"bootstrap.servers": b})
    admin.delete_topics(["gone"], operation_timeout=10)["gone"].result(15)
    pending = list(lever_broker.log_dir.glob("gone-*.*-delete"))
    assert len(pending) == 2
    create_topic(b, "gone", 1)  # the same name, right away
    produce(b, "gone", 3, 100)
    first, (low, high) = first_consumed_offset(b, "gone")
    assert (first, low, high) == (0, 0, 3)  # only the new topic's records
    lever_broker.advance_clock(60_000)
    assert not any(p.exists() for p in pending)
    assert (lever_broker.log_dir / "gone-0").is_dir()


def test_delete_records_then_retention_survives_a_sigkill_restart() -> None:
    with BrokerProcess(["log.initial.task.delay.ms=3600000", "log.segment.delete.delay.ms=0"],
                       monitor=True) as broker:
        b = broker.bootstrap
        create_topic(b, "trimmed", **{"segment.bytes": str(MIB)})
        produce(b, "trimmed", 400, 10 * 1024)
        admin = AdminClient({"bootstrap.servers": b})
        target = 250
        result = admin.delete_records([TopicPartition("trimmed", 0, target)])
        list(result.values())[0].result(15)
        assert deleted_from(broker.run_retention(), "trimmed") >= 2  # the segments wholly below offset 250
        broker.kill()  # no clean shutdown: only what was checkpointed survives
        broker.start()
        first, (low, high) = first_consumed_offset(b, "trimmed")
        assert (first, low, high) == (target, target, 400)


def test_delete_records_survives_an_immediate_sigkill() -> None:
    """The new log start offset is checkpointed before DeleteRecords answers: a crash right after
    it (long before the periodic log-start checkpoint) does not bring the deleted records back."""
    with BrokerProcess(["log.flush.start.offset.checkpoint.interval.ms=3600000"]) as broker:
        produce(broker.bootstrap, "dr-kill", 100, 100)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        tp = TopicPartition("dr-kill", 0)
        assert admin.delete_records([TopicPartition("dr-kill", 0, 60)], request_timeout=10)[tp] \
            .result(timeout=10).low_watermark == 60
        broker.restart(kill=True)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        earliest = admin.list_offsets({tp: OffsetSpec.earliest()}, request_timeout=10)[tp].result(timeout=10)
        assert earliest.offset == 60
