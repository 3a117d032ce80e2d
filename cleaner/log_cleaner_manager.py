"""LogCleanerManager: which partition is cleaned next, and who may touch it meanwhile.

The per-partition state machine (Kafka's LogCleaningState):

    (none) --grab filthiest / deletable--> InProgress --done--> (none)
    InProgress --abort_and_pause_cleaning--> Aborted --worker stopped--> Paused(1)
    (none) --abort_and_pause / pause--> Paused(1);  Paused(n) --pause--> Paused(n+1)
    Paused(n) --resume_cleaning--> Paused(n-1) ... Paused(1) --resume--> (none)

Retention, truncation, DeleteRecords and topic deletion call `abort_and_pause_cleaning`
(which returns only once the worker has stopped and removed its partial `.cleaned`
output), do their work, then `resume_cleaning`. Pauses are reentrant.

Everything here runs on the broker's event loop (single-threaded, so the state needs no
lock); file work (checkpoints, segment scans) goes through `run_blocking`.
"""
from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterable, Mapping

import msgspec

from cleaner.errors import CleanerStateError, LogCleaningAbortedError
from cleaner.log_to_clean import LogToClean, cleanable_bytes, cleanable_offsets, max_compaction_delay
from storage.clock import SYSTEM_CLOCK, Clock
from storage.offset_checkpoint import CLEANER_OFFSET_CHECKPOINT_FILE, OffsetCheckpointFile
from storage.topic_partition import TopicPartition
from wire.errors import KafkaError

if TYPE_CHECKING:
    from storage.log import Log

__all__ = [
    "LogCleanerManager",
    "LogCleaningState",
    "IN_PROGRESS",
    "ABORTED",
    "Paused",
    "PreCleanStats",
    "LogCleaningException",
]

logger = logging.getLogger(__name__)


class _InProgress:
    def __repr__(self) -> str:
        return "LogCleaningInProgress"


class _Aborted:
    def __repr__(self) -> str:
        return "LogCleaningAborted"


IN_PROGRESS = _InProgress()
ABORTED = _Aborted()


class Paused(msgspec.Struct, frozen=True):
    count: int

    def __repr__(self) -> str:
        return f"LogCleaningPaused({self.count})"


LogCleaningState = _InProgress | _Aborted | Paused


class PreCleanStats:
    """What one selection saw (Kafka's PreCleanStats): for the metrics and summary line."""

    def __init__(self) -> None:
        self.max_compaction_delay_ms = 0
        self.delayed_partitions = 0
        self.cleanable_partitions = 0

    def update_max_compaction_delay(self, delay_ms: int) -> None:
        self.max_compaction_delay_ms = max(self.max_compaction_delay_ms, delay_ms)
        if delay_ms > 0:
            self.delayed_partitions += 1

    def record_cleanable_partitions(self, n: int) -> None:
        self.cleanable_partitions = n


class LogCleaningException(Exception):
    """Selection or cleaning of `log` failed unexpectedly; the partition becomes uncleanable."""

    def __init__(self, log: "Log", message: str) -> None:
        super().__init__(message)
        self.log = log


RunBlocking = Callable[..., Awaitable[Any]]


async def _run_in_default_executor(fn: Callable[..., Any], *args: Any) -> Any:
    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)


def _parent_dir(log: "Log") -> str:
    return str(Path(log.dir).parent)


