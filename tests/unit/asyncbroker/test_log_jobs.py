"""LogJobs over a real storage LogManager in a tmp dir: retention, two-phase deletes, topic
deletion, config changes, the clock lever. Time comes from an AdjustableClock over a MockClock,
so `retention.ms=7d` is one `advance_clock` call."""
from __future__ import annotations

import asyncio
import logging
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest

from storage.clock import MockClock
from storage.log_config import LogConfig
from storage.log_manager import LogManager
from storage.offset_checkpoint import LOG_START_OFFSET_CHECKPOINT_FILE, OffsetCheckpointFile
from storage.topic_partition import TopicPartition
from wire.records import Record, build_batch

from asyncbroker.adjustable_clock import AdjustableClock
from asyncbroker.config import KafkaConfig
from asyncbroker.log_jobs import DELETE_LOGS, LogJobs, RetentionRun
from asyncbroker.scheduler import NEVER_MS
from asyncbroker.topics import AlterConfigOp, TopicManager

START_MS = 1_700_000_000_000
DAY_MS = 86_400_000
TP = TopicPartition("t", 0)


def records(n: int = 10, *, ts: int, value_size: int = 90) -> bytes:
    """One batch of n records stamped `ts` (about 100 bytes per record)."""
    return build_batch([Record(offset=i, timestamp=ts, key=b"k%d" % i, value=b"v" * value_size) for i in range(n)])


class Env:
    """A LogManager + LogJobs + TopicManager on one tmp dir, time frozen until advanced."""

    def __init__(self, tmp_path: Path, overrides: list[str]) -> None:
        self.dir = tmp_path / "data"
        self.clock = AdjustableClock(MockClock(START_MS))
        self.config = KafkaConfig.load(None, [f"log.dirs={self.dir}", "log.initial.task.delay.ms=3600000",
                                              *overrides], {})
        self.halts: list[str] = []  # a log dir going offline would halt the broker: record it instead
        self.log_manager = LogManager([self.dir], self.config.log_config_defaults(), clock=self.clock,
                                      halt=self.halts.append)
        self.log_manager.startup()
        self.jobs = LogJobs(self.log_manager, self.config, clock=self.clock)
        self.topics = TopicManager(config=self.config, log_manager=self.log_manager,
                                   run_blocking=self.jobs.scheduler.run_blocking)

    def log(self, config: LogConfig | None = None, tp: TopicPartition = TP):
        return self.log_manager.create_log(tp, config or LogConfig())

    def fill(self, log, batches: int, *, ts: int | None = None) -> None:
        for _ in range(batches):
            log.append_as_leader(records(ts=self.clock.milliseconds() if ts is None else ts))

    async def retention(self) -> RetentionRun:
        return await self.jobs.run_retention_now()


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    e = Env(tmp_path, [])
    e.jobs.start()
    yield e
    await e.jobs.stop()
    e.log_manager.shutdown()
    assert e.halts == []


def segment_files(d: Path, suffix: str) -> list[str]:
    return sorted(p.name for p in d.glob(f"*{suffix}"))


# -- the predicates ------------------------------------------------------------------------------

async def test_cleanup_logs_applies_retention(env: Env) -> None:
    """The one retention pass (LogJobs.cleanup_logs, as the broker runs it): with
    file.delete.delay.ms=0 the deleted segment's files are gone at once."""
    log = env.log(LogConfig(retention_ms=1000, segment_bytes=1 << 20, file_delete_delay_ms=0))
    log.append_as_leader(records(2, ts=env.clock.milliseconds()))
    log.roll()
    log.append_as_leader(records(2, ts=env.clock.milliseconds() + 5000))
    env.clock.advance(2000)
    assert env.jobs.cleanup_logs([log]).segments_deleted == 1
    assert log.log_start_offset == 2 and not list(log.dir.glob("*.deleted"))


async def test_retention_ms_alone_deletes_segments_older_than_retention(env: Env) -> None:
    log = env.log(LogConfig(segment_bytes=3000, retention_ms=7 * DAY_MS))
    env.fill(log, 10)  # ~1 KiB per batch: 5 segments
    env.clock.advance(3 * DAY_MS)
    env.fill(log, 4)
    assert (await env.retention()).segments_deleted == 0  # nothing is 7 days old yet
    await env.jobs.advance_clock(4 * DAY_MS + 1)  # the first batches are now 7 d + 1 ms old
    run = await env.retention()
    assert run.segments_deleted >= 4
    first = log.segments.first_segment()
    assert log.log_start_offset == first.base_offset
    assert first.largest_timestamp() > env.clock.milliseconds() - 7 * DAY_MS  # the first survivor is young
    assert log.log_end_offset == 140


