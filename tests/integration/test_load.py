"""Bounded load: 1,000 concurrent connections, mixed produce/fetch/metadata over many partitions.

Asserts behaviour only: no request fails, the broker's fds return to where they were once the
clients leave (no leak), and its RSS stays bounded. Latencies are printed (p50/p99/max per
kind), never asserted; the full 1,000-partition run is bench/bench_load.py.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.bench_load import run_load  # noqa: E402

pytestmark = pytest.mark.timeout(300)

RSS_LIMIT_KIB = 1_000_000


def test_thousand_connections_mixed_load(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_load(connections=1000, partitions=200, seconds=5)
    with capsys.disabled():
        print("\n" + result.report())
    assert not result.errors, result.errors[:10]
    assert result.requests > 0
    assert result.fds["after"] <= result.fds["before"] + 5, f"fd leak: {result.fds}"
    assert result.rss_kib["peak"] < RSS_LIMIT_KIB, result.rss_kib
