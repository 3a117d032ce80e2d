"""The consumer's embedded protocol: what classic consumers put in JoinGroup and SyncGroup.

A classic group's coordinator treats a member's protocol metadata and assignment as opaque
bytes; a consumer-protocol group (KIP-848) that takes classic members in reads them, as
Kafka's ConsumerProtocol does. Both are non-flexible, big-endian, versioned by their first
int16; a reader takes the fields of the version it knows and ignores any tail.

    ConsumerProtocolSubscription
      v0+ version int16, topics [string], userData nullable bytes
      v1+ ownedPartitions [topic string, partitions [int32]]
      v2+ generationId int32 (-1)
      v3+ rackId nullable string
    ConsumerProtocolAssignment
      v0+ version int16, assignedPartitions [topic string, partitions [int32]],
          userData nullable bytes

Arrays are int32-counted, strings int16-length, nullable ones -1 for null. Malformed input
raises SchemaError; counts are checked against the bytes left before anything is read.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence

import msgspec

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class SchemaError(ValueError):
    """Bytes that are not a ConsumerProtocol message."""


class Subscription(msgspec.Struct, frozen=True):
    version: int
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[tuple[str, tuple[int, ...]], ...] = ()
    generation_id: int = -1
    rack_id: str | None = None


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = memoryview(data)
        self.pos = 0

    def _take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.data):
            raise SchemaError(f"needs {n} bytes at {self.pos}, has {len(self.data) - self.pos}")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def i16(self) -> int:
        value: int = _I16.unpack(self._take(2))[0]
        return value

    def i32(self) -> int:
        value: int = _I32.unpack(self._take(4))[0]
        return value

    def count(self, least_bytes_each: int) -> int:
        n = self.i32()
        if n < 0 or n * least_bytes_each > len(self.data) - self.pos:
            raise SchemaError(f"array of {n} at {self.pos} does not fit")
        return n

    def string(self) -> str:
        n = self.i16()
        if n < 0:
            raise SchemaError("null where a string is required")
        return bytes(self._take(n)).decode("utf-8", "replace")

    def nullable_string(self) -> str | None:
        n = self.i16()
        return None if n < 0 else bytes(self._take(n)).decode("utf-8", "replace")

    def nullable_bytes(self) -> bytes | None:
        n = self.i32()
        return None if n < 0 else bytes(self._take(n))

    def topic_partitions(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        out = []
        for _ in range(self.count(6)):
            topic = self.string()
            out.append((topic, tuple(self.i32() for _ in range(self.count(4)))))
        return tuple(out)


def version_of(data: bytes) -> int:
    """The version a message was written in (an assignment is answered in it)."""
    return _Reader(data).i16()


def decode_subscription(data: bytes) -> Subscription:
    r = _Reader(data)
    version = r.i16()
    if version < 0:
        raise SchemaError(f"version {version}")
    topics = tuple(r.string() for _ in range(r.count(2)))
    user_data = r.nullable_bytes()
    owned = r.topic_partitions() if version >= 1 else ()
    generation = r.i32() if version >= 2 else -1
    rack = r.nullable_string() if version >= 3 else None
    return Subscription(version, topics, user_data, owned, generation, rack)


def decode_assignment(data: bytes) -> tuple[tuple[tuple[str, tuple[int, ...]], ...], bytes | None]:
    """(assigned partitions by topic, user data)."""
    r = _Reader(data)
    if r.i16() < 0:
        raise SchemaError("negative version")
    return r.topic_partitions(), r.nullable_bytes()


def _string(text: str) -> bytes:
    raw = text.encode("utf-8")
    return _I16.pack(len(raw)) + raw


def encode_assignment(partitions: Mapping[str, Sequence[int]], version: int) -> bytes:
    """An assignment without user data, in `version` (the member's subscription version; the
    layout is the same in every version)."""
    out = bytearray(_I16.pack(version))
    out += _I32.pack(len(partitions))
    for topic, parts in partitions.items():
        out += _string(topic) + _I32.pack(len(parts))
        for p in parts:
            out += _I32.pack(p)
    out += _I32.pack(-1)
    return bytes(out)
