"""OffsetIndex: sparse map relative offset (int32) -> position in the .log (int32), 8 bytes per entry."""
from __future__ import annotations

from collections.abc import Callable

import struct

import msgspec

from storage.abstract_index import AbstractIndex
from storage.errors import CorruptIndexError, IndexFullError, InvalidOffsetError

_ENTRY = struct.Struct(">ii")


class OffsetPosition(msgspec.Struct, frozen=True):
    offset: int
    position: int


class OffsetIndex(AbstractIndex):
    ENTRY_SIZE = 8

    def _after_open(self) -> None:
        self._last_offset = self._entry(self._entries - 1).offset if self._entries else self.base_offset

    def _rel(self, slot: int) -> int:
        return int(_ENTRY.unpack_from(self._mmap, slot * 8)[0])  # type: ignore[arg-type]

    def _entry(self, slot: int) -> OffsetPosition:
        rel, pos = _ENTRY.unpack_from(self._mmap, slot * 8)  # type: ignore[arg-type]
        return OffsetPosition(self.base_offset + rel, pos)

    def entry(self, n: int) -> OffsetPosition:
        with self._lock:
            self._ensure()
            if n >= self._entries:
                raise IndexError(f"Attempt to fetch the {n}th entry from index {self.path}, which has size {self._entries}")
            return self._entry(n)

    @property
    def last_offset(self) -> int:
        self._ensure()
        return self._last_offset

    def last_entry(self) -> OffsetPosition:
        with self._lock:
            self._ensure()
            return self._entry(self._entries - 1) if self._entries else OffsetPosition(self.base_offset, 0)

    def lookup(self, target_offset: int) -> OffsetPosition:
        """Greatest entry with offset <= target, or (base_offset, 0)."""
        with self._lock:
            self._ensure()
            slot = self._largest_lower_bound_slot(target_offset - self.base_offset, self._rel)
            if slot == -1:
                return OffsetPosition(self.base_offset, 0)
            return self._entry(slot)

    def _position(self, slot: int) -> int:
        return int(_ENTRY.unpack_from(self._mmap, slot * 8)[1])  # type: ignore[arg-type]

    def fetch_upper_bound_offset(self, fetch_position: OffsetPosition, fetch_size: int) -> OffsetPosition | None:
        """First entry whose position is beyond fetch_position + fetch_size."""
        with self._lock:
            self._ensure()
            slot = self._smallest_upper_bound_slot(fetch_position.position + fetch_size, self._position)
            return None if slot == -1 else self._entry(slot)

    def floor_by_position(self, position: int) -> OffsetPosition:
        """Greatest entry whose position is <= position, or (base_offset, 0): a batch that starts
        at most one index interval (plus one batch) before that byte. Positions grow with offsets,
        so the search is the offset lookup's."""
        with self._lock:
            self._ensure()
            slot = self._largest_lower_bound_slot(position, self._position)
            return OffsetPosition(self.base_offset, 0) if slot == -1 else self._entry(slot)

    def append(self, offset: int, position: int) -> None:
        """Add an entry; offsets must strictly increase (the invariant lookups rely on)."""
        with self._lock:
            self._ensure()
            if self._entries >= self._max_entries:
                raise IndexFullError(f"Attempt to append to a full index (size = {self._entries}).")
            if self._entries != 0 and offset <= self._last_offset:
                raise InvalidOffsetError(
                    f"Attempt to append an offset ({offset}) to position {self._entries} no larger than "
                    f"the last offset appended ({self._last_offset}) to {self.path}."
                )
            self._reserve((self._entries + 1) * 8)
            _ENTRY.pack_into(self._mmap, self._entries * 8, self.relative_offset(offset), position)  # type: ignore[arg-type]
            self._entries += 1
            self._last_offset = offset

    def _check_entries(self, entries: int, read_entry: Callable[[int], bytes]) -> None:
        rel, pos = _ENTRY.unpack(read_entry(entries - 1))
        if rel < 0 or pos < 0:
            raise CorruptIndexError(
                f"Corrupt index found, index file ({self.path}) has non-zero size but the last offset "
                f"is {self.base_offset + rel} which is less than the base offset {self.base_offset}."
            )
        if entries > 1:
            prev_rel, prev_pos = _ENTRY.unpack(read_entry(entries - 2))
            if prev_rel >= rel or prev_pos >= pos:
                raise CorruptIndexError(f"Corrupt index found, index file ({self.path}) entries are not increasing")

    def entries_list(self) -> list[OffsetPosition]:
        """All entries (tests and tools)."""
        with self._lock:
            self._ensure()
            return [self._entry(i) for i in range(self._entries)]
