"""A response body already encoded by a handler, possibly with parts still in files.

Produce and Fetch answers, and ApiVersions and Metadata answers (a client's first), are built
with wire's hand-written encoders rather than kio entities. A Fetch body may reference segment
bytes as `FileRegion`s (wire's fetch encoder passes them through as parts, sized by `len()`) so
the connection can move them to the socket with sendfile (or one pread in an executor) instead
of copying them through Python objects.
"""

from __future__ import annotations

import os
import struct
from typing import Any

import msgspec

from wire.response_encoders import fetch_response_size


class FileRegion(msgspec.Struct):
    """`size` bytes of an open file starting at `position` (a segment slice).

    `file` is either a file object kept open by someone else, or an int file
    descriptor this region owns (a dup) and `close()` releases after sending.
    """

    file: Any
    position: int
    size: int

    def __len__(self) -> int:
        """Byte length, as wire's fetch encoder sizes record data."""
        return self.size

    def close(self) -> None:
        if isinstance(self.file, int) and self.file >= 0:
            os.close(self.file)
            self.file = -1

    def read(self) -> bytes:
        """Blocking: run from an executor."""
        fd = self.file if isinstance(self.file, int) else self.file.fileno()
        data = os.pread(fd, self.size, self.position)
        if len(data) != self.size:
            # A segment shrank under us (truncation/deletion): the frame size is
            # already promised, so pad would corrupt; fail the connection instead.
            raise OSError(f"short read: {len(data)} of {self.size} bytes")
        return data


Part = bytes | bytearray | memoryview | FileRegion


class EncodedResponse(msgspec.Struct):
    """Body parts in wire order; `size` is their total length in bytes. Only `of` makes an
    answer with FileRegion parts (`has_file_regions`): the others are one encoded buffer."""

    parts: list[Any]
    size: int
    has_file_regions: bool = False

    @classmethod
    def of(cls, parts: list[Any]) -> "EncodedResponse":
        return cls(parts, fetch_response_size(parts), any(type(p) is FileRegion for p in parts))

    def close_files(self) -> None:
        """Close the file descriptors the answer's regions own (sent or not)."""
        for part in self.parts:
            if isinstance(part, FileRegion):
                part.close()


# API key -> the first version whose answer has throttle_time_ms as its first field.
_THROTTLE_FIRST = {
    1: 1,  # Fetch
    2: 2,  # ListOffsets
    3: 3,  # Metadata
    8: 3,  # OffsetCommit
    9: 3,  # OffsetFetch
    10: 1,  # FindCoordinator
    11: 2,  # JoinGroup
    12: 1,  # Heartbeat
    13: 1,  # LeaveGroup
    14: 1,  # SyncGroup
    22: 0,  # InitProducerId
}
_PRODUCE, _I32 = 0, struct.Struct(">i")


def with_throttle_time(response: EncodedResponse, api_key: int, version: int, throttle_ms: int) -> EncodedResponse:
    """The answer with throttle_time_ms set (a client quota's throttle): the first field of
    the answers _THROTTLE_FIRST lists, from the version that has it, and the last one (before
    the tagged fields, of which none are written) of Produce answers. Other answers are kio
    entities."""
    parts = list(response.parts)
    if api_key in _THROTTLE_FIRST and version >= _THROTTLE_FIRST[api_key] and isinstance(parts[0], (bytes, bytearray)):
        parts[0] = _I32.pack(throttle_ms) + bytes(parts[0][4:])
    elif api_key == _PRODUCE and isinstance(parts[-1], (bytes, bytearray)):
        body = bytes(parts[-1])
        if version >= 9:
            if body[-1:] != b"\x00":
                return response  # tagged fields written: leave the answer as its handler made it
            parts[-1] = body[:-5] + _I32.pack(throttle_ms) + body[-1:]
        else:
            parts[-1] = body[:-4] + _I32.pack(throttle_ms)
    return EncodedResponse(parts, response.size, response.has_file_regions)
