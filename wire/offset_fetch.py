"""A hand-written codec for OffsetFetch (key 9), versions 1-10: a group's committed offsets.

A consumer asks for them when it is assigned partitions, and admin tools for whole groups.
The decoder reads the body with wire.body_reader's checked reads (a body that does not hold
what it declares is a RequestDecodeError: Kafka closes the connection) into a struct with kio's
field names, the fields a version lacks at the defaults of Kafka's schema; tags, which the
request does not define, are skipped as Kafka skips them. A require_stable byte other than 0 is
true, as Kafka reads it (kio refuses it). The encoder writes kio's bytes for every version
(tests/unit/wire/test_group_codecs.py holds both to kio). Version 0 (offsets kept in ZooKeeper)
is not served, as Kafka 4 serves it no more.

Layout (Kafka's OffsetFetchRequest.json and OffsetFetchResponse.json; v6+ are flexible)::

    request
      group_id              string (v1-7)
      topics                [name string, partition_indexes [int32], tags] (v1-7; nullable
                            from v2: null asks for every topic)
      groups                [group_id string, member_id nullable string (v9+),
                             member_epoch int32 (v9+), topics (as above; v10 names topic_id
                             uuid instead, nullable), tags] (v8+)
      require_stable        bool (v7+)
      tags                  (v6+; none defined)

    response
      throttle_time         int32 (v3+)
      topics                [name string, partitions [partition_index int32,
                             committed_offset int64, committed_leader_epoch int32 (v5+),
                             metadata nullable string, error_code int16, tags], tags] (v1-7)
      error_code            int16 (v2-7)
      groups                [group_id string, topics (as above; v10: topic_id uuid instead of
                             name), error_code int16, tags] (v8+)
      tags                  (v6+)
"""

from __future__ import annotations

import struct
import uuid

import msgspec

from wire.body_reader import (
    read_count,
    read_int,
    read_int32s,
    read_length,
    read_required_string,
    read_string,
    read_topic,
    skip_tagged_fields,
    truncated,
)
from wire.body_writer import write_length, write_string, write_topic
from wire.records import Buffer

__all__ = ["VERSIONS", "OffsetFetchRequest", "OffsetFetchRequestGroup", "OffsetFetchRequestTopic",
           "OffsetFetchResponse", "OffsetFetchResponseGroup", "OffsetFetchResponsePartition",
           "OffsetFetchResponseTopic", "decode_offset_fetch_request", "encode_offset_fetch_response"]

VERSIONS = range(1, 11)
FIRST_NULLABLE_TOPICS_VERSION = 2
FIRST_THROTTLE_VERSION = 3
FIRST_LEADER_EPOCH_VERSION = 5
FIRST_FLEXIBLE_VERSION = 6
FIRST_REQUIRE_STABLE_VERSION = 7
FIRST_GROUPS_VERSION = 8
FIRST_MEMBER_VERSION = 9
FIRST_TOPIC_ID_VERSION = 10

_REQUEST = "OffsetFetchRequest"
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_OFFSET = struct.Struct(">iq")  # partition_index, committed_offset


class OffsetFetchRequestTopic(msgspec.Struct, frozen=True, gc=False):
    name: str = ""
    """"" in v10 (the topic is named by topic_id)."""
    topic_id: uuid.UUID | None = None
    """v10 (None for the zero id); None before."""
    partition_indexes: tuple[int, ...] = ()


class OffsetFetchRequestGroup(msgspec.Struct, frozen=True, gc=False):
    group_id: str
    member_id: str | None = None
    """From v9."""
    member_epoch: int = -1
    """From v9."""
    topics: tuple[OffsetFetchRequestTopic, ...] | None = None
    """None: every topic."""


class OffsetFetchRequest(msgspec.Struct, frozen=True, gc=False):
    group_id: str = ""
    """v1-7."""
    topics: tuple[OffsetFetchRequestTopic, ...] | None = ()
    """v1-7 (None, from v2: every topic)."""
    groups: tuple[OffsetFetchRequestGroup, ...] = ()
    """From v8."""
    require_stable: bool = False
    """From v7."""


class OffsetFetchResponsePartition(msgspec.Struct, frozen=True, gc=False):
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int = -1
    """Written from v5."""
    metadata: str | None = None
    error_code: int = 0


class OffsetFetchResponseTopic(msgspec.Struct, frozen=True, gc=False):
    name: str = ""
    """Written v1-9."""
    topic_id: uuid.UUID | None = None
    """Written from v10 (None as the zero id)."""
    partitions: tuple[OffsetFetchResponsePartition, ...] = ()


class OffsetFetchResponseGroup(msgspec.Struct, frozen=True, gc=False):
    group_id: str
    topics: tuple[OffsetFetchResponseTopic, ...] = ()
    error_code: int = 0


class OffsetFetchResponse(msgspec.Struct, frozen=True, gc=False):
    throttle_time: int = 0
    """Milliseconds; written from v3."""
    topics: tuple[OffsetFetchResponseTopic, ...] = ()
    """Written v1-7."""
    error_code: int = 0
    """Written v2-7."""
    groups: tuple[OffsetFetchResponseGroup, ...] = ()
    """Written from v8."""


