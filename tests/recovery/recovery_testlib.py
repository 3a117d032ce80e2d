"""Batch builders for the storage recovery tests."""
from __future__ import annotations

from wire.records import Record, build_batch

BASE_TS = 1_700_000_000_000


def batch(n: int = 1, *, ts: int = BASE_TS, value_size: int = 10) -> bytes:
    return build_batch([Record(offset=i, timestamp=ts + i, key=b"k", value=b"v" * value_size) for i in range(n)])
