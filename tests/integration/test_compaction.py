"""Log compaction on a real broker with a real client (confluent-kafka).

The cleaner runs in the broker as in production (worker processes fed by the broker's
loop); the tests compact on demand with the harness's lever `BrokerProcess.clean_now`
(the console's `clean` command: roll the active segment, clean, swap, and wait), so they
do not depend on the dirty ratio or log.cleaner.backoff.ms.
"""
from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from asyncbroker.monitor_client import MonitorCommandError
from asyncbroker.testing import BrokerProcess
from wait_for import wait_until

pytestmark = pytest.mark.timeout(180)

MIB = 1 << 20
SEGMENT_BYTES = MIB  # the smallest segment.bytes LogConfig accepts (Kafka's minimum too)
KEYS = 1_000
UPDATES = 100_000


def create_topic(bootstrap: str, name: str, partitions: int = 1, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, 1, config=dict(configs))], operation_timeout=10)
    futures[name].result(15)


def compacted_topic(bootstrap: str, name: str, **configs: str) -> None:
    create_topic(bootstrap, name, **{"cleanup.policy": "compact", "segment.bytes": str(SEGMENT_BYTES), **configs})


def produce_updates(bootstrap: str, topic: str, updates: int, keys: int, value_pad: int = 0,
                    start: int = 0) -> dict[bytes, bytes]:
    """`updates` records over `keys` keys (round robin); returns each key's last value."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 64 * 1024})
    errors: list[KafkaError] = []
    latest: dict[bytes, bytes] = {}
    pad = b"." * value_pad
    for i in range(start, start + updates):
        key = b"key-%d" % (i % keys)
        value = b"value-%d" % i + pad
        latest[key] = value
        while True:
            try:
                p.produce(topic, key=key, value=value, on_delivery=lambda e, m: e and errors.append(e))
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(60) == 0
    assert not errors, errors[:3]
    return latest


def consume(bootstrap: str, topic: str, offset: int = OFFSET_BEGINNING, timeout: float = 60.0
            ) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record from `offset` up to the high watermark."""
    import time

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False, "enable.partition.eof": True, "fetch.wait.max.ms": 50})
    try:
        c.assign([TopicPartition(topic, 0, offset)])
        out: list[tuple[int, bytes | None, bytes | None]] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    return out
                raise AssertionError(msg.error())
            out.append((msg.offset(), msg.key(), msg.value()))
        raise AssertionError(f"did not reach the end of {topic} in {timeout}s ({len(out)} records read)")
    finally:
        c.close()


def latest_by_key(records: list[tuple[int, bytes | None, bytes | None]]) -> dict[bytes | None, bytes | None]:
    latest: dict[bytes | None, bytes | None] = {}
    for _offset, key, value in records:
        latest[key] = value
    return latest


def segment_bytes_on_disk(log_dir: Path, topic: str) -> int:
    """Bytes of the live `.log` files (not `.deleted` / `.cleaned` / `.swap`)."""
    return sum(p.stat().st_size for p in (log_dir / f"{topic}-0").glob("*.log"))


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    # The background loop runs once when the cleaner has started (in the background, after the
    # listener), then only when woken by a CreateTopics, before anything is produced. clean_now
    # on an empty topic waits for that start, so every later clean is clean_now's own and its
    # stats are exact.
    with BrokerProcess(["log.cleaner.backoff.ms=3600000"], monitor=True) as b:
        compacted_topic(b.bootstrap, "warm-up")
        assert b.clean_now("warm-up") == {0: None}
        yield b


def test_compaction_keeps_each_keys_last_value(broker: BrokerProcess) -> None:
    topic = "compacted-updates"
    compacted_topic(broker.bootstrap, topic)
    latest = produce_updates(broker.bootstrap, topic, UPDATES, KEYS)
    before = segment_bytes_on_disk(broker.log_dir, topic)
    assert len(list((broker.log_dir / f"{topic}-0").glob("*.log"))) > 1, "expected several segments"

    stats = broker.clean_now(topic)

    assert stats is not None and stats[0] is not None
    assert stats[0].messages_read == UPDATES and stats[0].messages_written == KEYS
    records = consume(broker.bootstrap, topic)
    # clean_now rolled first, so the active segment is empty: nothing uncleaned remains.
    assert len(records) <= KEYS
    assert latest_by_key(records) == latest
    offsets = [o for o, _, _ in records]
    assert offsets == sorted(offsets) and offsets[-1] == UPDATES - 1  # offsets are kept, never reassigned
    assert segment_bytes_on_disk(broker.log_dir, topic) < before / 50

    # A fetch at an offset the cleaner removed gets the next retained batch.
    removed = 5
    assert removed not in offsets
    from_removed = consume(broker.bootstrap, topic, offset=removed)
    assert from_removed[0][0] == min(o for o in offsets if o >= removed)
    assert from_removed == [r for r in records if r[0] >= removed]

    # Nothing new since: a second clean has nothing to do, and the data is unchanged.
    assert broker.clean_now(topic, 0) == {0: None}
    assert consume(broker.bootstrap, topic) == records


