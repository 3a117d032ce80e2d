"""LogCleaner with real worker processes: clean_now, the background loop, aborts, failures."""
from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from pathlib import Path

import pytest

from cleaner import worker as worker_module
from cleaner.cleaner_config import CleanerConfig
from cleaner.log_cleaner import LogCleaner, WorkerDiedError
from cleaner.log_cleaner_manager import IN_PROGRESS, Paused
from cleaner_testlib import compact_config, latest_values, leftover_files, put, read_all
from storage.log_config import LogConfig
from storage.offset_checkpoint import OffsetCheckpointFile
from wire.errors import CorruptRecordError


def _fill(log, n: int, keys: int, size: int = 10) -> None:
    for i in range(n):
        put(log, b"k%d" % (i % keys), b"%d-" % i + b"x" * size)


async def _wait_for(predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.01)


def _cleaner(tmp_path: Path, logs: dict, clock, **config) -> LogCleaner:
    values = dict(num_threads=1, dedupe_buffer_size=24 * 50_000, backoff_ms=50, io_buffer_size=64 * 1024)
    values.update(config)
    return LogCleaner(CleanerConfig(**values), [tmp_path], lambda: logs, clock=clock)


async def test_clean_now_compacts_advances_the_checkpoint_and_logs_the_summary(tmp_path, make_log, clock, caplog):
    log = make_log(compact_config())
    _fill(log, 400, 20)
    logs = {log.topic_partition: log}
    lc = _cleaner(tmp_path, logs, clock)
    await lc.startup(background=False)
    try:
        with caplog.at_level(logging.INFO, logger="cleaner.log_cleaner"):
            stats = await lc.clean_now(log.topic_partition, roll=True)
        assert stats is not None and stats.messages_written == 20
        assert len(read_all(log)) == 20
        assert OffsetCheckpointFile(tmp_path / "cleaner-offset-checkpoint").read() == {log.topic_partition: 400}
        summary = "\n".join(r.getMessage() for r in caplog.records)
        assert "Log cleaner thread 0 cleaned log topic-0 (dirty section = [0, 400])" in summary
        for part in ("MB of log processed", "Indexed", "Buffer utilization", "Start size", "End size",
                     "size reduction", "fewer messages"):
            assert part in summary
        assert await lc.clean_now(log.topic_partition) is None  # nothing cleanable any more
        metrics = await lc.metrics()
        assert metrics["dead-threads"] == 0
        assert metrics["uncleanable-partitions-count"] == {str(tmp_path): 0}
        assert "max-compaction-delay-secs" in metrics and "time-since-last-run-ms" in metrics
    finally:
        await lc.shutdown()


async def test_background_loop_cleans_dirty_logs_and_runs_retention_for_compact_delete(tmp_path, make_log, clock):
    compacted = make_log(compact_config(), "c-0")
    both = make_log(compact_config(cleanup_policy=("compact", "delete"), retention_ms=60_000), "b-0")
    _fill(compacted, 200, 5)
    compacted.roll()
    _fill(both, 200, 5)
    both.roll()
    clock.advance(120_000)  # everything in "both" is now past retention.ms
    put(both, b"fresh", b"1")
    logs = {l.topic_partition: l for l in (compacted, both)}
    lc = _cleaner(tmp_path, logs, clock)
    await lc.startup()
    try:
        # Retention moves the log start first, then removes the segments below it (Kafka's order):
        # read_all reads segment files, so wait for the segments to leave too.
        await _wait_for(lambda: len(read_all(compacted)) == 5 and both.log_start_offset == 200
                        and min(s.base_offset for s in both.segments.values()) == 200)
        assert latest_values(both) == {b"fresh": b"1"}
    finally:
        await lc.shutdown()


