"""Kafka's RequestChannel for one event loop: connections are served in the order their requests
arrived, a bounded number per turn of the loop.

Each connection serves its own requests one at a time, in order (asyncbroker.connection). What
this module decides is which connection goes next. Starting every connection with a request as
soon as its bytes are read serves a turn's requests all at once: with a thousand clients the
loop reads a thousand requests, answers them in one 70 ms turn, and a request that arrives just
after the turn began waits for that turn, then for its place in the next one: anywhere from
nothing to two turns.

So at most MAX_STARTS_PER_TURN connections start in one turn; the others wait in arrival order,
as Kafka's network threads queue requests for its handler threads. Between two batches the loop
polls its sockets again, and what arrived meanwhile queues behind the waiting connections. A
request on a quiet broker starts at once, in the turn that read it.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable

MAX_STARTS_PER_TURN = 64
"""Connections started in one turn of the loop: the loop polls its sockets between batches."""


class RequestChannel:
    """Starts connections' workers in arrival order, MAX_STARTS_PER_TURN per turn of the loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, max_starts_per_turn: int = MAX_STARTS_PER_TURN) -> None:
        self._loop = loop
        self._max_starts = max_starts_per_turn
        self._waiting: collections.deque[Callable[[], None]] = collections.deque()
        self._started = 0  # in the current turn
        self._turn_end_scheduled = False

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def submit(self, start: Callable[[], None]) -> None:
        """Call `start` (it starts a connection's worker) now when this turn has room and no
        connection waits, else after the connections already waiting."""
        if self._started < self._max_starts and not self._waiting:
            self._started += 1
            start()
            self._schedule_turn_end()  # (after: a request served at once is answered before this)
            return
        self._waiting.append(start)
        self._schedule_turn_end()

    def _schedule_turn_end(self) -> None:
        # Queued behind this turn's workers: the next batch starts after them, and runs in the
        # next turn, after the loop has polled its sockets.
        if not self._turn_end_scheduled:
            self._turn_end_scheduled = True
            self._loop.call_soon(self._turn_end)

    def _turn_end(self) -> None:
        self._turn_end_scheduled = False
        self._started = 0
        while self._waiting and self._started < self._max_starts:
            self._started += 1
            self._waiting.popleft()()
        if self._started:
            self._schedule_turn_end()
