"""A hand-written decoder for the consumers' request: Fetch, versions 4-17.

A librdkafka consumer (kcat, confluent-kafka, the Node and Go clients) fetches without a
session: every Fetch names every partition it reads. Through kio, a Fetch of 1,000 partitions
cost two walks of its body, the bounds walk (wire.request_bounds) and kio's reader, about a
third of the broker's CPU for the whole request, and each Fetch version a client used loaded
its kio request and response schemas (about 0.2 MB) although the answer has its own encoder
(wire.response_encoders).

`decode_fetch_request` reads the body once, checking each length and count as it goes
(wire.body_reader), each partition's fixed fields with one struct unpack. It knows the tags
Kafka defines (the request's ClusterId and ReplicaState, a partition's ReplicaDirectoryId) and
skips the others, as Kafka's generated readers do. Bytes after the body are ignored, as kio
ignores them. The result has kio's field names, with fields a version lacks at their defaults
and max_wait in milliseconds; the unit tests decode random and damaged requests both ways and
require the same request or the same refusal (RequestDecodeError).

Layout (Kafka's FetchRequest.json; v12+ are flexible: compact lengths, tagged fields)::

    replica_id             int32 (v4-14; v15+ in the ReplicaState tag)
    max_wait_ms            int32
    min_bytes              int32
    max_bytes              int32
    isolation_level        int8
    session_id             int32 (v7+)
    session_epoch          int32 (v7+)
    topics                 [topic string (v4-12) | topic_id uuid (v13+),
                            partitions [partition int32, current_leader_epoch int32 (v9+),
                                        fetch_offset int64, last_fetched_epoch int32 (v12+),
                                        log_start_offset int64 (v5+), partition_max_bytes int32,
                                        tags (0: replica_directory_id uuid, v17+)], tags]
    forgotten_topics_data  [topic string (v7-12) | topic_id uuid (v13+), partitions [int32], tags] (v7+)
    rack_id                string (v11+)
    tags                   (0: cluster_id nullable string; 1: replica_state, v15+:
                            [replica_id int32, replica_epoch int64, tags])
"""

from __future__ import annotations

import struct
import uuid

import msgspec

from wire.body_reader import (
    read_count,
    read_int32s,
    read_string,
    read_tagged_fields,
    read_topic,
    read_uuid,
    skip_tagged_fields,
    truncated,
)
from wire.errors import RequestDecodeError
from wire.records import Buffer

__all__ = ["VERSIONS", "FetchPartition", "FetchRequest", "FetchTopic", "ForgottenTopic", "decode_fetch_request"]

VERSIONS = range(4, 18)
FIRST_FLEXIBLE_VERSION = 12
FIRST_TOPIC_ID_VERSION = 13
FIRST_REPLICA_STATE_VERSION = 15
FIRST_DIRECTORY_ID_VERSION = 17

_REQUEST = "FetchRequest"
_REPLICA_STATE = struct.Struct(">iq")  # replica_id, replica_epoch
_V4_HEAD = struct.Struct(">iiiib")  # replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level
_V7_HEAD = struct.Struct(">iiiibii")  # ... session_id, session_epoch
_V15_HEAD = struct.Struct(">iiibii")  # v7's without replica_id


class FetchPartition(msgspec.Struct, frozen=True, gc=False):
    """One partition to read; its fields in v12's wire order (so that one unpack builds it)."""

    partition: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    log_start_offset: int
    partition_max_bytes: int
    replica_directory_id: uuid.UUID | None = None


class FetchTopic(msgspec.Struct, frozen=True, gc=False):
    topic: str | None
    """By name before v13, else None."""
    topic_id: uuid.UUID | None
    """By id from v13 (None for the zero id), else None."""
    partitions: tuple[FetchPartition, ...]


class ForgottenTopic(msgspec.Struct, frozen=True, gc=False):
    topic: str | None
    topic_id: uuid.UUID | None
    partitions: tuple[int, ...]


class FetchRequest(msgspec.Struct, frozen=True, gc=False):
    replica_id: int
    """The field before v15, the ReplicaState tag's from v15 (-1: a consumer)."""
    replica_epoch: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation_level: int
    session_id: int
    session_epoch: int
    topics: tuple[FetchTopic, ...]
    forgotten_topics_data: tuple[ForgottenTopic, ...]
    rack_id: str
    cluster_id: str | None