def _topics(buf: Buffer, pos: int, end: int, version: int, nullable: bool,
            ) -> tuple[tuple[OffsetFetchRequestTopic, ...] | None, int]:
    flexible = version >= FIRST_FLEXIBLE_VERSION
    by_id = version >= FIRST_TOPIC_ID_VERSION
    if nullable:
        n, after = read_length(buf, pos, end, flexible, 4, _REQUEST, "topics")
        if n == -1:
            return None, after
    count, pos = read_count(buf, pos, end, flexible, 2 if flexible else 6, _REQUEST, "topics")
    topics = []
    for _ in range(count):
        name, topic_id, pos = read_topic(buf, pos, end, flexible, by_id, _REQUEST, "a topic")
        indexes, pos = read_int32s(buf, pos, end, flexible, _REQUEST, "partition_indexes")
        if flexible:
            pos = skip_tagged_fields(buf, pos, end, _REQUEST, "a topic's tagged fields")
        topics.append(OffsetFetchRequestTopic(name or "", topic_id, indexes))
    return tuple(topics), pos


def decode_offset_fetch_request(version: int, buf: Buffer, pos: int) -> OffsetFetchRequest:
    """Decode an OffsetFetch body (versions 1-10) from `pos` of `buf`; bytes after it are
    ignored. RequestDecodeError for a body that does not hold what it declares; ValueError for
    a version outside 1-10."""
    if version not in VERSIONS:
        raise ValueError(f"offset fetch request version {version} not in 1-10")
    end = len(buf)
    flexible = version >= FIRST_FLEXIBLE_VERSION
    group_id = ""
    topics: tuple[OffsetFetchRequestTopic, ...] | None = ()
    groups = []
    if version < FIRST_GROUPS_VERSION:
        group_id, pos = read_required_string(buf, pos, end, flexible, _REQUEST, "group_id")
        topics, pos = _topics(buf, pos, end, version, version >= FIRST_NULLABLE_TOPICS_VERSION)
    else:
        count, pos = read_count(buf, pos, end, flexible, 3, _REQUEST, "groups")
        for _ in range(count):
            gid, pos = read_required_string(buf, pos, end, flexible, _REQUEST, "groups' group_id")
            member_id, epoch = None, -1
            if version >= FIRST_MEMBER_VERSION:
                member_id, pos = read_string(buf, pos, end, flexible, _REQUEST, "groups' member_id")
                epoch, pos = read_int(buf, pos, end, 4, _REQUEST, "groups' member_epoch")
            group_topics, pos = _topics(buf, pos, end, version, True)
            pos = skip_tagged_fields(buf, pos, end, _REQUEST, "a group's tagged fields")
            groups.append(OffsetFetchRequestGroup(gid, member_id, epoch, group_topics))
    require_stable = False
    if version >= FIRST_REQUIRE_STABLE_VERSION:
        if pos >= end:
            raise truncated(_REQUEST, "require_stable")
        require_stable, pos = buf[pos] != 0, pos + 1  # (Kafka's readByte() != 0)
    if flexible:
        skip_tagged_fields(buf, pos, end, _REQUEST, "the request's tagged fields")
    return OffsetFetchRequest(group_id, topics, tuple(groups), require_stable)


def _write_topics(out: bytearray, version: int, topics: tuple[OffsetFetchResponseTopic, ...]) -> None:
    flexible = version >= FIRST_FLEXIBLE_VERSION
    by_id = version >= FIRST_TOPIC_ID_VERSION
    epoch_too = version >= FIRST_LEADER_EPOCH_VERSION
    write_length(out, len(topics), flexible)
    for topic in topics:
        write_topic(out, topic.name, topic.topic_id, by_id, flexible)
        write_length(out, len(topic.partitions), flexible)
        for p in topic.partitions:
            out += _OFFSET.pack(p.partition_index, p.committed_offset)
            if epoch_too:
                out += _I32.pack(p.committed_leader_epoch)
            write_string(out, p.metadata, flexible)
            out += _I16.pack(p.error_code)
            if flexible:
                out.append(0)  # the partition's tagged fields: none
        if flexible:
            out.append(0)  # the topic's tagged fields: none


def encode_offset_fetch_response(version: int, response: OffsetFetchResponse) -> bytes:
    """The OffsetFetchResponse body for `version` (1-10), byte for byte kio's."""
    if version not in VERSIONS:
        raise ValueError(f"offset fetch response version {version} not in 1-10")
    flexible = version >= FIRST_FLEXIBLE_VERSION
    out = bytearray(_I32.pack(response.throttle_time) if version >= FIRST_THROTTLE_VERSION else b"")
    if version < FIRST_GROUPS_VERSION:
        _write_topics(out, version, response.topics)
        if version >= FIRST_NULLABLE_TOPICS_VERSION:
            out += _I16.pack(response.error_code)
    else:
        write_length(out, len(response.groups), flexible)
        for group in response.groups:
            write_string(out, group.group_id, flexible)
            _write_topics(out, version, group.topics)
            out += _I16.pack(group.error_code)
            out.append(0)  # the group's tagged fields: none
    if flexible:
        out.append(0)  # the response's tagged fields: none
    return bytes(out)
