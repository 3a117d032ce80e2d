"""Storage-level crash/recovery tests: real segment files, damaged on purpose."""
from __future__ import annotations

from pathlib import Path

import pytest

from storage.clock import MockClock
from wire.records import Record, build_batch

BASE_TS = 1_700_000_000_000


def pytest_addoption(parser: pytest.Parser) -> None:
    try:
        parser.addoption("--torture", action="store_true", default=False,
                         help="run the exhaustive (slow) crash-point variants")
    except ValueError:
        pass  # already registered by another plugin


def batch(n: int = 1, *, ts: int = BASE_TS, value_size: int = 10) -> bytes:
    return build_batch([Record(offset=i, timestamp=ts + i, key=b"k", value=b"v" * value_size) for i in range(n)])


@pytest.fixture
def clock() -> MockClock:
    return MockClock(BASE_TS)


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "topic-0"


@pytest.fixture
def torture(request: pytest.FixtureRequest) -> bool:
    try:
        return bool(request.config.getoption("--torture"))
    except ValueError:
        return False