# Each partition's fixed fields by version, and how they map to FetchPartition's order.
_P4 = struct.Struct(">iqi")  # partition, fetch_offset, partition_max_bytes
_P5 = struct.Struct(">iqqi")  # + log_start_offset
_P9 = struct.Struct(">iiqqi")  # + current_leader_epoch
_P12 = struct.Struct(">iiqiqi")  # + last_fetched_epoch: FetchPartition's order
_P12_UNTAGGED = struct.Struct(">iiqiqiB")  # ... and an empty tagged-fields section


def _partition_struct(version: int) -> struct.Struct:
    return _P12 if version >= 12 else _P9 if version >= 9 else _P5 if version >= 5 else _P4


def _partition(version: int, fields: tuple[int, ...]) -> FetchPartition:
    """A partition of a version before 12, its missing fields at their defaults (-1)."""
    if version >= 9:
        partition, current_leader_epoch, fetch_offset, log_start_offset, max_bytes = fields
        return FetchPartition(partition, current_leader_epoch, fetch_offset, -1, log_start_offset, max_bytes)
    if version >= 5:
        partition, fetch_offset, log_start_offset, max_bytes = fields
        return FetchPartition(partition, -1, fetch_offset, -1, log_start_offset, max_bytes)
    partition, fetch_offset, max_bytes = fields
    return FetchPartition(partition, -1, fetch_offset, -1, -1, max_bytes)


def _directory_id(buf: Buffer, pos: int, end: int) -> tuple[uuid.UUID | None, int]:
    """A partition's tags (v17+): ReplicaDirectoryId (tag 0); the others skipped."""
    directory_id = None
    fields, pos = read_tagged_fields(buf, pos, end, _REQUEST, "a partition's tagged fields")
    for tag, start, stop in fields:
        if tag == 0:
            directory_id, _ = read_uuid(buf, start, stop, _REQUEST, "replica_directory_id")
    return directory_id, pos


def _topics(version: int, buf: Buffer, pos: int, end: int) -> tuple[tuple[FetchTopic, ...], int]:
    flexible = version >= FIRST_FLEXIBLE_VERSION
    by_id = version >= FIRST_TOPIC_ID_VERSION
    directory_ids = version >= FIRST_DIRECTORY_ID_VERSION
    fixed = _partition_struct(version)
    size = fixed.size
    unpack = fixed.unpack_from
    # The least an entry can take: a topic, an empty name (or an id) and array (and tags); a
    # partition, its fixed fields (and tags).
    n_topics, pos = read_count(buf, pos, end, flexible, (18 if by_id else 3) if flexible else 6, _REQUEST, "topics")
    topics = []
    for _ in range(n_topics):
        name, topic_id, pos = read_topic(buf, pos, end, flexible, by_id, _REQUEST, "a topic")
        n_partitions, pos = read_count(buf, pos, end, flexible, size + flexible, _REQUEST, "partitions")
        partitions: list[FetchPartition] = []
        add = partitions.append
        untagged = n_partitions * (size + 1)
        if flexible and pos + untagged <= end and buf[pos + size:pos + untagged:size + 1] == bytes(n_partitions):
            # No partition has tagged fields (a client's usual request): all in one unpack.
            partitions = [FetchPartition(partition, leader_epoch, fetch_offset, fetched_epoch, log_start, max_bytes)
                          for partition, leader_epoch, fetch_offset, fetched_epoch, log_start, max_bytes, _
                          in _P12_UNTAGGED.iter_unpack(buf[pos:pos + untagged])]
            pos += untagged
        elif flexible:
            for _ in range(n_partitions):
                if pos + size > end:  # (the count allowed each partition one byte of tags)
                    raise truncated(_REQUEST, "a partition")
                fields = unpack(buf, pos)
                pos += size
                if pos < end and buf[pos] == 0:  # no tag: the usual case
                    pos += 1
                    add(FetchPartition(*fields))
                elif directory_ids:
                    directory_id, pos = _directory_id(buf, pos, end)
                    partition, leader_epoch, fetch_offset, fetched_epoch, log_start, max_bytes = fields
                    add(FetchPartition(partition, leader_epoch, fetch_offset, fetched_epoch, log_start, max_bytes,
                                       directory_id))
                else:
                    pos = skip_tagged_fields(buf, pos, end, _REQUEST, "a partition's tagged fields")
                    add(FetchPartition(*fields))
        else:  # (no tags: the count's check holds every partition's bytes)
            for _ in range(n_partitions):
                add(_partition(version, unpack(buf, pos)))
                pos += size
        if flexible:
            pos = pos + 1 if pos < end and buf[pos] == 0 else skip_tagged_fields(
                buf, pos, end, _REQUEST, "a topic's tagged fields")
        topics.append(FetchTopic(name, topic_id, tuple(partitions)))
    return tuple(topics), pos


