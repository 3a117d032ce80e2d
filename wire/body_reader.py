"""Checked reads of a request body's fields, for the hand-written decoders (Produce, Fetch).

kio's native reader allocates from the lengths and counts a body declares, so a generic bounds
walk (wire.request_bounds) runs before it. The hand-written decoders check instead as they
read: every length against the bytes that must carry it, every array count against the least
its entries can take, before anything is built from it. A body that fails a check is a
RequestDecodeError naming the request and the field (Kafka closes the connection on a request
it cannot parse).

Classic (non-flexible) versions have int16 string lengths and int32 array and bytes lengths,
-1 for null; flexible ones a uvarint of length + 1, 0 for null, and a tagged-field section
after each struct.
"""

from __future__ import annotations

import struct
import uuid

from wire.errors import CorruptRecordError, RequestDecodeError
from wire.records import Buffer, read_uvarint

__all__ = ["truncated", "read_varint", "read_length", "read_string", "read_required_string", "read_bytes",
           "read_int", "read_int32s", "read_count", "read_uuid", "read_topic", "read_tagged_fields",
           "skip_tagged_fields"]

_I16 = struct.Struct(">h").unpack_from
_I32 = struct.Struct(">i").unpack_from
_NO_UUID = bytes(16)


def truncated(request: str, what: str) -> RequestDecodeError:
    return RequestDecodeError(f"cannot decode {request}: the body ends inside {what}")


def read_varint(buf: Buffer, pos: int, end: int, request: str, what: str) -> tuple[int, int]:
    """(value, next position) of an unsigned varint of at most 5 bytes (Kafka's limit)."""
    try:
        return read_uvarint(buf, pos, end, 5)
    except CorruptRecordError as exc:
        raise RequestDecodeError(f"cannot decode {request}: {what}: {exc}") from None


def read_length(buf: Buffer, pos: int, end: int, flexible: bool, width: int, request: str,
                what: str) -> tuple[int, int]:
    """(declared length, next position); -1 is null. `width` is a classic length's: 2 for
    strings, 4 for arrays and bytes."""
    if flexible:
        if pos < end and buf[pos] < 0x80:  # the usual one-byte varint (names, counts)
            return buf[pos] - 1, pos + 1
        if pos + 1 < end and buf[pos + 1] < 0x80:  # two bytes (records up to 16 KiB, counts)
            return (buf[pos] & 0x7F | buf[pos + 1] << 7) - 1, pos + 2
        n, pos = read_varint(buf, pos, end, request, what)
        return n - 1, pos
    if pos + width > end:
        raise truncated(request, what)
    return (_I16 if width == 2 else _I32)(buf, pos)[0], pos + width


def _present(n: int, pos: int, end: int, request: str, what: str) -> bool:
    """Whether a string or bytes field of declared length `n` is there (False: null, -1);
    a negative length other than -1, or one past the body, is refused."""
    if n < 0:
        if n == -1:
            return False
        raise RequestDecodeError(f"cannot decode {request}: negative length {n} of {what}")
    if pos + n > end:
        raise truncated(request, what)
    return True


def read_string(buf: Buffer, pos: int, end: int, flexible: bool, request: str, what: str) -> tuple[str | None, int]:
    """A nullable string (None for null); the caller refuses None where the schema does."""
    if flexible and pos < end and buf[pos] < 0x80:  # (read_length's usual case, without the call)
        n, pos = buf[pos] - 1, pos + 1
    else:
        n, pos = read_length(buf, pos, end, flexible, 2, request, what)
    if not _present(n, pos, end, request, what):
        return None, pos
    try:
        return str(buf[pos : pos + n], "utf-8"), pos + n
    except UnicodeDecodeError as exc:
        raise RequestDecodeError(f"cannot decode {request}: {what} is not UTF-8: {exc}") from None


def read_required_string(buf: Buffer, pos: int, end: int, flexible: bool, request: str,
                         what: str) -> tuple[str, int]:
    """A string the schema does not let be null (Kafka refuses a null one: "non-nullable field
    ... was serialized as null")."""
    value, pos = read_string(buf, pos, end, flexible, request, what)
    if value is None:
        raise RequestDecodeError(f"cannot decode {request}: {what} is null")
    return value, pos


