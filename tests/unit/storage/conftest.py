"""Helpers for storage tests: real files in tmp dirs, batches built with wire's codec."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from storage.clock import MockClock
from storage.log import Log
from storage.log_config import LogConfig
from storage_testlib import BASE_TS


@pytest.fixture
def clock() -> MockClock:
    return MockClock(BASE_TS)


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "topic-0"


@pytest.fixture
def make_log(log_dir: Path, clock: MockClock) -> Callable[..., Log]:
    opened: list[Log] = []

    def make(config: LogConfig | None = None, **kwargs) -> Log:
        log = Log.open(log_dir, config or LogConfig(), clock=clock, **kwargs)
        opened.append(log)
        return log

    yield make
    for log in opened:
        log.close()
