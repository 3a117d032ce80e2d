"""LogCleaner: the pool of cleaner worker processes and the loops that feed them.

Kafka runs `log.cleaner.threads` CleanerThreads; here each is an asyncio task driving
one single-process ProcessPoolExecutor (so a worker that dies is known exactly, is
replaced, and is counted in `dead-threads`). A loop asks the LogCleanerManager for the
filthiest log, sends the worker a CleanRequest, swaps the returned `.cleaned` segments
into the live log under its lock, records the checkpoint and logs Kafka's summary
line; with nothing to clean it sleeps log.cleaner.backoff.ms. After each round it runs
retention on compacted logs (cleanup.policy=compact,delete).
"""
from __future__ import annotations

import asyncio
import functools
import logging
import os
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

import msgspec

from cleaner.clean_request import CleanResult
from cleaner.cleaner_config import CleanerConfig
from cleaner.cleaner_stats import CleanerStats, format_summary
from cleaner.errors import LogCleaningAbortedError
from cleaner.log_cleaner_manager import LogCleanerManager, LogCleaningException, PreCleanStats, RunBlocking
from cleaner.log_to_clean import LogToClean, clean_request_for
from cleaner.segment_swap import delete_all_cleaned_files, swap_cleaned_segments
from cleaner.throttler import ThrottleState
from storage.clock import SYSTEM_CLOCK, Clock
from storage.topic_partition import TopicPartition
from wire.errors import KafkaStorageError

if TYPE_CHECKING:
    from storage.log import Log

__all__ = ["LogCleaner", "WorkerDiedError"]

logger = logging.getLogger(__name__)


class WorkerDiedError(Exception):
    """The worker process cleaning a partition exited (killed, out of memory, crashed)."""


def _mp_context() -> Any:
    # forkserver: safe from a multi-threaded broker (no fork of the event loop's process)
    # and cheap per worker once the server has imported the cleaner.
    import multiprocessing

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["cleaner.worker"])
    return ctx


