"""Batch builders and page-cache eviction for the storage unit tests (a uniquely named module:
conftest names collide)."""
from __future__ import annotations

import os
from pathlib import Path

from wire.records import Record, build_batch

BASE_TS = 1_700_000_000_000


def batch(n: int = 1, *, ts: int = BASE_TS, value_size: int = 10, key: bytes | None = b"k", **kwargs) -> bytes:
    """A v2 batch of n records (offsets 0..n-1 before assignment), timestamps ts, ts+1, ..."""
    return build_batch([Record(offset=i, timestamp=ts + i, key=key, value=b"v" * value_size) for i in range(n)], **kwargs)


def drop_from_page_cache(path: Path) -> None:
    """Write the file's pages back and evict them (what a cold read after a restart meets)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
