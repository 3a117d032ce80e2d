"""Crash torture against a broker subprocess (see crash_driver.py for what is checked).

`make test`: 25 kills with flush.messages=1 plus a few with the OS flush policy.
`make torture` (--torture): 1,000 kills with flush.messages=1 and 100 with the OS policy.
The tally is printed either way; any lost, duplicated, invented or corrupt record fails.
"""
from __future__ import annotations

import os

import pytest

from crash_driver import CrashDriver

pytestmark = pytest.mark.timeout(0)  # bounded by the kill count; the torture run takes a while


def _run(kills: int, flush: str, capsys: pytest.CaptureFixture[str]) -> None:
    seed = int(os.environ["CRASH_TORTURE_SEED"]) if "CRASH_TORTURE_SEED" in os.environ else None
    driver = CrashDriver(kills, seed=seed, flush=flush)
    with capsys.disabled():
        tally = driver.run()
    assert tally.rounds == kills
    assert not tally.failures, "\n".join(tally.failures[:20])
    assert tally.lost == tally.duplicated == tally.invented == 0


def test_crash_torture_durable(torture: bool, capsys: pytest.CaptureFixture[str]) -> None:
    """acks=-1 with flush.messages=1: no acknowledged record is ever lost or duplicated."""
    _run(1000 if torture else 25, "durable", capsys)


def test_crash_torture_os_flush(torture: bool, capsys: pytest.CaptureFixture[str]) -> None:
    """Default flush policy: a process kill still loses nothing (the page cache survives it);
    the tally reports how many acknowledged records sat above the recovery point, i.e. what a
    power cut could have cost."""
    _run(100 if torture else 4, "os", capsys)