async def test_an_exception_marks_the_partition_uncleanable_and_others_keep_being_cleaned(tmp_path, make_log, clock):
    bad = make_log(compact_config(), "bad-0")
    good = make_log(compact_config(), "good-0")
    for log in (bad, good):
        _fill(log, 100, 5)
        log.roll()
    with open(bad.segments.values()[0].log.path, "r+b") as f:
        f.seek(70)
        f.write(b"\xff\xff\xff")
    logs = {l.topic_partition: l for l in (bad, good)}
    lc = _cleaner(tmp_path, logs, clock)
    await lc.startup()
    try:
        await _wait_for(lambda: len(read_all(good)) == 5 and lc.manager.uncleanable_partitions_count(tmp_path) == 1)
        assert lc.manager.is_uncleanable_partition(bad, bad.topic_partition)
        metrics = await lc.metrics()
        assert metrics["uncleanable-partitions-count"] == {str(tmp_path): 1}
        assert metrics["uncleanable-bytes"][str(tmp_path)] > 0
        assert leftover_files(bad.dir) == []
        _fill(good, 50, 5)
        good.roll()
        await _wait_for(lambda: len(read_all(good)) == 5)
        with pytest.raises(CorruptRecordError):
            await lc.clean_now(bad.topic_partition)
    finally:
        await lc.shutdown()


async def test_abort_and_pause_stops_a_running_clean_and_removes_its_output(tmp_path, make_log, clock):
    log = make_log(compact_config(segment_bytes=16 * 1024))
    _fill(log, 3000, 50, size=60)
    log.roll()
    before = read_all(log)
    tp = log.topic_partition
    lc = _cleaner(tmp_path, {tp: log}, clock, max_io_bytes_per_second=100_000.0, io_buffer_size=8 * 1024)
    await lc.startup(background=False)
    try:
        task = asyncio.create_task(lc.clean_now(tp))
        await _wait_for(lambda: lc._running[0] == tp)
        assert lc.manager.cleaning_state(tp) is IN_PROGRESS
        await asyncio.wait_for(lc.abort_and_pause_cleaning(tp), 20)
        assert lc.manager.cleaning_state(tp) == Paused(1)
        assert leftover_files(log.dir) == []
        assert read_all(log) == before
        assert OffsetCheckpointFile(tmp_path / "cleaner-offset-checkpoint").read() == {}  # aborted: untouched
        # A paused partition is not cleaned; resuming lets clean_now proceed.
        assert not task.done()
        lc.resume_cleaning([tp])
        lc.update_max_io_bytes_per_second(1e300)  # reconfigured live: no need to stay slow
        stats = await asyncio.wait_for(task, 60)
        assert stats is not None and len(read_all(log)) == 50
    finally:
        await lc.shutdown()


async def test_a_dead_worker_is_replaced_and_counted(tmp_path, make_log, clock):
    slow = make_log(compact_config(segment_bytes=16 * 1024), "slow-0")
    _fill(slow, 3000, 50, size=60)
    slow.roll()
    other = make_log(compact_config(), "other-0")
    _fill(other, 100, 5)
    other.roll()
    logs = {l.topic_partition: l for l in (slow, other)}
    lc = _cleaner(tmp_path, logs, clock, max_io_bytes_per_second=100_000.0, io_buffer_size=8 * 1024)
    await lc.startup(background=False, prestart=True)  # the worker is up: its pid, before the clean
    try:
        loop = asyncio.get_running_loop()
        pid = await loop.run_in_executor(lc._executors[0], worker_module.worker_pid, 0)
        task = asyncio.create_task(lc.clean_now(slow.topic_partition))
        await _wait_for(lambda: lc._running[0] == slow.topic_partition)
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(WorkerDiedError):
            await asyncio.wait_for(task, 30)
        assert lc.dead_threads == 1 and (await lc.metrics())["dead-threads"] == 1
        assert lc.manager.is_uncleanable_partition(slow, slow.topic_partition)
        assert leftover_files(slow.dir) == []
        assert lc.manager.cleaning_state(slow.topic_partition) is None
        stats = await lc.clean_now(other.topic_partition)
        assert stats is not None and len(read_all(other)) == 5
        new_pid = await loop.run_in_executor(lc._executors[0], worker_module.worker_pid, 0)
        assert new_pid != pid
    finally:
        await lc.shutdown()


async def test_two_workers_clean_two_logs(tmp_path, make_log, clock):
    logs = {}
    for name in ("a-0", "b-0"):
        log = make_log(compact_config(), name)
        _fill(log, 300, 10)
        log.roll()
        logs[log.topic_partition] = log
    lc = _cleaner(tmp_path, logs, clock, num_threads=2)
    await lc.startup(background=False)
    try:
        results = await asyncio.gather(*(lc.clean_now(tp) for tp in logs))
        assert all(r is not None for r in results)
        assert all(len(read_all(l)) == 10 for l in logs.values())
    finally:
        await lc.shutdown()


