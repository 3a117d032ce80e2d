"""LogJobs: LogManager's background jobs, run by the broker on its event loop.

The seeds' five LogManager tasks plus ReplicaManager's high-watermark checkpoint, with
Kafka's names, each first run after `log.initial.task.delay.ms`:

    kafka-log-retention               every log.retention.check.interval.ms: deleteOldSegments
    kafka-log-flusher                 every log.flush.scheduler.interval.ms: flush.ms rule
    kafka-recovery-point-checkpoint   every log.flush.offset.checkpoint.interval.ms
    kafka-log-start-offset-checkpoint every log.flush.start.offset.checkpoint.interval.ms
    kafka-delete-logs                 self-rescheduling to the next due `-delete` directory
    highwatermark-checkpoint          every replica.high.watermark.checkpoint.interval.ms
    delete-file                       once, file.delete.delay.ms after a retention pass
                                      that renamed segments `.deleted`

The storage work is synchronous (storage imports no asyncio) and runs on the Scheduler's
threads; this module only decides when, in what order, and what to log.

Retention and the cleaner. Kafka's retention task first pauses the cleaner on every
non-compacted partition (`LogCleanerManager.pauseCleaningForNonCompactedPartitions`), deletes
their old segments, then resumes them; compacted logs get their `deleteOldSegments` from the
cleaner thread after each clean. Pass the cleaner's manager as `cleaner_manager` and exactly
that happens:

    cleaner_manager.pause_cleaning_for_non_compacted_partitions() -> [(TopicPartition, Log)]
    cleaner_manager.resume_cleaning(partitions: list[TopicPartition]) -> None

Until a cleaner exists (`cleaner_manager` is None) retention runs `delete_old_segments` on
every log itself, so `compact,delete` topics are still bounded and compact-only ones still
drop segments below their log start offset, which is the share the cleaner would do.

The test/CI levers: `run_retention_now()` runs a pass at once and returns what it did;
`advance_clock(ms)` moves the broker's AdjustableClock forward and immediately removes what
has become due (`-delete` directories, `.deleted` segment files). Together a test of
`retention.ms=7d` takes milliseconds and sees the same deletions a production broker would.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from storage.errors import KafkaStorageError
from storage.topic_partition import TopicPartition

from asyncbroker.scheduler import NEVER_MS, Scheduler

if TYPE_CHECKING:
    from cleaner.log_cleaner_manager import LogCleanerManager
    from storage.clock import Clock
    from storage.log import Log
    from storage.log_manager import LogManager

    from asyncbroker.config import KafkaConfig

logger = logging.getLogger(__name__)

RETENTION = "kafka-log-retention"
FLUSHER = "kafka-log-flusher"
RECOVERY_POINT_CHECKPOINT = "kafka-recovery-point-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "kafka-log-start-offset-checkpoint"
DELETE_LOGS = "kafka-delete-logs"
HIGH_WATERMARK_CHECKPOINT = "highwatermark-checkpoint"
DELETE_FILE = "delete-file"


class SegmentDeletion(msgspec.Struct, frozen=True):
    """What one retention pass removed from one partition."""

    topic: str
    partition: int
    base_offsets: list[int]
    bytes: int
    log_start_offset_before: int
    log_start_offset_after: int


class RetentionRun(msgspec.Struct, frozen=True):
    """The outcome of one kafka-log-retention pass."""

    logs_checked: int
    segments_deleted: int
    bytes_deleted: int
    duration_ms: float
    deletions: list[SegmentDeletion] = msgspec.field(default_factory=list)


class LogJobs:
    """Schedules and runs the log subsystem's periodic work for one broker.

    `config` is the broker's KafkaConfig (only the interval keys are read). `clock` is the
    broker's clock, the same object storage's logs use; `advance_clock` needs it to have an
    `advance(ms)` method (asyncbroker.adjustable_clock.AdjustableClock).
    """

    def __init__(self, log_manager: LogManager, config: KafkaConfig, *, clock: Clock,
                 cleaner_manager: LogCleanerManager | None = None,
                 scheduler: Scheduler | None = None) -> None:
        self.log_manager = log_manager
        self.config = config
        self.clock = clock
        self.cleaner_manager = cleaner_manager
        self.scheduler = scheduler if scheduler is not None else Scheduler(threads=2)
        self.last_retention: RetentionRun | None = None
        self._started = False

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """Schedule every job (call on the broker's running loop, after LogManager.startup)."""
        if self._started:
            return
        self._started = True
        c = self.config
        lm = self.log_manager
        initial = c.log_initial_task_delay_ms
        s = self.scheduler
        s.schedule(RETENTION, self._retention, delay_ms=initial, period_ms=c.log_retention_check_interval_ms)
        s.schedule(FLUSHER, self._blocking(lm.flush_dirty_logs), delay_ms=initial,
                   period_ms=c.log_flush_scheduler_interval_ms)
        s.schedule(RECOVERY_POINT_CHECKPOINT, self._blocking(lm.checkpoint_recovery_offsets),
                   delay_ms=initial, period_ms=c.log_flush_offset_checkpoint_interval_ms)
        s.schedule(LOG_START_OFFSET_CHECKPOINT, self._blocking(lm.checkpoint_log_start_offsets),
                   delay_ms=initial, period_ms=c.log_flush_start_offset_checkpoint_interval_ms)
        s.schedule(DELETE_LOGS, self._delete_logs, delay_ms=initial, period_ms=None)
        loop = asyncio.get_running_loop()

        def wake_delete_logs() -> None:  # called from storage's threads
            loop.call_soon_threadsafe(s.wake, DELETE_LOGS)

        lm.deletion_listener = wake_delete_logs
        # ReplicaManager's task in Kafka: no initial task delay, just the interval.
        hw_interval = c.replica_high_watermark_checkpoint_interval_ms
        s.schedule(HIGH_WATERMARK_CHECKPOINT, self._blocking(lm.checkpoint_high_watermarks),
                   delay_ms=hw_interval, period_ms=hw_interval)
        logger.info(
            "Scheduled log jobs after %d ms: retention every %d ms, flusher every %s, recovery-point checkpoint "
            "every %d ms, log-start-offset checkpoint every %d ms, delete-logs self-rescheduling",
            initial, c.log_retention_check_interval_ms, _interval(c.log_flush_scheduler_interval_ms),
            c.log_flush_offset_checkpoint_interval_ms, c.log_flush_start_offset_checkpoint_interval_ms,
        )

    async def stop(self) -> None:
        """Cancel the jobs and wait for a pass already on a thread to finish."""
        self.log_manager.deletion_listener = None
        await self.scheduler.shutdown()

    def _blocking(self, fn: Callable[[], Any]) -> Callable[[], Any]:
        async def run() -> Any:
            return await self.scheduler.run_blocking(fn)

        run.__qualname__ = getattr(fn, "__qualname__", "job")
        return run

    # -- levers for tests, CI and the monitor console ----------------------------------------
    async def run_retention_now(self) -> RetentionRun:
        """Run a retention pass now (waiting for one in progress first) and return what it did."""
        run: RetentionRun = await self.scheduler.run_now(RETENTION)
        return run

    async def delete_due_files_now(self) -> int:
        """Remove `-delete` directories and `.deleted` segment files whose delay has passed."""
        await self.scheduler.run_now(DELETE_LOGS)
        return await self.scheduler.run_blocking(self._delete_pending_segment_files)

    async def checkpoint_log_start_offsets_now(self) -> None:
        """Write log-start-offset-checkpoint now. DeleteRecords calls this so a crash right after
        it does not bring the deleted records back (Kafka waits for the periodic task), and the
        remote log manager before it deletes remote segments below a log start offset."""
        await self.scheduler.run_now(LOG_START_OFFSET_CHECKPOINT)

    async def advance_clock(self, ms: int) -> int:
        """Move the broker's clock `ms` forward and delete whatever that made due; returns the new
        time. Retention itself still runs on its own interval, or via `run_retention_now`."""
        advance = getattr(self.clock, "advance", None)
        if advance is None:
            raise TypeError(f"the broker's clock {type(self.clock).__name__} cannot be advanced")
        advance(ms)
        now: int = self.clock.milliseconds()
        logger.warning("Clock advanced by %d ms to %d (test/CI lever): time-based rules now see that time", ms, now)
        await self.delete_due_files_now()
        return now

    # -- kafka-log-retention -------------------------------------------------------------------
    async def _retention(self) -> RetentionRun:
        cleaner = self.cleaner_manager
        paused: list[TopicPartition] | None = None
        if cleaner is None:
            logs = self.log_manager.all_logs()
        else:
            pairs = cleaner.pause_cleaning_for_non_compacted_partitions()
            paused = [tp for tp, _ in pairs]
            logs = [log for _, log in pairs]
        try:
            run = await self.scheduler.run_blocking(self.cleanup_logs, logs)
        finally:
            if cleaner is not None and paused is not None:
                self._resume_cleaning(cleaner, paused)
        self.last_retention = run
        if run.segments_deleted:
            # Kafka schedules one "delete-file" task per deletion, file.delete.delay.ms later; one
            # per distinct delay does the same work (each sweep unlinks whatever is due by then).
            touched = {(d.topic, d.partition) for d in run.deletions}
            delays = {log.config.file_delete_delay_ms for log in logs
                      if (log.topic_partition.topic, log.topic_partition.partition) in touched}
            for delay in sorted(delays):
                self.scheduler.schedule_once(DELETE_FILE, self._blocking(self._delete_pending_segment_files),
                                             delay_ms=delay)
        return run

    @staticmethod
    def _resume_cleaning(cleaner: LogCleanerManager, partitions: list[TopicPartition]) -> None:
        """Undo retention's pause partition by partition: one that changed state meanwhile (its
        topic was deleted) must not leave the others paused for good."""
        for tp in partitions:
            try:
                cleaner.resume_cleaning([tp])
            except Exception as exc:  # noqa: BLE001 - the cleaner's state errors are not ours to fix
                logger.warning("Could not resume cleaning of %s after retention: %s", tp, exc)

    def cleanup_logs(self, logs: list[Log]) -> RetentionRun:
        """Blocking: `delete_old_segments` on each log, oldest segments first; then the log start
        offsets are checkpointed at once, before file.delete.delay.ms lets any file go."""
        started = time.monotonic()
        logger.debug("Beginning log cleanup...")
        deletions: list[SegmentDeletion] = []
        total = 0
        for log in logs:
            if log.is_closed:
                continue  # deleted or closed since the list was taken
            before = [(s, s.size()) for s in log.segments.values()]
            start_before = log.log_start_offset
            try:
                count = log.delete_old_segments()
            except (KafkaStorageError, OSError):
                logger.exception("Error while running retention on %s", log.topic_partition)
                continue
            if not count:
                continue
            total += count
            remaining = set(log.segments.base_offsets())
            gone = [(segment, size) for segment, size in before if segment.base_offset not in remaining]
            deletion = SegmentDeletion(log.topic_partition.topic, log.topic_partition.partition,
                                       [segment.base_offset for segment, _ in gone], sum(size for _, size in gone),
                                       start_before, log.log_start_offset)
            deletions.append(deletion)
            logger.info(
                "[UnifiedLog partition=%s, dir=%s] Deleted %d segment(s) with base offsets %s (%d bytes); "
                "log start offset %d -> %d; %d segment(s), %d bytes remain",
                log.topic_partition, log.dir.parent, count, deletion.base_offsets, deletion.bytes,
                start_before, deletion.log_start_offset_after, len(remaining), log.size_in_bytes,
            )
        if deletions:
            # Kafka's invariant "deleted data is not re-exposed": the new log start offsets are on
            # disk before the `.deleted` files are unlinked (file.delete.delay.ms from now).
            self.log_manager.checkpoint_log_start_offsets()
        duration_ms = (time.monotonic() - started) * 1000
        run = RetentionRun(len(logs), total, sum(d.bytes for d in deletions), duration_ms, deletions)
        logger.log(logging.INFO if total else logging.DEBUG,
                   "Log cleanup completed. %d files deleted in %.3f seconds", total, duration_ms / 1000)
        return run

    def _delete_pending_segment_files(self) -> int:
        """Blocking: unlink `.deleted` segment files whose file.delete.delay.ms has passed."""
        removed = 0
        for log in self.log_manager.all_logs():
            try:
                removed += log.delete_pending_files()
            except OSError:
                logger.exception("Error while deleting segment files of %s", log.topic_partition)
        return removed

    # -- kafka-delete-logs ----------------------------------------------------------------------
    async def _delete_logs(self) -> int:
        """Unlink due `-delete` directories, then sleep until the next one is due."""
        try:
            await self.scheduler.run_blocking(self.log_manager.delete_logs)
        except Exception:  # noqa: BLE001 - Kafka's deleteLogs always reschedules itself
            logger.exception("Exception in kafka-delete-logs thread.")
        return self._next_delete_delay_ms()

    def _next_delete_delay_ms(self) -> int:
        """Kafka's nextDeleteDelayMs: time left until the oldest `-delete` entry is due (storage's
        LogManager knows the entries). With none waiting, sleep until a deletion wakes the job,
        as Kafka's deleteLogs blocks on its queue: a timer of file.delete.delay.ms would spin
        when that delay is 0."""
        if not self.log_manager.pending_deletes():
            return NEVER_MS
        return max(0, int(self.log_manager.next_delete_delay_ms()))




def _interval(ms: int) -> str:
    return "never" if ms >= NEVER_MS else f"{ms} ms"