def _forgotten(version: int, buf: Buffer, pos: int, end: int) -> tuple[tuple[ForgottenTopic, ...], int]:
    flexible = version >= FIRST_FLEXIBLE_VERSION
    by_id = version >= FIRST_TOPIC_ID_VERSION
    n_topics, pos = read_count(buf, pos, end, flexible, (18 if by_id else 3) if flexible else 6, _REQUEST,
                               "forgotten_topics_data")
    topics = []
    for _ in range(n_topics):
        name, topic_id, pos = read_topic(buf, pos, end, flexible, by_id, _REQUEST, "a forgotten topic")
        partitions, pos = read_int32s(buf, pos, end, flexible, _REQUEST, "a forgotten topic's partitions")
        if flexible:
            pos = skip_tagged_fields(buf, pos, end, _REQUEST, "a forgotten topic's tagged fields")
        topics.append(ForgottenTopic(name, topic_id, partitions))
    return tuple(topics), pos


def decode_fetch_request(version: int, buf: Buffer, offset: int) -> FetchRequest:
    """Decode a Fetch body (versions 4-17) that starts at `offset` of the frame `buf`.

    RequestDecodeError for a body that does not hold what it declares (Kafka answers an
    unparsable request by closing the connection).
    """
    end = len(buf)
    replica_id, replica_epoch, session_id, session_epoch = -1, -1, 0, -1
    head = _V15_HEAD if version >= FIRST_REPLICA_STATE_VERSION else _V7_HEAD if version >= 7 else _V4_HEAD
    if offset + head.size > end:
        raise truncated(_REQUEST, "the request's fixed fields")
    fixed = head.unpack_from(buf, offset)
    if version >= FIRST_REPLICA_STATE_VERSION:
        max_wait_ms, min_bytes, max_bytes, isolation_level, session_id, session_epoch = fixed
    elif version >= 7:
        replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level, session_id, session_epoch = fixed
    else:
        replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level = fixed
    pos = offset + head.size
    topics, pos = _topics(version, buf, pos, end)
    forgotten: tuple[ForgottenTopic, ...] = ()
    if version >= 7:
        forgotten, pos = _forgotten(version, buf, pos, end)
    rack_id = ""
    flexible = version >= FIRST_FLEXIBLE_VERSION
    if version >= 11:
        rack, pos = read_string(buf, pos, end, flexible, _REQUEST, "rack_id")
        if rack is None:
            raise RequestDecodeError("cannot decode FetchRequest: rack_id is null")
        rack_id = rack
    cluster_id = None
    if flexible:
        fields, pos = read_tagged_fields(buf, pos, end, _REQUEST, "the request's tagged fields")
        for tag, start, stop in fields:
            if tag == 0:
                cluster_id, _ = read_string(buf, start, stop, True, _REQUEST, "cluster_id")
            elif tag == 1 and version >= FIRST_REPLICA_STATE_VERSION:
                if start + _REPLICA_STATE.size > stop:
                    raise truncated(_REQUEST, "replica_state")
                replica_id, replica_epoch = _REPLICA_STATE.unpack_from(buf, start)
                skip_tagged_fields(buf, start + _REPLICA_STATE.size, stop, _REQUEST, "replica_state's tagged fields")
    return FetchRequest(replica_id, replica_epoch, max_wait_ms, min_bytes, max_bytes, isolation_level, session_id,
                        session_epoch, topics, forgotten, rack_id, cluster_id)