class LogCleanerManager:
    def __init__(self, log_dirs: Iterable[Path | str], logs: Callable[[], Mapping[TopicPartition, "Log"]], *,
                 clock: Clock = SYSTEM_CLOCK, run_blocking: RunBlocking | None = None) -> None:
        self.log_dirs = [Path(d) for d in log_dirs]
        self._logs = logs
        self.clock = clock
        self.run_blocking = run_blocking or _run_in_default_executor
        self.checkpoints: dict[str, OffsetCheckpointFile] = {
            str(d): OffsetCheckpointFile(Path(d) / CLEANER_OFFSET_CHECKPOINT_FILE) for d in self.log_dirs
        }
        self.in_progress: dict[TopicPartition, LogCleaningState] = {}
        self.uncleanable_partitions: dict[str, set[TopicPartition]] = {}
        self.dirtiest_log_cleanable_ratio = 0.0
        self.time_of_last_run = clock.milliseconds()
        self.on_abort: Callable[[TopicPartition], None] | None = None
        """Set by LogCleaner: tells the worker cleaning a partition to stop."""
        self._changed: asyncio.Condition | None = None
        self._checkpoint_lock: asyncio.Lock | None = None
        self._being_deleted: set[TopicPartition] = set()
        """Partitions whose topic is being deleted: never selected until their log is gone."""

    # -- plumbing -------------------------------------------------------------------------------
    def logs(self) -> dict[TopicPartition, "Log"]:
        return dict(self._logs())

    def _condition(self) -> asyncio.Condition:
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    def _ckpt_lock(self) -> asyncio.Lock:
        if self._checkpoint_lock is None:
            self._checkpoint_lock = asyncio.Lock()
        return self._checkpoint_lock

    async def _notify(self) -> None:
        cond = self._condition()
        async with cond:
            cond.notify_all()

    def _notify_soon(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        loop.create_task(self._notify())

    # -- checkpoints -----------------------------------------------------------------------------
    def _read_all_checkpoints(self) -> dict[TopicPartition, int]:
        merged: dict[TopicPartition, int] = {}
        for d, ckpt in self.checkpoints.items():
            try:
                merged.update(ckpt.read())
            except KafkaError as exc:
                # A corrupt checkpoint: every partition in the dir is then cleaned from its start.
                logger.warning("Failed to access checkpoint file %s in dir %s: %s", ckpt.path, d, exc)
        return merged

    async def all_cleaner_checkpoints(self) -> dict[TopicPartition, int]:
        checkpoints: dict[TopicPartition, int] = await self.run_blocking(self._read_all_checkpoints)
        return checkpoints

    def _update_checkpoints_blocking(self, data_dir: str, update: tuple[TopicPartition, int] | None,
                                     remove: TopicPartition | None) -> None:
        ckpt = self.checkpoints.get(str(data_dir))
        if ckpt is None:
            return
        try:
            try:
                existing = ckpt.read()
            except KafkaError:
                existing = {}
            if remove is not None:
                existing.pop(remove, None)
            if update is not None:
                existing[update[0]] = update[1]
            ckpt.write(existing)
        except (OSError, KafkaError) as exc:
            logger.error("Failed to access checkpoint file %s in dir %s: %s", ckpt.path, data_dir, exc)

    async def update_checkpoints(self, data_dir: Path | str, update: tuple[TopicPartition, int] | None = None,
                                 remove: TopicPartition | None = None) -> None:
        """Add/replace one partition's cleaner point and/or drop one (topic deletion)."""
        async with self._ckpt_lock():
            await self.run_blocking(self._update_checkpoints_blocking, str(data_dir), update, remove)

    async def maybe_truncate_checkpoint(self, data_dir: Path | str, tp: TopicPartition, offset: int) -> None:
        """After a truncation below the cleaner point, pull the checkpoint back to `offset`."""
        log = self.logs().get(tp)
        if log is None or not log.config.compact:
            return
        ckpt = self.checkpoints.get(str(data_dir))
        if ckpt is None:
            return
        async with self._ckpt_lock():
            def truncate() -> None:
                existing = ckpt.read()
                if existing.get(tp, -1) > offset:
                    existing[tp] = offset
                    ckpt.write(existing)

            await self.run_blocking(truncate)

    def handle_log_dir_failure(self, dir: Path | str) -> None:
        """Stop cleaning an offline dir: forget its checkpoint file."""
        self.checkpoints.pop(str(dir), None)

    # -- states ------------------------------------------------------------------------------------
    def cleaning_state(self, tp: TopicPartition) -> LogCleaningState | None:
        return self.in_progress.get(tp)

    def is_cleaning_in_state_paused(self, tp: TopicPartition) -> bool:
        return isinstance(self.in_progress.get(tp), Paused)

    def is_being_deleted(self, tp: TopicPartition) -> bool:
        return tp in self._being_deleted

    def is_aborted(self, tp: TopicPartition) -> bool:
        return self.in_progress.get(tp) is ABORTED

    def check_cleaning_aborted(self, tp: TopicPartition) -> None:
        if self.in_progress.get(tp) is ABORTED:
            raise LogCleaningAbortedError(f"cleaning of {tp} was aborted")

    def begin_cleaning(self, tp: TopicPartition) -> bool:
        """(none) -> InProgress; False when the partition is busy or paused."""
        if tp in self.in_progress or tp in self._being_deleted:
            return False
        self.in_progress[tp] = IN_PROGRESS
        return True

    def pause_cleaning_for_non_compacted_partitions(self) -> list[tuple[TopicPartition, "Log"]]:
        """Retention's guard: every non-compacted, not-in-progress log goes to Paused(1)."""
        deletable = [(tp, log) for tp, log in self.logs().items()
                     if not log.config.compact and tp not in self.in_progress]
        for tp, _ in deletable:
            self.in_progress[tp] = Paused(1)
        return deletable

    async def abort_and_pause_cleaning(self, tp: TopicPartition, timeout: float | None = None) -> None:
        """Stop any clean of `tp` and pause it; returns once the worker has stopped.

        Reentrant: a paused partition's count goes up. A second abort while the first is
        still waiting joins the wait, then counts its own pause.
        """
        state = self.in_progress.get(tp)
        if state is None:
            self.in_progress[tp] = Paused(1)
            return
        if isinstance(state, Paused):
            self.in_progress[tp] = Paused(state.count + 1)
            return
        if state is IN_PROGRESS:
            self.in_progress[tp] = ABORTED
            if self.on_abort is not None:
                self.on_abort(tp)
            await self._wait_until_paused(tp, timeout)
            return
        # ABORTED: someone else's abort is in flight; wait for it, then add our pause.
        await self._wait_until_paused(tp, timeout)
        current = self.in_progress.get(tp)
        self.in_progress[tp] = Paused(current.count + 1) if isinstance(current, Paused) else Paused(1)

    async def _wait_until_paused(self, tp: TopicPartition, timeout: float | None) -> None:
        cond = self._condition()

        async def wait() -> None:
            async with cond:
                while not self.is_cleaning_in_state_paused(tp):
                    await cond.wait()

        await asyncio.wait_for(wait(), timeout)

    def resume_cleaning(self, tps: Iterable[TopicPartition]) -> None:
        """Undo one pause per partition; the last one makes it cleanable again."""
        for tp in tps:
            state = self.in_progress.get(tp)
            if state is None:
                raise CleanerStateError(f"Compaction for partition {tp} cannot be resumed since it is not paused.")
            if not isinstance(state, Paused):
                raise CleanerStateError(f"Compaction for partition {tp} cannot be resumed since it is in {state!r} state.")
            if state.count == 1:
                del self.in_progress[tp]
            else:
                self.in_progress[tp] = Paused(state.count - 1)
        self._notify_soon()

    async def abort_cleaning(self, tps: TopicPartition | Iterable[TopicPartition],
                             timeout: float | None = None) -> None:
        """Topic deletion (Kafka's abortCleaning + updateCheckpoints(remove)): stop any clean of
        the partitions without leaving them paused, drop their cleaner checkpoints, and never
        select them again while their (soon renamed) log is still registered."""
        targets = [tps] if isinstance(tps, TopicPartition) else list(tps)
        logs = self.logs()
        for tp in targets:
            self._being_deleted.add(tp)
            await self.abort_and_pause_cleaning(tp, timeout)
            self.resume_cleaning([tp])
            log = logs.get(tp)
            if log is not None:
                await self.update_checkpoints(_parent_dir(log), remove=tp)

    async def done_cleaning(self, tp: TopicPartition, data_dir: Path | str, end_offset: int) -> None:
        """A worker finished (or gave up): InProgress -> (none) with the new cleaner point;
        Aborted -> Paused(1), waking abort_and_pause_cleaning."""
        state = self.in_progress.get(tp)
        if state is None:
            raise CleanerStateError(f"State for partition {tp} should exist.")
        if state is IN_PROGRESS:
            await self.update_checkpoints(data_dir, update=(tp, end_offset))
        self._leave_in_progress(tp)
        await self._notify()

    def deletable_logs(self) -> list[tuple[TopicPartition, "Log"]]:
        """Compacted logs not busy or uncleanable -> InProgress, for retention after cleaning
        (cleanup.policy=compact,delete; compact-only logs drop what is below the log start)."""
        out = [(tp, log) for tp, log in self.logs().items()
               if tp not in self.in_progress and tp not in self._being_deleted and log.config.compact
               and not self.is_uncleanable_partition(log, tp) and not log.is_closed]
        for tp, _ in out:
            self.in_progress[tp] = IN_PROGRESS
        return out

    async def done_deleting(self, tps: Iterable[TopicPartition]) -> None:
        for tp in tps:
            self._leave_in_progress(tp)
        await self._notify()

    def _leave_in_progress(self, tp: TopicPartition) -> None:
        """End a clean or a delete: InProgress -> (none); Aborted -> Paused(1), which the
        waiting abort_and_pause_cleaning expects; any other state is a bookkeeping bug."""
        state = self.in_progress.get(tp)
        if state is IN_PROGRESS:
            del self.in_progress[tp]
        elif state is ABORTED:
            self.in_progress[tp] = Paused(1)
        else:
            raise CleanerStateError(f"In-progress partition {tp} cannot be in {state!r} state.")

    # -- uncleanable -------------------------------------------------------------------------------
    def mark_partition_uncleanable(self, data_dir: Path | str, tp: TopicPartition) -> None:
        self.uncleanable_partitions.setdefault(str(data_dir), set()).add(tp)

    def is_uncleanable_partition(self, log: "Log", tp: TopicPartition) -> bool:
        return tp in self.uncleanable_partitions.get(_parent_dir(log), ())

    def maintain_uncleanable_partitions(self) -> None:
        """Forget uncleanable (and being-deleted) partitions whose log was deleted or moved."""
        logs = self.logs()
        self._being_deleted = {tp for tp in self._being_deleted if tp in logs}
        for d in list(self.uncleanable_partitions):
            keep = {tp for tp in self.uncleanable_partitions[d] if tp in logs and _parent_dir(logs[tp]) == d}
            if keep:
                self.uncleanable_partitions[d] = keep
            else:
                del self.uncleanable_partitions[d]

    def uncleanable_partitions_count(self, data_dir: Path | str) -> int:
        return len(self.uncleanable_partitions.get(str(data_dir), ()))

    async def uncleanable_bytes(self, data_dir: Path | str) -> int:
        """Cleanable bytes stuck in the dir's uncleanable partitions."""
        tps = set(self.uncleanable_partitions.get(str(data_dir), ()))
        if not tps:
            return 0
        checkpoints = await self.all_cleaner_checkpoints()
        logs = self.logs()
        now = self.clock.milliseconds()

        def compute() -> int:
            total = 0
            for tp in tps:
                log = logs.get(tp)
                if log is None:
                    continue
                try:
                    offsets = cleanable_offsets(log, checkpoints.get(tp), now)
                    total += cleanable_bytes(log, offsets.first_dirty_offset, offsets.first_uncleanable_dirty_offset)[1]
                except Exception:  # noqa: BLE001 - a metric must not fail
                    logger.exception("Failed to compute uncleanable bytes of %s", tp)
            return total

        total: int = await self.run_blocking(compute)
        return total

    # -- selection ----------------------------------------------------------------------------------
    async def grab_filthiest_compacted_log(self, pre_clean_stats: PreCleanStats | None = None,
                                           ) -> LogToClean | None:
        """The compacted log with the highest cleanable ratio above its min.cleanable.dirty.ratio
        (or forced by max.compaction.lag.ms), marked InProgress; None when nothing qualifies.

        Raises LogCleaningException when computing a log's offsets fails.
        """
        stats = pre_clean_stats or PreCleanStats()
        now = self.clock.milliseconds()
        self.time_of_last_run = now
        checkpoints = await self.all_cleaner_checkpoints()
        candidates = [(tp, log) for tp, log in self.logs().items()
                      if log.config.compact and tp not in self.in_progress and tp not in self._being_deleted
                      and not self.is_uncleanable_partition(log, tp) and not log.is_closed]

        def compute() -> list[tuple[LogToClean, bool]]:
            out = []
            for tp, log in candidates:
                try:
                    offsets = cleanable_offsets(log, checkpoints.get(tp), now)
                    delay = max_compaction_delay(log, offsets.first_dirty_offset, now)
                    ltc = LogToClean.of(log, offsets.first_dirty_offset, offsets.first_uncleanable_dirty_offset,
                                        delay > 0)
                except Exception as exc:  # noqa: BLE001 - Kafka wraps anything into LogCleaningException
                    raise LogCleaningException(
                        log, f"Failed to calculate log cleaning stats for partition {tp}: {exc!r}") from exc
                stats.update_max_compaction_delay(delay)
                out.append((ltc, offsets.force_update_checkpoint))
            return out

        computed: list[tuple[LogToClean, bool]] = await self.run_blocking(compute)
        for ltc, force in computed:
            if force:
                log = ltc.log
                await self.update_checkpoints(_parent_dir(log), update=(log.topic_partition, ltc.first_dirty_offset))
        dirty = [ltc for ltc, _ in computed if ltc.total_bytes > 0]
        self.dirtiest_log_cleanable_ratio = max((ltc.cleanable_ratio for ltc in dirty), default=0.0)
        cleanable = [ltc for ltc in dirty
                     if (ltc.need_compaction_now and ltc.cleanable_bytes > 0)
                     or ltc.cleanable_ratio > ltc.log.config.min_cleanable_dirty_ratio]
        if not cleanable:
            return None
        stats.record_cleanable_partitions(len(cleanable))
        for ltc in sorted(cleanable, key=lambda x: x.cleanable_ratio, reverse=True):
            tp = ltc.log.topic_partition
            # Re-check: the state may have changed while the offsets were computed.
            if self.begin_cleaning(tp) and not self.is_uncleanable_partition(ltc.log, tp):
                return ltc
        return None

    async def log_to_clean_now(self, tp: TopicPartition) -> LogToClean | None:
        """For clean_now: the partition's cleanable range regardless of its dirty ratio."""
        log = self.logs().get(tp)
        if log is None:
            raise KeyError(f"no log for {tp}")
        checkpoints = await self.all_cleaner_checkpoints()
        now = self.clock.milliseconds()

        def compute() -> tuple[LogToClean, bool]:
            offsets = cleanable_offsets(log, checkpoints.get(tp), now)
            delay = max_compaction_delay(log, offsets.first_dirty_offset, now)
            return (LogToClean.of(log, offsets.first_dirty_offset, offsets.first_uncleanable_dirty_offset, delay > 0),
                    offsets.force_update_checkpoint)

        found: tuple[LogToClean, bool] = await self.run_blocking(compute)
        ltc, force = found
        if force:
            await self.update_checkpoints(_parent_dir(log), update=(tp, ltc.first_dirty_offset))
        return ltc
