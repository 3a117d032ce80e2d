"""The record formats of the consumer protocol's (KIP-848) and share groups' (KIP-932) groups in
`__consumer_offsets`; coordinator_records.py has the classic groups' and the shared layout
(an int16 record type, then the key; an int16 version, then the value; a null value is a
tombstone). Loaded with the first such group or record (asyncbroker.lazy_group_manager).

A consumer-protocol group is five kinds of records, every value at version 0
and flexible (compact strings and arrays, tagged fields), keys not flexible:

    3 ConsumerGroupMetadata (group) -> epoch int32; tagged 0: metadataHash int64
    5 ConsumerGroupMemberMetadata (group, member) -> instanceId?, rackId?,
        clientId, clientHost, subscribedTopicNames []string, subscribedTopicRegex?,
        rebalanceTimeoutMs int32, serverAssignor?; tagged 0: classic member metadata
        (a byte, 0 for none - a consumer-protocol member - or 1 then sessionTimeoutMs
        int32 and supportedProtocols [name, metadata bytes]: a classic member)
    6 ConsumerGroupTargetAssignmentMetadata (group) -> assignmentEpoch int32;
        tagged 0: assignmentTimestamp int64
    7 ConsumerGroupTargetAssignmentMember (group, member) -> topicPartitions
        [topicId uuid, partitions []int32]
    8 ConsumerGroupCurrentMemberAssignment (group, member) -> memberEpoch int32,
        previousMemberEpoch int32, state int8, assignedPartitions and
        partitionsPendingRevocation [topicId uuid, partitions []int32; tagged 0:
        assignmentEpochs []int32]
   16 ConsumerGroupRegularExpression (group, regex) -> topics []string,
        version int64, timestamp int64: what a subscription regex last resolved to

A share group (KIP-932) is six more, laid out the same way:

   10 ShareGroupMemberMetadata (group, member) -> rackId?, clientId, clientHost,
        subscribedTopicNames []string
   11 ShareGroupMetadata (group) -> epoch int32, metadataHash int64
   12 ShareGroupTargetAssignmentMetadata (group) -> as type 6
   13 ShareGroupTargetAssignmentMember (group, member) -> as type 7
   14 ShareGroupCurrentMemberAssignment (group, member) -> memberEpoch int32,
        previousMemberEpoch int32, state int8, assignedPartitions [topicId, partitions]
   15 ShareGroupStatePartitionMetadata (group) -> initializingTopics and
        initializedTopics [topicId, topicName, partitions []int32], deletingTopics
        [topicId, topicName]: which partitions' share state is set up

Kafka 4.4 wrote these bytes (read back from its log in tests/oracle). A member record
without tag 0 (older records of this broker) is read as a consumer-protocol member;
Kafka would read it as a classic member with no protocols, so tag 0 is always written.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from asyncbroker.coordinator_records import CoordinatorRecordType, RecordFormatError, RecordReader, RecordWriter

_I64 = struct.Struct(">q")

# ------------------------------------------------------------------ consumer-protocol groups


class ConsumerGroupKey(msgspec.Struct, frozen=True):
    """Key of a group-wide record of a consumer-protocol or share group (types 3, 6, 11, 12, 15)."""

    record_type: int
    group: str


class ConsumerGroupMemberKey(msgspec.Struct, frozen=True):
    """Key of a per-member record of a consumer-protocol or share group (types 5, 7, 8, 10, 13, 14)."""

    record_type: int
    group: str
    member_id: str


class ConsumerGroupRegexKey(msgspec.Struct, frozen=True):
    """Key of a resolved subscription regex (type 16)."""

    record_type: int
    group: str
    regex: str


class TopicAssignment(msgspec.Struct, frozen=True):
    """One topic's partitions in an assignment; `assignment_epochs` (aligned with
    `partitions`) says at which member epoch each was assigned, where it is kept."""

    topic_id: uuid.UUID
    partitions: tuple[int, ...]
    assignment_epochs: tuple[int, ...] | None = None


class ConsumerGroupMetadataValue(msgspec.Struct, frozen=True):
    epoch: int
    metadata_hash: int = 0


class ClassicMemberMetadata(msgspec.Struct, frozen=True):
    """What a classic member of a consumer-protocol group joined with: its session timeout
    and its protocols (name, ConsumerProtocolSubscription bytes) in its order."""

    session_timeout_ms: int
    supported_protocols: tuple[tuple[str, bytes], ...]


class ConsumerGroupMemberMetadataValue(msgspec.Struct, frozen=True):
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    classic: ClassicMemberMetadata | None = None


class TargetAssignmentMetadataValue(msgspec.Struct, frozen=True):
    assignment_epoch: int
    assignment_timestamp: int = 0


class TargetAssignmentMemberValue(msgspec.Struct, frozen=True):
    topic_partitions: tuple[TopicAssignment, ...]


class RegularExpressionValue(msgspec.Struct, frozen=True):
    topics: tuple[str, ...]
    version: int
    timestamp: int


class CurrentMemberAssignmentValue(msgspec.Struct, frozen=True):
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned_partitions: tuple[TopicAssignment, ...]
    partitions_pending_revocation: tuple[TopicAssignment, ...]


def encode_consumer_group_key(key: ConsumerGroupKey | ConsumerGroupMemberKey | ConsumerGroupRegexKey) -> bytes:
    w = RecordWriter()
    w.i16(key.record_type)
    w.string(key.group)
    if isinstance(key, ConsumerGroupMemberKey):
        w.string(key.member_id)
    elif isinstance(key, ConsumerGroupRegexKey):
        w.string(key.regex)
    return bytes(w.out)


def _i64(v: int) -> bytes:
    return _I64.pack(v)


def _epoch_value(epoch: int, tag0_i64: int) -> bytes:
    """Version 0: an int32 epoch, then an int64 in tag 0 when it is not its default (0)."""
    w = RecordWriter(flexible=True)
    w.i16(0)
    w.i32(epoch)
    w.tagged([(0, _i64(tag0_i64))] if tag0_i64 else [])
    return bytes(w.out)


def encode_consumer_group_metadata_value(value: ConsumerGroupMetadataValue) -> bytes:
    return _epoch_value(value.epoch, value.metadata_hash)


def encode_member_metadata_value(value: ConsumerGroupMemberMetadataValue) -> bytes:
    w = RecordWriter(flexible=True)
    w.i16(0)
    w.compact_string(value.instance_id)
    w.compact_string(value.rack_id)
    w.compact_string(value.client_id)
    w.compact_string(value.client_host)
    w.uvarint(len(value.subscribed_topic_names) + 1)
    for name in value.subscribed_topic_names:
        w.compact_string(name)
    w.compact_string(value.subscribed_topic_regex or "")  # Kafka stores "" for "no regex"
    w.i32(value.rebalance_timeout_ms)
    w.compact_string(value.server_assignor)
    classic = RecordWriter(flexible=True)
    if value.classic is None:
        classic.i8(0)
    else:
        classic.i8(1)
        classic.i32(value.classic.session_timeout_ms)
        classic.uvarint(len(value.classic.supported_protocols) + 1)
        for name, metadata in value.classic.supported_protocols:
            classic.compact_string(name)
            classic.uvarint(len(metadata) + 1)
            classic.out += metadata
            classic.tagged([])
        classic.tagged([])
    w.tagged([(0, bytes(classic.out))])
    return bytes(w.out)


def encode_target_assignment_metadata_value(value: TargetAssignmentMetadataValue) -> bytes:
    return _epoch_value(value.assignment_epoch, value.assignment_timestamp)


def _write_topic_assignments(w: RecordWriter, topics: Sequence[TopicAssignment], *, with_epochs: bool) -> None:
    w.uvarint(len(topics) + 1)
    for t in topics:
        w.uuid(t.topic_id)
        w.compact_i32s(t.partitions)
        if with_epochs and t.assignment_epochs is not None:
            epochs = RecordWriter()
            epochs.compact_i32s(t.assignment_epochs)
            w.tagged([(0, bytes(epochs.out))])
        else:
            w.tagged([])


def encode_target_assignment_member_value(value: TargetAssignmentMemberValue) -> bytes:
    w = RecordWriter(flexible=True)
    w.i16(0)
    _write_topic_assignments(w, value.topic_partitions, with_epochs=False)
    w.tagged([])
    return bytes(w.out)


def encode_current_member_assignment_value(value: CurrentMemberAssignmentValue) -> bytes:
    w = RecordWriter(flexible=True)
    w.i16(0)
    w.i32(value.member_epoch)
    w.i32(value.previous_member_epoch)
    w.i8(value.state)
    _write_topic_assignments(w, value.assigned_partitions, with_epochs=True)
    _write_topic_assignments(w, value.partitions_pending_revocation, with_epochs=True)
    w.tagged([])
    return bytes(w.out)


def encode_regular_expression_value(value: RegularExpressionValue) -> bytes:
    w = RecordWriter(flexible=True)
    w.i16(0)
    w.uvarint(len(value.topics) + 1)
    for name in value.topics:
        w.compact_string(name)
    w.i64(value.version)
    w.i64(value.timestamp)
    w.tagged([])
    return bytes(w.out)


def decode_regular_expression_value(data: bytes) -> RegularExpressionValue:
    r = _flexible_value(data, "ConsumerGroupRegularExpressionValue")
    topics = tuple(r.string() for _ in range(r.array_length()))
    version = r.i64()
    timestamp = r.i64()
    r.skip_tagged_fields()
    return RegularExpressionValue(topics, version, timestamp)


def decode_consumer_group_key(data: bytes) -> ConsumerGroupKey | ConsumerGroupMemberKey | ConsumerGroupRegexKey | None:
    """The key of a consumer-protocol record; None for other record types."""
    r = RecordReader(data)
    record_type = r.i16()
    if record_type in _GROUP_KEYED:
        return ConsumerGroupKey(record_type, r.string())
    if record_type in _MEMBER_KEYED:
        return ConsumerGroupMemberKey(record_type, r.string(), r.string())
    if record_type == CoordinatorRecordType.CONSUMER_GROUP_REGULAR_EXPRESSION:
        return ConsumerGroupRegexKey(record_type, r.string(), r.string())
    return None


_T = CoordinatorRecordType
_GROUP_KEYED = frozenset({_T.CONSUMER_GROUP_METADATA, _T.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
                          _T.SHARE_GROUP_METADATA, _T.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA,
                          _T.SHARE_GROUP_STATE_PARTITION_METADATA})
_MEMBER_KEYED = frozenset({_T.CONSUMER_GROUP_MEMBER_METADATA, _T.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
                           _T.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, _T.SHARE_GROUP_MEMBER_METADATA,
                           _T.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER, _T.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT})
SHARE_GROUP_RECORD_TYPES = frozenset(range(10, 16))
"""The record types of share groups (ShareGroupManager replays them)."""


def _flexible_value(data: bytes, name: str) -> RecordReader:
    r = RecordReader(data, flexible=True)
    version = r.i16()
    if version != 0:
        raise RecordFormatError(f"unknown {name} version {version}")
    return r


def _tagged(r: RecordReader) -> dict[int, bytes]:
    out: dict[int, bytes] = {}
    for _ in range(r.uvarint()):
        tag = r.uvarint()
        out[tag] = bytes(r._take(r.uvarint()))
    return out


def _compact_i32s(r: RecordReader) -> tuple[int, ...]:
    return tuple(r.i32() for _ in range(r.array_length()))


def _read_topic_assignments(r: RecordReader) -> tuple[TopicAssignment, ...]:
    out = []
    for _ in range(r.array_length()):
        topic_id = uuid.UUID(bytes=bytes(r._take(16)))
        partitions = _compact_i32s(r)
        tagged = _tagged(r)
        epochs = _compact_i32s(RecordReader(tagged[0], flexible=True)) if 0 in tagged else None
        out.append(TopicAssignment(topic_id, partitions, epochs))
    return tuple(out)


def _read_epoch_value(data: bytes, name: str) -> tuple[int, int]:
    """(the int32 epoch, the int64 in tag 0 or 0): the reverse of _epoch_value."""
    r = _flexible_value(data, name)
    epoch = r.i32()
    tagged = _tagged(r)
    return epoch, _I64.unpack(tagged[0])[0] if 0 in tagged else 0


def decode_consumer_group_metadata_value(data: bytes) -> ConsumerGroupMetadataValue:
    return ConsumerGroupMetadataValue(*_read_epoch_value(data, "ConsumerGroupMetadataValue"))


def decode_member_metadata_value(data: bytes) -> ConsumerGroupMemberMetadataValue:
    r = _flexible_value(data, "ConsumerGroupMemberMetadataValue")
    instance_id = r.nullable_string()
    rack_id = r.nullable_string()
    client_id = r.string()
    client_host = r.string()
    names = tuple(r.string() for _ in range(r.array_length()))
    regex = r.nullable_string()
    rebalance_timeout_ms = r.i32()
    assignor = r.nullable_string()
    tagged = _tagged(r)
    classic = None
    if tagged.get(0, b"\x00")[:1] == b"\x01":
        c = RecordReader(tagged[0], 1, flexible=True)
        session_timeout_ms = c.i32()
        protocols = []
        for _ in range(c.array_length()):
            protocols.append((c.string(), c.bytes_()))
            c.skip_tagged_fields()
        classic = ClassicMemberMetadata(session_timeout_ms, tuple(protocols))
    return ConsumerGroupMemberMetadataValue(instance_id, rack_id, client_id, client_host, names, regex or None,
                                            rebalance_timeout_ms, assignor, classic)


def decode_target_assignment_metadata_value(data: bytes) -> TargetAssignmentMetadataValue:
    return TargetAssignmentMetadataValue(*_read_epoch_value(data, "ConsumerGroupTargetAssignmentMetadataValue"))


def decode_target_assignment_member_value(data: bytes) -> TargetAssignmentMemberValue:
    r = _flexible_value(data, "ConsumerGroupTargetAssignmentMemberValue")
    topics = _read_topic_assignments(r)
    r.skip_tagged_fields()
    return TargetAssignmentMemberValue(topics)


def decode_current_member_assignment_value(data: bytes) -> CurrentMemberAssignmentValue:
    r = _flexible_value(data, "ConsumerGroupCurrentMemberAssignmentValue")
    member_epoch = r.i32()
    previous = r.i32()
    state = struct.unpack(">b", r._take(1))[0]
    assigned = _read_topic_assignments(r)
    pending = _read_topic_assignments(r)
    r.skip_tagged_fields()
    return CurrentMemberAssignmentValue(member_epoch, previous, state, assigned, pending)


def topic_assignments(partitions: Mapping[uuid.UUID, "frozenset[int] | set[int]"],
                      epochs: Mapping[tuple[uuid.UUID, int], int] | None = None) -> tuple[TopicAssignment, ...]:
    """An assignment ({topic id: partitions}) as records hold it, partitions in ascending order."""
    out = []
    for topic_id, parts in partitions.items():
        ordered = tuple(sorted(parts))
        out.append(TopicAssignment(topic_id, ordered,
                                   None if epochs is None else tuple(epochs.get((topic_id, p), 0) for p in ordered)))
    return tuple(out)


# ------------------------------------------------------------------ share groups


class ShareGroupMemberMetadataValue(msgspec.Struct, frozen=True):
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]


class ShareGroupMetadataValue(msgspec.Struct, frozen=True):
    epoch: int
    metadata_hash: int = 0


class ShareGroupCurrentMemberAssignmentValue(msgspec.Struct, frozen=True):
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned_partitions: tuple[TopicAssignment, ...]


class ShareTopicPartitions(msgspec.Struct, frozen=True):
    topic_id: uuid.UUID
    topic_name: str
    partitions: tuple[int, ...] = ()


class ShareGroupStatePartitionMetadataValue(msgspec.Struct, frozen=True):
    initializing_topics: tuple[ShareTopicPartitions, ...]
    initialized_topics: tuple[ShareTopicPartitions, ...]
    deleting_topics: tuple[ShareTopicPartitions, ...] = ()  # partitions left empty


def encode_share_member_metadata_value(value: ShareGroupMemberMetadataValue) -> bytes:
    w = RecordWriter(flexible=True)
    w.i16(0)
    w.compact_string(value.rack_id)
    w.compact_string(value.client_id)
    w.compact_string(value.client_host)
    w.uvarint(len(value.subscribed_topic_names) + 1)
    for name in value.subscribed_topic_names:
        w.compact_string(name)
    w.tagged([])
    return bytes(w.out)


def decode_share_member_metadata_value(data: bytes) -> ShareGroupMemberMetadataValue:
    r = _flexible_value(data, "ShareGroupMemberMetadataValue")
    rack_id = r.nullable_string()
    client_id = r.string()
    client_host = r.string()
    names = tuple(r.string() for _ in range(r.array_length()))
    r.skip_tagged_fields()
    return ShareGroupMemberMetadataValue(rack_id, client_id, client_host, names)


def encode_share_group_metadata_value(value: ShareGroupMetadataValue) -> bytes:
    w = RecordWriter(flexible=True)
    w.i16(0)
    w.i32(value.epoch)
    w.i64(value.metadata_hash)
    w.tagged([])
    return bytes(w.out)


def decode_share_group_metadata_value(data: bytes) -> ShareGroupMetadataValue:
    r = _flexible_value(data, "ShareGroupMetadataValue")
    epoch = r.i32()
    metadata_hash = r.i64()
    r.skip_tagged_fields()
    return ShareGroupMetadataValue(epoch, metadata_hash)


def encode_share_current_member_assignment_value(value: ShareGroupCurrentMemberAssignmentValue) -> bytes:
    w = RecordWriter(flexible=True)
    w.i16(0)
    w.i32(value.member_epoch)
    w.i32(value.previous_member_epoch)
    w.i8(value.state)
    _write_topic_assignments(w, value.assigned_partitions, with_epochs=False)
    w.tagged([])
    return bytes(w.out)


def decode_share_current_member_assignment_value(data: bytes) -> ShareGroupCurrentMemberAssignmentValue:
    r = _flexible_value(data, "ShareGroupCurrentMemberAssignmentValue")
    member_epoch = r.i32()
    previous = r.i32()
    state = struct.unpack(">b", r._take(1))[0]
    assigned = _read_topic_assignments(r)
    r.skip_tagged_fields()
    return ShareGroupCurrentMemberAssignmentValue(member_epoch, previous, state, assigned)


def _write_share_topics(w: RecordWriter, topics: Sequence[ShareTopicPartitions], *, with_partitions: bool) -> None:
    w.uvarint(len(topics) + 1)
    for t in topics:
        w.uuid(t.topic_id)
        w.compact_string(t.topic_name)
        if with_partitions:
            w.compact_i32s(t.partitions)
        w.tagged([])


def _read_share_topics(r: RecordReader, *, with_partitions: bool) -> tuple[ShareTopicPartitions, ...]:
    out = []
    for _ in range(r.array_length()):
        topic_id = uuid.UUID(bytes=bytes(r._take(16)))
        name = r.string()
        partitions = _compact_i32s(r) if with_partitions else ()
        r.skip_tagged_fields()
        out.append(ShareTopicPartitions(topic_id, name, partitions))
    return tuple(out)


def encode_share_state_partition_metadata_value(value: ShareGroupStatePartitionMetadataValue) -> bytes:
    w = RecordWriter(flexible=True)
    w.i16(0)
    _write_share_topics(w, value.initializing_topics, with_partitions=True)
    _write_share_topics(w, value.initialized_topics, with_partitions=True)
    _write_share_topics(w, value.deleting_topics, with_partitions=False)
    w.tagged([])
    return bytes(w.out)


def decode_share_state_partition_metadata_value(data: bytes) -> ShareGroupStatePartitionMetadataValue:
    r = _flexible_value(data, "ShareGroupStatePartitionMetadataValue")
    initializing = _read_share_topics(r, with_partitions=True)
    initialized = _read_share_topics(r, with_partitions=True)
    deleting = _read_share_topics(r, with_partitions=False)
    r.skip_tagged_fields()
    return ShareGroupStatePartitionMetadataValue(initializing, initialized, deleting)


VALUE_DECODERS: dict[int, Callable[[bytes], Any]] = {
    _T.CONSUMER_GROUP_METADATA: decode_consumer_group_metadata_value,
    _T.CONSUMER_GROUP_MEMBER_METADATA: decode_member_metadata_value,
    _T.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA: decode_target_assignment_metadata_value,
    _T.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER: decode_target_assignment_member_value,
    _T.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: decode_current_member_assignment_value,
    _T.CONSUMER_GROUP_REGULAR_EXPRESSION: decode_regular_expression_value,
    _T.SHARE_GROUP_MEMBER_METADATA: decode_share_member_metadata_value,
    _T.SHARE_GROUP_METADATA: decode_share_group_metadata_value,
    _T.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA: decode_target_assignment_metadata_value,
    _T.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER: decode_target_assignment_member_value,
    _T.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT: decode_share_current_member_assignment_value,
    _T.SHARE_GROUP_STATE_PARTITION_METADATA: decode_share_state_partition_metadata_value,
}
"""The value decoder of each record type in this module, for the coordinator's loader."""
