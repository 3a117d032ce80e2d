"""Hand-written encoders for the two hot responses: Produce and Fetch.

kio builds a frozen dataclass tree and walks it generically; for Produce and
Fetch, sent on every request, that costs more than the I/O. These encoders
take plain msgspec structs and write the exact bytes kio would (the unit
tests compare them byte for byte for every version), and the Fetch encoder
never touches record data: it returns the body as a list of parts in wire
order, with each partition's record objects passed through as they came.
A record object is anything with a byte length: a buffer (bytes,
bytearray, memoryview) or an opaque region such as the service's FileRegion
(a slice of a segment file, `len()` = its size), which the service sends
with sendfile while it writes the other parts as buffers. The encoder only
needs the lengths, so it stays sans-io.

Signatures::

    encode_produce_response(version: int, topics: Sequence[ProduceTopicResult],
        *, throttle_time_ms: int = 0,
        node_endpoints: Sequence[tuple[int, str, int, str | None]] = ()) -> bytes
        # versions 3-13; v13+ identifies topics by ProduceTopicResult.topic_id

    encode_fetch_response(version: int, topics: Sequence[FetchTopicData], *,
        throttle_time_ms: int = 0, error_code: int = 0, session_id: int = 0,
        node_endpoints: Sequence[tuple[int, str, int, str | None]] = ()
        ) -> list[bytes | bytearray | memoryview | region]
        # versions 4-17; v13+ uses FetchTopicData.topic_id;
        # FetchPartitionData.records is a sequence of record objects (buffers
        # or regions with __len__), or None = null

    fetch_response_size(parts) -> int   # total body bytes, for the size prefix
"""

from __future__ import annotations

import functools
import struct
import uuid
from collections.abc import Sequence
from typing import Any, Protocol

import msgspec

from wire.body_writer import write_length, write_string, write_tagged_fields, write_topic, write_uvarint

__all__ = [
    "RecordData",
    "RecordRegion",
    "ProducePartitionResult",
    "ProduceTopicResult",
    "FetchPartitionData",
    "FetchTopicData",
    "NodeEndpoint",
    "encode_produce_response",
    "encode_produce_one_partition",
    "encode_fetch_response",
    "encode_idle_fetch_partition",
    "fetch_response_size",
    "PRODUCE_VERSIONS",
    "FETCH_VERSIONS",
]

PRODUCE_VERSIONS = (3, 13)
FETCH_VERSIONS = (4, 17)

Buffer = bytes | bytearray | memoryview


class RecordRegion(Protocol):
    """An opaque piece of record data the caller sends itself (e.g. a file region)."""

    def __len__(self) -> int: ...


# Records of one fetched partition: buffers, or opaque regions whose len() is their byte size.
RecordData = Buffer | RecordRegion
# (node_id, host, port, rack)
NodeEndpoint = tuple[int, str, int, str | None]

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_PRODUCE_PART_V3 = struct.Struct(">ihqq")  # index, error, base_offset, log_append_time
_PRODUCE_PART_V5 = struct.Struct(">ihqqq")  # ... and log_start_offset
_FETCH_PART = struct.Struct(">ihqq")  # index, error, high_watermark, last_stable_offset
_FETCH_PART_V5 = struct.Struct(">ihqqq")  # ... and log_start_offset
_ABORTED = struct.Struct(">qq")
# A partition with nothing to report but its offsets (no records, no aborted transactions, no
# tagged fields), written whole in one pack: most partitions of a consumer's fetch. Flexible
# versions (v12+): the offsets, the aborted list's compact length (0 null, 1 empty), the
# preferred read replica, an empty records field (compact length 1) and no tagged fields.
_IDLE_PART_FLEXIBLE = struct.Struct(">ihqqqBiBB")
_NULL_I32, _ZERO_I32 = b"\xff\xff\xff\xff", b"\x00\x00\x00\x00"
# Before v12, what follows an idle partition's offsets, by [aborted list is null]: the aborted
# list's length, the preferred read replica (v11+) and an empty records field.
_IDLE_TAIL_V11 = (_ZERO_I32 + _NULL_I32 + _ZERO_I32, _NULL_I32 + _NULL_I32 + _ZERO_I32)
_IDLE_TAIL = (_ZERO_I32 + _ZERO_I32, _NULL_I32 + _ZERO_I32)
_NO_LEADER = (-1, -1)


