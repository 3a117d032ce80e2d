"""AdjustableClock: the broker's time source, which tests and operators can move forward.

Retention, segment.ms rolls, file.delete.delay.ms and LogAppendTime all read the broker's
clock. A CI broker must show what a production Kafka does after `retention.ms=7d` without
waiting seven days, so the broker runs on the system clock plus an offset that only ever
grows: `advance(ms)` makes every time-based rule see the future at once, exactly as if the
days had passed. With no advance it *is* the system clock (offset 0).

Moving backwards is refused: offsets, timestamps and "due" times in storage assume time
does not go back within one process.
"""
from __future__ import annotations

import threading
from collections.abc import Callable

from storage.clock import SYSTEM_CLOCK, Clock


class AdjustableClock:
    """A `storage.clock.Clock`: `base` plus a monotonically growing offset."""

    def __init__(self, base: Clock = SYSTEM_CLOCK) -> None:
        self._base = base
        self._offset_ms = 0
        self._lock = threading.Lock()  # advance() may come from the monitor's thread
        self._listeners: list[Callable[[], None]] = []

    def add_listener(self, fn: Callable[[], None]) -> None:
        """Call `fn` after every advance (timers re-check their deadlines; from any thread)."""
        self._listeners.append(fn)

    @property
    def offset_ms(self) -> int:
        """How far this clock runs ahead of its base."""
        return self._offset_ms

    def milliseconds(self) -> int:
        return self._base.milliseconds() + self._offset_ms

    def nanoseconds(self) -> int:
        return self._base.nanoseconds() + self._offset_ms * 1_000_000

    def advance(self, ms: int) -> int:
        """Jump `ms` milliseconds ahead; returns the new time in ms."""
        if ms < 0:
            raise ValueError(f"the clock only moves forward (asked to move by {ms} ms)")
        with self._lock:
            self._offset_ms += ms
        for fn in list(self._listeners):
            fn()
        return self.milliseconds()
