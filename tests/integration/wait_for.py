"""wait_until: poll a condition with a deadline (tests never sleep to wait)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(predicate: Callable[[], T], timeout: float = 10.0, interval: float = 0.01,
               message: str | Callable[[], str] = "") -> T:
    """Poll `predicate` until it returns a truthy value or the deadline passes. `message` says
    what was awaited; a callable one is asked at the deadline, for the state it ended in."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            said = message() if callable(message) else message
            raise AssertionError(f"condition not met within {timeout}s {said}".rstrip())
        time.sleep(interval)
