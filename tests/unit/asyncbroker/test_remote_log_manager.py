"""The RemoteLogManager and its metadata on a real in-process Broker: a real log directory, a
real `__remote_log_metadata`, LocalTieredStorage in a temp directory. The periodic task is
set far apart and each test drives rounds itself (`run_once`), so every step is deterministic."""

from __future__ import annotations

import asyncio
import os
import signal
import struct
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from asyncbroker.broker import Broker
from asyncbroker.config import KafkaConfig
from asyncbroker.remote_log_manager import RemoteLogManager
from asyncbroker.remote_log_metadata_manager import metadata_partition, murmur2
from asyncbroker.replica_manager import OffsetQuery, PartitionRead
from storage.log import Log
from storage.partition_metadata import uuid_from_base64
from storage.topic_partition import TopicPartition
from wire.errors import CorruptRecordError, ErrorCode
from wire.records import Record, build_batch, iter_batch_headers
from wire.remote_log_metadata_records import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    TopicIdPartition,
)

pytestmark = pytest.mark.timeout(60)

TOPIC = "tiered"
TP = TopicPartition(TOPIC, 0)


def test_murmur2_and_the_metadata_partitioner_match_kafka() -> None:
    # Printed by Kafka 4.4's Utils.murmur2 and RemoteLogMetadataTopicPartitioner (50 partitions).
    assert [murmur2(s.encode()) for s in ("21", "foobar", "abc", "a-little-bit-long-string")] == [
        -973932308, -790332482, 479470107, -985981536]
    topic_id = uuid_from_base64("fKm6w0ZKQpuHULjM0ffz3w")
    assert [metadata_partition(TopicIdPartition(topic_id, "t", p), 50) for p in range(4)] == [40, 14, 48, 12]


def config(log_dir: Path, remote_dir: Path, *extra: str) -> KafkaConfig:
    return KafkaConfig.load(None, [
        f"log.dirs={log_dir}", "listeners=PLAINTEXT://127.0.0.1:0", "remote.log.storage.system.enable=true",
        "remote.log.storage.manager.class.name=org.apache.kafka.server.log.remote.storage.LocalTieredStorage",
        f"rsm.config.dir={remote_dir}", "rlmm.config.remote.log.metadata.topic.num.partitions=3",
        "remote.log.manager.task.interval.ms=3600000", "log.initial.task.delay.ms=3600000", *extra], {})


async def start(tmp_path: Path, *extra: str) -> Broker:
    broker = Broker(config(tmp_path / "logs", tmp_path / "remote", *extra))
    await broker.startup()
    return broker


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    b = await start(tmp_path)
    yield b
    await b.shutdown()


def rlm(broker: Broker) -> RemoteLogManager:
    assert broker.remote_log_manager is not None
    return broker.remote_log_manager


def log_of(broker: Broker) -> Log:
    found = broker.log_manager.get_log(TP)
    assert found is not None
    return found


async def create(broker: Broker, **configs: str) -> None:
    await broker.topics.create_topic(TOPIC, 1, configs={"remote.storage.enable": "true", **configs})


async def append(broker: Broker, count: int, *, timestamp: int | None = None, value: bytes = b"v" * 100) -> None:
    """`count` single-record batches, each its own Produce."""
    now = broker.clock.milliseconds() if timestamp is None else timestamp
    for i in range(count):
        batch = build_batch([Record(0, now, b"k%d" % i, value)])
        result = await broker.replica_manager.append_records({TP: batch}, acks=-1, transactional_id=None,
                                                             produce_version=9)
        assert result[TP].error_code == 0


async def segments(broker: Broker, per_segment: int, count: int, *, active: int = 0) -> None:
    """`count` rolled segments of `per_segment` records, then `active` records in the active one
    (local retention by size keeps the last segments holding retention.bytes, so an active
    segment with records lets every rolled one go)."""
    for _ in range(count):
        await append(broker, per_segment)
        log_of(broker).roll()
    await append(broker, active)


async def copied_and_dropped(broker: Broker, local_start: int) -> Log:
    """Copy every rolled segment to remote storage, then let local retention delete them: the
    log, whose local part then starts at `local_start`."""
    await rlm(broker).run_once()
    log = log_of(broker)
    log.delete_old_segments()
    assert log.local_log_start_offset == local_start
    return log


