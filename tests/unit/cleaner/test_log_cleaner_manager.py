"""LogCleanerManager: the state machine, checkpoints, selection and uncleanable partitions."""
from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from cleaner.errors import CleanerStateError, LogCleaningAbortedError
from cleaner.log_cleaner_manager import ABORTED, IN_PROGRESS, LogCleanerManager, Paused, PreCleanStats
from cleaner.log_to_clean import cleanable_offsets
from cleaner_testlib import compact_config, put
from storage.log_config import LogConfig
from storage.offset_checkpoint import OffsetCheckpointFile
from storage.topic_partition import TopicPartition
from wire.records import Record, build_batch

TP = TopicPartition("topic", 0)


def _manager(tmp_path: Path, logs: dict, clock) -> LogCleanerManager:
    async def run_inline(fn, *args):
        return fn(*args)

    return LogCleanerManager([tmp_path], lambda: logs, clock=clock, run_blocking=run_inline)


def _dirty_log(make_log, name: str = "topic-0", n: int = 60, keys: int = 5, config: LogConfig | None = None):
    log = make_log(config or compact_config(), name)
    for i in range(n):
        put(log, b"k%d" % (i % keys), b"v%d" % i)
    log.roll()
    return log


async def test_clean_cycle_in_progress_then_none_with_checkpoint(tmp_path, make_log, clock):
    log = _dirty_log(make_log)
    m = _manager(tmp_path, {TP: log}, clock)
    ltc = await m.grab_filthiest_compacted_log()
    assert ltc is not None and ltc.log is log
    assert m.cleaning_state(TP) is IN_PROGRESS
    assert await m.grab_filthiest_compacted_log() is None  # already in progress
    await m.done_cleaning(TP, tmp_path, 42)
    assert m.cleaning_state(TP) is None
    assert OffsetCheckpointFile(tmp_path / "cleaner-offset-checkpoint").read() == {TP: 42}
    assert (tmp_path / "cleaner-offset-checkpoint").read_text() == "0\n1\ntopic 0 42\n"


async def test_pauses_are_reentrant(tmp_path, clock):
    m = _manager(tmp_path, {}, clock)
    await m.abort_and_pause_cleaning(TP)
    await m.abort_and_pause_cleaning(TP)
    assert m.cleaning_state(TP) == Paused(2)
    assert not m.begin_cleaning(TP)
    m.resume_cleaning([TP])
    assert m.cleaning_state(TP) == Paused(1)
    m.resume_cleaning([TP])
    assert m.cleaning_state(TP) is None
    with pytest.raises(CleanerStateError):
        m.resume_cleaning([TP])
    assert m.begin_cleaning(TP)
    with pytest.raises(CleanerStateError):
        m.resume_cleaning([TP])


async def test_abort_and_pause_waits_until_the_worker_has_stopped(tmp_path, clock):
    m = _manager(tmp_path, {}, clock)
    aborted: list[TopicPartition] = []
    m.on_abort = aborted.append
    assert m.begin_cleaning(TP)
    waiter = asyncio.create_task(m.abort_and_pause_cleaning(TP))
    await asyncio.sleep(0)
    assert aborted == [TP] and m.cleaning_state(TP) is ABORTED and not waiter.done()
    with pytest.raises(LogCleaningAbortedError):
        m.check_cleaning_aborted(TP)
    second = asyncio.create_task(m.abort_and_pause_cleaning(TP))  # joins the first abort
    await asyncio.sleep(0)
    await m.done_cleaning(TP, tmp_path, 99)  # the worker unwinds
    await asyncio.wait_for(asyncio.gather(waiter, second), 5)
    assert m.cleaning_state(TP) == Paused(2)
    # An aborted clean does not move the cleaner checkpoint.
    assert OffsetCheckpointFile(tmp_path / "cleaner-offset-checkpoint").read() == {}