def test_updates_after_compaction_are_cleaned_again(broker: BrokerProcess) -> None:
    topic = "compacted-twice"
    compacted_topic(broker.bootstrap, topic)
    produce_updates(broker.bootstrap, topic, 20_000, 100, value_pad=100)
    broker.clean_now(topic)
    latest = produce_updates(broker.bootstrap, topic, 20_000, 100, value_pad=100, start=20_000)
    broker.clean_now(topic)
    records = consume(broker.bootstrap, topic)
    assert len(records) == 100
    assert latest_by_key(records) == latest


def test_compacted_topic_rejects_keyless_records(broker: BrokerProcess) -> None:
    topic = "compacted-keyless"
    compacted_topic(broker.bootstrap, topic)
    p = Producer({"bootstrap.servers": broker.bootstrap, "retries": 0})
    results: list[KafkaError | None] = []
    p.produce(topic, value=b"no key", on_delivery=lambda e, m: results.append(e))
    assert p.flush(30) == 0
    # A separate batch: Kafka rejects the whole batch a keyless record is in.
    p.produce(topic, key=b"k", value=b"keyed", on_delivery=lambda e, m: results.append(e))
    assert p.flush(30) == 0
    assert results[0] is not None and results[0].code() == KafkaError.INVALID_RECORD
    assert results[1] is None
    assert [(k, v) for _, k, v in consume(broker.bootstrap, topic)] == [(b"k", b"keyed")]


def test_many_commits_of_one_key_shrink_to_one_record(broker: BrokerProcess) -> None:
    """What __consumer_offsets sees: one group/partition key committed over and over."""
    topic = "compacted-one-key"
    compacted_topic(broker.bootstrap, topic)
    latest = produce_updates(broker.bootstrap, topic, 30_000, 1, value_pad=64)
    before = segment_bytes_on_disk(broker.log_dir, topic)
    assert before > 2 * SEGMENT_BYTES

    broker.clean_now(topic)

    records = consume(broker.bootstrap, topic)
    assert [(k, v) for _, k, v in records] == list(latest.items())
    assert records[0][0] == 29_999
    assert segment_bytes_on_disk(broker.log_dir, topic) < 1024