def tip(broker: Broker) -> TopicIdPartition:
    topic_id = log_of(broker).topic_id
    assert topic_id is not None
    return TopicIdPartition(topic_id, TOPIC, 0)


async def test_rolled_segments_are_copied_and_only_then_deleted_locally(broker: Broker, tmp_path: Path) -> None:
    await create(broker, **{"local.retention.bytes": "1"})
    await segments(broker, 10, 3, active=5)  # the active segment is never copied
    log = log_of(broker)
    assert log.delete_old_segments() == 0  # nothing is in remote storage yet: local retention waits
    assert log.highest_offset_in_remote_storage == -1

    await rlm(broker).run_once()
    copied = rlm(broker).rlmm.copied_segments(tip(broker))
    assert [(m.start_offset, m.end_offset) for m in copied] == [(0, 9), (10, 19), (20, 29)]
    assert all(m.state == RemoteLogSegmentState.COPY_SEGMENT_FINISHED for m in copied)
    assert all(m.txn_index_empty and m.segment_leader_epochs[0][1] == m.start_offset for m in copied)
    assert log.highest_offset_in_remote_storage == 29
    files = sorted(p.name for p in (tmp_path / "remote").glob(f"{TOPIC}-0-*/*"))
    assert len(files) == 3 * 5  # .log .index .timeindex .snapshot .leader_epoch_checkpoint, no .txnindex
    assert {f.rsplit(".", 1)[1] for f in files} == {"log", "index", "timeindex", "snapshot", "leader_epoch_checkpoint"}

    assert log.delete_old_segments() == 3
    assert (log.log_start_offset, log.local_log_start_offset) == (0, 30)
    await rlm(broker).run_once()  # nothing new to copy: no duplicate segments
    assert len(rlm(broker).rlmm.list_remote_log_segments(tip(broker))) == 3


