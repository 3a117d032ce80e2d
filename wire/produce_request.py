"""A hand-written decoder for the hot request: Produce, versions 3-12.

Every Produce went through two walks of its body: `request_bounds` checked each declared
length against the bytes left (kio's native reader allocates from declared sizes), then kio
built its frozen dataclasses and copied each partition's records out of the frame. At the
rates producers send, the two walks cost as much as the append itself, and for a 1 MB
request the copy was a tenth of the broker's produce CPU.

`decode_produce_request` does both in one pass: every length is checked against the bytes
that carry it as it is read, and each partition's records come back as a slice of the frame
(zero-copy when the frame is a memoryview, as large frames are; a small `bytes` frame is
sliced, which copies a few bytes). Tagged fields (v9+) are skipped, since Produce defines
none, after their sizes are checked. Bytes after the body are ignored, as kio ignores them.
The result has the attribute names of kio's ProduceRequest that the Produce handler reads;
the unit tests decode random and mutated requests both ways and require the same answer or
the same refusal (RequestDecodeError).

Layout (Kafka's ProduceRequest.json; v9+ are flexible: compact lengths, tagged fields)::

    transactional_id  nullable string
    acks              int16
    timeout_ms        int32
    topic_data        [name string, partition_data [index int32, records nullable bytes, tags], tags]
    tags
"""

from __future__ import annotations

import struct

import msgspec

from wire.errors import CorruptRecordError, RequestDecodeError
from wire.records import Buffer, read_uvarint

__all__ = ["VERSIONS", "PartitionProduceData", "ProduceRequest", "TopicProduceData", "decode_produce_request"]

_I16 = struct.Struct(">h").unpack_from
_I32 = struct.Struct(">i").unpack_from
_ACKS_TIMEOUT = struct.Struct(">hi").unpack_from

VERSIONS = range(3, 13)
FIRST_FLEXIBLE_VERSION = 9


class PartitionProduceData(msgspec.Struct, frozen=True, gc=False):
    index: int
    records: Buffer | None
    """A slice of the request frame; None when the request sent null."""


class TopicProduceData(msgspec.Struct, frozen=True, gc=False):
    name: str
    partition_data: tuple[PartitionProduceData, ...]


class ProduceRequest(msgspec.Struct, frozen=True, gc=False):
    transactional_id: str | None
    acks: int
    timeout_ms: int
    topic_data: tuple[TopicProduceData, ...]


def _truncated(what: str) -> RequestDecodeError:
    return RequestDecodeError(f"cannot decode ProduceRequest: the body ends inside {what}")


def _uvarint(buf: Buffer, pos: int, end: int, what: str) -> tuple[int, int]:
    """(value, next position) of an unsigned varint of at most 5 bytes (Kafka's limit)."""
    try:
        return read_uvarint(buf, pos, end, 5)
    except CorruptRecordError as exc:
        raise RequestDecodeError(f"cannot decode ProduceRequest: {what}: {exc}") from None


def _length(buf: Buffer, pos: int, end: int, flexible: bool, width: int, what: str) -> tuple[int, int]:
    """(declared length, next position); -1 is null. Classic strings have an int16 length,
    classic arrays and bytes an int32 (`width`); flexible ones a uvarint of length + 1."""
    if flexible:
        if pos < end and buf[pos] < 0x80:  # the usual one-byte varint (names, counts)
            return buf[pos] - 1, pos + 1
        if pos + 1 < end and buf[pos + 1] < 0x80:  # two bytes: most records fields (up to 16 KiB)
            return (buf[pos] & 0x7F | buf[pos + 1] << 7) - 1, pos + 2
        n, pos = _uvarint(buf, pos, end, what)
        return n - 1, pos
    if pos + width > end:
        raise _truncated(what)
    return (_I16 if width == 2 else _I32)(buf, pos)[0], pos + width


