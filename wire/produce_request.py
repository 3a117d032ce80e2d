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

from wire.body_reader import read_count, read_length, read_string, skip_tagged_fields, truncated
from wire.errors import RequestDecodeError
from wire.records import Buffer

__all__ = ["VERSIONS", "PartitionProduceData", "ProduceRequest", "TopicProduceData", "decode_produce_request"]

_I32 = struct.Struct(">i").unpack_from
_ACKS_TIMEOUT = struct.Struct(">hi").unpack_from
_REQUEST = "ProduceRequest"

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


def decode_produce_request(version: int, buf: Buffer, offset: int) -> ProduceRequest:
    """Decode a Produce body (versions 3-12) that starts at `offset` of the frame `buf`.

    RequestDecodeError for a body that does not hold what it declares (Kafka answers an
    unparsable request by closing the connection).
    """
    flexible = version >= FIRST_FLEXIBLE_VERSION
    end = len(buf)
    transactional_id, pos = read_string(buf, offset, end, flexible, _REQUEST, "transactional_id")
    if pos + 6 > end:
        raise truncated(_REQUEST, "acks and timeout_ms")
    acks, timeout_ms = _ACKS_TIMEOUT(buf, pos)
    pos += 6
    # The least an entry can take: a topic, an empty name and array (and tags); a partition,
    # its index and null records (and tags).
    n_topics, pos = read_count(buf, pos, end, flexible, 3 if flexible else 6, _REQUEST, "topic_data")
    topics = []
    for _ in range(n_topics):
        name, pos = read_string(buf, pos, end, flexible, _REQUEST, "a topic name")
        if name is None:
            raise RequestDecodeError("cannot decode ProduceRequest: a topic name is null")
        n_partitions, pos = read_count(buf, pos, end, flexible, 6 if flexible else 8, _REQUEST, "partition_data")
        partitions = []
        for _ in range(n_partitions):
            if pos + 4 > end:
                raise truncated(_REQUEST, "a partition index")
            index = _I32(buf, pos)[0]
            n, pos = read_length(buf, pos + 4, end, flexible, 4, _REQUEST, "records")
            records: Buffer | None = None
            if n >= 0:
                if pos + n > end:
                    raise truncated(_REQUEST, "records")
                records = buf[pos : pos + n]
                pos += n
            elif n != -1:
                raise RequestDecodeError(f"cannot decode ProduceRequest: negative length {n} of records")
            if flexible:  # (no tagged field, the usual case, without the call)
                pos = pos + 1 if pos < end and buf[pos] == 0 else skip_tagged_fields(
                    buf, pos, end, _REQUEST, "a partition's tagged fields")
            partitions.append(PartitionProduceData(index, records))
        if flexible:
            pos = pos + 1 if pos < end and buf[pos] == 0 else skip_tagged_fields(
                buf, pos, end, _REQUEST, "a topic's tagged fields")
        topics.append(TopicProduceData(name, tuple(partitions)))
    if flexible and not (pos < end and buf[pos] == 0):
        skip_tagged_fields(buf, pos, end, _REQUEST, "the request's tagged fields")
    return ProduceRequest(transactional_id, acks, timeout_ms, tuple(topics))
