"""file_records.pread(nonblocking=True): the bytes the page cache holds, or ReadWouldBlock,
on every filesystem (one that cannot say, such as tmpfs, always means "read it elsewhere")."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from storage_testlib import nonblocking_read_would_block
from storage.errors import ReadWouldBlock
from storage.file_records import pread


def written(directory: Path, data: bytes) -> int:
    fd = os.open(directory / "segment.log", os.O_RDWR | os.O_CREAT, 0o644)
    os.pwrite(fd, data, 0)
    return fd


def test_cached_bytes_are_read_and_evicted_ones_are_not(tmp_path: Path) -> None:
    data = os.urandom(64 * 1024)
    fd = written(tmp_path, data)
    try:
        assert pread(fd, 4096, 8192, nonblocking=True) == data[8192:12288]
        nonblocking_read_would_block(tmp_path / "segment.log", lambda: pread(fd, 4096, 8192, nonblocking=True),
                                     data[8192:12288])
        assert pread(fd, 4096, 8192) == data[8192:12288]  # the blocking read
    finally:
        os.close(fd)


def test_a_filesystem_without_nonblocking_reads_sends_them_elsewhere() -> None:
    # /dev/shm is tmpfs on this machine kind: RWF_NOWAIT is EOPNOTSUPP there.
    with tempfile.TemporaryDirectory(dir="/dev/shm") as shm:
        fd = written(Path(shm), b"x" * 8192)
        try:
            with pytest.raises(ReadWouldBlock):
                pread(fd, 100, 0, nonblocking=True)
            assert pread(fd, 100, 0) == b"x" * 100
        finally:
            os.close(fd)
