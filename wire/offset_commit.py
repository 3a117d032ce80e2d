"""A hand-written codec for OffsetCommit (key 8), versions 2-10: a consumer commits the
offsets it has read to.

Consumers commit often (librdkafka every 5 s by default, and after each rebalance), so the
answer was written by hand first; the request now is too, which keeps kio out of a classic
consumer's requests. The decoder reads the body with wire.body_reader's checked reads (a body
that does not hold what it declares is a RequestDecodeError: Kafka closes the connection) into a
struct with kio's field names, the fields a version lacks at the defaults of Kafka's schema;
tags, which the request does not define, are skipped as Kafka skips them. The encoder writes
kio's bytes for every version (tests/unit/wire/test_group_codecs.py holds both to kio).
Versions 0-1 (a v1 partition's commit timestamp) are not served, as Kafka 4 serves them no
more.

Layout (Kafka's OffsetCommitRequest.json and OffsetCommitResponse.json; v8+ are flexible)::

    request
      group_id                      string
      generation_id_or_member_epoch int32
      member_id                     string
      group_instance_id             nullable string (v7+)
      retention_time                int64 (v2-4; -1: the broker's offsets.retention.minutes)
      topics                        [name string (v2-9) | topic_id uuid (v10+),
                                     partitions [partition_index int32, committed_offset int64,
                                                 committed_leader_epoch int32 (v6+),
                                                 committed_metadata nullable string, tags],
                                     tags]
      tags                          (v8+; none defined)

    response
      throttle_time                 int32 (v3+)
      topics                        [name string (v2-9) | topic_id uuid (v10+),
                                     partitions [partition_index int32, error_code int16, tags],
                                     tags]
      tags                          (v8+)
"""

from __future__ import annotations

import struct
import uuid

import msgspec

from wire.body_reader import (
    read_count,
    read_int,
    read_required_string,
    read_string,
    read_topic,
    skip_tagged_fields,
)
from wire.body_writer import write_length, write_topic
from wire.records import Buffer

__all__ = ["VERSIONS", "OffsetCommitRequest", "OffsetCommitRequestPartition", "OffsetCommitRequestTopic",
           "OffsetCommitResponse", "OffsetCommitResponsePartition", "OffsetCommitResponseTopic",
           "decode_offset_commit_request", "encode_offset_commit_response"]

VERSIONS = range(2, 11)
LAST_RETENTION_TIME_VERSION = 4
FIRST_THROTTLE_VERSION = 3
FIRST_LEADER_EPOCH_VERSION = 6
FIRST_INSTANCE_ID_VERSION = 7
FIRST_FLEXIBLE_VERSION = 8
FIRST_TOPIC_ID_VERSION = 10

_REQUEST = "OffsetCommitRequest"
_I32 = struct.Struct(">i")
_PARTITION_ANSWER = struct.Struct(">ih")


class OffsetCommitRequestPartition(msgspec.Struct, frozen=True, gc=False):
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int = -1
    """From v6."""
    committed_metadata: str | None = None


class OffsetCommitRequestTopic(msgspec.Struct, frozen=True, gc=False):
    name: str = ""
    """v2-9; "" from v10."""
    topic_id: uuid.UUID | None = None
    """From v10 (None for the zero id); None before."""
    partitions: tuple[OffsetCommitRequestPartition, ...] = ()


class OffsetCommitRequest(msgspec.Struct, frozen=True, gc=False):
    group_id: str
    generation_id_or_member_epoch: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
    """From v7."""
    retention_time: int = -1
    """Milliseconds; v2-4, -1 after (and for the broker's default)."""
    topics: tuple[OffsetCommitRequestTopic, ...] = ()


class OffsetCommitResponsePartition(msgspec.Struct, frozen=True, gc=False):
    partition_index: int
    error_code: int


class OffsetCommitResponseTopic(msgspec.Struct, frozen=True, gc=False):
    name: str = ""
    """Written v2-9."""
    topic_id: uuid.UUID | None = None
    """Written from v10 (None as the zero id)."""
    partitions: tuple[OffsetCommitResponsePartition, ...] = ()


