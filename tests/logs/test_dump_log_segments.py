"""Kafka's DumpLogSegments over every kind of file asyncbroker writes, and proof that the
checker (tests/jvm/dump_log_check.py) fails when a file is wrong.

The workload: every codec, headers, null keys and values, LogAppendTime, segment rolls by
size and by time with small index intervals, compaction with tombstones (cleaned twice, so
the tombstones' delete horizon passes), DeleteRecords, retention by time and by size,
idempotent producers (.snapshot files), a consumer group's offsets and metadata in
__consumer_offsets, a SIGKILL and the recovery after it. Transaction indexes need aborted
transactions, which only a transaction coordinator writes: the storage engine writes them
directly (storage.log.Log, as the broker's coordinator path calls it).
"""

from __future__ import annotations

import os
import shutil
import struct
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from asyncbroker.testing import BrokerProcess
from jvm.dump_log_check import FindingKind, check_files, check_log_dir, describe, segment_files
from log_dirs_testlib import cleanup_policies, compacted_predicate, stop_cleanly
from storage.clock import MockClock
from storage.log import Log
from storage.log_config import LogConfig
from wire.records import ControlRecordType, Record, build_batch, encode_control_key, encode_control_value

pytestmark = pytest.mark.timeout(300)

MIB = 1 << 20
DAY_MS = 86_400_000
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def create_topics(bootstrap: str, topics: dict[str, tuple[int, dict[str, str]]]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, n, 1, config=configs) for name, (n, configs) in topics.items()],
                                  operation_timeout=10)
    for future in futures.values():
        future.result(15)


def produce(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes | None]], *, rounds: int = 1,
            partition: int | None = None, timestamps: list[int] | None = None, **conf: object) -> list[int]:
    """Produce `records` in `rounds` flushed rounds (each round its own batches); the offsets."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2, **conf})
    offsets: list[int] = []
    errors: list[object] = []

    def delivered(err: object, msg: object) -> None:
        if err:
            errors.append(err)
        else:
            offsets.append(msg.offset())  # type: ignore[attr-defined]

    per_round = max(1, len(records) // rounds)
    for i, (key, value) in enumerate(records):
        extra: dict[str, int] = {} if partition is None else {"partition": partition}
        if timestamps is not None:
            extra["timestamp"] = timestamps[i]
        while True:
            try:
                p.produce(topic, key=key, value=value, headers=[("i", b"%d" % i), ("nil", None)],
                          on_delivery=delivered, **extra)
                break
            except BufferError:
                p.poll(0.05)
        if (i + 1) % per_round == 0:
            assert p.flush(30) == 0
    assert p.flush(30) == 0
    assert not errors, errors[:3]
    return offsets


def commit_group_offsets(bootstrap: str, topic: str, group: str, count: int) -> None:
    """A subscribed consumer (JoinGroup/SyncGroup: group metadata records) that consumes
    `count` records and commits (offset commit records)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "session.timeout.ms": 6000})
    try:
        c.subscribe([topic])
        seen = 0
        deadline = time.monotonic() + 30
        while seen < count and time.monotonic() < deadline:
            for m in c.consume(100, 0.2):
                assert not m.error(), m.error()
                seen += 1
        assert seen >= count, f"consumed {seen} of {count}"
        c.commit(asynchronous=False)
    finally:
        c.close()


def delete_records(bootstrap: str, topic: str, before: int) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.delete_records([TopicPartition(topic, 0, before)], request_timeout=15)
    return next(iter(futures.values())).result(15).low_watermark


