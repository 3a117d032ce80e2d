"""FetchWaiters: appends wake parked fetches once enough bytes arrived; timeouts and shutdown too."""

from __future__ import annotations

import asyncio

from asyncbroker.fetch_waiters import FetchWaiters
from storage.topic_partition import TopicPartition

A = TopicPartition("a", 0)
B = TopicPartition("b", 0)


async def test_append_wakes_when_enough_bytes() -> None:
    waiters = FetchWaiters()
    w = waiters.watch([A, B], needed_bytes=100)
    task = asyncio.ensure_future(w.wait(10))
    waiters.on_append(A, 60)
    await asyncio.sleep(0)
    assert not task.done()
    waiters.on_append(B, 40)
    assert await asyncio.wait_for(task, 1) is True
    waiters.unwatch(w)
    assert len(waiters) == 0


async def test_appends_to_other_partitions_do_not_wake() -> None:
    waiters = FetchWaiters()
    w = waiters.watch([A], needed_bytes=1)
    waiters.on_append(B, 1000)
    assert await w.wait(0.05) is False  # timed out
    waiters.unwatch(w)


async def test_append_before_wait_is_not_lost() -> None:
    waiters = FetchWaiters()
    w = waiters.watch([A], needed_bytes=1)
    waiters.on_append(A, 10)  # e.g. while the first read was in the executor
    assert await w.wait(5) is True


async def test_close_completes_everything_and_later_watches() -> None:
    waiters = FetchWaiters()
    w = waiters.watch([A], needed_bytes=1)
    waiters.close()
    assert await w.wait(5) is True
    assert await waiters.watch([B], needed_bytes=1).wait(5) is True


async def test_wake_partition() -> None:
    waiters = FetchWaiters()
    w = waiters.watch([A], needed_bytes=10**9)
    waiters.wake_partition(A)
    assert await w.wait(5) is True
