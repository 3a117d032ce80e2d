"""Shared test setup.

The session-wide broker comes from asyncbroker's own pytest plugin
(`asyncbroker` / `asyncbroker_bootstrap` fixtures, see
asyncbroker/testing/pytest_plugin.py): integration tests that only need *a*
broker share it; tests that restart or kill a broker start their own
`BrokerProcess`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")


def pytest_configure(config: pytest.Config) -> None:
    # kafka-python loads its protocol schemas with deprecated importlib.resources calls.
    config.addinivalue_line("filterwarnings", "ignore:.*is deprecated. Use files\\(\\) instead:DeprecationWarning")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--torture", action="store_true", default=False,
                     help="run the long crash/recovery torture tests (make torture)")


@pytest.fixture
def topic_name(request: pytest.FixtureRequest) -> str:
    """A topic name unique to this test (auto-created on first use)."""
    base = request.node.name.replace("[", "-").replace("]", "").replace("/", "-")[:80]
    return f"t-{base}-{uuid.uuid4().hex[:8]}"


def wait_until(predicate: Callable[[], T], timeout: float = 10.0, interval: float = 0.01, message: str = "") -> T:
    """Poll `predicate` until it returns a truthy value or the deadline passes."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s {message}".rstrip())
        time.sleep(interval)
