"""ProducerStateManager (minimal): open transactions, so the last stable offset and aborted
transactions are right. Idempotent-producer dedup and `.snapshot` files are a later issue.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import msgspec

from storage.transaction_index import AbortedTxn
from wire.records import BatchHeader, ControlRecordType, decode_records, parse_control_record

if TYPE_CHECKING:
    from storage.log_segment import LogSegment


class CompletedTxn(msgspec.Struct, frozen=True):
    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


class ProducerStateManager:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self.map_end_offset = 0

    def first_unstable_offset(self) -> int | None:
        with self._lock:
            return min(self._ongoing.values()) if self._ongoing else None

    def is_empty(self) -> bool:
        return not self._ongoing

    def update(self, header: BatchHeader, buf: bytes | bytearray | memoryview | None, pos: int) -> CompletedTxn | None:
        """Account for one appended batch; returns the transaction a marker completed."""
        if not header.is_transactional or header.producer_id < 0:
            return None
        last = header.base_offset + header.last_offset_delta
        with self._lock:
            if not header.is_control:
                self._ongoing.setdefault(header.producer_id, header.base_offset)
                return None
            first = self._ongoing.pop(header.producer_id, None)
        if first is None or buf is None:
            return None
        records = decode_records(buf, pos)
        if not records:
            return None
        marker = parse_control_record(records[0].key, records[0].value)
        if marker.type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            return None
        return CompletedTxn(header.producer_id, first, last, marker.type == ControlRecordType.ABORT)

    def last_stable_offset_after(self, completed: CompletedTxn) -> int:
        """LSO once `completed` is done: the next open transaction's start, else its end + 1."""
        nxt = self.first_unstable_offset()
        return nxt if nxt is not None else completed.last_offset + 1

    def on_recovered_batch(self, header: BatchHeader, segment: "LogSegment") -> None:
        """Replay during recovery (header-only: markers re-derive the open set)."""
        if not header.is_transactional or header.producer_id < 0:
            return
        with self._lock:
            if header.is_control:
                self._ongoing.pop(header.producer_id, None)
            else:
                self._ongoing.setdefault(header.producer_id, header.base_offset)

    def truncate_and_reload(self, log_start_offset: int, log_end_offset: int) -> None:
        with self._lock:
            self._ongoing = {p: o for p, o in self._ongoing.items() if log_start_offset <= o < log_end_offset}

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        with self._lock:
            self._ongoing = {p: o for p, o in self._ongoing.items() if o >= log_start_offset}

    def truncate_fully_and_start_at(self, offset: int) -> None:
        with self._lock:
            self._ongoing.clear()
            self.map_end_offset = offset

    def aborted(self, completed: CompletedTxn, last_stable_offset: int) -> AbortedTxn:
        return AbortedTxn(completed.producer_id, completed.first_offset, completed.last_offset, last_stable_offset)
