"""FileRecords: a segment's `.log` file of consecutive v2 record batches.

Appends are positional writes at the current size; reads are `os.pread`, so readers never
share a file position with the writer. Batch walking reads large chunks and decodes only
the 61-byte headers, never the records.
"""
from __future__ import annotations

import errno
import io
import os
import threading
from pathlib import Path
from typing import Iterator, NamedTuple

import msgspec

from storage.errors import ReadWouldBlock
from wire.errors import CorruptRecordError, UnsupportedForMessageFormatError
from wire.records import (
    BATCH_HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    BatchWalkStop,
    TimestampType,
    decode_records,
    read_batch_header,
    walk_batch_lengths,
)

READ_CHUNK = 1 << 20
HEADER_SCAN_CHUNK = 16 << 10  # header-only walks cover about one index interval (4 KiB by default)


class LogOffsetPosition(msgspec.Struct, frozen=True):
    """The batch holding an offset: its last offset, file position and size."""

    offset: int
    position: int
    size: int


class TimestampAndOffset(msgspec.Struct, frozen=True):
    timestamp: int
    offset: int
    leader_epoch: int | None = None


class FileBatch(NamedTuple):
    header: BatchHeader
    position: int
    buf: bytes | None  # the chunk holding the batch when data was requested
    offset_in_buf: int


def pread(fd: int, size: int, position: int, *, nonblocking: bool = False) -> bytes:
    """os.pread; `nonblocking` reads only what the page cache already holds (RWF_NOWAIT) and
    raises ReadWouldBlock rather than wait for the disk (a short read counts as missing bytes:
    the reads here never ask past the file's end)."""
    if not nonblocking:
        return os.pread(fd, size, position)
    buf = bytearray(size)
    try:
        read = os.preadv(fd, [buf], position, os.RWF_NOWAIT)
    except BlockingIOError:
        raise ReadWouldBlock(f"{size} bytes at {position} are not in the page cache") from None
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
            raise
        # A filesystem that cannot answer without waiting (tmpfs, some network ones): read it
        # where waiting is allowed.
        raise ReadWouldBlock(f"{exc.strerror}: a nonblocking read") from None
    if read < size:
        raise ReadWouldBlock(f"only {read} of {size} bytes at {position} are in the page cache")
    return bytes(buf)


