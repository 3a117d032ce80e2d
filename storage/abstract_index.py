"""AbstractIndex: a preallocated, mmap'd, sparse, sorted index file, mapped lazily on first use.

Subclasses fix the entry layout (OffsetIndex 8 bytes, TimeIndex 12 bytes). Lookups are a
greatest-lower-bound binary search that first tries the warm tail of the file (the last 8 KiB),
so readers near the end of the log touch only hot pages.
"""
from __future__ import annotations

import mmap
import os
import threading
from pathlib import Path
from typing import Callable, ClassVar

from storage.errors import CorruptIndexError

WARM_SECTION_BYTES = 8192


def round_down_to_multiple(n: int, factor: int) -> int:
    return factor * (n // factor)


class AbstractIndex:
    ENTRY_SIZE: ClassVar[int]

    def __init__(self, path: Path, base_offset: int, max_index_size: int = -1, writable: bool = True) -> None:
        # A str, not a Path: a Path with its cached parts is about half a KiB, and a broker
        # holds four of them per segment (the log and its three indexes) for as long as it runs.
        self._path = os.fspath(path)
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self.writable = writable
        self._lock = threading.RLock()
        self._mmap: mmap.mmap | None = None
        self._mapped = False
        self._entries = 0
        self._max_entries = 0
        self._length = 0
        self._reserved_to = 0
        self._deleted = False

    # -- lazy mapping ---------------------------------------------------------------------------
    @property
    def path(self) -> Path:
        return Path(self._path)

    @property
    def is_mapped(self) -> bool:
        return self._mapped

    def _ensure(self) -> None:
        """Map the file if it is not. A reader calls this under self._lock, then reads the
        mapping: close_handler (a segment's deletion, on another thread) unmaps under the lock,
        so between a check outside it and the read the mapping could be gone."""
        if not self._mapped:
            with self._lock:
                if self._deleted:
                    from storage.errors import KafkaStorageError

                    raise KafkaStorageError(f"Index {self._path} has been deleted")
                if not self._mapped:
                    self._open()

    def _open(self) -> None:
        """Create (preallocated to max_index_size) or open the file and map it."""
        newly_created = False
        if not os.path.exists(self._path):
            if not self.writable:
                raise FileNotFoundError(self._path)
            if self.max_index_size < self.ENTRY_SIZE:
                raise ValueError(f"Invalid max index size {self.max_index_size}")
            fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                os.ftruncate(fd, round_down_to_multiple(self.max_index_size, self.ENTRY_SIZE))
            finally:
                os.close(fd)
            newly_created = True
        length = os.path.getsize(self._path)
        self._map(length)
        # A new file is all zeros; an existing one is full of entries up to its (trimmed) length.
        self._entries = 0 if newly_created else length // self.ENTRY_SIZE
        self._reserved_to = self._entries * self.ENTRY_SIZE  # written bytes have their blocks
        self._mapped = True
        self._after_open()

    def _map(self, length: int) -> None:
        if self._mmap is not None:
            self._mmap.close()
            self._mmap = None
        self._length = length
        self._max_entries = length // self.ENTRY_SIZE
        if length == 0:
            return  # mmap cannot map an empty file; an empty index needs no mapping
        flags = os.O_RDWR if self.writable else os.O_RDONLY
        fd = os.open(self._path, flags)
        try:
            access = mmap.ACCESS_WRITE if self.writable else mmap.ACCESS_READ
            self._mmap = mmap.mmap(fd, length, access=access)
        finally:
            os.close(fd)
        # Lookups are binary searches and appends touch one new page per few hundred entries:
        # no readahead. Without this, the first store into a fresh page of the sparse,
        # preallocated file reads ahead (zero-fills) dozens of pages, and with many partitions
        # those faults were most of the broker's CPU.
        self._mmap.madvise(mmap.MADV_RANDOM)

    _RESERVE_CHUNK = 64 * 1024

    def _reserve(self, end: int) -> None:
        """Allocate disk blocks for the index up to byte `end` before writing through the mmap.

        The preallocated file is sparse: a store into a page that has no block yet, on a full
        disk, is a SIGBUS that kills the broker. posix_fallocate turns that into ENOSPC (an
        OSError the log turns into KAFKA_STORAGE_ERROR and an offline dir). One syscall per
        64 KiB of index.
        """
        if end <= self._reserved_to:
            return
        start = self._reserved_to
        stop = min(self._length, max(end, start + self._RESERVE_CHUNK))
        fd = os.open(self._path, os.O_RDWR)
        try:
            os.posix_fallocate(fd, start, stop - start)
        finally:
            os.close(fd)
        self._reserved_to = stop

    def _after_open(self) -> None:
        """Hook: recompute cached last entry."""

    # -- size -----------------------------------------------------------------------------------
    @property
    def entries(self) -> int:
        self._ensure()
        return self._entries

    @property
    def max_entries(self) -> int:
        self._ensure()
        return self._max_entries

    def is_full(self) -> bool:
        if not self._mapped:  # (every append asks: _ensure's call only when it has work)
            self._ensure()
        return self._entries >= self._max_entries

    @property
    def size_in_bytes(self) -> int:
        return self.entries * self.ENTRY_SIZE

    @property
    def length(self) -> int:
        """Current file length (preallocated or trimmed)."""
        self._ensure()
        return self._length

    def resize(self, new_size: int) -> bool:
        """Grow or shrink the file (and mapping) to new_size rounded down to whole entries."""
        with self._lock:
            self._ensure()
            rounded = round_down_to_multiple(new_size, self.ENTRY_SIZE)
            if rounded == self._length:
                return False
            if self._mmap is not None:
                # No msync: dirty pages survive the unmap in the page cache (as in Kafka's resize).
                self._mmap.close()
                self._mmap = None
            os.truncate(self._path, rounded)
            self._reserved_to = min(self._reserved_to, rounded)  # a shrink gave blocks back
            self._map(rounded)
            self._entries = min(self._entries, self._max_entries)
            return True

    def trim_to_valid_size(self) -> None:
        """Shrink the preallocated file to its entries (done when the segment stops being active)."""
        self._ensure()
        self.resize(self._entries * self.ENTRY_SIZE)

    # -- search ---------------------------------------------------------------------------------
    def _largest_lower_bound_slot(self, target: int, key: Callable[[int], int]) -> int:
        """Slot of the greatest entry whose key <= target, or -1. Warm section first."""
        n = self._entries
        if n == 0:
            return -1

        def search(lo: int, hi: int) -> int:
            while lo < hi:
                mid = (lo + hi + 1) >> 1
                found = key(mid)
                if found == target:
                    return mid
                if found < target:
                    lo = mid
                else:
                    hi = mid - 1
            return lo

        warm_entries = WARM_SECTION_BYTES // self.ENTRY_SIZE
        first_hot = max(0, n - 1 - warm_entries)
        if key(first_hot) < target:
            return search(first_hot, n - 1)
        if key(0) > target:
            return -1
        return search(0, first_hot)

    def _smallest_upper_bound_slot(self, target: int, key: Callable[[int], int]) -> int:
        n = self._entries
        slot = self._largest_lower_bound_slot(target, key)
        if slot == -1:
            return 0 if n else -1
        if key(slot) == target:
            return slot
        return slot + 1 if slot + 1 < n else -1

    # -- lifecycle ------------------------------------------------------------------------------
    def truncate(self) -> None:
        """Drop all entries (recovery rebuilds from zero)."""
        with self._lock:
            self._ensure()
            self._truncate_to_entries(0)

    reset = truncate

    def _rel(self, slot: int) -> int:
        """Relative offset stored in `slot` (both index kinds are sorted by it)."""
        raise NotImplementedError

    def truncate_to(self, offset: int) -> None:
        """Remove entries with offset >= `offset`."""
        with self._lock:
            self._ensure()
            rel = offset - self.base_offset
            slot = self._largest_lower_bound_slot(rel, self._rel)
            if slot == -1:
                new_entries = 0
            elif self._rel(slot) == rel:
                new_entries = slot
            else:
                new_entries = slot + 1
            self._truncate_to_entries(new_entries)

    def _truncate_to_entries(self, n: int) -> None:
        self._entries = n
        self._after_open()

    def flush(self) -> None:
        with self._lock:
            if self._mmap is not None and self.writable:
                self._mmap.flush()

    def close(self) -> None:
        """Trim (if writable) and unmap; reopening maps lazily again."""
        with self._lock:
            if self._mapped and self.writable:
                self.trim_to_valid_size()
            elif self.writable and not self._deleted and not os.path.exists(self._path):
                # Never used: leave an empty index so the segment's file set is complete.
                os.close(os.open(self._path, os.O_WRONLY | os.O_CREAT, 0o644))
            self.close_handler()

    def close_handler(self) -> None:
        with self._lock:
            if self._mmap is not None:
                self._mmap.close()
                self._mmap = None
            self._mapped = False

    def rename_to(self, path: Path) -> None:
        with self._lock:
            if os.path.exists(self._path):
                os.replace(self._path, path)
            self._path = os.fspath(path)

    def delete_if_exists(self) -> bool:
        with self._lock:
            self.close_handler()
            self._deleted = True
            try:
                os.unlink(self._path)
                return True
            except FileNotFoundError:
                return False

    def update_parent_dir(self, parent: Path) -> None:
        self._path = os.path.join(parent, os.path.basename(self._path))

    def sanity_check(self) -> None:
        """Cheap structural check without mapping: whole entries only, then subclass rules."""
        try:
            fd = os.open(self._path, os.O_RDONLY)
        except FileNotFoundError:
            raise CorruptIndexError(f"Index file {self._path} is missing") from None
        try:
            length = os.fstat(fd).st_size
            if length % self.ENTRY_SIZE != 0:
                raise CorruptIndexError(
                    f"Index file {self._path} is corrupt, found {length} bytes which is neither positive "
                    f"nor a multiple of {self.ENTRY_SIZE}."
                )
            entries = length // self.ENTRY_SIZE
            if entries:
                self._check_entries(entries, lambda slot: os.pread(fd, self.ENTRY_SIZE, slot * self.ENTRY_SIZE))
        finally:
            os.close(fd)

    def _check_entries(self, entries: int, read_entry: Callable[[int], bytes]) -> None:
        """Hook for subclasses: inspect entries (read_entry(slot) -> raw bytes)."""

    def relative_offset(self, offset: int) -> int:
        """offset - base_offset, refusing what does not fit in 4 bytes (the cause of offset overflow)."""
        rel = offset - self.base_offset
        if rel < 0 or rel > 0x7FFFFFFF:
            from storage.errors import InvalidOffsetError

            raise InvalidOffsetError(
                f"Integer overflow for offset: {offset} ({os.path.basename(self._path)})"
            )
        return rel

    def can_append_offset(self, offset: int) -> bool:
        rel = offset - self.base_offset
        return 0 <= rel <= 0x7FFFFFFF
