"""LogSegments: the ordered set of a log's segments keyed by base offset.

Mutations replace the sorted key list wholesale (copy on write), so readers on other threads
can navigate a consistent snapshot without taking the log's lock.
"""
from __future__ import annotations

import bisect
import threading
from typing import Iterator

from storage.log_segment import LogSegment


class LogSegments:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._bases: list[int] = []
        self._map: dict[int, LogSegment] = {}

    def add(self, segment: LogSegment) -> LogSegment | None:
        """Insert or replace the segment with the same base offset; returns the replaced one."""
        with self._lock:
            previous = self._map.get(segment.base_offset)
            self._map[segment.base_offset] = segment
            if previous is None:
                bases = list(self._bases)
                bisect.insort(bases, segment.base_offset)
                self._bases = bases
            return previous

    def remove(self, base_offset: int) -> None:
        with self._lock:
            if self._map.pop(base_offset, None) is not None:
                self._bases = [b for b in self._bases if b != base_offset]

    def clear(self) -> None:
        with self._lock:
            self._map = {}
            self._bases = []

    def close(self) -> None:
        for segment in self.values():
            segment.close()

    def __len__(self) -> int:
        return len(self._bases)

    def is_empty(self) -> bool:
        return not self._bases

    def contains(self, base_offset: int) -> bool:
        return base_offset in self._map

    def get(self, base_offset: int) -> LogSegment | None:
        return self._map.get(base_offset)

    def base_offsets(self) -> list[int]:
        return list(self._bases)

    def values(self, from_offset: int | None = None, to_offset: int | None = None) -> list[LogSegment]:
        """All segments, or those that may hold offsets in [from_offset, to_offset): the floor of
        from_offset up to (excluding) the segments whose base is >= to_offset."""
        bases, seg_map = self._bases, self._map
        if from_offset is None:
            return [s for s in map(seg_map.get, bases) if s is not None]
        if from_offset == to_offset:
            return []
        i = bisect.bisect_right(bases, from_offset) - 1
        i = max(i, 0)
        j = len(bases) if to_offset is None else bisect.bisect_left(bases, to_offset)
        return [s for s in map(seg_map.get, bases[i:j]) if s is not None]

    def __iter__(self) -> Iterator[LogSegment]:
        return iter(self.values())

    def first_segment(self) -> LogSegment | None:
        bases = self._bases
        return self._map.get(bases[0]) if bases else None

    def last_segment(self) -> LogSegment | None:
        bases = self._bases
        return self._map.get(bases[-1]) if bases else None

    def active_segment(self) -> LogSegment:
        bases = self._bases  # (last_segment, inline: every append asks)
        seg = self._map.get(bases[-1]) if bases else None
        if seg is None:
            raise RuntimeError("log has no segments")
        return seg

    def floor_segment(self, offset: int) -> LogSegment | None:
        bases = self._bases
        i = bisect.bisect_right(bases, offset) - 1
        return self._map.get(bases[i]) if i >= 0 else None

    def lower_segment(self, offset: int) -> LogSegment | None:
        bases = self._bases
        i = bisect.bisect_left(bases, offset) - 1
        return self._map.get(bases[i]) if i >= 0 else None

    def higher_segment(self, offset: int) -> LogSegment | None:
        bases = self._bases
        i = bisect.bisect_right(bases, offset)
        return self._map.get(bases[i]) if i < len(bases) else None

    def higher_segments(self, offset: int) -> list[LogSegment]:
        bases = self._bases
        i = bisect.bisect_right(bases, offset)
        return [s for s in map(self._map.get, bases[i:]) if s is not None]

    def size_in_bytes(self) -> int:
        return sum(s.size() for s in self.values())

    def non_active(self) -> list[LogSegment]:
        return self.values()[:-1]