def _string(buf: Buffer, pos: int, end: int, flexible: bool, what: str) -> tuple[str | None, int]:
    if flexible and pos < end and buf[pos] < 0x80:  # (_length's usual case, without the call)
        n, pos = buf[pos] - 1, pos + 1
    else:
        n, pos = _length(buf, pos, end, flexible, 2, what)
    if n < 0:
        if n == -1:
            return None, pos
        raise RequestDecodeError(f"cannot decode ProduceRequest: negative length {n} of {what}")
    if pos + n > end:
        raise _truncated(what)
    try:
        return str(buf[pos : pos + n], "utf-8"), pos + n
    except UnicodeDecodeError as exc:
        raise RequestDecodeError(f"cannot decode ProduceRequest: {what} is not UTF-8: {exc}") from None


def _count(buf: Buffer, pos: int, end: int, flexible: bool, min_size: int, what: str) -> tuple[int, int]:
    """An array's element count, which the bytes left must be able to hold."""
    if flexible and pos < end and buf[pos] < 0x80:  # (_length's usual case, without the call)
        n, pos = buf[pos] - 1, pos + 1
    else:
        n, pos = _length(buf, pos, end, flexible, 4, what)
    if n < 0:
        raise RequestDecodeError(f"cannot decode ProduceRequest: {what} is null or negative ({n})")
    if n * min_size > end - pos:
        raise RequestDecodeError(f"cannot decode ProduceRequest: {what} declares {n} entries in {end - pos} bytes")
    return n, pos


def _skip_tagged_fields(buf: Buffer, pos: int, end: int, what: str) -> int:
    if pos < end and buf[pos] == 0:  # none: the usual case
        return pos + 1
    count, pos = _uvarint(buf, pos, end, what)
    for _ in range(count):
        _tag, pos = _uvarint(buf, pos, end, what)  # Produce defines no tag: all are skipped
        size, pos = _uvarint(buf, pos, end, what)
        if pos + size > end:
            raise _truncated(what)
        pos += size
    return pos


def decode_produce_request(version: int, buf: Buffer, offset: int) -> ProduceRequest:
    """Decode a Produce body (versions 3-12) that starts at `offset` of the frame `buf`.

    RequestDecodeError for a body that does not hold what it declares (Kafka answers an
    unparsable request by closing the connection).
    """
    flexible = version >= FIRST_FLEXIBLE_VERSION
    end = len(buf)
    transactional_id, pos = _string(buf, offset, end, flexible, "transactional_id")
    if pos + 6 > end:
        raise _truncated("acks and timeout_ms")
    acks, timeout_ms = _ACKS_TIMEOUT(buf, pos)
    pos += 6
    # The least an entry can take: a topic, an empty name and array (and tags); a partition,
    # its index and null records (and tags).
    n_topics, pos = _count(buf, pos, end, flexible, 3 if flexible else 6, "topic_data")
    topics = []
    for _ in range(n_topics):
        name, pos = _string(buf, pos, end, flexible, "a topic name")
        if name is None:
            raise RequestDecodeError("cannot decode ProduceRequest: a topic name is null")
        n_partitions, pos = _count(buf, pos, end, flexible, 6 if flexible else 8, "partition_data")
        partitions = []
        for _ in range(n_partitions):
            if pos + 4 > end:
                raise _truncated("a partition index")
            index = _I32(buf, pos)[0]
            n, pos = _length(buf, pos + 4, end, flexible, 4, "records")
            records: Buffer | None = None
            if n >= 0:
                if pos + n > end:
                    raise _truncated("records")
                records = buf[pos : pos + n]
                pos += n
            elif n != -1:
                raise RequestDecodeError(f"cannot decode ProduceRequest: negative length {n} of records")
            if flexible:  # (no tagged field, the usual case, without the call)
                pos = pos + 1 if pos < end and buf[pos] == 0 else _skip_tagged_fields(
                    buf, pos, end, "a partition's tagged fields")
            partitions.append(PartitionProduceData(index, records))
        if flexible:
            pos = pos + 1 if pos < end and buf[pos] == 0 else _skip_tagged_fields(
                buf, pos, end, "a topic's tagged fields")
        topics.append(TopicProduceData(name, tuple(partitions)))
    if flexible and not (pos < end and buf[pos] == 0):
        _skip_tagged_fields(buf, pos, end, "the request's tagged fields")
    return ProduceRequest(transactional_id, acks, timeout_ms, tuple(topics))
