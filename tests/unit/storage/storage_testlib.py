"""Batch builders and page-cache eviction for the storage unit tests (a uniquely named module:
conftest names collide)."""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from storage.errors import ReadWouldBlock
from wire.records import Record, build_batch

BASE_TS = 1_700_000_000_000


def batch(n: int = 1, *, ts: int = BASE_TS, value_size: int = 10, key: bytes | None = b"k", **kwargs) -> bytes:
    """A v2 batch of n records (offsets 0..n-1 before assignment), timestamps ts, ts+1, ..."""
    return build_batch([Record(offset=i, timestamp=ts + i, key=key, value=b"v" * value_size) for i in range(n)], **kwargs)


def drop_from_page_cache(path: Path | str) -> None:
    """Write the file's pages back and evict them (what a cold read after a restart meets)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def nonblocking_read_would_block(path: Path | str, read: Callable[[], object], expected: object,
                                 attempts: int = 200) -> None:
    """Evict `path` and call `read` (a nonblocking read of it) until it raises ReadWouldBlock, at
    most `attempts` times; a read that does not raise must return `expected`.

    A read that must not wait (RWF_NOWAIT) and misses the page cache starts the kernel's readahead,
    and fails with EAGAIN unless that I/O has already finished when the kernel looks again. On a
    fast disk it sometimes has (about one read in two with the other test worker busy, one in
    twenty without), and the read is served. What the broker holds to either way: never other
    bytes, and ReadWouldBlock whenever the bytes are not there. (A page the eviction missed is
    retried the same way.) 20 attempts were once all served in CI, for a one-page .txnindex: so
    200, each a few ms. A read that ignores `nonblocking` is still never refused, and fails."""
    for _ in range(attempts):
        drop_from_page_cache(path)
        try:
            got = read()
        except ReadWouldBlock:
            return
        assert got == expected, f"a nonblocking read of {path} just after its eviction returned other data"
    raise AssertionError(f"{attempts} nonblocking reads of {path}, each just after its eviction, never raised "
                         "ReadWouldBlock")