class ProducePartitionResult(msgspec.Struct):
    """One partition's produce outcome (fields as PartitionProduceResponse)."""

    index: int
    error_code: int = 0
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    record_errors: Sequence[tuple[int, str | None]] = ()  # (batch_index, message), v8+
    error_message: str | None = None  # v8+
    current_leader: tuple[int, int] | None = None  # (leader_id, leader_epoch), v10+ tag 0


class ProduceTopicResult(msgspec.Struct):
    name: str
    partitions: Sequence[ProducePartitionResult]
    topic_id: uuid.UUID | None = None  # v13+ sends this instead of the name


class FetchPartitionData(msgspec.Struct, gc=False):
    """One partition of a fetch response; `records` are passed through as parts, untouched.
    Untracked by the cyclic GC (no cycles): a fetch answer may carry thousands."""

    partition_index: int
    error_code: int = 0
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1  # v5+
    aborted_transactions: Sequence[tuple[int, int]] | None = None  # (producer_id, first_offset)
    preferred_read_replica: int = -1  # v11+
    records: Sequence[RecordData] | None = ()
    diverging_epoch: tuple[int, int] | None = None  # (epoch, end_offset), v12+ tag 0
    current_leader: tuple[int, int] | None = None  # (leader_id, leader_epoch), v12+ tag 1
    snapshot_id: tuple[int, int] | None = None  # (end_offset, epoch), v12+ tag 2


class FetchTopicData(msgspec.Struct):
    """One topic of a fetch response. A partition is a FetchPartitionData, or the bytes
    encode_idle_fetch_partition gave for the response's version."""

    topic: str
    partitions: Sequence[FetchPartitionData | bytes]
    topic_id: uuid.UUID | None = None  # v13+ sends this instead of the name


def encode_idle_fetch_partition(version: int, partition_index: int, error_code: int, high_watermark: int,
                                last_stable_offset: int, log_start_offset: int, aborted_is_null: bool) -> bytes:
    """A FetchResponse partition (`version` 4-17) with nothing to report but its offsets: no
    records, an empty or null aborted list, no preferred replica, no tagged fields. Most
    partitions of a consumer's fetch are such; given as bytes in FetchTopicData.partitions,
    the encoder takes them as they are."""
    if version >= 12:
        return _IDLE_PART_FLEXIBLE.pack(partition_index, error_code, high_watermark, last_stable_offset,
                                        log_start_offset, 0 if aborted_is_null else 1, -1, 1, 0)
    if version >= 5:
        head = _FETCH_PART_V5.pack(partition_index, error_code, high_watermark, last_stable_offset, log_start_offset)
        return head + (_IDLE_TAIL_V11 if version >= 11 else _IDLE_TAIL)[aborted_is_null]
    return _FETCH_PART.pack(partition_index, error_code, high_watermark, last_stable_offset) + \
        _IDLE_TAIL[aborted_is_null]


def _node_endpoints(endpoints: Sequence[NodeEndpoint]) -> bytes:
    out = bytearray()
    write_length(out, len(endpoints), True)
    for node_id, host, port, rack in endpoints:
        out += _I32.pack(node_id)
        write_string(out, host, True)
        out += _I32.pack(port)
        write_string(out, rack, True)
        out.append(0)
    return bytes(out)


def _nbytes(part: Any) -> int:
    """Byte length of a buffer (whatever its item size) or of an opaque region."""
    kind = type(part)
    if kind is bytes or kind is bytearray:
        return len(part)
    if kind is memoryview:
        return int(part.nbytes)
    try:
        return int(memoryview(part).nbytes)
    except TypeError:  # not a buffer: an opaque region reports its size via len()
        return len(part)


def _check_version(kind: str, version: int, bounds: tuple[int, int]) -> None:
    if not bounds[0] <= version <= bounds[1]:
        raise ValueError(f"{kind} response version {version} not in {bounds[0]}-{bounds[1]}")


# -- produce --------------------------------------------------------------------


