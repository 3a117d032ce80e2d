"""Parked long-poll fetches, woken by appends (Kafka's DelayedFetch purgatory).

A Fetch that found fewer than `min_bytes` registers a `FetchWaiter` on its
partitions *before* its first read, so an append that lands while that read
is in flight still counts (no lost wake-up). Each append reports its byte
count for its partition; a waiter completes once the bytes appended since it
registered reach what it still needs, or when its deadline passes, or when
the broker shuts down. The fetch then reads once more and answers whatever
is there, as Kafka does when a delayed fetch completes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from storage.topic_partition import TopicPartition


class FetchWaiter:
    """One parked fetch: the partitions it watches and the bytes it still needs."""

    __slots__ = ("_future", "partitions", "needed", "accumulated")

    def __init__(self, loop: asyncio.AbstractEventLoop, partitions: frozenset[TopicPartition], needed: int) -> None:
        self._future: asyncio.Future[bool] = loop.create_future()  # True: woken, False: timed out
        self.partitions = partitions
        self.needed = needed
        self.accumulated = 0

    @property
    def done(self) -> bool:
        return self._future.done()

    async def wait(self, timeout_s: float) -> bool:
        """Wait until woken or `timeout_s` passes; True when woken."""
        if self._future.done():
            return True
        if timeout_s <= 0:
            return False
        handle = asyncio.get_running_loop().call_later(timeout_s, self._timeout)
        try:
            return await self._future
        finally:
            handle.cancel()

    def _timeout(self) -> None:
        if not self._future.done():
            self._future.set_result(False)

    def _complete(self) -> None:
        if not self._future.done():
            self._future.set_result(True)


class FetchWaiters:
    """Partition -> parked fetches; appends and shutdown complete them."""

    def __init__(self) -> None:
        self._by_partition: dict[TopicPartition, set[FetchWaiter]] = {}
        self._closed = False

    def watch(self, partitions: Iterable[TopicPartition], needed_bytes: int) -> FetchWaiter:
        tps = frozenset(partitions)
        waiter = FetchWaiter(asyncio.get_running_loop(), tps, max(1, needed_bytes))
        if self._closed:
            waiter._complete()
            return waiter
        for tp in tps:
            self._by_partition.setdefault(tp, set()).add(waiter)
        return waiter

    def unwatch(self, waiter: FetchWaiter) -> None:
        for tp in waiter.partitions:
            waiters = self._by_partition.get(tp)
            if waiters is not None:
                waiters.discard(waiter)
                if not waiters:
                    del self._by_partition[tp]

    def on_append(self, tp: TopicPartition, num_bytes: int) -> None:
        """Called on the loop after records were appended to `tp` (and the HW moved)."""
        waiters = self._by_partition.get(tp)
        if not waiters:
            return
        for waiter in list(waiters):
            waiter.accumulated += num_bytes
            if waiter.accumulated >= waiter.needed:
                waiter._complete()

    def wake_partition(self, tp: TopicPartition) -> None:
        """Complete every fetch on `tp` now (log start moved, topic deleted)."""
        for waiter in list(self._by_partition.get(tp, ())):
            waiter._complete()

    def close(self) -> None:
        """Shutdown: parked fetches answer immediately with what they have."""
        self._closed = True
        for waiters in list(self._by_partition.values()):
            for waiter in list(waiters):
                waiter._complete()

    def __len__(self) -> int:
        return len({w for ws in self._by_partition.values() for w in ws})
