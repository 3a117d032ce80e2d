"""Storage-level crash/recovery tests: real segment files, damaged on purpose."""
from __future__ import annotations

from pathlib import Path

import pytest

from recovery_testlib import BASE_TS
from storage.clock import MockClock


def pytest_addoption(parser: pytest.Parser) -> None:
    try:
        parser.addoption("--torture", action="store_true", default=False,
                         help="run the exhaustive (slow) crash-point variants")
    except ValueError:
        pass  # already registered by another plugin


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