class FileRecords:
    """The .log of one segment. The fd of an existing file is opened on first use, so a broker
    with many old segments does not hold one descriptor per segment from startup on."""

    def __init__(self, path: Path, fd: int | None, size: int) -> None:
        self._path = os.fspath(path)  # a str: see AbstractIndex._path
        self._open_lock = threading.Lock()
        self._file: io.FileIO | None = None
        self._fd = -1
        if fd is not None:
            self._adopt(fd)
        self._size = size
        self._closed = False

    def _adopt(self, fd: int) -> None:
        # The file object owns the fd: a FetchDataInfo holding it keeps the fd valid (and the number
        # never reused) even after the segment is deleted; the fd closes when the last holder drops it.
        self._file = os.fdopen(fd, "r+b", buffering=0)
        self._fd = fd

    def _fileno(self) -> int:
        if self._file is None:
            with self._open_lock:
                if self._file is None:
                    if self._closed:
                        raise ValueError(f"{self._path} is closed")
                    self._adopt(os.open(self._path, os.O_RDWR))
        return self._fd

    @classmethod
    def open(cls, path: Path, *, file_already_exists: bool = False, init_file_size: int = 0,
             preallocate: bool = False) -> "FileRecords":
        if file_already_exists:
            try:
                return cls(path, None, os.stat(path).st_size)
            except FileNotFoundError:
                pass
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        size = os.fstat(fd).st_size
        if preallocate and size == 0 and init_file_size > 0:
            # The bytes past `size` are zeros; recovery treats them as a torn tail.
            os.ftruncate(fd, init_file_size)
            return cls(path, fd, 0)
        return cls(path, fd, size)

    # -- accessors ------------------------------------------------------------------------------
    @property
    def path(self) -> Path:
        return Path(self._path)

    @property
    def path_str(self) -> str:
        return self._path

    @property
    def file(self) -> io.FileIO:
        """An open binary file object over the .log (for `loop.sendfile`/`os.sendfile`)."""
        self._fileno()
        return self._file  # type: ignore[return-value]

    def fileno(self) -> int:
        return self._fileno()

    def size_in_bytes(self) -> int:
        return self._size

    # -- mutation -------------------------------------------------------------------------------
    def append(self, data: bytes | bytearray | memoryview) -> int:
        view = memoryview(data)
        pos = self._size
        try:
            fd = self._fd if self._file is not None else self._fileno()  # (opened: no call)
            while view:
                written = os.pwrite(fd, view, pos)
                pos += written
                view = view[written:]
        except OSError:
            # ENOSPC/EIO part-way: cut the partial batch off so the file never holds a torn
            # batch past `size` (best effort; recovery truncates it otherwise).
            if pos > self._size:
                try:
                    os.ftruncate(self._fd, self._size)
                except OSError:
                    pass
            raise
        appended = pos - self._size
        self._size = pos
        return appended

    def flush(self) -> None:
        if self._file is not None or self._size:
            os.fsync(self._fileno())

    def truncate_to(self, target_size: int) -> int:
        """Drop bytes from target_size on; returns the number removed."""
        if target_size > self._size or target_size < 0:
            raise ValueError(f"Attempt to truncate log segment {self._path} to {target_size} bytes failed, "
                             f"size of this log segment is {self._size} bytes.")
        removed = self._size - target_size
        os.ftruncate(self._fileno(), target_size)
        self._size = target_size
        return removed

    def trim(self) -> None:
        """Cut preallocated space past the last batch."""
        if self._file is None or self._file.closed:
            return  # never opened here: nothing was preallocated by this process
        if os.fstat(self._fd).st_size != self._size:
            os.ftruncate(self._fd, self._size)

    def close(self) -> None:
        with self._open_lock:
            self._closed = True
            if self._file is not None and not self._file.closed:
                self._file.close()

    def rename_to(self, path: Path) -> None:
        # Under the open lock: a reader thread opening the fd lazily must see either the old
        # name before the rename or the new one after it, never the old name once it is gone
        # (a cleaner swap renames segments while a fetch reads them off the loop).
        with self._open_lock:
            os.replace(self._path, path)
            self._path = os.fspath(path)

    def update_parent_dir(self, parent: Path) -> None:
        with self._open_lock:
            self._path = os.path.join(parent, os.path.basename(self._path))

    def delete_if_exists(self) -> bool:
        """Unlink the file; the fd stays open for readers that still hold the segment, as Kafka's
        FileChannel does (a never-opened file is opened first, so a read in flight still finds it)."""
        with self._open_lock:
            if self._file is None and not self._closed:
                try:
                    self._adopt(os.open(self._path, os.O_RDWR))
                except FileNotFoundError:
                    return False
            try:
                os.unlink(self._path)
                return True
            except FileNotFoundError:
                return False

    def last_modified_ms(self) -> int:
        return int(os.stat(self._path).st_mtime * 1000)

    # -- reading --------------------------------------------------------------------------------
    def read(self, position: int, size: int, *, nonblocking: bool = False) -> bytes:
        """`size` bytes at `position` (fewer at the file's end); `nonblocking`: see pread."""
        return pread(self._fileno(), size, position, nonblocking=nonblocking)

    def whole_batches_end(self, start: int, limit: int, *, nonblocking: bool = False) -> int:
        """Where the last batch from `start` (a batch boundary) that ends by `limit` ends
        (`start` when none does)."""
        return self._walk_batch_lengths(start, limit, None, nonblocking).position

    def _walk_batch_lengths(self, start: int, limit: int, until_offset: int | None,
                            nonblocking: bool) -> BatchWalkStop:
        """wire.records.walk_batch_lengths over the file from `start` (a batch boundary) to
        `limit`: headers are read a HEADER_SCAN_CHUNK at a time, and a batch larger than that
        is stepped over unread."""
        fd = self._fileno()
        pos = start
        while limit - pos >= BATCH_HEADER_SIZE:
            chunk = pread(fd, min(HEADER_SCAN_CHUNK, limit - pos), pos, nonblocking=nonblocking)
            stop = walk_batch_lengths(chunk, limit=limit - pos, until_offset=until_offset)
            if stop.found:
                return BatchWalkStop(pos + stop.position, stop.last_offset, stop.size)
            if stop.position == 0 or stop.position + BATCH_HEADER_SIZE <= len(chunk):
                return BatchWalkStop(pos + stop.position)  # the walk saw the next header whole, and stopped
            pos += stop.position  # the next header is past this chunk
        return BatchWalkStop(pos)

    def batches(self, start: int = 0, end: int | None = None, *, with_data: bool = False,
                nonblocking: bool = False) -> Iterator[FileBatch]:
        """Walk batches in [start, end). Stops quietly at a partial trailing batch;
        a structurally invalid header raises CorruptRecordError/UnsupportedForMessageFormatError."""
        end = self._size if end is None else end
        if start >= end:
            return
        fd = self._fileno()
        chunk = READ_CHUNK if with_data else HEADER_SCAN_CHUNK
        pos = start
        buf = b""
        base = pos
        while pos < end:
            rel = pos - base
            avail = len(buf) - rel
            if avail < BATCH_HEADER_SIZE:
                buf = pread(fd, min(chunk, end - pos), pos, nonblocking=nonblocking)
                base, rel, avail = pos, 0, len(buf)
                if avail < BATCH_HEADER_SIZE:
                    return  # a partial trailing header: never visible below the LEO
            header = read_batch_header(buf, rel)
            size = header.batch_length + LOG_OVERHEAD
            if pos + size > end:
                return
            if with_data and size > avail:
                buf = pread(fd, max(size, min(READ_CHUNK, end - pos)), pos, nonblocking=nonblocking)
                base, rel = pos, 0
                if len(buf) < size:
                    return
            yield FileBatch(header, pos, buf if with_data else None, rel)
            pos += size

    def search_for_offset_from_position(self, target_offset: int, starting_position: int, *,
                                        nonblocking: bool = False) -> LogOffsetPosition | None:
        """First batch (from starting_position) whose last offset >= target_offset."""
        stop = self._walk_batch_lengths(starting_position, self._size, target_offset, nonblocking)
        return LogOffsetPosition(stop.last_offset, stop.position, stop.size) if stop.found else None

    def search_for_timestamp(self, target_timestamp: int, starting_position: int,
                             starting_offset: int) -> TimestampAndOffset | None:
        """First record at or after starting_offset with timestamp >= target (decodes only the matching batch)."""
        for batch in self.batches(starting_position, with_data=True):
            found = search_batch_for_timestamp(batch.header, batch.buf, batch.offset_in_buf,  # type: ignore[arg-type]
                                               target_timestamp, starting_offset)
            if found is not None:
                return found
        return None

    def offset_of_max_timestamp(self, batch: FileBatch) -> int:
        h = batch.header
        if h.timestamp_type == TimestampType.LOG_APPEND_TIME:
            return h.base_offset
        for record in decode_records(batch.buf, batch.offset_in_buf):  # type: ignore[arg-type]
            if record.timestamp == h.max_timestamp:
                return record.offset
        return h.base_offset + h.last_offset_delta


def _epoch(h: BatchHeader) -> int | None:
    return h.partition_leader_epoch if h.partition_leader_epoch >= 0 else None


BATCH_ERRORS = (CorruptRecordError, UnsupportedForMessageFormatError)


def search_batch_for_timestamp(h: BatchHeader, buf: bytes | bytearray | memoryview, pos: int, target_timestamp: int,
                               starting_offset: int) -> TimestampAndOffset | None:
    """The first record of the batch at `pos` at or after `starting_offset` whose timestamp is
    at least the target (a local segment's search, and a remote one's over fetched bytes)."""
    if h.max_timestamp < target_timestamp:
        return None
    if h.attributes & 0x08:  # LogAppendTime: every record carries maxTimestamp
        offset = max(h.base_offset, starting_offset)
        if offset <= h.base_offset + h.last_offset_delta:
            return TimestampAndOffset(h.max_timestamp, offset, _epoch(h))
        return None
    for record in decode_records(buf, pos):
        if record.timestamp >= target_timestamp and record.offset >= starting_offset:
            return TimestampAndOffset(record.timestamp, record.offset, _epoch(h))
    return None