async def test_retention_bytes_alone_keeps_the_newest_segments_within_the_bound(env: Env) -> None:
    log = env.log(LogConfig(segment_bytes=3000, retention_bytes=7000, retention_ms=-1))
    env.fill(log, 40)
    size_before = log.size_in_bytes
    run = await env.retention()
    assert run.segments_deleted > 0 and run.bytes_deleted == size_before - log.size_in_bytes
    # Kafka's rule: drop oldest segments while the excess still covers a whole segment.
    assert 7000 - 3000 < log.size_in_bytes <= 7000 + 3000
    assert log.size_in_bytes - log.segments.first_segment().size() < 7000


async def test_log_start_offset_breach_alone_deletes_segments_wholly_below_it(env: Env) -> None:
    """DeleteRecords then retention: whole segments below the new log start go, the one
    containing it stays, and the log start offset is not moved back to a segment base."""
    log = env.log(LogConfig(segment_bytes=3000, retention_ms=-1, retention_bytes=-1))
    env.fill(log, 20)
    bases = log.segments.base_offsets()
    target = bases[3] + 5
    assert log.maybe_increment_log_start_offset(target, "client delete records")
    run = await env.retention()
    assert run.segments_deleted == 3
    assert log.segments.base_offsets()[0] == bases[3]
    assert log.log_start_offset == target
    # ...and the checkpoint already says so (written by the pass, before any file is unlinked).
    assert OffsetCheckpointFile(env.dir / LOG_START_OFFSET_CHECKPOINT_FILE).read()[TP] == target


