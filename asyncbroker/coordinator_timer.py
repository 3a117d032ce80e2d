"""CoordinatorTimer: the group coordinator's deadlines, on the broker's clock.

Session, rebalance and join timeouts are due when the broker's clock reaches them (Kafka's
coordinator runs them on a Timer it can replace in tests). The broker's AdjustableClock can
jump forward (`advance`, the lever tests and operators use): the timer is told and fires
what became due at once, so a test shows a session timing out by moving the clock instead
of sleeping through it. With a clock that only a test moves (MockClock), `poll()` fires
what is due.
"""
from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from storage.clock import Clock

__all__ = ["CoordinatorTimer"]

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)


class CoordinatorTimer(Generic[K]):
    """Deadlines keyed by `K` (the group coordinator's: (kind, group id, member id))."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._due: dict[K, tuple[int, int, Callable[[], None]]] = {}
        self._heap: list[tuple[int, int, K]] = []
        self._seq = itertools.count()
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        listen = getattr(clock, "add_listener", None)
        if listen is not None:
            listen(self._clock_moved)

    def schedule(self, key: K, delay_ms: int, fn: Callable[[], None]) -> None:
        """Run `fn` once the clock is `delay_ms` ahead of now, replacing `key`'s earlier deadline."""
        if self._closed:
            return
        deadline = self.clock.milliseconds() + max(0, delay_ms)
        seq = next(self._seq)
        self._due[key] = (deadline, seq, fn)
        heapq.heappush(self._heap, (deadline, seq, key))
        self._ensure_running()
        if self._wake is not None and self._heap[0][1] == seq:
            self._wake.set()  # a new earliest deadline: re-plan the sleep

    def cancel(self, key: K) -> None:
        self._due.pop(key, None)  # its heap entry is skipped when it comes up

    def cancel_matching(self, predicate: Callable[[K], bool]) -> None:
        for key in [k for k in self._due if predicate(k)]:
            del self._due[key]

    def __contains__(self, key: object) -> bool:
        return key in self._due

    def poll(self) -> int:
        """Fire every callback whose deadline the clock has reached; returns how many."""
        now = self.clock.milliseconds()
        fired = 0
        while self._heap and self._heap[0][0] <= now:
            deadline, seq, key = heapq.heappop(self._heap)
            entry = self._due.get(key)
            if entry is None or entry[1] != seq:
                continue  # cancelled or rescheduled
            del self._due[key]
            try:
                entry[2]()
            except Exception:  # noqa: BLE001 - one failing deadline must not stop the others
                log.exception("Timer callback for %r failed", key)
            fired += 1
        return fired

    def close(self) -> None:
        self._closed = True
        self._due.clear()
        self._heap.clear()
        if self._task is not None:
            self._task.cancel()

    def _ensure_running(self) -> None:
        if self._task is None or self._task.done():
            loop = asyncio.get_running_loop()
            self._wake = asyncio.Event()
            self._task = loop.create_task(self._run(), name="coordinator-timer")
            self._loop = loop

    def _clock_moved(self) -> None:
        """The clock jumped forward (maybe from another thread): re-check the deadlines now."""
        wake, loop = self._wake, getattr(self, "_loop", None)
        if wake is not None and loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(wake.set)

    async def _run(self) -> None:
        assert self._wake is not None
        while not self._closed:
            self.poll()
            while self._heap and self._heap[0][2] not in self._due:
                heapq.heappop(self._heap)  # drop cancelled entries at the front
            delay = None if not self._heap else max(0.0, (self._heap[0][0] - self.clock.milliseconds()) / 1000)
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), delay)
            except asyncio.TimeoutError:
                pass
