"""LogOffsetMetadata: an offset and, when known, where it sits on disk.

The high watermark, the last stable offset and a fetch's start are kept with their segment
and byte position, so a read can stop at them without searching an index again.
"""
from __future__ import annotations

import msgspec

__all__ = ["LogOffsetMetadata"]


class LogOffsetMetadata(msgspec.Struct, frozen=True):
    """An offset plus where it sits on disk (segment base, byte position) when known."""

    message_offset: int
    segment_base_offset: int = -1
    relative_position_in_segment: int = -1

    @property
    def message_offset_only(self) -> bool:
        return self.segment_base_offset == -1
