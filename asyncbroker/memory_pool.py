"""queued.max.request.bytes: how many bytes of received requests all connections may hold.

Kafka's SimpleMemoryPool as its SocketServer uses it (KIP-72), non-strict: a request's bytes
are granted while any memory is left, even when the request is larger than what is left, so
a request as large as socket.request.max.bytes always gets through once memory is free (the
configuration must be at least that large), and the pool runs below zero by at most one
request. A connection whose next request is refused stops reading (Kafka mutes its channel)
until answered requests return their bytes; then every connection waiting for memory tries
again, in the order they ran out. Unset (-1, or 0) there is no pool: Kafka's MemoryPool.NONE.

Where asyncbroker differs, and why. Kafka reads one request per connection at a time (a
channel stays muted until its answer is sent); an asyncbroker connection reads ahead up to
32 requests (asyncbroker.connection), and those draw on the pool as well, so the bound covers
every request received. But a request read ahead never spends the pool's last bytes: were it
allowed to, a connection whose first request waits long (a parked Fetch, a JoinGroup) could
hold the pool with the requests queued behind it, and every other connection would wait for
it; as in Kafka, only the one request each connection works on can empty the pool. A request
returns its bytes once answered, where Kafka returns them when its handler returns: here the
frame is alive until then (a Produce appends from it, a parked Fetch keeps it), so the count is
of memory really held.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class MemoryPool:
    """The broker-wide budget of received request bytes (see the module docstring)."""

    __slots__ = ("size", "available", "_loop", "_waiting", "_wake_scheduled", "_depleted_since", "_depleted_ns")

    def __init__(self, size: int, loop: asyncio.AbstractEventLoop | None = None) -> None:
        if size <= 0:
            raise ValueError("a MemoryPool needs a positive size (no bound: no pool)")
        self.size = size
        self.available = size  # below zero by at most one request (non-strict)
        self._loop = loop
        # Callbacks of connections that stopped reading for memory, in the order they ran out.
        self._waiting: dict[Callable[[], None], None] = {}
        self._wake_scheduled = False
        self._depleted_since: int | None = None  # monotonic ns when available fell to <= 0
        self._depleted_ns = 0

    @property
    def used(self) -> int:
        return self.size - self.available

    @property
    def out_of_memory(self) -> bool:
        return self.available <= 0

    def try_allocate(self, size: int, *, read_ahead: bool = False) -> bool:
        """Grant `size` bytes when any memory is left (non-strict), else refuse. A `read_ahead`
        request (its connection already holds one) is granted only if some memory is left
        after it: the last bytes go to connections' next requests, as in Kafka, where a
        connection holds one request at a time."""
        if self.available <= 0 or (read_ahead and self.available <= size):
            return False
        self.available -= size
        if self.available <= 0:
            self._depleted_since = time.monotonic_ns()
        return True

    def release(self, size: int) -> None:
        """Bytes back from an answered request (or a closed connection); the waiting
        connections try again (a request read ahead may need more than was freed)."""
        was_depleted = self.available <= 0
        self.available += size
        if was_depleted and self.available > 0 and self._depleted_since is not None:
            self._depleted_ns += time.monotonic_ns() - self._depleted_since
            self._depleted_since = None
        if self._waiting and not self._wake_scheduled:
            # Not from inside the releasing connection's own call: the woken connections
            # start workers (asyncbroker.request_channel), so they run in a callback of their own.
            self._wake_scheduled = True
            (self._loop or asyncio.get_running_loop()).call_soon(self._wake)

    def wait(self, callback: Callable[[], None]) -> None:
        """Call `callback` (once) at the next release; a connection that was refused calls this
        (at once: nothing is released in between)."""
        self._waiting[callback] = None

    def cancel_wait(self, callback: Callable[[], None]) -> None:
        self._waiting.pop(callback, None)

    @property
    def depleted_seconds(self) -> float:
        """Time spent with no memory left, in all (Kafka's memory-pool-depleted-time-total)."""
        ns = self._depleted_ns
        if self._depleted_since is not None:
            ns += time.monotonic_ns() - self._depleted_since
        return ns / 1e9

    def _wake(self) -> None:
        self._wake_scheduled = False
        waiting, self._waiting = list(self._waiting), {}
        for i, callback in enumerate(waiting):
            if self.available <= 0:
                # Ran out again: the rest keep their place, behind those tried and refused again.
                self._waiting = {**self._waiting, **dict.fromkeys(c for c in waiting[i:] if c not in self._waiting)}
                return
            callback()