def encode_produce_response(
    version: int,
    topics: Sequence[ProduceTopicResult],
    *,
    throttle_time_ms: int = 0,
    node_endpoints: Sequence[NodeEndpoint] = (),
) -> bytes:
    """ProduceResponse body for `version` (3-13), byte-identical to kio's."""
    _check_version("produce", version, PRODUCE_VERSIONS)
    flexible = version >= 9
    out = bytearray()
    write_length(out, len(topics), flexible)
    for topic in topics:
        write_topic(out, topic.name, topic.topic_id, version >= 13, flexible)
        write_length(out, len(topic.partitions), flexible)
        for p in topic.partitions:
            if version >= 5:
                out += _PRODUCE_PART_V5.pack(p.index, p.error_code, p.base_offset, p.log_append_time_ms,
                                             p.log_start_offset)
            else:
                out += _PRODUCE_PART_V3.pack(p.index, p.error_code, p.base_offset, p.log_append_time_ms)
            if flexible and not p.record_errors and p.error_message is None and p.current_leader is None:
                out += b"\x01\x00\x00"  # (the usual case) no record errors, a null message, no tagged field
                continue
            if version >= 8:
                write_length(out, len(p.record_errors), flexible)
                for batch_index, message in p.record_errors:
                    out += _I32.pack(batch_index)
                    write_string(out, message, flexible)
                    if flexible:
                        out.append(0)
                write_string(out, p.error_message, flexible)
            if flexible:
                leader = p.current_leader
                if version >= 10 and leader is not None and tuple(leader) != _NO_LEADER:
                    data = bytearray(_I32.pack(leader[0]) + _I32.pack(leader[1]))
                    data.append(0)
                    write_tagged_fields(out, [(0, bytes(data))])
                else:
                    out.append(0)
        if flexible:
            out.append(0)
    out += _I32.pack(throttle_time_ms)
    if flexible:
        if version >= 10 and node_endpoints:
            write_tagged_fields(out, [(0, _node_endpoints(node_endpoints))])
        else:
            out.append(0)
    return bytes(out)


def encode_produce_one_partition(version: int, name: str, p: ProducePartitionResult, throttle_time_ms: int = 0) -> bytes:
    """encode_produce_response of one partition of one topic named by name (most answers),
    byte for byte alike, in one join: the topic's part of the answer is kept per name."""
    if version >= 13 or p.record_errors or p.error_message is not None or p.current_leader is not None:
        return encode_produce_response(version, [ProduceTopicResult(name, [p])], throttle_time_ms=throttle_time_ms)
    flexible = version >= 9
    entry = (_PRODUCE_PART_V5.pack(p.index, p.error_code, p.base_offset, p.log_append_time_ms, p.log_start_offset)
             if version >= 5 else _PRODUCE_PART_V3.pack(p.index, p.error_code, p.base_offset, p.log_append_time_ms))
    # After the entry: no record errors and a null message (v8+), and the tagged-field sections
    # of the partition and the topic (flexible); after the throttle, the answer's own.
    return b"".join((_one_topic_prefix(name, flexible), entry, _ONE_PARTITION_SUFFIX[version],
                     _I32.pack(throttle_time_ms), b"\x00" if flexible else b""))


@functools.lru_cache(maxsize=1024)
def _one_topic_prefix(name: str, flexible: bool) -> bytes:
    """One topic, its name, one partition: the bytes before a one-partition answer's entry."""
    out = bytearray()
    write_length(out, 1, flexible)
    write_string(out, name, flexible)
    write_length(out, 1, flexible)
    return bytes(out)


_ONE_PARTITION_SUFFIX = {v: (b"\x01\x00\x00\x00" if v >= 9 else b"\x00\x00\x00\x00\xff\xff" if v == 8 else b"")
                         for v in range(PRODUCE_VERSIONS[0], PRODUCE_VERSIONS[1])}


# -- fetch ----------------------------------------------------------------------