class LogCleaner:
    def __init__(self, config: CleanerConfig, log_dirs: Iterable[Path | str],
                 logs: Callable[[], Mapping[TopicPartition, "Log"]], *, clock: Clock = SYSTEM_CLOCK,
                 run_blocking: RunBlocking | None = None, use_processes: bool = True) -> None:
        self.config = config
        self.clock = clock
        self.use_processes = use_processes
        self.manager = LogCleanerManager(log_dirs, logs, clock=clock, run_blocking=run_blocking)
        self.manager.on_abort = self._on_abort
        self.num_workers = max(0, config.num_threads)
        # Built with the first worker, as is everything of multiprocessing's (and the worker
        # module): the throttle's lock is a semaphore, which starts multiprocessing's resource
        # tracker process, and a broker without compacted logs needs none of it, nor the ~1 MB
        # of idle memory those modules take.
        self._ctx: Any = None
        self._abort_flags: Any = None  # one flag per worker, shared with every worker process
        self._throttle_state: ThrottleState | None = None
        self._io_rate = config.max_io_bytes_per_second
        # A slot's executor is listed once its worker process is up (see _start_worker).
        self._executors: list[Executor | None] = [None] * self.num_workers
        self._prefault = False
        self._running: list[TopicPartition | None] = [None] * self.num_workers
        self._idle: asyncio.Queue[int] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False
        self._wakeup: asyncio.Event | None = None
        # metrics
        self.dead_threads = 0
        self.last_stats: dict[int, CleanerStats] = {}
        self.last_pre_clean_stats: dict[int, PreCleanStats] = {}
        self.cleaned_count = 0
        # partition -> when its last clean ended (the cleaner's clock, ms): the web console's "last clean"
        self.last_clean_ms: dict[TopicPartition, int] = {}

    @classmethod
    def for_log_manager(cls, config: CleanerConfig, log_manager: Any, *, run_blocking: RunBlocking | None = None,
                        use_processes: bool = True) -> "LogCleaner":
        """The broker's cleaner over storage's LogManager (its dirs, its live logs, its clock)."""
        return cls(config, log_manager.log_dirs,
                   lambda: {log.topic_partition: log for log in log_manager.all_logs()},
                   clock=log_manager.clock, run_blocking=run_blocking, use_processes=use_processes)

    # -- lifecycle ----------------------------------------------------------------------------------
    async def startup(self, *, background: bool = True, prefault: bool = False,
                      prestart: bool = False) -> None:
        """Start the cleaning loops (unless background=False); with prestart=True, the worker
        processes too.

        Otherwise the first clean starts its worker (and the forkserver and multiprocessing's
        resource tracker): three processes of some 20 MB each, and multiprocessing loaded in
        the broker. A broker whose only compacted log is __consumer_offsets (any broker a
        consumer group has used) rarely cleans anything: its 100 MB segments seldom roll. With
        prefault=False a worker allocates its offset map at its first clean, so an idle broker
        does not hold dedupe.buffer.size of memory either."""
        self._stopping = False
        self._idle = asyncio.Queue()
        self._wakeup = asyncio.Event()
        self._prefault = prefault
        if prestart:
            # So that the first clean does not pay for process start-up.
            await asyncio.gather(*(self._start_worker(i) for i in range(self.num_workers)))
        for i in range(self.num_workers):
            self._idle.put_nowait(i)
        if background:
            self._tasks = [asyncio.create_task(self._cleaner_loop(i), name=f"log-cleaner-thread-{i}")
                           for i in range(self.num_workers)]
        logger.info("Started log cleaner with %d worker(s)%s", self.num_workers,
                    "" if prestart else ", each starting at its first clean")

    async def _start_worker(self, slot: int) -> None:
        """Bring up the worker process of `slot`. The first submit to a pool spawns its process
        (and the forkserver, which imports the cleaner before it forks), blocking the submitter
        meanwhile: so it is submitted from an IO thread, never from the loop."""
        if self._executors[slot] is not None:
            return
        from cleaner import worker as worker_module

        executor = self._new_executor(slot)
        try:
            future = await self.manager.run_blocking(executor.submit, worker_module.worker_pid, slot, self._prefault)
            await asyncio.wrap_future(future)
        except BaseException:
            executor.shutdown(wait=False, cancel_futures=True)
            raise
        self._executors[slot] = executor

    async def shutdown(self) -> None:
        """Abort in-flight cleans, stop the loops and the worker processes."""
        self._stopping = True
        if self._wakeup is not None:
            self._wakeup.set()
        for i in range(self.num_workers):
            if self._running[i] is not None:
                self._flags()[i] = 1
        if self._tasks:
            # Loops finish their round (aborted cleans return quickly), then see _stopping.
            _done, pending = await asyncio.wait(self._tasks, timeout=30)
            for task in pending:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        loop = asyncio.get_running_loop()
        for i, executor in enumerate(self._executors):
            if executor is not None:
                # Joining worker processes blocks: not on the event loop.
                await loop.run_in_executor(None, functools.partial(executor.shutdown, wait=True, cancel_futures=True))
                self._executors[i] = None
        logger.info("Shut down log cleaner")

    def reconfigure(self, config: CleanerConfig) -> None:
        """Dynamic broker configs changed: the backoff and the I/O throttle follow at once
        (Kafka's LogCleaner.reconfigure); the worker count and buffer sizes stay as started."""
        self.config = msgspec.structs.replace(self.config, backoff_ms=config.backoff_ms,
                                              max_io_bytes_per_second=config.max_io_bytes_per_second)
        if config.max_io_bytes_per_second != self._io_rate:
            self.update_max_io_bytes_per_second(config.max_io_bytes_per_second)
        self.wake()  # a shorter backoff starts now, not after the old one

    def update_max_io_bytes_per_second(self, rate: float) -> None:
        """log.cleaner.io.max.bytes.per.second changed: running workers follow at once."""
        self._io_rate = rate
        if self._throttle_state is not None:
            self._throttle_state.set_rate(rate)

    def wake(self) -> None:
        """Cut the backoff sleep short (e.g. after a topic config change)."""
        if self._wakeup is not None:
            self._wakeup.set()

    def _flags(self) -> Any:
        """The abort flags, built with the first worker (shared memory when workers are processes)."""
        if self._abort_flags is None:
            if self.use_processes:
                self._ctx = _mp_context()
                self._abort_flags = self._ctx.RawArray("b", max(1, self.num_workers))
            else:
                self._abort_flags = [0] * max(1, self.num_workers)
        return self._abort_flags

    def _new_executor(self, slot: int) -> Executor:
        from cleaner import worker as worker_module

        flags = self._flags()
        if self._throttle_state is None:
            self._throttle_state = ThrottleState(self._ctx, self._io_rate)
        args = (slot, flags, self._throttle_state, self.config)
        if self._ctx is not None:
            from concurrent.futures import ProcessPoolExecutor

            # The worker exits with this process (see worker._exit_with: a SIGKILLed broker).
            return ProcessPoolExecutor(max_workers=1, mp_context=self._ctx,
                                       initializer=worker_module.initialize_worker,
                                       initargs=(*args, os.getpid()))
        return ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"log-cleaner-{slot}",
                                  initializer=worker_module.initialize_worker, initargs=args)

    def _on_abort(self, tp: TopicPartition) -> None:
        for i, running in enumerate(self._running):
            if running == tp:
                self._flags()[i] = 1

    # -- the CleanerThread loop ---------------------------------------------------------------------
    async def _cleaner_loop(self, thread_id: int) -> None:
        assert self._idle is not None and self._wakeup is not None
        while not self._stopping:
            try:
                worker = await self._idle.get()
                try:
                    cleaned = await self._try_clean_filthiest_log(worker)
                finally:
                    self._idle.put_nowait(worker)
                self.manager.maintain_uncleanable_partitions()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - the loop must survive anything
                logger.exception("Log cleaner thread %d failed a round", thread_id)
                cleaned = False
            if not cleaned and not self._stopping:
                self._wakeup.clear()
                try:
                    await asyncio.wait_for(self._wakeup.wait(), self.config.backoff_ms / 1000.0)
                except asyncio.TimeoutError:
                    pass

    async def _try_clean_filthiest_log(self, worker: int) -> bool:
        pre = PreCleanStats()
        cleaned = False
        try:
            ltc = await self.manager.grab_filthiest_compacted_log(pre)
        except LogCleaningException as exc:
            self._mark_uncleanable(exc.log, exc)
            ltc = None
        if ltc is not None:
            self.last_pre_clean_stats[worker] = pre
            try:
                await self._clean_log(worker, ltc)
                cleaned = True
            except Exception as exc:  # noqa: BLE001 - Kafka marks the partition uncleanable
                self._mark_uncleanable(ltc.log, exc)
        await self._delete_old_segments_of_compacted_logs()
        return cleaned

    def _mark_uncleanable(self, log: Any, exc: BaseException) -> None:
        logger.warning("Unexpected exception thrown when cleaning log %r. Marking its partition (%s) as "
                       "uncleanable", log, log.topic_partition, exc_info=exc)
        self.manager.mark_partition_uncleanable(Path(log.dir).parent, log.topic_partition)

    async def _delete_old_segments_of_compacted_logs(self) -> None:
        deletable = self.manager.deletable_logs()
        try:
            for tp, log in deletable:
                try:
                    await self.manager.run_blocking(log.delete_old_segments)
                except Exception as exc:  # noqa: BLE001
                    self._mark_uncleanable(log, exc)
        finally:
            await self.manager.done_deleting([tp for tp, _ in deletable])

    async def _clean_log(self, worker: int, ltc: LogToClean) -> CleanerStats | None:
        """Clean one log on `worker`; the partition must be InProgress. Always ends with done_cleaning.

        Returns the stats, or None when the clean was aborted (or the log went offline)."""
        log: Log = ltc.log
        tp = log.topic_partition
        start = ltc.first_dirty_offset
        end = start
        stats: CleanerStats | None = None
        try:
            now = self.clock.milliseconds()
            request = await self.manager.run_blocking(
                lambda: clean_request_for(log, ltc.first_dirty_offset, ltc.first_uncleanable_offset, now,
                                          max_message_size=max(self.config.max_message_size,
                                                               log.config.max_message_bytes)))
            result = await self._run_on_worker(worker, tp, request)
            await self.manager.run_blocking(
                lambda: swap_cleaned_segments(log, result, is_aborted=lambda: self.manager.is_aborted(tp)))
            end = result.end_offset
            stats = result.stats
            self._record_stats(worker, log.name, start, end, stats)
            self.last_clean_ms[tp] = self.clock.milliseconds()
        except LogCleaningAbortedError:
            pass  # aborted for retention/truncation/deletion: not a failure
        except KafkaStorageError:
            pass  # the partition went offline
        finally:
            await self.manager.done_cleaning(tp, Path(log.dir).parent, end)
        return stats

    async def _run_on_worker(self, worker: int, tp: TopicPartition, request: Any) -> CleanResult:
        from concurrent.futures.process import BrokenProcessPool

        from cleaner import worker as worker_module

        loop = asyncio.get_running_loop()
        self._flags()[worker] = 0
        self._running[worker] = tp
        try:
            await self._start_worker(worker)
            executor = self._executors[worker]
            assert executor is not None
            return await loop.run_in_executor(executor, worker_module.run_clean, worker, request)
        except BrokenProcessPool as exc:
            self.dead_threads += 1
            logger.error("Log cleaner worker %d died while cleaning %s; starting a new one", worker, tp)
            broken = self._executors[worker]
            try:
                if broken is not None:
                    broken.shutdown(wait=False, cancel_futures=True)
            except Exception:  # noqa: BLE001
                pass
            self._executors[worker] = None  # the replacement starts with the next clean (_start_worker)
            await self.manager.run_blocking(delete_all_cleaned_files, Path(request.dir))
            raise WorkerDiedError(f"cleaner worker {worker} died while cleaning {tp}") from exc
        finally:
            self._running[worker] = None
            self._flags()[worker] = 0

    def _record_stats(self, worker: int, name: str, start: int, end: int, stats: CleanerStats) -> None:
        self.last_stats[worker] = stats
        self.cleaned_count += 1
        logger.info(format_summary(worker, name, start, end, stats))
        pre = self.last_pre_clean_stats.get(worker)
        if pre is not None and pre.delayed_partitions > 0:
            logger.info("\tCleanable partitions: %d, Delayed partitions: %d, max delay: %d",
                        pre.cleanable_partitions, pre.delayed_partitions, pre.max_compaction_delay_ms)
        if stats.invalid_messages_read > 0:
            logger.warning("\tFound %d invalid messages during compaction.", stats.invalid_messages_read)

    # -- for tests, the testing broker and the monitor ------------------------------------------------
    async def clean_now(self, tp: TopicPartition, *, roll: bool = False, timeout: float | None = 60.0
                        ) -> CleanerStats | None:
        """Clean `tp` now, whatever its dirty ratio, and wait for the swap.

        Waits while the partition is being cleaned or paused. With roll=True the active
        segment is rolled first (if not empty) so everything produced so far is cleanable.
        Returns the stats, or None when there was nothing cleanable. Raises what the clean
        raised (the partition is then also marked uncleanable, as in the background loop).
        """
        if self._idle is None:
            raise RuntimeError("LogCleaner.startup() was not called")
        if self.num_workers == 0:
            raise RuntimeError("log.cleaner.threads is 0: there is no worker to clean with")

        async def run() -> CleanerStats | None:
            manager = self.manager
            log = manager.logs().get(tp)
            if log is None:
                raise KeyError(f"no log for {tp}")
            to_roll = roll
            while True:
                # Wait while the background loop cleans it, or while it is paused.
                cond = manager._condition()  # noqa: SLF001 - same package
                async with cond:
                    while tp in manager.in_progress:
                        await cond.wait()
                if manager.is_being_deleted(tp):
                    return None
                if not manager.begin_cleaning(tp):
                    continue  # lost a race with the background loop
                # The partition is this call's from here to its clean: the background loop cannot
                # clean what the roll makes cleanable and leave this call nothing to report.
                try:
                    if to_roll:
                        await manager.run_blocking(_roll_if_not_empty, log)
                        to_roll = False
                    ltc = await manager.log_to_clean_now(tp)
                except BaseException:
                    await manager.done_deleting([tp])  # (leaves InProgress; the checkpoint stays)
                    raise
                if ltc is None or ltc.cleanable_bytes == 0:
                    await manager.done_deleting([tp])
                    return None
                worker = await self._idle.get()  # type: ignore[union-attr]
                try:
                    try:
                        stats = await self._clean_log(worker, ltc)
                    except Exception as exc:
                        self._mark_uncleanable(log, exc)
                        raise
                finally:
                    self._idle.put_nowait(worker)  # type: ignore[union-attr]
                if stats is None:
                    continue  # aborted (retention, truncation...): clean again once resumed
                await self._delete_old_segments_of(tp, log)
                return stats

        return await asyncio.wait_for(run(), timeout)

    async def _delete_old_segments_of(self, tp: TopicPartition, log: "Log") -> None:
        if not self.manager.begin_cleaning(tp):
            return
        try:
            await self.manager.run_blocking(log.delete_old_segments)
        finally:
            await self.manager.done_deleting([tp])

    # -- delegation used by retention, truncation, DeleteRecords and topic deletion --------------------
    async def abort_and_pause_cleaning(self, tp: TopicPartition, timeout: float | None = None) -> None:
        await self.manager.abort_and_pause_cleaning(tp, timeout)

    def resume_cleaning(self, tps: Iterable[TopicPartition]) -> None:
        self.manager.resume_cleaning(tps)

    async def abort_cleaning(self, tps: TopicPartition | Iterable[TopicPartition],
                             timeout: float | None = None) -> None:
        await self.manager.abort_cleaning(tps, timeout)

    # -- metrics --------------------------------------------------------------------------------------
    async def metrics(self) -> dict[str, Any]:
        """Kafka's LogCleaner and LogCleanerManager gauges (per-dir ones keyed by dir)."""
        stats = list(self.last_stats.values())
        pre = list(self.last_pre_clean_stats.values())
        now = self.clock.milliseconds()
        return {
            "max-buffer-utilization-percent": 100 * max((s.buffer_utilization for s in stats), default=0.0),
            "cleaner-recopy-percent": (100 * sum(s.bytes_written for s in stats)
                                       / max(1, sum(s.bytes_read for s in stats))) if stats else 0.0,
            "max-clean-time-secs": max((s.elapsed_secs for s in stats), default=0.0),
            "max-compaction-delay-secs": max((p.max_compaction_delay_ms for p in pre), default=0) // 1000,
            "dead-threads": self.dead_threads,
            "max-dirty-percent": int(100 * self.manager.dirtiest_log_cleanable_ratio),
            "time-since-last-run-ms": now - self.manager.time_of_last_run,
            "uncleanable-partitions-count": {str(d): self.manager.uncleanable_partitions_count(d)
                                             for d in self.manager.log_dirs},
            "uncleanable-bytes": {str(d): await self.manager.uncleanable_bytes(d) for d in self.manager.log_dirs},
        }


def _roll_if_not_empty(log: "Log") -> None:
    if log.segments.active_segment().size() > 0:
        log.roll()