def test_delete_records_then_clean(broker: BrokerProcess) -> None:
    """DeleteRecords pauses the cleaner on the partition and resumes it (a clean still runs).
    As on Kafka, only a topic whose policy includes delete has its records deleted; a
    compacted-only one answers POLICY_VIOLATION."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    compacted_only = "compacted-only-delete-records"
    compacted_topic(broker.bootstrap, compacted_only)
    produce_updates(broker.bootstrap, compacted_only, 100, 10)
    refused = admin.delete_records([TopicPartition(compacted_only, 0, 50)], request_timeout=15)
    with pytest.raises(KafkaException) as info:
        refused[TopicPartition(compacted_only, 0, 50)].result(15)
    assert info.value.args[0].code() == KafkaError.POLICY_VIOLATION

    topic = "compacted-delete-records"
    compacted_topic(broker.bootstrap, topic, **{"cleanup.policy": "compact,delete"})
    produce_updates(broker.bootstrap, topic, 10_000, 100, value_pad=100)
    futures = admin.delete_records([TopicPartition(topic, 0, 9_950)], request_timeout=15)
    assert futures[TopicPartition(topic, 0, 9_950)].result(15).low_watermark == 9_950
    latest = produce_updates(broker.bootstrap, topic, 10_000, 100, value_pad=100, start=10_000)

    stats = broker.clean_now(topic)

    assert stats is not None and stats[0] is not None
    records = consume(broker.bootstrap, topic)
    assert records[0][0] >= 9_950
    assert latest_by_key(records) == latest and len(records) == 100


def test_compaction_survives_sigkill_during_the_swap(tmp_path: Path) -> None:
    """The broker dies between swap steps (storage's `cleaner.swap.*` fault points); the next
    start recovers the old or the new segments, and every key's latest value is there."""
    topic = "compacted-crash"
    for point in ("cleaner.swap.renamed_to_swap", "cleaner.swap.old_renamed_deleted"):
        log_dir = tmp_path / point
        env = {**os.environ, "BROKER_FAULT_POINT": f"{point}:1"}
        # The fault point fires at the first swap, which must be clean_now's: with a long backoff
        # the background loop runs only at the cleaner's start and on CreateTopics, and the
        # clean_now of the empty topic waits for both before anything is produced.
        b = BrokerProcess(["log.cleaner.backoff.ms=3600000"], log_dir=log_dir, monitor=True, env=env)
        try:
            b.start()
            compacted_topic(b.bootstrap, topic)
            assert b.clean_now(topic) == {0: None}
            latest = produce_updates(b.bootstrap, topic, 30_000, KEYS, value_pad=40)
            with pytest.raises((MonitorCommandError, OSError)):
                b.clean_now(topic, timeout=60)  # the broker kills itself mid-swap
            wait_until(lambda: b.returncode is not None, timeout=30, message="broker did not die")
            assert b.kill() == -9  # it died of its own SIGKILL (kill() also drops the console session)

            b.env = {k: v for k, v in os.environ.items() if k != "BROKER_FAULT_POINT"}
            b.start()
            records = consume(b.bootstrap, topic)
            assert latest_by_key(records) == latest, point
            offsets = [o for o, _, _ in records]
            assert offsets == sorted(set(offsets))
            # And the recovered log compacts normally.
            b.clean_now(topic)
            records = consume(b.bootstrap, topic)
            assert len(records) == KEYS and latest_by_key(records) == latest
            assert not list((log_dir / f"{topic}-0").glob("*.cleaned"))
            assert not list((log_dir / f"{topic}-0").glob("*.swap"))
        finally:
            b.cleanup()


def test_compaction_survives_sigkill_while_the_worker_cleans(tmp_path: Path) -> None:
    """The broker dies once a worker has written its `.cleaned` segments and before it swaps them
    in (the worker's `cleaner.cleaned` fault point kills the broker, then the worker); the next
    start drops that output and keeps every key's latest value."""
    topic = "compacted-crash-worker"
    env = {**os.environ, "BROKER_FAULT_POINT": "cleaner.cleaned:1"}
    # As in the swap test: the first clean of any worker must be clean_now's, so the background
    # loop (at the cleaner's start and on CreateTopics) has had its turn before anything is produced.
    b = BrokerProcess(["log.cleaner.backoff.ms=3600000"], log_dir=tmp_path, monitor=True, env=env)
    partition_dir = tmp_path / f"{topic}-0"
    try:
        b.start()
        compacted_topic(b.bootstrap, topic)
        assert b.clean_now(topic) == {0: None}
        latest = produce_updates(b.bootstrap, topic, UPDATES, KEYS)
        with pytest.raises((MonitorCommandError, OSError)):
            b.clean_now(topic, timeout=60)  # the worker kills the broker before the swap
        wait_until(lambda: b.returncode is not None, timeout=30, message="broker did not die")
        assert b.kill() == -9
        assert list(partition_dir.glob("*.cleaned")), "the worker's output should be on disk"
        assert not list(partition_dir.glob("*.swap"))  # the swap never began

        b.env = {k: v for k, v in os.environ.items() if k != "BROKER_FAULT_POINT"}
        b.start()
        records = consume(b.bootstrap, topic)
        assert latest_by_key(records) == latest
        # (The restarted broker's cleaner loop may be cleaning it again, by dirty ratio; clean_now
        # waits for that clean, and the long backoff starts no other.)
        b.clean_now(topic)
        records = consume(b.bootstrap, topic)
        assert len(records) == KEYS and latest_by_key(records) == latest
        assert not list(partition_dir.glob("*.cleaned"))  # no partial output left behind
    finally:
        b.cleanup()


def test_config_change_wakes_the_cleaner(tmp_path: Path) -> None:
    """With a 10 min backoff only the wake-up on IncrementalAlterConfigs can start this clean."""
    topic = "becomes-compacted"
    with BrokerProcess(["log.cleaner.backoff.ms=600000"], log_dir=tmp_path) as b:
        create_topic(b.bootstrap, topic, **{"segment.bytes": str(SEGMENT_BYTES)})
        latest = produce_updates(b.bootstrap, topic, 30_000, 10, value_pad=100)
        assert len(consume(b.bootstrap, topic)) == 30_000
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("min.cleanable.dirty.ratio", "0.01", incremental_operation=AlterConfigOpType.SET),
        ])
        admin.incremental_alter_configs([resource])[resource].result(15)
        wait_until(lambda: "cleaned log becomes-compacted-0" in b.output(), timeout=60,
                   interval=0.1, message="the cleaner did not wake up")
        records = consume(b.bootstrap, topic)
        assert latest_by_key(records) == latest
        assert len(records) < 30_000  # the active segment stays dirty; every rolled one is clean


def test_cleaner_disabled(tmp_path: Path) -> None:
    with BrokerProcess(["log.cleaner.enable=false"], log_dir=tmp_path, monitor=True) as b:
        compacted_topic(b.bootstrap, "not-compacted")
        latest = produce_updates(b.bootstrap, "not-compacted", 1_000, 10)
        with pytest.raises(MonitorCommandError, match="disabled"):
            b.clean_now("not-compacted")
        records = consume(b.bootstrap, "not-compacted")
        assert len(records) == 1_000 and latest_by_key(records) == latest
        assert "Log cleaner disabled" in b.output()
    assert b.returncode == 0