async def test_predicates_together_run_in_kafkas_order(env: Env) -> None:
    log = env.log(LogConfig(segment_bytes=3000, retention_bytes=6000, retention_ms=DAY_MS))
    env.fill(log, 12)  # old data
    env.clock.advance(DAY_MS // 2)
    env.fill(log, 12)  # younger data
    bases = log.segments.base_offsets()
    log.maybe_increment_log_start_offset(bases[1] + 1)
    await env.jobs.advance_clock(DAY_MS // 2 + 1)  # the first half is now older than retention.ms
    run = await env.retention()
    (deletion,) = run.deletions
    assert deletion.base_offsets[0] == bases[0]  # the log-start breach went first
    assert log.size_in_bytes <= 6000 + 3000
    assert all(s.largest_timestamp() >= env.clock.milliseconds() - DAY_MS for s in log.segments.values())


async def test_broker_retention_minutes_is_the_default_retention_ms(tmp_path: Path) -> None:
    env = Env(tmp_path, ["log.retention.minutes=10"])
    try:
        defaults = env.log_manager.default_config
        log = env.log_manager.create_log(TP, msgspec.structs.replace(defaults, segment_bytes=3000))
        assert log.config.retention_ms == 600_000
        env.fill(log, 10)
        env.clock.advance(600_001)
        env.jobs.start()
        run = await env.retention()
        assert run.segments_deleted == len(run.deletions[0].base_offsets) > 0
    finally:
        await env.jobs.stop()
        env.log_manager.shutdown()


async def test_mtime_is_the_age_of_a_segment_without_timestamps(env: Env) -> None:
    log = env.log(LogConfig(segment_bytes=3000, retention_ms=DAY_MS))
    for _ in range(10):
        log.append_as_leader(records(ts=-1))  # NO_TIMESTAMP records
    first = log.segments.first_segment()
    assert first.max_timestamp_so_far < 0
    assert (await env.retention()).segments_deleted == 0  # files just written: young
    for segment in log.segments.values()[:2]:
        segment.set_last_modified(env.clock.milliseconds() - 2 * DAY_MS)
    run = await env.retention()
    assert run.segments_deleted == 2


# -- the guards -----------------------------------------------------------------------------------

async def test_high_watermark_guard_keeps_segments_at_or_above_the_hw(env: Env) -> None:
    from storage.log_offset_metadata import LogOffsetMetadata

    log = env.log(LogConfig(segment_bytes=3000, retention_ms=1))
    env.fill(log, 10)
    bases = log.segments.base_offsets()
    # A single node keeps HW == LEO; Kafka lowers it only through replication, which we lack.
    # Pin it inside the third segment to exercise the guard itself.
    log._high_watermark = LogOffsetMetadata(bases[2] + 1)
    env.clock.advance(DAY_MS)
    run = await env.retention()
    assert run.deletions[0].base_offsets == bases[:2]  # the segment holding the HW stays
    assert log.log_start_offset == bases[2] <= log.high_watermark


async def test_never_empty_rolls_a_fresh_segment_when_everything_is_old(env: Env) -> None:
    log = env.log(LogConfig(segment_bytes=3000, retention_ms=DAY_MS))
    env.fill(log, 10)
    leo = log.log_end_offset
    await env.jobs.advance_clock(2 * DAY_MS)
    run = await env.retention()
    assert run.segments_deleted == len(run.deletions[0].base_offsets) >= 4
    assert log.num_segments == 1 and log.active_segment.size() == 0
    assert log.active_segment.base_offset == log.log_start_offset == log.log_end_offset == leo
    assert (await env.retention()).segments_deleted == 0  # an empty active segment is never deleted
    assert log.read(leo, 1000).size == 0  # a consumer at the log start reads (nothing yet)
    env.fill(log, 1)
    assert log.log_end_offset == leo + 10


async def test_future_timestamp_blocks_deletion_of_it_and_everything_after(env: Env) -> None:
    log = env.log(LogConfig(segment_bytes=3000, retention_ms=60_000))
    now = env.clock.milliseconds()
    env.fill(log, 3, ts=now - DAY_MS)      # one old segment
    env.fill(log, 3, ts=now + 1_800_000)   # 30 min in the future (accepted: < message.timestamp.after.max.ms)
    env.fill(log, 6, ts=now - DAY_MS)      # old again, but behind the future one
    bases = log.segments.base_offsets()
    run = await env.retention()
    assert run.deletions[0].base_offsets == bases[:1]
    assert log.segments.base_offsets() == bases[1:]


async def test_future_timestamp_is_logged(env: Env, caplog: pytest.LogCaptureFixture) -> None:
    log = env.log(LogConfig(segment_bytes=3000, retention_ms=60_000))
    env.fill(log, 6, ts=env.clock.milliseconds() + 1_800_000)
    with caplog.at_level(logging.WARNING, logger="storage"):
        await env.retention()
    assert any("future" in r.getMessage().lower() for r in caplog.records)


async def test_each_deleted_segment_is_logged_with_its_rule(env: Env, caplog: pytest.LogCaptureFixture) -> None:
    log = env.log(LogConfig(segment_bytes=3000, retention_ms=60_000))
    env.fill(log, 10)
    env.clock.advance(DAY_MS)
    with caplog.at_level(logging.INFO, logger="storage"):
        run = await env.retention()
    messages = [r.getMessage() for r in caplog.records if r.name.startswith("storage")]
    for base in run.deletions[0].base_offsets:
        assert any(f"baseOffset={base}" in m and "retention time" in m for m in messages), messages


# -- two-phase delete ----------------------------------------------------------------------------

async def test_deleted_files_stay_during_the_delay_and_a_reader_that_opened_first_finishes(env: Env) -> None:
    log = env.log(LogConfig(segment_bytes=3000, retention_ms=DAY_MS, file_delete_delay_ms=60_000))
    env.fill(log, 10)
    expected = log.read(0, 10_000).read_bytes()
    in_flight = log.read(0, 10_000)  # a fetch that captured the first segment's file
    await env.jobs.advance_clock(2 * DAY_MS)
    run = await env.retention()
    assert run.segments_deleted >= 4
    tp_dir = env.dir / "t-0"
    deleted = segment_files(tp_dir, ".deleted")
    assert "00000000000000000000.log.deleted" in deleted
    assert not (tp_dir / "00000000000000000000.log").exists()
    assert in_flight.read_bytes() == expected  # the renamed file still serves the reader
    await env.jobs.advance_clock(59_000)
    assert segment_files(tp_dir, ".deleted") == deleted  # not yet due
    await env.jobs.advance_clock(1_000)
    assert segment_files(tp_dir, ".deleted") == []
    assert in_flight.read_bytes() == expected  # unlinked, the open fd still reads


async def test_leftover_deleted_files_are_removed_at_startup(env: Env) -> None:
    log = env.log(LogConfig(segment_bytes=3000, retention_ms=DAY_MS))
    env.fill(log, 10)
    env.clock.advance(2 * DAY_MS)
    await env.retention()
    tp_dir = env.dir / "t-0"
    assert segment_files(tp_dir, ".deleted")
    await env.jobs.stop()
    env.log_manager.shutdown()  # before file.delete.delay.ms: the files are still there
    assert segment_files(tp_dir, ".deleted")
    env.log_manager = LogManager([env.dir], env.config.log_config_defaults(), clock=env.clock)
    env.log_manager.startup()
    assert segment_files(tp_dir, ".deleted") == []
    env.jobs = LogJobs(env.log_manager, env.config, clock=env.clock)
    env.jobs.start()


async def test_restart_without_clean_shutdown_does_not_re_expose_deleted_records(env: Env) -> None:
    """The pass checkpoints the new log start offset itself: a broker killed right after it
    reopens the partition at that offset, not at an older checkpoint."""
    from storage.log import Log

    log = env.log(LogConfig(segment_bytes=3000, retention_ms=-1))
    env.fill(log, 20)
    target = log.segments.base_offsets()[2] + 7
    log.maybe_increment_log_start_offset(target)
    await env.retention()
    # What a restart after SIGKILL would use: the files on disk, the checkpoint on disk.
    checkpointed = OffsetCheckpointFile(env.dir / LOG_START_OFFSET_CHECKPOINT_FILE).read()[TP]
    snapshot = env.dir.parent / "crash-copy" / "t-0"
    shutil.copytree(env.dir / "t-0", snapshot)  # the partition as a SIGKILL would leave it
    crashed = Log.open(snapshot, LogConfig(), clock=env.clock, log_start_offset=checkpointed)
    try:
        assert crashed.log_start_offset == target
        with pytest.raises(Exception) as err:
            crashed.read(target - 1, 1000)
        assert type(err.value).__name__ == "OffsetOutOfRangeError"
    finally:
        crashed.close()


# -- topics ---------------------------------------------------------------------------------------

async def test_topic_deletion_renames_then_unlinks_after_the_delay_and_the_name_is_free_at_once(env: Env) -> None:
    old = await env.topics.create_topic("orders", 2)
    env.fill(env.log_manager.get_log(TopicPartition("orders", 0)), 3)
    await env.topics.delete_topic("orders")
    assert env.topics.get("orders") is None
    pending = sorted(p.name for p in env.dir.glob("orders-*-delete"))
    assert len(pending) == 2 and all(p.startswith(("orders-0.", "orders-1.")) for p in pending)
    again = await env.topics.create_topic("orders", 1)  # the same name right away
    fresh = env.log_manager.get_log(TopicPartition("orders", 0))
    assert fresh.log_end_offset == 0 and again.topic_id != old.topic_id
    await env.jobs.advance_clock(59_999)
    assert len(list(env.dir.glob("orders-*-delete"))) == 2
    await env.jobs.advance_clock(1)
    assert list(env.dir.glob("orders-*-delete")) == []
    assert (env.dir / "orders-0").is_dir()  # the new topic's partition is untouched


async def test_delete_logs_reschedules_itself_to_the_next_due_directory(env: Env) -> None:
    await env.topics.create_topic("a", 1)
    await env.topics.delete_topic("a")
    assert env.jobs._next_delete_delay_ms() == env.log_manager.file_delete_delay_ms
    env.clock.advance(40_000)
    assert env.jobs._next_delete_delay_ms() == env.log_manager.file_delete_delay_ms - 40_000


async def test_delete_logs_sleeps_until_a_deletion_when_none_is_waiting(tmp_path: Path) -> None:
    # file.delete.delay.ms=0: a timer of that length would spin; Kafka's job blocks on its queue.
    e = Env(tmp_path, ["log.segment.delete.delay.ms=0", "log.initial.task.delay.ms=0"])
    e.jobs.start()
    try:
        job = e.jobs.scheduler.job(DELETE_LOGS)
        deadline = asyncio.get_running_loop().time() + 10
        while job.runs == 0:  # the job's first (empty) run, on a scheduler thread
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.01)
        assert e.jobs._next_delete_delay_ms() == NEVER_MS
        await asyncio.sleep(0.05)
        assert job.runs == 1  # asleep, not spinning
        await e.topics.create_topic("gone", 1)
        await e.topics.delete_topic("gone")  # wakes the job, which unlinks the directory
        deadline = asyncio.get_running_loop().time() + 10
        while list(e.dir.glob("gone-*-delete")) or job.runs < 2:
            assert asyncio.get_running_loop().time() < deadline, "the deletion did not wake kafka-delete-logs"
            await asyncio.sleep(0.01)
    finally:
        await e.jobs.stop()
        e.log_manager.shutdown()


async def test_topic_config_change_applies_on_the_next_run_without_restart(env: Env) -> None:
    mib = 1 << 20
    await env.topics.create_topic("c", 1, configs={"segment.bytes": str(mib)})
    log = env.log_manager.get_log(TopicPartition("c", 0))
    for _ in range(50):  # ~5 MiB
        log.append_as_leader(records(100, ts=env.clock.milliseconds(), value_size=1000))
    assert (await env.retention()).segments_deleted == 0  # retention.bytes unbounded
    await env.topics.incremental_alter_configs("c", [("retention.bytes", AlterConfigOp.SET, str(2 * mib))])
    run = await env.retention()
    assert run.segments_deleted > 0 and log.size_in_bytes <= 3 * mib
    await env.topics.incremental_alter_configs("c", [("retention.ms", AlterConfigOp.SET, "3600000"),
                                                     ("retention.bytes", AlterConfigOp.DELETE, None)])
    await env.jobs.advance_clock(3_600_001)
    assert (await env.retention()).segments_deleted > 0
    assert log.num_segments == 1 and log.size_in_bytes == 0


async def test_compact_delete_topics_are_bounded_and_compact_only_ones_keep_their_segments(env: Env) -> None:
    both = env.log(LogConfig(segment_bytes=3000, retention_bytes=5000, cleanup_policy=("compact", "delete")),
                   TopicPartition("cd", 0))
    compact = env.log(LogConfig(segment_bytes=3000, retention_bytes=5000, cleanup_policy=("compact",)),
                      TopicPartition("co", 0))
    env.fill(both, 30)
    env.fill(compact, 30)
    segments = compact.num_segments
    run = await env.retention()
    assert {(d.topic, d.partition) for d in run.deletions} == {("cd", 0)}
    assert both.size_in_bytes <= 5000 + 3000 and compact.num_segments == segments


# -- the cleaner seam -----------------------------------------------------------------------------

async def test_retention_pauses_the_cleaner_on_the_partitions_it_works_on(env: Env) -> None:
    """With the cleaner's LogCleanerManager: retention takes only the non-compacted partitions
    it could pause (Kafka's pauseCleaningForNonCompactedPartitions), then resumes them;
    compacted ones are the cleaner's, and one paused by someone else is skipped."""
    from cleaner.log_cleaner_manager import LogCleanerManager, Paused

    delete = env.log(LogConfig(segment_bytes=3000, retention_bytes=5000), TopicPartition("d", 0))
    busy = env.log(LogConfig(segment_bytes=3000, retention_bytes=5000), TopicPartition("busy", 0))
    compacted = env.log(LogConfig(segment_bytes=3000, retention_bytes=5000, cleanup_policy=("compact", "delete")),
                        TopicPartition("cd", 0))
    for log in (delete, busy, compacted):
        env.fill(log, 30)
    manager = LogCleanerManager([env.dir], lambda: {log.topic_partition: log for log in env.log_manager.all_logs()},
                                clock=env.clock, run_blocking=env.jobs.scheduler.run_blocking)
    await manager.abort_and_pause_cleaning(busy.topic_partition)  # e.g. a truncation holds it
    env.jobs.cleaner_manager = manager
    run = await env.retention()
    assert {d.topic for d in run.deletions} == {"d"}
    assert delete.topic_partition not in manager.in_progress  # resumed
    assert manager.in_progress[busy.topic_partition] == Paused(1)  # left as it was


# -- scheduling -----------------------------------------------------------------------------------

async def test_jobs_wait_for_the_initial_delay_and_are_named_like_kafkas(env: Env) -> None:
    assert env.jobs.scheduler.job_names() == sorted([
        "kafka-log-retention", "kafka-log-flusher", "kafka-recovery-point-checkpoint",
        "kafka-log-start-offset-checkpoint", "kafka-delete-logs", "highwatermark-checkpoint"])
    assert env.jobs.scheduler.job("kafka-log-retention").runs == 0  # log.initial.task.delay.ms=1h


async def test_advance_clock_refuses_to_go_back(env: Env) -> None:
    with pytest.raises(ValueError):
        await env.jobs.advance_clock(-1)


async def test_retention_logs_segments_rule_sizes_and_offsets(env: Env, caplog: pytest.LogCaptureFixture) -> None:
    log = env.log(LogConfig(segment_bytes=3000, retention_bytes=5000))
    env.fill(log, 30)
    with caplog.at_level(logging.INFO):
        run = await env.retention()
    text = caplog.text
    assert "retention size" in text  # storage's line: which rule
    assert f"base offsets {run.deletions[0].base_offsets}" in text  # which segments, bytes, offsets
    assert f"log start offset 0 -> {log.log_start_offset}" in text
    assert f"Log cleanup completed. {run.segments_deleted} files deleted" in text


async def test_checkpoint_log_start_offsets_now_persists_a_delete_records_at_once(env: Env) -> None:
    log = env.log(LogConfig(segment_bytes=3000, retention_ms=-1))
    env.fill(log, 5)
    log.maybe_increment_log_start_offset(17)
    await env.jobs.checkpoint_log_start_offsets_now()
    assert OffsetCheckpointFile(env.dir / LOG_START_OFFSET_CHECKPOINT_FILE).read()[TP] == 17


async def test_checkpoint_writers_never_race(env: Env) -> None:
    """Retention's log-start checkpoint, the periodic checkpoint jobs (on the other scheduler
    thread) and topic deletion all write the same files; a lost rename race would take the
    log dir offline."""
    import asyncio

    logs = [env.log(LogConfig(segment_bytes=3000, retention_bytes=4000), TopicPartition("r", p)) for p in range(5)]
    jobs = env.jobs
    for round_ in range(20):
        for log in logs:
            env.fill(log, 3)  # something for every retention pass to delete and checkpoint
        work = [jobs.run_retention_now(), jobs.checkpoint_log_start_offsets_now()]
        if round_ % 5 == 0:
            await env.topics.create_topic(f"doomed-{round_}", 2)
            work.append(env.topics.delete_topic(f"doomed-{round_}"))
        await asyncio.wait_for(asyncio.gather(*work), 30)
    assert env.halts == [] and env.log_manager.live_log_dirs


def test_storage_checkpoint_writes_are_serialized(tmp_path: Path) -> None:
    import threading

    halts: list[str] = []
    lm = LogManager([tmp_path / "d"], halt=halts.append)
    lm.startup()
    try:
        for p in range(20):
            lm.create_log(TopicPartition("t", p))

        def hammer() -> None:
            for _ in range(200):
                lm.checkpoint_log_start_offsets()

        threads = [threading.Thread(target=hammer) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert halts == []
    finally:
        lm.shutdown()


async def test_flusher_applies_flush_ms_and_the_checkpoint_jobs_write_their_files(env: Env) -> None:
    from storage.offset_checkpoint import RECOVERY_POINT_CHECKPOINT_FILE

    log = env.log(LogConfig(segment_bytes=3000, flush_ms=1000))
    env.fill(log, 5)
    # The rolls flush the segments they close on a background thread, and a flush stamps
    # the time of the last flush (as Kafka's does): let those finish before the clock moves,
    # or one finishing late would make flush.ms look unelapsed.
    rolled_up_to = log.active_segment.base_offset
    deadline = asyncio.get_running_loop().time() + 10
    while log.recovery_point < rolled_up_to:
        assert asyncio.get_running_loop().time() < deadline, "the rolls' background flushes did not finish"
        await asyncio.sleep(0.01)
    assert log.recovery_point < log.log_end_offset
    await env.jobs.scheduler.run_now("kafka-log-flusher")
    assert log.recovery_point < log.log_end_offset  # flush.ms not yet elapsed
    env.clock.advance(1000)
    await env.jobs.scheduler.run_now("kafka-log-flusher")
    assert log.recovery_point == log.log_end_offset
    await env.jobs.scheduler.run_now("kafka-recovery-point-checkpoint")
    assert OffsetCheckpointFile(env.dir / RECOVERY_POINT_CHECKPOINT_FILE).read()[TP] == log.log_end_offset
