"""Injectable time source, so tests of segment.ms, retention and compaction lag never sleep."""
from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    def milliseconds(self) -> int: ...

    def nanoseconds(self) -> int: ...


class SystemClock:
    """Wall clock for timestamps (ms since epoch) and a monotonic clock for intervals."""

    def milliseconds(self) -> int:
        return time.time_ns() // 1_000_000

    def nanoseconds(self) -> int:
        return time.monotonic_ns()


class MockClock:
    """A clock that only moves when a test calls advance()."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._ms = start_ms
        self._lock = threading.Lock()

    def milliseconds(self) -> int:
        return self._ms

    def nanoseconds(self) -> int:
        return self._ms * 1_000_000

    def advance(self, ms: int) -> None:
        with self._lock:
            self._ms += ms

    def set(self, ms: int) -> None:
        with self._lock:
            self._ms = ms


SYSTEM_CLOCK = SystemClock()
