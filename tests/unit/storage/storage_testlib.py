"""Batch builders and page-cache eviction for the storage unit tests (a uniquely named module:
conftest names collide)."""
from __future__ import annotations

import ctypes
import mmap
import os
import time
from collections.abc import Callable
from pathlib import Path

from storage.errors import ReadWouldBlock
from wire.records import Record, build_batch

BASE_TS = 1_700_000_000_000


def batch(n: int = 1, *, ts: int = BASE_TS, value_size: int = 10, key: bytes | None = b"k", **kwargs) -> bytes:
    """A v2 batch of n records (offsets 0..n-1 before assignment), timestamps ts, ts+1, ..."""
    return build_batch([Record(offset=i, timestamp=ts + i, key=key, value=b"v" * value_size) for i in range(n)], **kwargs)


def drop_from_page_cache(path: Path | str, timeout: float = 10.0) -> None:
    """Write the file's pages back and evict them (what a cold read after a restart meets).

    One POSIX_FADV_DONTNEED can leave a page behind (one the kernel is still adding to its LRU
    lists from another CPU): evict again until mincore finds none of the file's pages in the
    cache, within `timeout`. (Not a probing read: even one that must not wait starts a
    readahead, see nonblocking_read_would_block.)"""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        deadline = time.monotonic() + timeout
        while True:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            cached = _cached_pages(fd)
            if not cached:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"{path}: {cached} page(s) still cached after {timeout} s of evicting")
            time.sleep(0.01)  # polling the kernel's eviction, bounded by the deadline
    finally:
        os.close(fd)


def nonblocking_read_would_block(path: Path | str, read: Callable[[], object], expected: object,
                                 attempts: int = 20) -> None:
    """Evict `path` and call `read` (a nonblocking read of it) until it raises ReadWouldBlock, at
    most `attempts` times; a read that does not raise must return `expected`.

    A read that must not wait (RWF_NOWAIT) and misses the page cache starts the kernel's readahead,
    and fails with EAGAIN unless that I/O has already finished when the kernel looks again. On a
    fast disk it sometimes has (about one read in two with the other test worker busy, one in
    twenty without), and the read is served. What the broker holds to either way: never other
    bytes, and ReadWouldBlock whenever the bytes are not there."""
    for _ in range(attempts):
        drop_from_page_cache(path)
        try:
            got = read()
        except ReadWouldBlock:
            return
        assert got == expected, f"a nonblocking read of {path} just after its eviction returned other data"
    raise AssertionError(f"{attempts} nonblocking reads of {path}, each just after its eviction, never raised "
                         "ReadWouldBlock")


_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.mmap.restype = ctypes.c_void_p
_LIBC.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_LIBC.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_LIBC.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]


def _cached_pages(fd: int) -> int:
    """How many of the file's pages are in the page cache (mincore on a mapping that touches none)."""
    size = os.fstat(fd).st_size
    if size == 0:
        return 0
    address = _LIBC.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    if address in (None, ctypes.c_void_p(-1).value):
        raise OSError(ctypes.get_errno(), "mmap failed")
    try:
        pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
        vec = ctypes.create_string_buffer(pages)
        if _LIBC.mincore(address, size, vec) != 0:
            raise OSError(ctypes.get_errno(), "mincore failed")
        return sum(b & 1 for b in vec.raw)
    finally:
        _LIBC.munmap(address, size)