def test_every_kind_of_file_asyncbroker_writes_passes_dump_log_segments() -> None:
    with BrokerProcess(["num.partitions=1", "offsets.topic.num.partitions=3", "log.segment.delete.delay.ms=0"],
                       monitor=True) as broker:
        b = broker.bootstrap
        small = {"segment.bytes": str(MIB), "index.interval.bytes": "256"}
        timed = {"segment.ms": "1", "index.interval.bytes": "128"}
        create_topics(b, {
            "codecs": (2, small),
            "appendtime": (1, {**timed, "message.timestamp.type": "LogAppendTime"}),
            "compacted": (1, {**timed, "cleanup.policy": "compact", "delete.retention.ms": "0",
                              "min.compaction.lag.ms": "0", "min.cleanable.dirty.ratio": "0.01"}),
            "compact-delete": (1, {**timed, "cleanup.policy": "compact,delete", "delete.retention.ms": "0",
                                   "retention.ms": str(DAY_MS)}),
            "idempotent": (1, timed),
            "deleted": (1, timed),
            "by-time": (1, {**timed, "retention.ms": str(DAY_MS)}),
            "by-size": (1, {**timed, "retention.bytes": "3000"}),
            "disorder": (1, {"index.interval.bytes": "64", "cleanup.policy": "compact"}),
        })
        # Every codec; incompressible values so that 2 x 1 MiB rolls each partition by size.
        for codec in CODECS:
            records = [(None if i % 3 == 0 else b"k%d" % i, None if i % 11 == 0 else os.urandom(600))
                       for i in range(1100)]
            produce(b, "codecs", records, rounds=4, **{"compression.type": codec})
        for codec in CODECS:
            produce(b, "appendtime", [(b"a%d" % i, b"x" * i) for i in range(40)], rounds=4,
                    **{"compression.type": codec})
        # Keyed updates, then tombstones for a third of the keys, from an idempotent producer.
        updates = [(b"key%d" % (i % 20), b"v%d" % i) for i in range(200)]
        tombstones: list[tuple[bytes | None, bytes | None]] = [(b"key%d" % k, None) for k in range(0, 20, 3)]
        for topic in ("compacted", "compact-delete"):
            produce(b, topic, updates, rounds=10, **{"enable.idempotence": True, "compression.type": "lz4"})
            produce(b, topic, tombstones, rounds=2, **{"enable.idempotence": True})
            assert broker.clean_now(topic) is not None
            # The first clean stamped the tombstones' delete horizon (delete.retention.ms=0); the
            # second, after more updates, removes them.
            produce(b, topic, updates[:50], rounds=5)
            assert broker.clean_now(topic) is not None
        # Timestamps that go back and forth (CreateTime): the time index keeps the largest so far,
        # before and after the cleaner rewrites the segments.
        now = int(time.time() * 1000)
        produce(b, "disorder", [(b"d%d" % (i % 7), b"v%d" % i) for i in range(120)], rounds=12,
                timestamps=[now - ((i * 7919) % 3_600_000) for i in range(120)])
        assert broker.clean_now("disorder") is not None
        for _ in range(3):
            produce(b, "idempotent", [(b"i%d" % i, b"v%d" % i) for i in range(300)], rounds=6,
                    **{"enable.idempotence": True, "acks": "all"})
        # Five rounds of 20 records, 10 ms apart in their timestamps: segment.ms=1 rolls at every
        # round whatever the broker's speed (a roll by time compares record timestamps).
        rounds_apart = [now + (i // 20) * 10 for i in range(100)]
        produce(b, "deleted", [(b"d%d" % i, b"v%d" % i) for i in range(100)], rounds=5, timestamps=rounds_apart)
        assert delete_records(b, "deleted", 37) == 37
        for topic in ("by-time", "by-size"):
            produce(b, topic, [(b"r%d" % i, b"r" * 100) for i in range(100)], rounds=5, timestamps=rounds_apart)
        commit_group_offsets(b, "codecs", "workload-group", 50)

        broker.advance_clock(2 * DAY_MS)
        run = broker.run_retention()
        # compact,delete logs are the cleaner's to delete from, as in Kafka (not this pass).
        assert "compact-delete" not in {d.topic for d in run.deletions}, run
        # Each lost its oldest segments: in this pass, or (for "deleted", whose segments are due
        # from DeleteRecords on) in the periodic one when a loaded machine took past its initial
        # delay to get here.
        for topic in ("by-time", "by-size", "deleted"):
            bases = [int(f.name.split(".")[0]) for f in (broker.log_dir / f"{topic}-0").glob("*.log")]
            assert bases and min(bases) > 0, (topic, sorted(bases), run)

        # A SIGKILL mid-stream: the restart recovers the unflushed segments; then more writes.
        produce(b, "idempotent", [(b"x%d" % i, b"v") for i in range(100)], rounds=2, **{"enable.idempotence": True})
        produce(b, "codecs", [(b"y%d" % i, os.urandom(300)) for i in range(200)], rounds=2)
        broker.restart(kill=True)
        produce(b, "idempotent", [(b"z%d" % i, b"v") for i in range(100)], rounds=2, **{"enable.idempotence": True})
        produce(b, "codecs", [(b"z%d" % i, b"v") for i in range(100)], rounds=2, **{"compression.type": "zstd"})

        policies = cleanup_policies(b)
        log_dir = stop_cleanly(broker)
        report = check_log_dir(log_dir, compacted_predicate(policies))
        assert not report.findings, f"{report.files}:\n  {describe(report.findings)}"
        assert {".log", ".index", ".timeindex", ".snapshot"} <= set(report.files), report.files
        assert any(d.name.startswith("__consumer_offsets-") for d in log_dir.iterdir())

        # The holes compaction leaves are there, and only the topic's policy makes them legitimate.
        compacted_logs = [f for f in segment_files(log_dir) if f.parent.name == "compacted-0" and f.suffix == ".log"]
        strict = check_files(compacted_logs, compacted=lambda topic: False)
        assert strict.findings and {f.kind for f in strict.findings} == {FindingKind.NON_CONSECUTIVE_OFFSETS}, \
            describe(strict.findings)


def test_transaction_indexes_pass_dump_log_segments(tmp_path: Path) -> None:
    """Aborted transactions in the storage engine: .txnindex files over several segments."""
    log = Log.open(tmp_path / "txn-0", LogConfig(index_interval_bytes=64), clock=MockClock(1_700_000_000_000))
    try:
        for producer_id in range(1, 7):
            for sequence in (0, 3):
                log.append_as_leader(build_batch(
                    [Record(offset=i, timestamp=1_700_000_000_000 + i, key=b"k", value=b"t%d" % i) for i in range(3)],
                    is_transactional=True, producer_id=producer_id, producer_epoch=0, base_sequence=sequence))
            kind = ControlRecordType.ABORT if producer_id % 2 else ControlRecordType.COMMIT
            log.append_as_leader(build_batch(
                [Record(offset=0, timestamp=1_700_000_000_000, key=encode_control_key(kind),
                        value=encode_control_value(0))],
                is_control=True, is_transactional=True, producer_id=producer_id, producer_epoch=0),
                origin="coordinator")
            if producer_id % 2 == 0:
                log.roll()
    finally:
        log.close()
    files = segment_files(tmp_path)
    assert sum(f.suffix == ".txnindex" and f.stat().st_size > 0 for f in files) >= 3
    report = check_files(files)
    assert not report.findings, describe(report.findings)
    assert report.files.get(".txnindex", 0) >= 3


# -- the checker fails when a file is wrong --------------------------------------------------


def _good_partition(root: Path, name: str) -> Path:
    """A partition directory written by asyncbroker's storage engine: two segments (so a producer
    snapshot), an index entry after every batch."""
    log = Log.open(root / name, LogConfig(index_interval_bytes=1), clock=MockClock(1_700_000_000_000))
    try:
        sequence = 0
        for i, size in enumerate((3, 4, 2)):
            log.append_as_leader(_records(size, 1_700_000_000_000 + i * 1000, producer_id=7, sequence=sequence))
            sequence += size
        log.roll()
        log.append_as_leader(_records(2, 1_700_000_003_000, producer_id=7, sequence=sequence))
    finally:
        log.close()
    return root / name


def _records(n: int, ts: int = 1_700_000_000_000, key: bytes = b"k", *, producer_id: int = -1,
             sequence: int = -1) -> bytes:
    return build_batch([Record(offset=i, timestamp=ts + i, key=key + b"%d" % i, value=b"v%d" % i) for i in range(n)],
                       producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1, base_sequence=sequence)


def _flip(path: Path, position: int) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= 0x5A
    path.write_bytes(bytes(data))


def test_checker_reports_corrupt_copies_of_good_files(tmp_path: Path) -> None:
    """One check over many partitions, each a good copy with one defect: every defect is found,
    each in its own file, and an index that aborts the tool's run hides nothing after it."""
    good = _good_partition(tmp_path / "good", "source-0")
    baseline = check_log_dir(tmp_path / "good")
    assert not baseline.findings, describe(baseline.findings)

    bad = tmp_path / "bad"
    bad.mkdir()

    def copy(name: str) -> Path:
        return Path(shutil.copytree(good, bad / name))

    first = "00000000000000000000"
    crc = copy("crc-0")
    _flip(crc / f"{first}.log", 61 + 9)  # a byte of the first record's value, under the batch CRC
    torn = copy("torn-0")
    with open(torn / f"{first}.log", "ab") as f:
        f.write(b"\x00" * 7)  # a partial batch after the last whole one
    index = copy("index-0")
    raw = bytearray((index / f"{first}.index").read_bytes())
    struct.pack_into(">i", raw, 8, 1)  # the second entry now names offset 1, inside the first batch
    (index / f"{first}.index").write_bytes(bytes(raw))
    stamp = copy("stamp-0")
    raw = bytearray((stamp / f"{first}.timeindex").read_bytes())
    struct.pack_into(">q", raw, 0, struct.unpack_from(">q", raw, 0)[0] + 5)  # timestamp off by 5 ms
    (stamp / f"{first}.timeindex").write_bytes(bytes(raw))
    order = copy("order-0")
    raw = bytearray((order / f"{first}.timeindex").read_bytes())
    struct.pack_into(">q", raw, 12, 1_600_000_000_000)  # the second entry goes back in time
    (order / f"{first}.timeindex").write_bytes(bytes(raw))
    where = copy("where-0")
    raw = bytearray((where / f"{first}.timeindex").read_bytes())
    struct.pack_into(">i", raw, 8, 1)  # the first entry points inside a batch
    (where / f"{first}.timeindex").write_bytes(bytes(raw))
    sanity = copy("sanity-0")
    raw = bytearray((sanity / f"{first}.timeindex").read_bytes())
    # The last entry names the base offset, which the verification takes for the zero fill of
    # a preallocated index (it stops there); its timestamp is before the first entry's, which
    # the startup sanity check refuses.
    struct.pack_into(">qi", raw, len(raw) - 12, struct.unpack_from(">q", raw, 0)[0] - 1, 0)
    (sanity / f"{first}.timeindex").write_bytes(bytes(raw))
    snapshot = copy("snapshot-0")
    snap = sorted(snapshot.glob("*.snapshot"))[-1]
    _flip(snap, snap.stat().st_size - 3)
    holes = bad / "holes-0"
    holes.mkdir()
    gap = bytearray(_records(2) + _records(2, key=b"g"))
    struct.pack_into(">q", gap, len(_records(2)), 5)  # the second batch claims offsets 5..6
    (holes / f"{first}.log").write_bytes(bytes(gap))
    offsets = bad / "__consumer_offsets-0"
    offsets.mkdir()
    (offsets / f"{first}.log").write_bytes(build_batch(
        [Record(offset=0, timestamp=1_700_000_000_000, key=b"\x7f\x7fnot a coordinator key", value=b"junk")]))

    report = check_log_dir(bad, compacted=lambda topic: False)
    found: dict[str, set[FindingKind]] = {}
    for finding in report.findings:
        assert finding.file is not None, finding
        found.setdefault(finding.file.parent.name, set()).add(finding.kind)
    assert found == {
        "crc-0": {FindingKind.INVALID_BATCH},
        "torn-0": {FindingKind.INVALID_BYTES},
        "index-0": {FindingKind.INDEX_MISMATCH},
        "stamp-0": {FindingKind.TIMESTAMP_MISMATCH},
        # An entry that goes back in time no longer matches its batch either, and the
        # startup sanity check (last timestamp before the first) throws.
        "order-0": {FindingKind.OUT_OF_ORDER_TIMESTAMP, FindingKind.TIMESTAMP_MISMATCH, FindingKind.EXCEPTION},
        "where-0": {FindingKind.INDEXED_OFFSET_NOT_FOUND},
        "sanity-0": {FindingKind.EXCEPTION},
        "snapshot-0": {FindingKind.SNAPSHOT_CORRUPT},
        "holes-0": {FindingKind.NON_CONSECUTIVE_OFFSETS},
        "__consumer_offsets-0": {FindingKind.DECODER_ERROR},
    }, describe(report.findings)
    # The same holes on a compacted topic are what the cleaner leaves: accepted.
    assert not check_files(sorted(holes.iterdir()), compacted=lambda topic: topic == "holes").findings
