"""TimeIndex: sparse map max timestamp so far (int64) -> relative offset (int32), 12 bytes per entry."""
from __future__ import annotations

from collections.abc import Callable

import struct

import msgspec

from storage.abstract_index import AbstractIndex
from storage.errors import CorruptIndexError, IndexFullError, InvalidOffsetError

_ENTRY = struct.Struct(">qi")
NO_TIMESTAMP = -1


class TimestampOffset(msgspec.Struct, frozen=True):
    timestamp: int
    offset: int


class TimeIndex(AbstractIndex):
    """An entry (T, O) says: the largest timestamp in the log at or before offset O is T."""

    ENTRY_SIZE = 12

    def _after_open(self) -> None:
        self._last = self._entry(self._entries - 1) if self._entries else TimestampOffset(NO_TIMESTAMP, self.base_offset)

    def _entry(self, slot: int) -> TimestampOffset:
        ts, rel = _ENTRY.unpack_from(self._mmap, slot * 12)  # type: ignore[arg-type]
        return TimestampOffset(ts, self.base_offset + rel)

    def _ts(self, slot: int) -> int:
        return int(_ENTRY.unpack_from(self._mmap, slot * 12)[0])  # type: ignore[arg-type]

    def _rel(self, slot: int) -> int:
        return int(_ENTRY.unpack_from(self._mmap, slot * 12)[1])  # type: ignore[arg-type]

    def entry(self, n: int) -> TimestampOffset:
        with self._lock:
            self._ensure()
            if n >= self._entries:
                raise IndexError(f"Attempt to fetch the {n}th entry from time index {self.path}, which has size {self._entries}")
            return self._entry(n)

    def is_full(self) -> bool:
        # One slot is reserved for the final entry written when the segment becomes inactive.
        if not self._mapped:
            self._ensure()
        return self._entries >= self._max_entries - 1

    def last_entry(self) -> TimestampOffset:
        self._ensure()
        return self._last

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """Greatest entry with timestamp <= target, or (NO_TIMESTAMP, base_offset)."""
        with self._lock:
            self._ensure()
            slot = self._largest_lower_bound_slot(target_timestamp, self._ts)
            if slot == -1:
                return TimestampOffset(NO_TIMESTAMP, self.base_offset)
            return self._entry(slot)

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Append only when the timestamp grows; both columns stay monotone."""
        with self._lock:
            self._ensure()
            if not skip_full_check and self.is_full():
                raise IndexFullError(f"Attempt to append to a full time index (size = {self._entries}).")
            if self._entries != 0 and offset < self._last.offset:
                raise InvalidOffsetError(
                    f"Attempt to append an offset ({offset}) to slot {self._entries} no larger than the last "
                    f"offset appended ({self._last.offset}) to {self.path}."
                )
            if self._entries != 0 and timestamp < self._last.timestamp:
                raise InvalidOffsetError(
                    f"Attempt to append a timestamp ({timestamp}) to slot {self._entries} no larger than the "
                    f"last timestamp appended ({self._last.timestamp}) to {self.path}."
                )
            if timestamp > self._last.timestamp:
                if self._entries >= self._max_entries:
                    raise IndexFullError(f"Time index {self.path} has no free slot")
                self._reserve((self._entries + 1) * 12)
                _ENTRY.pack_into(self._mmap, self._entries * 12, timestamp, self.relative_offset(offset))  # type: ignore[arg-type]
                self._entries += 1
                self._last = TimestampOffset(timestamp, offset)

    def _check_entries(self, entries: int, read_entry: Callable[[int], bytes]) -> None:
        last_ts, last_rel = _ENTRY.unpack(read_entry(entries - 1))
        first_ts, _ = _ENTRY.unpack(read_entry(0))
        if last_rel < 0:
            raise CorruptIndexError(
                f"Corrupt time index found, time index file ({self.path}) has non-zero size but the last "
                f"offset is {self.base_offset + last_rel} which is less than the first offset {self.base_offset}"
            )
        if last_ts < first_ts:
            raise CorruptIndexError(
                f"Corrupt time index found, time index file ({self.path}) has non-zero size but the last "
                f"timestamp is {last_ts} which is less than the first entry timestamp {first_ts}"
            )

    def entries_list(self) -> list[TimestampOffset]:
        with self._lock:
            self._ensure()
            return [self._entry(i) for i in range(self._entries)]