async def test_retention_pauses_only_non_compacted_idle_logs(tmp_path, make_log, clock):
    compacted = make_log(compact_config(), "c-0")
    deleting = make_log(LogConfig(), "d-0")
    busy = make_log(LogConfig(), "b-0")
    logs = {l.topic_partition: l for l in (compacted, deleting, busy)}
    m = _manager(tmp_path, logs, clock)
    m.begin_cleaning(busy.topic_partition)
    paused = m.pause_cleaning_for_non_compacted_partitions()
    assert [tp for tp, _ in paused] == [deleting.topic_partition]
    assert m.cleaning_state(deleting.topic_partition) == Paused(1)
    m.resume_cleaning([tp for tp, _ in paused])
    assert m.cleaning_state(deleting.topic_partition) is None


async def test_filthiest_log_wins_and_clean_logs_are_skipped(tmp_path, make_log, clock):
    dirty = _dirty_log(make_log, "dirty-0", n=80)
    less = _dirty_log(make_log, "less-0", n=80)
    logs = {dirty.topic_partition: dirty, less.topic_partition: less}
    m = _manager(tmp_path, logs, clock)
    # "less" was cleaned up to the middle: its ratio is lower.
    mid = less.segments.values()[len(less.segments) // 4].base_offset
    await m.update_checkpoints(tmp_path, update=(less.topic_partition, mid))
    stats = PreCleanStats()
    ltc = await m.grab_filthiest_compacted_log(stats)
    assert ltc.log is dirty and ltc.cleanable_ratio == pytest.approx(1.0)
    assert stats.cleanable_partitions == 2
    ltc2 = await m.grab_filthiest_compacted_log()
    assert ltc2.log is less and 0 < ltc2.cleanable_ratio < 1
    assert m.dirtiest_log_cleanable_ratio == pytest.approx(ltc2.cleanable_ratio)


async def test_below_min_cleanable_ratio_nothing_is_selected_unless_max_lag_forces_it(tmp_path, make_log, clock):
    config = compact_config(min_cleanable_dirty_ratio=0.9)
    log = _dirty_log(make_log, config=config)
    tp = log.topic_partition
    m = _manager(tmp_path, {tp: log}, clock)
    mid = log.segments.values()[len(log.segments) // 2].base_offset
    await m.update_checkpoints(tmp_path, update=(tp, mid))
    assert await m.grab_filthiest_compacted_log() is None
    # max.compaction.lag.ms: the earliest dirty segment has waited too long -> clean now.
    log.update_config(compact_config(min_cleanable_dirty_ratio=0.9, max_compaction_lag_ms=1_000))
    clock.advance(5_000)
    stats = PreCleanStats()
    ltc = await m.grab_filthiest_compacted_log(stats)
    assert ltc is not None and ltc.need_compaction_now and ltc.cleanable_ratio < 0.9
    assert stats.max_compaction_delay_ms >= 4_000 and stats.delayed_partitions == 1


async def test_a_checkpoint_outside_the_log_self_heals(tmp_path, make_log, clock):
    log = _dirty_log(make_log)
    m = _manager(tmp_path, {TP: log}, clock)
    await m.update_checkpoints(tmp_path, update=(TP, 10_000))  # past the log end
    ltc = await m.grab_filthiest_compacted_log()
    assert ltc.first_dirty_offset == log.log_start_offset == 0
    assert OffsetCheckpointFile(tmp_path / "cleaner-offset-checkpoint").read() == {TP: 0}
    await m.done_cleaning(TP, tmp_path, 0)
    log.maybe_increment_log_start_offset(20)
    await m.update_checkpoints(tmp_path, update=(TP, 5))  # below the log start
    assert cleanable_offsets(log, 5, clock.milliseconds()).force_update_checkpoint
    ltc = await m.grab_filthiest_compacted_log()
    assert ltc.first_dirty_offset == 20
    assert OffsetCheckpointFile(tmp_path / "cleaner-offset-checkpoint").read() == {TP: 20}


async def test_cleanable_range_stops_at_the_last_stable_offset(make_log, clock):
    log = make_log(compact_config(segment_bytes=400))
    for i in range(10):
        put(log, b"k%d" % i, b"x" * 50)
    open_txn_offset = log.log_end_offset
    log.append_as_leader(build_batch([Record(0, clock.milliseconds(), b"t", b"open")], producer_id=3,
                                     producer_epoch=0, base_sequence=0, is_transactional=True))
    for i in range(10):
        put(log, b"k%d" % i, b"y" * 50)
    log.roll()
    assert log.last_stable_offset == open_txn_offset
    offsets = cleanable_offsets(log, None, clock.milliseconds())
    assert offsets.first_uncleanable_dirty_offset == open_txn_offset


async def test_uncleanable_partitions_are_skipped_and_forgotten_with_their_log(tmp_path, make_log, clock):
    log = _dirty_log(make_log)
    logs = {TP: log}
    m = _manager(tmp_path, logs, clock)
    m.mark_partition_uncleanable(tmp_path, TP)
    assert m.uncleanable_partitions_count(tmp_path) == 1
    assert await m.uncleanable_bytes(tmp_path) == sum(s.size() for s in log.segments.values()[:-1])
    assert await m.grab_filthiest_compacted_log() is None
    assert m.deletable_logs() == []
    m.maintain_uncleanable_partitions()
    assert m.uncleanable_partitions_count(tmp_path) == 1
    logs.clear()
    m.maintain_uncleanable_partitions()
    assert m.uncleanable_partitions_count(tmp_path) == 0


async def test_deletable_logs_are_the_idle_compacted_ones(tmp_path, make_log, clock):
    a = make_log(compact_config(), "a-0")
    b = make_log(LogConfig(cleanup_policy=("compact", "delete")), "b-0")
    c = make_log(LogConfig(), "c-0")
    logs = {l.topic_partition: l for l in (a, b, c)}
    m = _manager(tmp_path, logs, clock)
    await m.abort_and_pause_cleaning(a.topic_partition)
    got = m.deletable_logs()
    assert [tp for tp, _ in got] == [b.topic_partition]
    assert m.cleaning_state(b.topic_partition) is IN_PROGRESS
    await m.done_deleting([b.topic_partition])
    assert m.cleaning_state(b.topic_partition) is None


async def test_truncation_pulls_the_checkpoint_back(tmp_path, make_log, clock):
    log = _dirty_log(make_log)
    m = _manager(tmp_path, {TP: log}, clock)
    await m.update_checkpoints(tmp_path, update=(TP, 50))
    await m.maybe_truncate_checkpoint(tmp_path, TP, 30)
    assert OffsetCheckpointFile(tmp_path / "cleaner-offset-checkpoint").read() == {TP: 30}
    await m.maybe_truncate_checkpoint(tmp_path, TP, 40)  # never moves it forward
    assert OffsetCheckpointFile(tmp_path / "cleaner-offset-checkpoint").read() == {TP: 30}
    await m.update_checkpoints(tmp_path, remove=TP)
    assert OffsetCheckpointFile(tmp_path / "cleaner-offset-checkpoint").read() == {}


async def test_topic_deletion_aborts_drops_the_checkpoint_and_never_reselects(tmp_path, make_log, clock):
    log = _dirty_log(make_log)
    logs = {TP: log}
    m = _manager(tmp_path, logs, clock)
    await m.update_checkpoints(tmp_path, update=(TP, 10))
    assert m.begin_cleaning(TP)
    aborted: list[TopicPartition] = []
    m.on_abort = aborted.append

    async def worker_unwinds() -> None:
        while not m.is_aborted(TP):
            await asyncio.sleep(0)
        await m.done_cleaning(TP, tmp_path, 10)

    await asyncio.gather(m.abort_cleaning([TP]), worker_unwinds())
    assert aborted == [TP] and m.cleaning_state(TP) is None
    assert OffsetCheckpointFile(tmp_path / "cleaner-offset-checkpoint").read() == {}
    # Still registered while the directory is being renamed: not selectable.
    assert await m.grab_filthiest_compacted_log() is None and m.deletable_logs() == []
    logs.clear()
    m.maintain_uncleanable_partitions()
    assert not m.is_being_deleted(TP)