def encode_fetch_response(
    version: int,
    topics: Sequence[FetchTopicData],
    *,
    throttle_time_ms: int = 0,
    error_code: int = 0,
    session_id: int = 0,
    node_endpoints: Sequence[NodeEndpoint] = (),
) -> list[Any]:
    """FetchResponse body for `version` (4-17) as a list of parts in wire order.

    Every part is either an encoded buffer or one of the (non-empty) record
    objects of `FetchPartitionData.records`, the very same object (no copy,
    no read): joining the parts, with each region replaced by its bytes,
    gives exactly kio's encoding.
    """
    _check_version("fetch", version, FETCH_VERSIONS)
    flexible = version >= 12
    v5 = version >= 5
    v11 = version >= 11
    null_array = b"\x00" if flexible else b"\xff\xff\xff\xff"  # null records / aborted list
    parts: list[Any] = []
    out = bytearray(_I32.pack(throttle_time_ms))
    if version >= 7:
        out += _I16.pack(error_code)
        out += _I32.pack(session_id)
    write_length(out, len(topics), flexible)
    for topic in topics:
        write_topic(out, topic.topic, topic.topic_id, version >= 13, flexible)
        write_length(out, len(topic.partitions), flexible)
        for p in topic.partitions:
            if p.__class__ is bytes:  # encode_idle_fetch_partition's, for this version
                out += p
                continue
            assert isinstance(p, FetchPartitionData)
            aborted = p.aborted_transactions
            if (flexible and not p.records and p.records is not None and not aborted and p.diverging_epoch is None
                    and p.current_leader is None and p.snapshot_id is None and p.preferred_read_replica == -1):
                out += encode_idle_fetch_partition(version, p.partition_index, p.error_code, p.high_watermark,
                                                   p.last_stable_offset, p.log_start_offset, aborted is None)
                continue
            if v5:
                out += _FETCH_PART_V5.pack(
                    p.partition_index, p.error_code, p.high_watermark, p.last_stable_offset, p.log_start_offset
                )
            else:
                out += _FETCH_PART.pack(p.partition_index, p.error_code, p.high_watermark, p.last_stable_offset)
            if aborted is None:
                out += null_array
            else:
                write_length(out, len(aborted), flexible)
                for producer_id, first_offset in aborted:
                    out += _ABORTED.pack(producer_id, first_offset)
                    if flexible:
                        out.append(0)
            if v11:
                out += _I32.pack(p.preferred_read_replica)
            records = p.records
            if records is None:
                out += null_array
            else:
                passed: Sequence[RecordData]
                if not records:
                    size, passed = 0, ()
                elif len(records) == 1:  # the usual case: one read per partition
                    size = _nbytes(records[0])
                    passed = records if size else ()
                else:
                    sizes = [_nbytes(r) for r in records]
                    size = sum(sizes)
                    passed = [r for r, n in zip(records, sizes) if n]
                if flexible:
                    write_uvarint(out, size + 1)
                else:
                    out += _I32.pack(size)
                if size:
                    # Hand the metadata written so far over as one part, then
                    # the record objects themselves: no copy of record data.
                    parts.append(out)
                    parts.extend(passed)
                    out = bytearray()
            if flexible:
                if p.diverging_epoch is None and p.current_leader is None and p.snapshot_id is None:
                    out.append(0)  # no tagged fields
                    continue
                tags: list[tuple[int, bytes]] = []
                if p.diverging_epoch is not None and tuple(p.diverging_epoch) != (-1, -1):
                    tags.append((0, _I32.pack(p.diverging_epoch[0]) + _I64.pack(p.diverging_epoch[1]) + b"\x00"))
                if p.current_leader is not None and tuple(p.current_leader) != _NO_LEADER:
                    tags.append((1, _I32.pack(p.current_leader[0]) + _I32.pack(p.current_leader[1]) + b"\x00"))
                if p.snapshot_id is not None and tuple(p.snapshot_id) != (-1, -1):
                    tags.append((2, _I64.pack(p.snapshot_id[0]) + _I32.pack(p.snapshot_id[1]) + b"\x00"))
                write_tagged_fields(out, tags)
        if flexible:
            out.append(0)
    if flexible:
        if version >= 16 and node_endpoints:
            write_tagged_fields(out, [(0, _node_endpoints(node_endpoints))])
        else:
            out.append(0)
    parts.append(out)
    return parts


def fetch_response_size(parts: Sequence[Any]) -> int:
    """Total bytes of an encoded fetch body, regions included (for the frame size prefix)."""
    return sum(_nbytes(p) for p in parts)
