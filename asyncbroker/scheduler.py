"""Scheduler: Kafka's KafkaScheduler on the event loop.

Timing lives on the loop (an asyncio task per scheduled job, sleeping on an event so it can
be woken early); the work itself goes to the scheduler's own small thread pool through
`run_blocking`, so a long retention pass neither blocks the loop nor occupies the request IO
pool. A job never overlaps itself: each has one loop that runs it, then waits.

Three shapes, as LogManager uses them:
- periodic (`period_ms`): every period, at a fixed rate like `scheduleAtFixedRate`;
- self-rescheduling (`period_ms=None`): the job returns the delay in ms until its next run
  (kafka-delete-logs returns the time left until the next `-delete` directory is due), or
  None to end;
- once (`schedule_once`): a single delayed run (Kafka's "delete-file" tasks).

`run_now(name)` wakes a job at once and returns the result of a run that *started after* the
call (so the caller sees every change it made before calling): the lever tests, CI and the
monitor console use instead of waiting for an interval.
"""
from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")

NEVER_MS = 2**62
"""Delays at or above this mean "only when woken" (Kafka uses Long.MAX_VALUE for never)."""


class SchedulerShutdownError(RuntimeError):
    """The scheduler stopped before the requested run happened."""


class ScheduledJob:
    """One named job: its callable, its next delay and the callers waiting for a run."""

    def __init__(self, name: str, fn: Callable[[], Awaitable[Any]], delay_ms: int | None,
                 period_ms: int | None, once: bool) -> None:
        self.name = name
        self.fn = fn
        self.period_ms = period_ms
        self.once = once
        self.next_delay_ms = delay_ms
        self.runs = 0
        self.last_error: BaseException | None = None
        self.wake = asyncio.Event()
        self.waiters: list[asyncio.Future[Any]] = []
        self.task: asyncio.Task[None] | None = None


class Scheduler:
    """Named jobs on the running loop, their blocking work on `threads` worker threads."""

    def __init__(self, threads: int = 2, thread_name_prefix: str = "kafka-scheduler") -> None:
        self._executor = ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix=thread_name_prefix)
        self._jobs: dict[str, ScheduledJob] = {}
        self._once: set[ScheduledJob] = set()
        self._closed = False

    # -- the work --------------------------------------------------------------------------------
    async def run_blocking(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run blocking work (storage calls) on the scheduler's threads."""
        if kwargs:
            fn = functools.partial(fn, *args, **kwargs)
            args = ()
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    # -- scheduling ------------------------------------------------------------------------------
    def schedule(self, name: str, fn: Callable[[], Awaitable[Any]], *, delay_ms: int,
                 period_ms: int | None = None) -> ScheduledJob:
        """Run `fn` after `delay_ms`, then every `period_ms` (or at the delay `fn` returns when
        `period_ms` is None). A period <= 0 means run once, as KafkaScheduler does."""
        if self._closed:
            raise SchedulerShutdownError("scheduler is shut down")
        if name in self._jobs:
            raise ValueError(f"a job named {name!r} is already scheduled")
        once = period_ms is not None and period_ms <= 0
        job = ScheduledJob(name, fn, delay_ms, None if once else period_ms, once)
        self._jobs[name] = job
        job.task = asyncio.get_running_loop().create_task(self._loop(job), name=f"scheduler:{name}")
        return job

    def schedule_once(self, name: str, fn: Callable[[], Awaitable[Any]], *, delay_ms: int) -> ScheduledJob | None:
        """One delayed run; several once-jobs may share a name. None after shutdown."""
        if self._closed:
            return None
        job = ScheduledJob(name, fn, delay_ms, None, True)
        self._once.add(job)
        job.task = asyncio.get_running_loop().create_task(self._loop(job), name=f"scheduler:{name}")
        return job

    def job(self, name: str) -> ScheduledJob | None:
        return self._jobs.get(name)

    def job_names(self) -> list[str]:
        return sorted(self._jobs)

    def wake(self, name: str) -> None:
        """End job `name`'s current sleep now (a self-rescheduling job waiting for an event)."""
        job = self._jobs.get(name)
        if job is not None:
            job.wake.set()

    async def run_now(self, name: str) -> Any:
        """Wake job `name` now and return the result of its next run (raising its error)."""
        job = self._jobs.get(name)
        if job is None or job.task is None or job.task.done():
            raise KeyError(f"no scheduled job named {name!r}")
        waiter: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        job.waiters.append(waiter)
        job.wake.set()
        return await waiter

    # -- the per-job loop ----------------------------------------------------------------------
    async def _loop(self, job: ScheduledJob) -> None:
        loop = asyncio.get_running_loop()
        try:
            while job.next_delay_ms is not None:
                await self._sleep(job, job.next_delay_ms)
                job.wake.clear()
                # Callers that asked before this run started are answered by it; later ones
                # wait for the next run (they may have changed state this run did not see).
                waiters, job.waiters = job.waiters, []
                started = loop.time()
                result: Any = None
                try:
                    result = await job.fn()
                except asyncio.CancelledError:
                    for w in waiters:
                        if not w.done():
                            w.set_exception(SchedulerShutdownError(f"job {job.name!r} was cancelled"))
                    raise
                except Exception as exc:  # noqa: BLE001 - a failed run must not end the schedule
                    job.last_error = exc
                    logger.exception("Uncaught exception in scheduled task '%s'", job.name)
                    for w in waiters:
                        if not w.done():
                            w.set_exception(exc)
                else:
                    job.last_error = None
                    for w in waiters:
                        if not w.done():
                            w.set_result(result)
                job.runs += 1
                if job.once:
                    job.next_delay_ms = None
                elif job.period_ms is not None:
                    elapsed_ms = int((loop.time() - started) * 1000)
                    job.next_delay_ms = max(0, job.period_ms - elapsed_ms)  # fixed rate
                elif job.last_error is None:
                    job.next_delay_ms = None if result is None else max(0, int(result))
                # (a self-rescheduling job that failed keeps its previous delay)
        finally:
            for w in job.waiters:
                if not w.done():
                    w.set_exception(SchedulerShutdownError(f"job {job.name!r} ended"))
            job.waiters.clear()
            self._once.discard(job)

    @staticmethod
    async def _sleep(job: ScheduledJob, delay_ms: int) -> None:
        """Sleep `delay_ms` unless woken; "never" delays wait only for a wake-up."""
        if job.wake.is_set():
            return
        if delay_ms >= NEVER_MS:
            await job.wake.wait()
            return
        if delay_ms <= 0:
            return
        try:
            await asyncio.wait_for(job.wake.wait(), delay_ms / 1000)
        except TimeoutError:
            pass

    # -- shutdown --------------------------------------------------------------------------------
    async def shutdown(self) -> None:
        """Cancel every job, then wait for blocking work already running on the threads, so the
        caller can close the logs without racing a retention pass."""
        self._closed = True
        jobs = [*self._jobs.values(), *self._once]
        for job in jobs:
            if job.task is not None:
                job.task.cancel()
        for job in jobs:
            if job.task is not None:
                try:
                    await job.task
                except asyncio.CancelledError:
                    pass
        self._jobs.clear()
        self._once.clear()
        await asyncio.to_thread(self._executor.shutdown, True)