@pytest.mark.parametrize("index_interval_bytes", ["4096", "1"])
async def test_reads_below_the_local_start_come_from_the_remote_segment(broker: Broker,
                                                                        index_interval_bytes: str) -> None:
    """Every index density: a read cut after its first batch walks from the index entry below the cut."""
    await create(broker, **{"local.retention.bytes": "1", "index.interval.bytes": index_interval_bytes})
    await segments(broker, 10, 2, active=1)
    log = await copied_and_dropped(broker, 20)
    manager = rlm(broker)

    got = manager.read(log, 13, 1 << 20, min_one_message=True, read_committed=False)
    offsets = [h.base_offset for h, _ in iter_batch_headers(got.records)]
    assert offsets == list(range(13, 20))  # from the batch holding 13 to the end of that remote segment
    # A limit below the first batch: the whole batch when it is the fetch's first, else nothing.
    size = len(build_batch([Record(0, 0, b"k0", b"v" * 100)]))
    assert len(manager.read(log, 13, 10, min_one_message=True, read_committed=False).records) == size
    assert manager.read(log, 13, 10, min_one_message=False, read_committed=False).records == b""
    # A limit inside a later batch: the whole batches before it, no piece of that one (KD-215).
    for limit in (size * 2 + 5, size * 3 - 1, size * 3):
        got = manager.read(log, 0, limit, min_one_message=True, read_committed=False)
        assert len(got.records) == limit // size * size
        assert [h.base_offset for h, _ in iter_batch_headers(got.records)] == list(range(limit // size))
    assert manager.read(log, 13, 1 << 20, min_one_message=True, read_committed=True).aborted == []
    with pytest.raises(Exception, match="does not exist in remote tiered storage"):
        manager.read(log, 25, 100, min_one_message=True, read_committed=False)


async def test_a_read_far_past_its_index_entry_ends_at_a_whole_batch_too(broker: Broker) -> None:
    """A sparse index (one entry per segment here): the batch a read starts at lies more than the
    read's first window past the entry, and a limit inside a later batch still ends the answer
    at the batch before it (KD-215); a limit reaching the segment's end returns it to its end."""
    await create(broker, **{"local.retention.bytes": "1", "index.interval.bytes": str(16 << 20)})
    value = b"v" * 2000
    await append(broker, 100, value=value)
    log_of(broker).roll()
    await append(broker, 1)
    log = await copied_and_dropped(broker, 100)
    manager = rlm(broker)
    whole = manager.read(log, 0, 1 << 20, min_one_message=True, read_committed=False).records  # the segment
    starts = {h.base_offset: pos for h, pos in iter_batch_headers(whole)}
    ends = sorted(pos + h.batch_length + 12 for h, pos in iter_batch_headers(whole))
    assert len(starts) == 100 and ends[-1] == len(whole)
    for start in (0, 60):  # batch 60 starts about 120 KB past the index's only entry
        at = starts[start]
        # The last limit cuts the segment's last batch: past the window the first read fetched.
        for limit in (ends[3] - ends[0] + 7, ends[5] - ends[0] - 1, len(whole) - at - 1000):
            got = manager.read(log, start, limit, min_one_message=True, read_committed=False)
            assert [h.base_offset for h, _ in iter_batch_headers(got.records)][:1] == [start]
            assert len(got.records) == max(e for e in ends if e - at <= limit) - at  # whole batches only
    got = manager.read(log, 90, 1 << 20, min_one_message=True, read_committed=False)
    assert [h.base_offset for h, _ in iter_batch_headers(got.records)] == list(range(90, 100))


async def test_a_read_asks_the_store_only_for_bytes_inside_the_segment(broker: Broker,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A read reaching the end of its remote segment (a consumer's fetch, most often) is one
    ranged read of that segment, never a second one past its end (over S3: a GET answered 416
    for every fetch); a first batch larger than the read's window is still fetched whole."""
    await create(broker, **{"local.retention.bytes": "1"})
    big = b"x" * 100_000  # one batch larger than the window a one-byte read starts with
    await append(broker, 1, value=big)
    log_of(broker).roll()
    await segments(broker, 10, 1, active=1)
    log = await copied_and_dropped(broker, 11)
    manager = rlm(broker)
    sizes = {m.start_offset: m.segment_size_in_bytes for m in manager.rlmm.copied_segments(tip(broker))}
    calls: list[tuple[int, int, int | None]] = []
    fetch = manager.rsm.fetch_log_segment

    def spy(metadata: RemoteLogSegmentMetadata, start: int, end: int | None = None) -> bytes:
        calls.append((metadata.start_offset, start, end))
        return fetch(metadata, start, end)

    monkeypatch.setattr(manager.rsm, "fetch_log_segment", spy)

    got = manager.read(log, 3, 1 << 20, min_one_message=True, read_committed=False)
    assert [h.base_offset for h, _ in iter_batch_headers(got.records)] == list(range(3, 11))
    assert calls == [(1, 0, sizes[1] - 1)]  # the segment's bytes from the index position, once

    calls.clear()
    got = manager.read(log, 0, 1, min_one_message=True, read_committed=False)
    assert len(got.records) == sizes[0]  # the one big batch, whole
    assert [c[0] for c in calls] == [0, 0] and all(end is not None and end < sizes[0] for _, _, end in calls)


async def test_a_copy_left_started_is_deleted_and_a_failed_copy_keeps_the_local_segment(tmp_path: Path) -> None:
    broker = await start(tmp_path)
    try:
        await create(broker, **{"local.retention.bytes": "1"})
        await segments(broker, 10, 1)
        manager = rlm(broker)
        # A copy that never finished (the broker died between the two records).
        dangling = RemoteLogSegmentMetadata(
            RemoteLogSegmentId(tip(broker), uuid_from_base64("AAECAwQFBgcICQoLDA0ODw")), 0, 9, 1, 0, 0, ((0, 0),),
            100, RemoteLogSegmentState.COPY_SEGMENT_STARTED)
        await manager.rlmm.add_remote_log_segment_metadata(dangling)
        # The backend's directory is unusable: the copy fails and is retried later.
        (tmp_path / "remote").rename(tmp_path / "remote-away")
        (tmp_path / "remote").write_bytes(b"not a directory")
        await manager.run_once()
        states = [m.state for m in manager.rlmm.list_remote_log_segments(tip(broker))]
        assert RemoteLogSegmentState.COPY_SEGMENT_FINISHED not in states
        assert manager.stats.failed_copies == 1
        assert log_of(broker).delete_old_segments() == 0  # the only copy is local: it stays
        assert log_of(broker).local_log_start_offset == 0
    finally:
        await broker.shutdown()
    # After a restart with the backend back, both are cleaned up and the segment is copied once.
    (tmp_path / "remote").unlink()
    (tmp_path / "remote-away").rename(tmp_path / "remote")
    broker = await start(tmp_path)
    try:
        manager = rlm(broker)
        await manager.run_once()
        listed = manager.rlmm.list_remote_log_segments(tip(broker))
        assert [(m.start_offset, m.state) for m in listed] == [(0, RemoteLogSegmentState.COPY_SEGMENT_FINISHED)]
        assert log_of(broker).highest_offset_in_remote_storage == 9
    finally:
        await broker.shutdown()


async def test_remote_retention_moves_the_log_start_offset(broker: Broker) -> None:
    await create(broker, **{"local.retention.bytes": "1", "retention.ms": "86400000"})
    day = 86_400_000
    now = broker.clock.milliseconds()
    for age in (3 * day, 2 * day):  # two old segments
        await append(broker, 10, timestamp=now - age)
        log_of(broker).roll()
    await segments(broker, 10, 1, active=1)  # and a fresh one
    manager = rlm(broker)
    await manager.run_once()  # copies all three, then expires the two old ones
    await manager.run_once()
    log = log_of(broker)
    assert log.log_start_offset == 20
    assert [m.start_offset for m in manager.rlmm.copied_segments(tip(broker))] == [20]
    assert manager.stats.deleted_segments == 2

    # DeleteRecords inside a remote segment keeps it; past its end, it goes at the next round.
    await broker.replica_manager.delete_records({TP: 25})
    await manager.run_once()
    assert [m.start_offset for m in manager.rlmm.copied_segments(tip(broker))] == [20]
    await broker.replica_manager.delete_records({TP: 30})
    await manager.run_once()
    assert manager.rlmm.copied_segments(tip(broker)) == []
    assert log.log_start_offset == 30


async def test_metadata_and_the_highest_remote_offset_survive_a_restart(tmp_path: Path) -> None:
    broker = await start(tmp_path)
    try:
        await create(broker, **{"local.retention.bytes": "1"})
        await segments(broker, 10, 2, active=1)
        await rlm(broker).run_once()
        log_of(broker).delete_old_segments()
    finally:
        await broker.shutdown()
    broker = await start(tmp_path)
    try:
        log = log_of(broker)
        assert (log.log_start_offset, log.local_log_start_offset, log.highest_offset_in_remote_storage) == (0, 20, 19)
        got = rlm(broker).read(log, 0, 1 << 20, min_one_message=True, read_committed=False)
        assert [h.base_offset for h, _ in iter_batch_headers(got.records)] == list(range(10))
    finally:
        await broker.shutdown()


async def wait_for(condition: Callable[[], bool], timeout: float = 10) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)  # polling a condition, bounded by the deadline


async def test_deleting_a_tiered_topic_deletes_its_remote_segments(broker: Broker, tmp_path: Path) -> None:
    await create(broker)
    await segments(broker, 10, 2, active=1)
    manager = rlm(broker)
    await manager.run_once()
    partition = tip(broker)
    assert len(manager.rlmm.copied_segments(partition)) == 2
    await broker.topics.delete_topic(TOPIC)
    await wait_for(lambda: not list((tmp_path / "remote").glob(f"{TOPIC}-0-*/*")))
    await wait_for(lambda: manager.rlmm.list_remote_log_segments(partition) == [])
    assert manager.stats.deleted_segments == 2


async def test_turning_remote_storage_off_with_delete_on_disable(broker: Broker, tmp_path: Path) -> None:
    await create(broker, **{"local.retention.bytes": "1"})
    await segments(broker, 10, 2, active=1)
    manager = rlm(broker)
    await manager.run_once()
    log = log_of(broker)
    log.delete_old_segments()
    assert (log.log_start_offset, log.local_log_start_offset) == (0, 20)
    await broker.topics.incremental_alter_configs(TOPIC, [("remote.storage.enable", 0, "false"),
                                                          ("remote.log.delete.on.disable", 0, "true")])
    assert not log.remote_log_enabled
    assert log.log_start_offset == 20  # what was only remote is gone
    # The background deletion removes each segment's files, then records DELETE_SEGMENT_FINISHED:
    # wait for both (waiting on the files alone raced the last record under load).
    await wait_for(lambda: not list((tmp_path / "remote").glob(f"{TOPIC}-0-*/*"))
                   and manager.rlmm.list_remote_log_segments(tip(broker)) == [])
    await manager.run_once()  # not tiered any more: nothing is copied again
    assert manager.rlmm.list_remote_log_segments(tip(broker)) == []
    assert not list((tmp_path / "remote").glob(f"{TOPIC}-0-*/*"))


async def test_list_offsets_by_time_searches_the_remote_segments_first(broker: Broker) -> None:
    await create(broker, **{"local.retention.bytes": "1"})
    base = broker.clock.milliseconds() - 1_000_000
    for segment in range(3):  # record i of segment s stamped base + s*1000 + i*10
        for i in range(10):
            batch = build_batch([Record(0, base + segment * 1000 + i * 10, b"k", b"v" * 100)])
            await broker.replica_manager.append_records({TP: batch}, acks=-1, transactional_id=None, produce_version=9)
        log_of(broker).roll()
    await append(broker, 1)
    log = await copied_and_dropped(broker, 30)

    async def by_time(ts: int) -> tuple[int, int]:
        found = (await broker.replica_manager.fetch_offsets({TP: OffsetQuery(ts)}, version=9,
                                                             read_committed=False))[TP]
        return found.offset, found.timestamp

    assert await by_time(base) == (0, base)
    assert await by_time(base + 1005) == (11, base + 1010)  # between records: the next one
    assert await by_time(base + 2090) == (29, base + 2090)
    assert (await by_time(base + 2095))[0] == 30  # past the remote tier: the local segment's record
    await broker.replica_manager.delete_records({TP: 15})
    assert await by_time(base) == (15, base + 1050)  # never below the log start offset


def remote_log_file(tmp_path: Path, start_offset: int) -> Path:
    """The `.log` of the copied remote segment starting at `start_offset` (LocalTieredStorage
    names it for its base offset, as Kafka names a segment)."""
    found = list((tmp_path / "remote").glob(f"{TOPIC}-0-*/{start_offset:020d}-*.log"))
    assert len(found) == 1, found
    return found[0]


async def test_a_corrupt_remote_batch_length_fails_the_read_and_never_spins(broker: Broker, tmp_path: Path) -> None:
    """A remote batch declaring an impossible length (-12 steps nowhere): a read walking past it
    raises CorruptRecordError and the Fetch answers CORRUPT_MESSAGE, as locally, rather than
    holding an IO thread in a loop. A read from an earlier batch never parses it: the bytes go
    out as stored, and the consumer's CRC check rejects that batch (as with Kafka)."""
    await create(broker, **{"local.retention.bytes": "1", "index.interval.bytes": str(16 << 20)})
    await segments(broker, 10, 1, active=1)
    log = await copied_and_dropped(broker, 10)
    manager = rlm(broker)
    whole = manager.read(log, 0, 1 << 20, min_one_message=True, read_committed=False).records
    starts = [pos for _, pos in iter_batch_headers(whole)]
    with remote_log_file(tmp_path, 0).open("r+b") as f:
        f.seek(starts[3] + 8)
        f.write(struct.pack(">i", -12))
    stored = remote_log_file(tmp_path, 0).read_bytes()
    for committed in (False, True):  # found before the bad header: the bytes are served as stored
        got = manager.read(log, 2, 1 << 20, min_one_message=True, read_committed=committed)
        assert got.records == stored[starts[2]:] and got.aborted == ([] if committed else None)
    for committed in (False, True):
        with pytest.raises(CorruptRecordError):
            manager.read(log, 5, 1 << 20, min_one_message=True, read_committed=committed)
    reads = [PartitionRead(TOPIC, None, 0, 5, 1 << 20)]
    (answer,) = await broker.replica_manager.fetch_messages(
        reads, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, read_committed=False,
        use_file_regions=False)
    assert answer.error == ErrorCode.CORRUPT_MESSAGE


async def test_a_time_search_stops_at_a_remote_header_cut_by_the_segment_end(broker: Broker, tmp_path: Path) -> None:
    """ListOffsets by time reaching a remote segment that ends inside a batch header whose length
    field is garbage: the search ends there (no record found in that segment) and goes on
    locally, rather than stepping back by that length forever."""
    await create(broker, **{"local.retention.bytes": "1"})
    base = broker.clock.milliseconds() - 1_000_000
    for i in range(10):  # record i stamped base + i*10
        batch = build_batch([Record(0, base + i * 10, b"k", b"v" * 100)])
        await broker.replica_manager.append_records({TP: batch}, acks=-1, transactional_id=None, produce_version=9)
    log_of(broker).roll()
    await append(broker, 1)
    await copied_and_dropped(broker, 10)
    path = remote_log_file(tmp_path, 0)
    whole = path.read_bytes()
    last = [pos for _, pos in iter_batch_headers(whole)][-1]
    path.write_bytes(whole[:last + 8] + struct.pack(">i", -12) + whole[last + 12:last + 20])
    found = (await broker.replica_manager.fetch_offsets({TP: OffsetQuery(base + 90)}, version=9,
                                                         read_committed=False))[TP]
    assert (found.error, found.offset) == (ErrorCode.NONE, 10)  # record 9 is cut away: the local record


async def test_a_topic_deletion_the_store_refused_finishes_at_the_next_start(tmp_path: Path) -> None:
    broker = await start(tmp_path)
    try:
        await create(broker)
        await segments(broker, 10, 2, active=1)
        manager = rlm(broker)
        await manager.run_once()
        partition = tip(broker)
        (tmp_path / "remote").rename(tmp_path / "remote-away")  # deletes fail: the store is unusable
        (tmp_path / "remote").write_bytes(b"not a directory")
        await broker.topics.delete_topic(TOPIC)
        await wait_for(lambda: all(m.state == RemoteLogSegmentState.DELETE_SEGMENT_STARTED
                                   for m in manager.rlmm.list_remote_log_segments(partition))
                       and not manager._background)
        assert len(manager.rlmm.list_remote_log_segments(partition)) == 2
    finally:
        await broker.shutdown()
    (tmp_path / "remote").unlink()
    (tmp_path / "remote-away").rename(tmp_path / "remote")
    assert len(list((tmp_path / "remote").glob(f"{TOPIC}-0-*/*"))) == 10
    broker = await start(tmp_path)
    try:
        assert rlm(broker).rlmm.list_remote_log_segments(partition) == []
        assert not list((tmp_path / "remote").glob(f"{TOPIC}-0-*/*"))
    finally:
        await broker.shutdown()


async def test_copies_keep_under_the_copy_rate_which_changes_at_runtime(broker: Broker) -> None:
    await create(broker)
    await segments(broker, 10, 3, active=1)
    segment_bytes = log_of(broker).segments.values()[0].size()
    # Three segments at one segment's worth of bytes per 0.4 s: at least 0.8 s after the first.
    await broker.topics.alter_broker_configs(str(broker.config.node_id), [
        ("remote.log.manager.copy.max.bytes.per.second", 0, str(int(segment_bytes / 0.4)))])
    loop = asyncio.get_running_loop()
    started = loop.time()
    await rlm(broker).run_once()
    assert len(rlm(broker).rlmm.copied_segments(tip(broker))) == 3
    assert loop.time() - started >= 0.8


async def test_a_remote_read_the_store_fails_answers_unknown_server_error(broker: Broker, tmp_path: Path) -> None:
    """As Kafka maps a RemoteStorageException; the local tail and the rest of the fetch are served."""
    await create(broker, **{"local.retention.bytes": "1"})
    await segments(broker, 10, 2, active=3)
    await rlm(broker).run_once()
    log_of(broker).delete_old_segments()
    (tmp_path / "remote").rename(tmp_path / "remote-away")
    reads = [PartitionRead(TOPIC, None, 0, 5, 1 << 20), PartitionRead(TOPIC, None, 0, 21, 1 << 20)]
    remote_read, local_read = await broker.replica_manager.fetch_messages(
        reads, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, read_committed=False,
        use_file_regions=False)
    assert remote_read.error == ErrorCode.UNKNOWN_SERVER_ERROR
    assert local_read.error == ErrorCode.NONE and local_read.size > 0
    assert rlm(broker).stats.failed_fetches == 1


async def test_remote_copy_lag_holds_segments_back_as_kafka_does(broker: Broker) -> None:
    """remote.copy.lag.ms and .bytes set: a segment goes once it is old enough, or once the
    bytes after it reach the size lag (Kafka 4.4's isEligibleForUpload)."""
    await create(broker, **{"remote.copy.lag.ms": "3600000", "local.retention.ms": "7200000",
                            "remote.copy.lag.bytes": "100000", "local.retention.bytes": "200000"})
    day = 86_400_000
    await append(broker, 10, timestamp=broker.clock.milliseconds() - day)  # old: goes by time
    log_of(broker).roll()
    await segments(broker, 10, 2, active=1)  # recent, and little after them: held back
    await rlm(broker).run_once()
    assert [m.start_offset for m in rlm(broker).rlmm.copied_segments(tip(broker))] == [0]
    await broker.topics.incremental_alter_configs(TOPIC, [("remote.copy.lag.bytes", 0, "1")])
    await rlm(broker).run_once()  # by size now: every rolled segment has a byte after it
    assert [m.start_offset for m in rlm(broker).rlmm.copied_segments(tip(broker))] == [0, 10, 20]


async def test_a_store_that_does_not_answer_delays_a_fetch_only_remote_fetch_max_wait_ms(tmp_path: Path) -> None:
    """The S3 server is stopped (SIGSTOP) mid-service: a fetch of a remote and a local offset is
    answered after remote.fetch.max.wait.ms, the remote partition with no records and no error
    (Kafka's expired DelayedRemoteFetch), the local one with its records; once the store
    answers again, so does the remote read."""
    from asyncbroker.testing.s3_server import S3Server

    with S3Server() as s3:
        bucket = s3.create_bucket("tiers")
        broker = Broker(KafkaConfig.load(None, [
            f"log.dirs={tmp_path / 'logs'}", "listeners=PLAINTEXT://127.0.0.1:0",
            "remote.log.storage.system.enable=true",
            "remote.log.storage.manager.class.name=asyncbroker.S3RemoteStorageManager",
            *s3.broker_overrides(bucket), "rsm.config.s3.read.timeout.ms=60000",
            "rlmm.config.remote.log.metadata.topic.num.partitions=3", "remote.fetch.max.wait.ms=300",
            "remote.log.manager.task.interval.ms=3600000", "log.initial.task.delay.ms=3600000"], {}))
        await broker.startup()
        try:
            await create(broker, **{"local.retention.bytes": "1"})
            await segments(broker, 10, 2, active=3)
            await rlm(broker).run_once()
            log_of(broker).delete_old_segments()
            assert s3.process is not None
            os.kill(s3.process.pid, signal.SIGSTOP)
            try:
                reads = [PartitionRead(TOPIC, None, 0, 5, 1 << 20), PartitionRead(TOPIC, None, 0, 21, 1 << 20)]
                loop = asyncio.get_running_loop()
                started = loop.time()
                remote_read, local_read = await broker.replica_manager.fetch_messages(
                    reads, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, read_committed=False,
                    use_file_regions=False)
                assert loop.time() - started < 10  # not the store's 60 s read timeout
                assert (remote_read.error, remote_read.size) == (ErrorCode.NONE, 0)
                assert remote_read.log_start_offset == 0 and remote_read.high_watermark == 23
                assert local_read.error == ErrorCode.NONE and local_read.size > 0
            finally:
                os.kill(s3.process.pid, signal.SIGCONT)
            (again,) = await broker.replica_manager.fetch_messages(
                [PartitionRead(TOPIC, None, 0, 5, 1 << 20)], replica_id=-1, max_wait_ms=0, min_bytes=0,
                max_bytes=1 << 20, read_committed=False, use_file_regions=False)
            assert again.error == ErrorCode.NONE and again.size > 0
        finally:
            await broker.shutdown()