class OffsetCommitResponse(msgspec.Struct, frozen=True, gc=False):
    throttle_time: int = 0
    """Milliseconds; written from v3."""
    topics: tuple[OffsetCommitResponseTopic, ...] = ()


def decode_offset_commit_request(version: int, buf: Buffer, pos: int) -> OffsetCommitRequest:
    """Decode an OffsetCommit body (versions 2-10) from `pos` of `buf`; bytes after it are
    ignored. RequestDecodeError for a body that does not hold what it declares; ValueError for
    a version outside 2-10."""
    if version not in VERSIONS:
        raise ValueError(f"offset commit request version {version} not in 2-10")
    end = len(buf)
    flexible = version >= FIRST_FLEXIBLE_VERSION
    by_id = version >= FIRST_TOPIC_ID_VERSION
    group_id, pos = read_required_string(buf, pos, end, flexible, _REQUEST, "group_id")
    generation, pos = read_int(buf, pos, end, 4, _REQUEST, "generation_id_or_member_epoch")
    member_id, pos = read_required_string(buf, pos, end, flexible, _REQUEST, "member_id")
    instance_id = None
    if version >= FIRST_INSTANCE_ID_VERSION:
        instance_id, pos = read_string(buf, pos, end, flexible, _REQUEST, "group_instance_id")
    retention = -1
    if version <= LAST_RETENTION_TIME_VERSION:
        retention, pos = read_int(buf, pos, end, 8, _REQUEST, "retention_time")
    epoch_too = version >= FIRST_LEADER_EPOCH_VERSION
    # The least a partition takes: index, offset, (epoch,) null metadata (one byte flexible, two
    # classic), (tags).
    least = 4 + 8 + (4 if epoch_too else 0) + 2
    count, pos = read_count(buf, pos, end, flexible, 2 if flexible else 6, _REQUEST, "topics")
    topics = []
    for _ in range(count):
        name, topic_id, pos = read_topic(buf, pos, end, flexible, by_id, _REQUEST, "a topic")
        n, pos = read_count(buf, pos, end, flexible, least, _REQUEST, "partitions")
        partitions = []
        for _ in range(n):
            index, pos = read_int(buf, pos, end, 4, _REQUEST, "partition_index")
            offset, pos = read_int(buf, pos, end, 8, _REQUEST, "committed_offset")
            epoch = -1
            if epoch_too:
                epoch, pos = read_int(buf, pos, end, 4, _REQUEST, "committed_leader_epoch")
            metadata, pos = read_string(buf, pos, end, flexible, _REQUEST, "committed_metadata")
            if flexible:
                pos = skip_tagged_fields(buf, pos, end, _REQUEST, "a partition's tagged fields")
            partitions.append(OffsetCommitRequestPartition(index, offset, epoch, metadata))
        if flexible:
            pos = skip_tagged_fields(buf, pos, end, _REQUEST, "a topic's tagged fields")
        topics.append(OffsetCommitRequestTopic(name or "", topic_id, tuple(partitions)))
    if flexible:
        skip_tagged_fields(buf, pos, end, _REQUEST, "the request's tagged fields")
    return OffsetCommitRequest(group_id, generation, member_id, instance_id, retention, tuple(topics))


def encode_offset_commit_response(version: int, response: OffsetCommitResponse) -> bytes:
    """The OffsetCommitResponse body for `version` (2-10), byte for byte kio's."""
    if version not in VERSIONS:
        raise ValueError(f"offset commit response version {version} not in 2-10")
    flexible = version >= FIRST_FLEXIBLE_VERSION
    by_id = version >= FIRST_TOPIC_ID_VERSION
    out = bytearray(_I32.pack(response.throttle_time) if version >= FIRST_THROTTLE_VERSION else b"")
    write_length(out, len(response.topics), flexible)
    for topic in response.topics:
        write_topic(out, topic.name, topic.topic_id, by_id, flexible)
        write_length(out, len(topic.partitions), flexible)
        for p in topic.partitions:
            out += _PARTITION_ANSWER.pack(p.partition_index, p.error_code)
            if flexible:
                out.append(0)  # the partition's tagged fields: none
        if flexible:
            out.append(0)  # the topic's tagged fields: none
    if flexible:
        out.append(0)  # the response's tagged fields: none
    return bytes(out)
