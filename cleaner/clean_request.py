"""What the broker sends a cleaner worker and what comes back: plain data, never live objects.

The worker process sees only paths, the topic's LogConfig, offsets and a snapshot of the
segment list; it answers with the `.cleaned` files it wrote, which the broker swaps into
the live log under the log's lock.
"""
from __future__ import annotations

import msgspec

from cleaner.cleaner_stats import CleanerStats
from storage.log_config import LogConfig

__all__ = ["SegmentDescriptor", "CleanRequest", "CleanedSegment", "CleanResult"]


class SegmentDescriptor(msgspec.Struct, frozen=True):
    """One segment of the log at selection time. `size` bounds what the worker reads."""

    base_offset: int
    size: int
    offset_index_bytes: int = 0
    time_index_bytes: int = 0
    last_modified_ms: int = 0


class CleanRequest(msgspec.Struct, frozen=True):
    dir: str
    topic: str
    partition: int
    config: LogConfig
    segments: list[SegmentDescriptor]
    """Every segment of the log in base-offset order (the active one last)."""
    first_dirty_offset: int
    first_uncleanable_offset: int
    current_time_ms: int
    last_records_of_active_producers: dict[int, tuple[int, int]] = msgspec.field(default_factory=dict)
    """producer id -> (offset of its last data batch's last record or -1, producer epoch)."""
    max_message_size: int = 1_048_588

    @property
    def log_name(self) -> str:
        return f"{self.topic}-{self.partition}"


class CleanedSegment(msgspec.Struct, frozen=True):
    """One `.cleaned` segment (base offset = the group's first base) replacing a group."""

    base_offset: int
    replaces: list[int]
    """Base offsets of the old segments, ascending."""
    size: int = 0


class CleanResult(msgspec.Struct):
    end_offset: int
    """The next dirty offset (the new cleaner checkpoint)."""
    stats: CleanerStats
    segments: list[CleanedSegment]
