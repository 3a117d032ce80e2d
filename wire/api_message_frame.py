"""The body codec of Kafka's framed API messages (AbstractApiMessageSerde).

KRaft's metadata records and tiered storage's `__remote_log_metadata` records are both stored
as a frame: uvarint frame version (1), uvarint api key, uvarint version, then the message in
Kafka's flexible encoding (compact strings and arrays with length + 1, tagged fields after
each struct). This module reads and writes those primitives; the record modules say which
fields come in which order.
"""

from __future__ import annotations

import uuid

from wire.errors import CorruptRecordError
from wire.records import read_uvarint, write_uvarint

__all__ = ["FRAME_VERSION", "ApiMessageReader", "ApiMessageWriter"]

FRAME_VERSION = 1


class ApiMessageReader:
    """Reads one framed message's fields in order (not wire.framing.FrameReader, which splits the
    size-prefixed request stream)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def uvarint(self) -> int:
        value, self.pos = read_uvarint(self.data, self.pos, len(self.data), 5)
        return value

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise CorruptRecordError("truncated record")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def int8(self) -> int:
        return int.from_bytes(self.take(1), "big", signed=True)

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=self.take(16))

    def compact_string(self) -> str | None:
        n = self.uvarint()
        return None if n == 0 else self.take(n - 1).decode("utf-8")

    def string(self) -> str:
        s = self.compact_string()
        if s is None:
            raise CorruptRecordError("null where the record needs a string")
        return s

    def compact_bytes(self) -> bytes:
        n = self.uvarint()
        if n == 0:
            raise CorruptRecordError("null where the record needs bytes")
        return self.take(n - 1)

    def int32(self) -> int:
        return int.from_bytes(self.take(4), "big", signed=True)

    def skip_tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())

    def int64(self) -> int:
        return int.from_bytes(self.take(8), "big", signed=True)

    def boolean(self) -> bool:
        return self.take(1) != b"\x00"

    def nullable_compact_bytes(self) -> bytes | None:
        n = self.uvarint()
        return None if n == 0 else self.take(n - 1)

    def at_end(self) -> bool:
        return self.pos == len(self.data)


class ApiMessageWriter:
    """Writes one framed message's fields in order; each method returns the writer, to chain."""

    def __init__(self) -> None:
        self.out = bytearray()

    def uvarint(self, value: int) -> "ApiMessageWriter":
        write_uvarint(self.out, value)
        return self

    def signed(self, value: int, size: int) -> "ApiMessageWriter":
        self.out += value.to_bytes(size, "big", signed=True)
        return self

    def uuid(self, value: uuid.UUID) -> "ApiMessageWriter":
        self.out += value.bytes
        return self

    def compact_string(self, value: str | None) -> "ApiMessageWriter":
        if value is None:
            return self.uvarint(0)
        data = value.encode("utf-8")
        self.uvarint(len(data) + 1)
        self.out += data
        return self

    def compact_bytes(self, value: bytes) -> "ApiMessageWriter":
        self.uvarint(len(value) + 1)
        self.out += value
        return self

    def raw(self, value: bytes) -> "ApiMessageWriter":
        self.out += value
        return self

    def int32_array(self, values: list[int]) -> "ApiMessageWriter":
        self.uvarint(len(values) + 1)
        for v in values:
            self.signed(v, 4)
        return self

    def no_tagged_fields(self) -> bytes:
        self.uvarint(0)
        return bytes(self.out)

    def nullable_compact_bytes(self, value: bytes | None) -> "ApiMessageWriter":
        if value is None:
            return self.uvarint(0)
        return self.compact_bytes(value)
