"""The Scheduler LogJobs runs on: delays, periods, self-rescheduling, run_now, shutdown."""
from __future__ import annotations

import asyncio
import threading

import pytest

from asyncbroker.scheduler import NEVER_MS, Scheduler, SchedulerShutdownError

DEADLINE = 10.0  # seconds; every wait below is bounded by it


@pytest.fixture
async def scheduler():
    s = Scheduler(threads=2)
    yield s
    await s.shutdown()


async def test_periodic_job_starts_after_its_delay_and_repeats(scheduler: Scheduler) -> None:
    loop = asyncio.get_running_loop()
    times: list[float] = []
    third = asyncio.Event()

    async def job() -> None:
        times.append(loop.time())
        if len(times) == 3:
            third.set()

    start = loop.time()
    scheduler.schedule("tick", job, delay_ms=30, period_ms=10)
    await asyncio.wait_for(third.wait(), DEADLINE)
    assert times[0] - start >= 0.025  # the initial delay
    assert times[1] > times[0] and times[2] > times[1]


async def test_never_delay_runs_only_when_woken(scheduler: Scheduler) -> None:
    runs: list[int] = []

    async def job() -> int:
        runs.append(1)
        return len(runs)

    scheduler.schedule("flusher", job, delay_ms=NEVER_MS, period_ms=NEVER_MS)
    assert await scheduler.run_now("flusher") == 1
    assert await scheduler.run_now("flusher") == 2
    assert len(runs) == 2


async def test_run_now_answers_with_a_run_that_started_after_the_call(scheduler: Scheduler) -> None:
    release = asyncio.Event()
    started = asyncio.Event()
    state = {"value": 0, "runs": 0}

    async def job() -> int:
        state["runs"] += 1
        seen = state["value"]
        started.set()
        await release.wait()
        return seen

    scheduler.schedule("slow", job, delay_ms=0, period_ms=NEVER_MS)
    await asyncio.wait_for(started.wait(), DEADLINE)  # run 1 is in progress, saw value 0
    state["value"] = 1
    waiter = asyncio.ensure_future(scheduler.run_now("slow"))
    release.set()
    assert await asyncio.wait_for(waiter, DEADLINE) == 1  # not run 1's stale answer
    assert state["runs"] == 2


async def test_a_job_never_overlaps_itself(scheduler: Scheduler) -> None:
    active = 0
    most = 0

    async def job() -> None:
        nonlocal active, most
        active += 1
        most = max(most, active)
        await scheduler.run_blocking(lambda: None)
        active -= 1

    scheduler.schedule("solo", job, delay_ms=NEVER_MS, period_ms=NEVER_MS)
    await asyncio.wait_for(asyncio.gather(*(scheduler.run_now("solo") for _ in range(20))), DEADLINE)
    assert most == 1


async def test_self_rescheduling_job_follows_the_delays_it_returns(scheduler: Scheduler) -> None:
    delays = [5, 5, None]
    done = asyncio.Event()
    runs = 0

    async def job() -> int | None:
        nonlocal runs
        runs += 1
        delay = delays[runs - 1]
        if delay is None:
            done.set()
        return delay

    job_ = scheduler.schedule("delete-logs", job, delay_ms=0, period_ms=None)
    await asyncio.wait_for(done.wait(), DEADLINE)
    await asyncio.wait_for(job_.task, DEADLINE)  # returning None ended it
    assert runs == 3


async def test_errors_are_logged_returned_to_run_now_and_do_not_end_the_schedule(
        scheduler: Scheduler, caplog: pytest.LogCaptureFixture) -> None:
    calls = 0

    async def job() -> int:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise OSError("disk")
        return calls

    scheduler.schedule("flaky", job, delay_ms=NEVER_MS, period_ms=NEVER_MS)
    with pytest.raises(OSError):
        await scheduler.run_now("flaky")
    assert "Uncaught exception in scheduled task 'flaky'" in caplog.text
    assert await scheduler.run_now("flaky") == 2


async def test_period_zero_runs_once_and_once_jobs_run_once(scheduler: Scheduler) -> None:
    ran: list[str] = []
    both = asyncio.Event()

    async def record(name: str) -> None:
        ran.append(name)
        if len(ran) == 2:
            both.set()

    job = scheduler.schedule("checkpoint", lambda: record("periodic-0"), delay_ms=0, period_ms=0)
    scheduler.schedule_once("delete-file", lambda: record("once"), delay_ms=0)
    await asyncio.wait_for(both.wait(), DEADLINE)
    await asyncio.wait_for(job.task, DEADLINE)
    assert sorted(ran) == ["once", "periodic-0"]


async def test_shutdown_waits_for_blocking_work_already_running() -> None:
    s = Scheduler(threads=1)
    entered = threading.Event()
    finished = threading.Event()

    def blocking() -> None:
        entered.set()
        finished.wait(DEADLINE)

    async def job() -> None:
        await s.run_blocking(blocking)

    s.schedule("retention", job, delay_ms=0, period_ms=NEVER_MS)
    assert await asyncio.to_thread(entered.wait, DEADLINE)
    stopping = asyncio.ensure_future(s.shutdown())
    with pytest.raises(TimeoutError):  # the job is cancelled, but its thread is still inside `blocking`
        await asyncio.wait_for(asyncio.shield(stopping), 0.2)
    finished.set()
    await asyncio.wait_for(stopping, DEADLINE)
    with pytest.raises(SchedulerShutdownError):
        s.schedule("late", job, delay_ms=0)
