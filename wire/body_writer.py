"""Writes of a response body's fields, for the hand-written encoders (Produce, Fetch, Metadata,
ApiVersions): wire.body_reader's counterpart.

Each writer appends to a bytearray the encoder builds the body in. Classic (non-flexible)
versions have int16 string lengths and int32 array lengths, -1 for null; flexible ones a uvarint
of length + 1, 0 for null, and a tagged-field section after each struct.
"""

from __future__ import annotations

import struct
import uuid

from wire.records import write_uvarint

__all__ = ["write_uvarint", "write_string", "write_bytes", "write_uuid", "write_topic", "write_length",
           "write_tagged_fields"]

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_ZERO_UUID = bytes(16)


def write_string(out: bytearray, s: str | None, flexible: bool) -> None:
    """A nullable string (None writes null)."""
    if s is None:
        out += b"\x00" if flexible else b"\xff\xff"
        return
    raw = s.encode("utf-8")
    if not flexible:
        out += _I16.pack(len(raw))
    elif len(raw) < 0x7F:  # a one-byte length: most names
        out.append(len(raw) + 1)
    else:
        write_uvarint(out, len(raw) + 1)
    out += raw


def write_uuid(out: bytearray, value: uuid.UUID | None) -> None:
    """A UUID; None writes the zero one (Kafka's Uuid.ZERO_UUID, "no id"), as kio writes it."""
    out += _ZERO_UUID if value is None else value.bytes


def write_topic(out: bytearray, name: str | None, topic_id: uuid.UUID | None, by_id: bool, flexible: bool) -> None:
    """A topic as its version names it: by id (`by_id`), else by name."""
    if by_id:
        write_uuid(out, topic_id)
    else:
        write_string(out, name, flexible)


def write_length(out: bytearray, n: int | None, flexible: bool) -> None:
    """An array's count (or a bytes field's length); None writes null."""
    if n is None:
        out += b"\x00" if flexible else b"\xff\xff\xff\xff"
    elif not flexible:
        out += _I32.pack(n)
    elif n < 0x7F:  # a one-byte count: most arrays
        out.append(n + 1)
    else:
        write_uvarint(out, n + 1)


def write_bytes(out: bytearray, b: bytes | None, flexible: bool) -> None:
    """A nullable bytes field (None writes null)."""
    write_length(out, None if b is None else len(b), flexible)
    if b is not None:
        out += b


def write_tagged_fields(out: bytearray, fields: list[tuple[int, bytes]]) -> None:
    """A tagged-field section: the count, then each field's tag, size and bytes, in tag order."""
    write_uvarint(out, len(fields))
    for tag, data in fields:
        write_uvarint(out, tag)
        write_uvarint(out, len(data))
        out += data