def read_bytes(buf: Buffer, pos: int, end: int, flexible: bool, request: str, what: str) -> tuple[bytes | None, int]:
    """A nullable bytes field, copied out of the body (None for null)."""
    n, pos = read_length(buf, pos, end, flexible, 4, request, what)
    if not _present(n, pos, end, request, what):
        return None, pos
    return bytes(buf[pos : pos + n]), pos + n


_INTS = {1: struct.Struct(">b").unpack_from, 2: _I16, 4: _I32, 8: struct.Struct(">q").unpack_from}


def read_int(buf: Buffer, pos: int, end: int, width: int, request: str, what: str) -> tuple[int, int]:
    """A signed big-endian integer of `width` bytes (1, 2, 4 or 8)."""
    if pos + width > end:
        raise truncated(request, what)
    return _INTS[width](buf, pos)[0], pos + width


def read_int32s(buf: Buffer, pos: int, end: int, flexible: bool, request: str,
                what: str) -> tuple[tuple[int, ...], int]:
    """An array of int32 (partition indexes), not null."""
    n, pos = read_count(buf, pos, end, flexible, 4, request, what)
    return struct.unpack_from(f">{n}i", buf, pos), pos + 4 * n


def read_count(buf: Buffer, pos: int, end: int, flexible: bool, min_size: int, request: str,
               what: str) -> tuple[int, int]:
    """An array's element count, which the bytes left must be able to hold at `min_size` bytes
    an entry; a null array is refused (no array these decoders read may be null)."""
    if flexible and pos < end and buf[pos] < 0x80:  # (read_length's usual case, without the call)
        n, pos = buf[pos] - 1, pos + 1
    else:
        n, pos = read_length(buf, pos, end, flexible, 4, request, what)
    if n < 0:
        raise RequestDecodeError(f"cannot decode {request}: {what} is null or negative ({n})")
    if n * min_size > end - pos:
        raise RequestDecodeError(f"cannot decode {request}: {what} declares {n} entries in {end - pos} bytes")
    return n, pos


def read_uuid(buf: Buffer, pos: int, end: int, request: str, what: str) -> tuple[uuid.UUID | None, int]:
    """A UUID; None for the all-zero one (Kafka's Uuid.ZERO_UUID, "no id"), as kio reads it."""
    if pos + 16 > end:
        raise truncated(request, what)
    raw = bytes(buf[pos : pos + 16])
    return (None if raw == _NO_UUID else uuid.UUID(bytes=raw)), pos + 16


def read_topic(buf: Buffer, pos: int, end: int, flexible: bool, by_id: bool, request: str,
               what: str) -> tuple[str | None, uuid.UUID | None, int]:
    """(name, id, next position) of a topic its version names by id (`by_id`; the name None)
    or by name (never null; the id None)."""
    if by_id:
        topic_id, pos = read_uuid(buf, pos, end, request, f"{what} id")
        return None, topic_id, pos
    name, pos = read_required_string(buf, pos, end, flexible, request, f"{what} name")
    return name, None, pos


def read_tagged_fields(buf: Buffer, pos: int, end: int, request: str,
                       what: str) -> tuple[list[tuple[int, int, int]], int]:
    """A tagged-field section as (tag, start, end) of each field, and the position after it.
    A field is read within its size, whatever its value takes (KD-214)."""
    count, pos = read_varint(buf, pos, end, request, what)
    fields = []
    for _ in range(count):
        tag, pos = read_varint(buf, pos, end, request, what)
        size, pos = read_varint(buf, pos, end, request, what)
        if pos + size > end:
            raise truncated(request, what)
        fields.append((tag, pos, pos + size))
        pos += size
    return fields, pos


def skip_tagged_fields(buf: Buffer, pos: int, end: int, request: str, what: str) -> int:
    """Past a tagged-field section whose tags are all unknown to the schema (Kafka skips them)."""
    if pos < end and buf[pos] == 0:  # none: the usual case
        return pos + 1
    return read_tagged_fields(buf, pos, end, request, what)[1]
