"""TransactionIndex: append-only list of aborted transactions (34-byte AbortedTxn v0 records), not mmap'd."""
from __future__ import annotations

import os
import struct
import threading
from pathlib import Path

import msgspec

from storage.errors import CorruptIndexError, ReadWouldBlock
from storage.file_records import pread

_RECORD = struct.Struct(">hqqqq")
RECORD_SIZE = _RECORD.size  # 34
CURRENT_VERSION = 0


class AbortedTxn(msgspec.Struct, frozen=True):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return _RECORD.pack(CURRENT_VERSION, self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset)


class TxnIndexSearchResult(msgspec.Struct, frozen=True):
    aborted_transactions: list[AbortedTxn]
    is_complete: bool


class TransactionIndex:
    """Created only when the first abort is recorded in its segment."""

    def __init__(self, start_offset: int, path: Path) -> None:
        self.start_offset = start_offset
        self._path = os.fspath(path)  # a str: see AbstractIndex._path
        self._lock = threading.Lock()
        self._last_offset: int | None = None

    @property
    def path(self) -> Path:
        return Path(self._path)

    def append(self, txn: AbortedTxn) -> None:
        with self._lock:
            if self._last_offset is None:
                existing = self._read_all()
                self._last_offset = existing[-1].last_offset if existing else None
            if self._last_offset is not None and txn.last_offset <= self._last_offset:
                raise ValueError(
                    f"The last offset of appended transactions must increase sequentially, but "
                    f"{txn.last_offset} is not greater than current last offset {self._last_offset} of index {self._path}"
                )
            with open(self._path, "ab") as f:
                f.write(txn.encode())
            self._last_offset = txn.last_offset

    def _read_all(self, *, nonblocking: bool = False) -> list[AbortedTxn]:
        try:
            fd = os.open(self._path, os.O_RDONLY)
        except FileNotFoundError:
            return []
        try:
            data = pread(fd, os.fstat(fd).st_size, 0, nonblocking=nonblocking)
        finally:
            os.close(fd)
        return parse_aborted_txns(data, self._path)

    def all_aborted_txns(self, *, nonblocking: bool = False) -> list[AbortedTxn]:
        """Every entry; `nonblocking` (the event loop's read): from the page cache, without waiting
        for an append in progress, else ReadWouldBlock."""
        if not self._lock.acquire(blocking=not nonblocking):
            raise ReadWouldBlock(f"{self._path} is being appended to")
        try:
            return self._read_all(nonblocking=nonblocking)
        finally:
            self._lock.release()

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int, *,
                             nonblocking: bool = False) -> TxnIndexSearchResult:
        """Aborted txns overlapping [fetch_offset, upper_bound_offset); complete unless a later segment may add more."""
        found = []
        for txn in self.all_aborted_txns(nonblocking=nonblocking):
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return TxnIndexSearchResult(found, True)
        return TxnIndexSearchResult(found, False)

    def truncate_to(self, offset: int) -> None:
        with self._lock:
            kept = [t for t in self._read_all() if t.last_offset < offset]
            if not os.path.exists(self._path):
                return
            os.truncate(self._path, len(kept) * RECORD_SIZE)
            self._last_offset = kept[-1].last_offset if kept else None

    def reset(self) -> None:
        with self._lock:
            if os.path.exists(self._path):
                os.truncate(self._path, 0)
            self._last_offset = None

    def sanity_check(self) -> None:
        try:
            size = os.path.getsize(self._path)
        except FileNotFoundError:
            return
        if size % RECORD_SIZE != 0:
            raise CorruptIndexError(f"Transaction index {self._path} has size {size}, not a multiple of {RECORD_SIZE}")
        for txn in self.all_aborted_txns():
            if txn.last_offset < self.start_offset:
                raise CorruptIndexError(
                    f"Last offset of aborted transaction {txn} in index {self._path} is less than start offset {self.start_offset}"
                )

    def flush(self) -> None:
        if os.path.exists(self._path):
            fd = os.open(self._path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def rename_to(self, path: Path) -> None:
        with self._lock:
            if os.path.exists(self._path):
                os.replace(self._path, path)
            self._path = os.fspath(path)

    def delete_if_exists(self) -> bool:
        with self._lock:
            try:
                os.unlink(self._path)
                return True
            except FileNotFoundError:
                return False

    def close(self) -> None:
        """Nothing is held open between appends."""

    def update_parent_dir(self, parent: Path) -> None:
        self._path = os.path.join(parent, os.path.basename(self._path))


def parse_aborted_txns(data: bytes | bytearray | memoryview, source: object) -> list[AbortedTxn]:
    """The entries of a transaction index's bytes (a local file's, or a remote segment's copy);
    a trailing partial entry is ignored, an unknown version is CorruptIndexError naming `source`."""
    out = []
    for pos in range(0, len(data) - RECORD_SIZE + 1, RECORD_SIZE):
        version, pid, first, last, lso = _RECORD.unpack_from(data, pos)
        if version != CURRENT_VERSION:
            raise CorruptIndexError(f"Unexpected aborted transaction version {version} in transaction index {source}")
        out.append(AbortedTxn(pid, first, last, lso))
    return out