def test_non_compacted_logs_are_ignored(tmp_path, make_log, clock):
    log = make_log(LogConfig(segment_bytes=2048))
    _fill(log, 100, 5)
    log.roll()

    async def run() -> None:
        lc = _cleaner(tmp_path, {log.topic_partition: log}, clock, num_threads=1)
        lc_manager = lc.manager
        assert await lc_manager.grab_filthiest_compacted_log() is None

    asyncio.run(run())


async def test_a_full_map_cleans_a_prefix_and_the_checkpoint_records_where_it_stopped(tmp_path, make_log, clock):
    log = make_log(compact_config(segment_bytes=1_000_000))
    for i in range(50):
        put(log, b"k%d" % i, b"old")
    for i in range(50):
        put(log, b"k%d" % i, b"new")
    log.roll()
    tp = log.topic_partition
    lc = _cleaner(tmp_path, {tp: log}, clock, dedupe_buffer_size=24 * 20)  # 20 slots, 18 usable
    await lc.startup(background=False)
    try:
        stats = await lc.clean_now(tp)
        assert stats.buffer_utilization == pytest.approx(0.9)
        assert OffsetCheckpointFile(tmp_path / "cleaner-offset-checkpoint").read() == {tp: 18}
        for _ in range(20):  # each clean covers the next prefix of the dirty range
            if await lc.clean_now(tp) is None:
                break
        assert OffsetCheckpointFile(tmp_path / "cleaner-offset-checkpoint").read() == {tp: 100}
        assert latest_values(log) == {b"k%d" % i: b"new" for i in range(50)}
    finally:
        await lc.shutdown()


async def test_built_over_storage_log_manager(tmp_path, clock):
    from storage.log_manager import LogManager
    from storage.topic_partition import TopicPartition

    manager = LogManager([tmp_path / "data"], compact_config(), clock=clock)
    manager.startup()
    try:
        log = manager.create_log(TopicPartition("t", 0), compact_config())
        _fill(log, 120, 4)
        lc = LogCleaner.for_log_manager(CleanerConfig(dedupe_buffer_size=24 * 10_000, backoff_ms=50), manager)
        await lc.startup(background=False)
        try:
            assert await lc.clean_now(TopicPartition("t", 0), roll=True) is not None
            assert len(read_all(log)) == 4
        finally:
            await lc.shutdown()
    finally:
        manager.shutdown()


def _descendants(pid: int) -> set[int]:
    """Processes below `pid` (the forkserver is a child, workers are its children)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found: set[int] = set()
    frontier = [pid]
    while frontier:
        p = frontier.pop()
        for child, parent in parents.items():
            if parent == p and child not in found:
                found.add(child)
                frontier.append(child)
    return found


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


async def test_workers_start_with_the_first_compacted_log_not_before(tmp_path, make_log, clock):
    plain = make_log(LogConfig(), "plain-0")
    _fill(plain, 50, 5)
    logs = {plain.topic_partition: plain}
    before = _descendants(os.getpid())
    lc = _cleaner(tmp_path, logs, clock, backoff_ms=3_600_000)  # one background round, then clean_now's
    lc.manager.time_of_last_run = -1
    await lc.startup(background=True)
    try:
        await _wait_for(lambda: lc.manager.time_of_last_run >= 0)  # a round looked for work
        extra = [_cmdline(p) for p in _descendants(os.getpid()) - before]
        assert extra == [], extra  # no forkserver, worker or resource tracker
        compacted = make_log(compact_config(), "compacted-0")
        _fill(compacted, 200, 10)
        logs[compacted.topic_partition] = compacted
        stats = await lc.clean_now(compacted.topic_partition, roll=True)
        assert stats is not None and stats.messages_written == 10
        assert latest_values(compacted) == {b"k%d" % k: b"%d-" % (190 + k) + b"x" * 10 for k in range(10)}
        started = [_cmdline(p) for p in _descendants(os.getpid()) - before]
        assert any("forkserver" in c for c in started), started  # the first clean started its worker
    finally:
        await lc.shutdown()
