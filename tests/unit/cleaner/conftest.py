"""Fixtures for the cleaner tests: a mock clock and logs opened in tmp dirs."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from cleaner_testlib import BASE_TS
from storage.clock import MockClock
from storage.log import Log
from storage.log_config import LogConfig


@pytest.fixture
def clock() -> MockClock:
    return MockClock(BASE_TS)


@pytest.fixture
def make_log(tmp_path: Path, clock: MockClock) -> Callable[..., Log]:
    opened: list[Log] = []

    def make(config: LogConfig, name: str = "topic-0", **kwargs) -> Log:
        log = Log.open(tmp_path / name, config, clock=clock, **kwargs)
        opened.append(log)
        return log

    yield make
    for log in opened:
        log.close()
