"""A hand-written codec for ListOffsets (key 2), versions 1-9: the earliest, latest or
timestamp-found offsets of partitions.

A consumer asks when it has no committed offset to start from (auto.offset.reset), and so do
kcat's "-o beginning" and "-o end". The decoder reads the body with wire.body_reader's checked
reads (a body that does not hold what it declares is a RequestDecodeError: Kafka closes the
connection) into a struct with kio's field names, the fields a version lacks at the defaults of
Kafka's schema; tags, which the request does not define, are skipped as Kafka skips them. The
encoder writes kio's bytes for every version (tests/unit/wire/test_group_codecs.py holds both to
kio). Version 0 (several offsets a partition) is not served, as Kafka 4 serves it no more; nor
are 10-11 (KD-202).

Layout (Kafka's ListOffsetsRequest.json and ListOffsetsResponse.json; v6+ are flexible)::

    request
      replica_id            int32
      isolation_level       int8 (v2+; 1 read_committed)
      topics                [name string, partitions [partition_index int32,
                             current_leader_epoch int32 (v4+), timestamp int64, tags], tags]
      tags                  (v6+; none defined)

    response
      throttle_time         int32 (v2+)
      topics                [name string, partitions [partition_index int32, error_code int16,
                             timestamp int64, offset int64, leader_epoch int32 (v4+), tags],
                             tags]
      tags                  (v6+)
"""

from __future__ import annotations

import struct

import msgspec

from wire.body_reader import read_count, read_int, read_required_string, skip_tagged_fields
from wire.body_writer import write_length, write_string
from wire.records import Buffer

__all__ = ["VERSIONS", "ListOffsetsPartition", "ListOffsetsPartitionResponse", "ListOffsetsRequest",
           "ListOffsetsResponse", "ListOffsetsTopic", "ListOffsetsTopicResponse", "decode_list_offsets_request",
           "encode_list_offsets_response"]

VERSIONS = range(1, 10)
FIRST_ISOLATION_VERSION = 2
FIRST_LEADER_EPOCH_VERSION = 4
FIRST_FLEXIBLE_VERSION = 6

_REQUEST = "ListOffsetsRequest"
_I32 = struct.Struct(">i")
FIRST_THROTTLE_VERSION = 2
_ANSWER = struct.Struct(">ihqq")  # partition_index, error_code, timestamp, offset


class ListOffsetsPartition(msgspec.Struct, frozen=True, gc=False):
    partition_index: int
    current_leader_epoch: int = -1
    """From v4; -1 (none to check) before."""
    timestamp: int = -1


class ListOffsetsTopic(msgspec.Struct, frozen=True, gc=False):
    name: str
    partitions: tuple[ListOffsetsPartition, ...] = ()


class ListOffsetsRequest(msgspec.Struct, frozen=True, gc=False):
    replica_id: int
    isolation_level: int = 0
    """From v2; 0 (read_uncommitted) before."""
    topics: tuple[ListOffsetsTopic, ...] = ()


class ListOffsetsPartitionResponse(msgspec.Struct, frozen=True, gc=False):
    partition_index: int
    error_code: int
    timestamp: int = -1
    offset: int = -1
    leader_epoch: int = -1
    """Written from v4."""


class ListOffsetsTopicResponse(msgspec.Struct, frozen=True, gc=False):
    name: str
    partitions: tuple[ListOffsetsPartitionResponse, ...] = ()


class ListOffsetsResponse(msgspec.Struct, frozen=True, gc=False):
    throttle_time: int = 0
    """Milliseconds; written from v2."""
    topics: tuple[ListOffsetsTopicResponse, ...] = ()


def decode_list_offsets_request(version: int, buf: Buffer, pos: int) -> ListOffsetsRequest:
    """Decode a ListOffsets body (versions 1-9) from `pos` of `buf`; bytes after it are ignored.
    RequestDecodeError for a body that does not hold what it declares; ValueError for a version
    outside 1-9."""
    if version not in VERSIONS:
        raise ValueError(f"list offsets request version {version} not in 1-9")
    end = len(buf)
    flexible = version >= FIRST_FLEXIBLE_VERSION
    epoch_too = version >= FIRST_LEADER_EPOCH_VERSION
    replica_id, pos = read_int(buf, pos, end, 4, _REQUEST, "replica_id")
    isolation = 0
    if version >= FIRST_ISOLATION_VERSION:
        isolation, pos = read_int(buf, pos, end, 1, _REQUEST, "isolation_level")
    least = 4 + (4 if epoch_too else 0) + 8 + (1 if flexible else 0)
    count, pos = read_count(buf, pos, end, flexible, 2 if flexible else 6, _REQUEST, "topics")
    topics = []
    for _ in range(count):
        name, pos = read_required_string(buf, pos, end, flexible, _REQUEST, "topics' name")
        n, pos = read_count(buf, pos, end, flexible, least, _REQUEST, "partitions")
        partitions = []
        for _ in range(n):
            index, pos = read_int(buf, pos, end, 4, _REQUEST, "partition_index")
            epoch = -1
            if epoch_too:
                epoch, pos = read_int(buf, pos, end, 4, _REQUEST, "current_leader_epoch")
            timestamp, pos = read_int(buf, pos, end, 8, _REQUEST, "timestamp")
            if flexible:
                pos = skip_tagged_fields(buf, pos, end, _REQUEST, "a partition's tagged fields")
            partitions.append(ListOffsetsPartition(index, epoch, timestamp))
        if flexible:
            pos = skip_tagged_fields(buf, pos, end, _REQUEST, "a topic's tagged fields")
        topics.append(ListOffsetsTopic(name, tuple(partitions)))
    if flexible:
        skip_tagged_fields(buf, pos, end, _REQUEST, "the request's tagged fields")
    return ListOffsetsRequest(replica_id, isolation, tuple(topics))


def encode_list_offsets_response(version: int, response: ListOffsetsResponse) -> bytes:
    """The ListOffsetsResponse body for `version` (1-9), byte for byte kio's."""
    if version not in VERSIONS:
        raise ValueError(f"list offsets response version {version} not in 1-9")
    flexible = version >= FIRST_FLEXIBLE_VERSION
    epoch_too = version >= FIRST_LEADER_EPOCH_VERSION
    out = bytearray(_I32.pack(response.throttle_time) if version >= FIRST_THROTTLE_VERSION else b"")
    write_length(out, len(response.topics), flexible)
    for topic in response.topics:
        write_string(out, topic.name, flexible)
        write_length(out, len(topic.partitions), flexible)
        for p in topic.partitions:
            out += _ANSWER.pack(p.partition_index, p.error_code, p.timestamp, p.offset)
            if epoch_too:
                out += _I32.pack(p.leader_epoch)
            if flexible:
                out.append(0)  # the partition's tagged fields: none
        if flexible:
            out.append(0)  # the topic's tagged fields: none
    if flexible:
        out.append(0)  # the response's tagged fields: none
    return bytes(out)
