"""The key and value formats of the records in `__consumer_offsets`.

Kafka's group coordinator stores two kinds of records for classic groups in
its internal compacted topic, and a directory written by Apache Kafka must
load here (and the reverse), so the bytes follow Kafka's schemas
(group-coordinator/.../common/message/*.json):

    key   = int16 record type, then the key fields
              type 0 or 1: OffsetCommitKey   (group: string, topic: string, partition: int32)
              type 2:      GroupMetadataKey  (group: string)
              types 3, 5, 6, 7, 8: the consumer protocol's groups (KIP-848), see below
              other types: share/streams groups, regex resolutions (skipped here)
    value = int16 version, then the value fields; a null value is a tombstone

    OffsetCommitValue v0-4: offset int64, leaderEpoch int32 (v3+), metadata
        string, commitTimestamp int64, expireTimestamp int64 (v1 only).
        Kafka writes v1 when an expire timestamp is set, otherwise v3.
    GroupMetadataValue v0-4: protocolType string, generation int32, protocol
        string?, leader string?, currentStateTimestamp int64 (v2+), members[
        memberId, groupInstanceId? (v3+), clientId, clientHost,
        rebalanceTimeout int32 (v1+), sessionTimeout int32, subscription
        bytes, assignment bytes]. Kafka writes v3.

Version 4 of both values is "flexible" (compact strings/arrays and tagged
fields); it is decoded for completeness and never written.

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

import enum
import struct
import uuid
from collections.abc import Mapping, Sequence

import msgspec

from wire.errors import CorruptRecordError
from wire.records import read_uvarint, write_uvarint

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")

OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRE = 1
GROUP_METADATA_VALUE_VERSION = 3


class CoordinatorRecordType(enum.IntEnum):
    """The int16 that prefixes every key (Kafka's CoordinatorRecordType ids)."""

    LEGACY_OFFSET_COMMIT = 0
    OFFSET_COMMIT = 1
    GROUP_METADATA = 2
    CONSUMER_GROUP_METADATA = 3
    CONSUMER_GROUP_MEMBER_METADATA = 5
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = 6
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = 7
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8
    SHARE_GROUP_MEMBER_METADATA = 10
    SHARE_GROUP_METADATA = 11
    SHARE_GROUP_TARGET_ASSIGNMENT_METADATA = 12
    SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER = 13
    SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT = 14
    SHARE_GROUP_STATE_PARTITION_METADATA = 15
    CONSUMER_GROUP_REGULAR_EXPRESSION = 16


class RecordFormatError(ValueError):
    """A key or value in `__consumer_offsets` that does not follow the schema."""


class OffsetCommitKey(msgspec.Struct, frozen=True):
    group: str
    topic: str
    partition: int


class GroupMetadataKey(msgspec.Struct, frozen=True):
    group: str


class OffsetCommitValue(msgspec.Struct, frozen=True):
    offset: int
    metadata: str = ""
    commit_timestamp: int = -1
    leader_epoch: int = -1
    expire_timestamp: int = -1


class MemberMetadata(msgspec.Struct, frozen=True):
    member_id: str
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes
    group_instance_id: str | None = None


class GroupMetadataValue(msgspec.Struct, frozen=True):
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: tuple[MemberMetadata, ...] = ()


# ------------------------------------------------------------------ writing


class _Writer:
    __slots__ = ("out", "flexible")

    def __init__(self, flexible: bool = False) -> None:
        self.out = bytearray()
        self.flexible = flexible

    def i16(self, v: int) -> None:
        self.out += _I16.pack(v)

    def i32(self, v: int) -> None:
        self.out += _I32.pack(v)

    def i64(self, v: int) -> None:
        self.out += _I64.pack(v)

    def string(self, v: str | None) -> None:
        if v is None:
            self.i16(-1)
            return
        data = v.encode("utf-8")
        if len(data) > 32767:
            raise RecordFormatError("string longer than 32767 bytes")
        self.i16(len(data))
        self.out += data

    def bytes_(self, v: bytes) -> None:
        self.i32(len(v))
        self.out += v

    # flexible (compact) forms

    def i8(self, v: int) -> None:
        self.out += struct.pack(">b", v)

    def uvarint(self, v: int) -> None:
        write_uvarint(self.out, v)

    def compact_string(self, v: str | None) -> None:
        if v is None:
            self.uvarint(0)
            return
        data = v.encode("utf-8")
        self.uvarint(len(data) + 1)
        self.out += data

    def uuid(self, v: uuid.UUID) -> None:
        self.out += v.bytes

    def compact_i32s(self, values: Sequence[int]) -> None:
        self.uvarint(len(values) + 1)
        for v in values:
            self.i32(v)

    def tagged(self, fields: Sequence[tuple[int, bytes]]) -> None:
        """The tagged-fields section: (tag, encoded value) pairs in tag order."""
        self.uvarint(len(fields))
        for tag, data in fields:
            self.uvarint(tag)
            self.uvarint(len(data))
            self.out += data


def encode_offset_commit_key(key: OffsetCommitKey) -> bytes:
    w = _Writer()
    w.i16(CoordinatorRecordType.OFFSET_COMMIT)
    w.string(key.group)
    w.string(key.topic)
    w.i32(key.partition)
    return bytes(w.out)


def encode_group_metadata_key(key: GroupMetadataKey) -> bytes:
    w = _Writer()
    w.i16(CoordinatorRecordType.GROUP_METADATA)
    w.string(key.group)
    return bytes(w.out)


def encode_offset_commit_value(value: OffsetCommitValue) -> bytes:
    """v1 when an expire timestamp is set (the only version that has one), else v3, as Kafka writes."""
    w = _Writer()
    if value.expire_timestamp >= 0:
        w.i16(OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRE)
        w.i64(value.offset)
        w.string(value.metadata)
        w.i64(value.commit_timestamp)
        w.i64(value.expire_timestamp)
    else:
        w.i16(OFFSET_COMMIT_VALUE_VERSION)
        w.i64(value.offset)
        w.i32(value.leader_epoch)
        w.string(value.metadata)
        w.i64(value.commit_timestamp)
    return bytes(w.out)


def encode_group_metadata_value(value: GroupMetadataValue) -> bytes:
    w = _Writer()
    w.i16(GROUP_METADATA_VALUE_VERSION)
    w.string(value.protocol_type)
    w.i32(value.generation)
    w.string(value.protocol)
    w.string(value.leader)
    w.i64(value.current_state_timestamp)
    w.i32(len(value.members))
    for m in value.members:
        w.string(m.member_id)
        w.string(m.group_instance_id)
        w.string(m.client_id)
        w.string(m.client_host)
        w.i32(m.rebalance_timeout)
        w.i32(m.session_timeout)
        w.bytes_(m.subscription)
        w.bytes_(m.assignment)
    return bytes(w.out)


# ------------------------------------------------------------------ reading


class _Reader:
    __slots__ = ("data", "pos", "flexible")

    def __init__(self, data: bytes, pos: int = 0, flexible: bool = False) -> None:
        self.data = data
        self.pos = pos
        self.flexible = flexible

    def _take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise RecordFormatError("truncated coordinator record")
        chunk = self.data[self.pos:end]
        self.pos = end
        return chunk

    def i16(self) -> int:
        value: int = _I16.unpack(self._take(2))[0]
        return value

    def i32(self) -> int:
        value: int = _I32.unpack(self._take(4))[0]
        return value

    def i64(self) -> int:
        value: int = _I64.unpack(self._take(8))[0]
        return value

    def uvarint(self) -> int:
        try:
            value, self.pos = read_uvarint(self.data, self.pos, len(self.data), 5)
        except CorruptRecordError as exc:
            raise RecordFormatError(str(exc)) from None
        return value

    def nullable_string(self) -> str | None:
        n = self.uvarint() - 1 if self.flexible else self.i16()
        if n < 0:
            return None
        try:
            return bytes(self._take(n)).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RecordFormatError(str(exc)) from None

    def string(self) -> str:
        s = self.nullable_string()
        if s is None:
            raise RecordFormatError("null where a string is required")
        return s

    def bytes_(self) -> bytes:
        n = self.uvarint() - 1 if self.flexible else self.i32()
        if n < 0:
            raise RecordFormatError("null where bytes are required")
        return bytes(self._take(n))

    def array_length(self) -> int:
        n = self.uvarint() - 1 if self.flexible else self.i32()
        if n < 0:
            raise RecordFormatError("null array")
        return n

    def skip_tagged_fields(self) -> None:
        if not self.flexible:
            return
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self._take(self.uvarint())


def decode_key(data: bytes) -> OffsetCommitKey | GroupMetadataKey | None:
    """The key of a `__consumer_offsets` record; None for record types classic groups do not use."""
    r = _Reader(data)
    record_type = r.i16()
    if record_type in (CoordinatorRecordType.LEGACY_OFFSET_COMMIT, CoordinatorRecordType.OFFSET_COMMIT):
        return OffsetCommitKey(r.string(), r.string(), r.i32())
    if record_type == CoordinatorRecordType.GROUP_METADATA:
        return GroupMetadataKey(r.string())
    return None


def decode_offset_commit_value(data: bytes) -> OffsetCommitValue:
    r = _Reader(data)
    version = r.i16()
    if not 0 <= version <= 4:
        raise RecordFormatError(f"unknown OffsetCommitValue version {version}")
    r.flexible = version >= 4
    offset = r.i64()
    leader_epoch = r.i32() if version >= 3 else -1
    metadata = r.string()
    commit_timestamp = r.i64()
    expire_timestamp = r.i64() if version == 1 else -1
    r.skip_tagged_fields()
    return OffsetCommitValue(offset, metadata, commit_timestamp, leader_epoch, expire_timestamp)


def decode_group_metadata_value(data: bytes) -> GroupMetadataValue:
    r = _Reader(data)
    version = r.i16()
    if not 0 <= version <= 4:
        raise RecordFormatError(f"unknown GroupMetadataValue version {version}")
    r.flexible = version >= 4
    protocol_type = r.string()
    generation = r.i32()
    protocol = r.nullable_string()
    leader = r.nullable_string()
    current_state_timestamp = r.i64() if version >= 2 else -1
    members = []
    for _ in range(r.array_length()):
        member_id = r.string()
        instance_id = r.nullable_string() if version >= 3 else None
        client_id = r.string()
        client_host = r.string()
        rebalance_timeout = r.i32() if version >= 1 else -1
        session_timeout = r.i32()
        subscription = r.bytes_()
        assignment = r.bytes_()
        r.skip_tagged_fields()
        if rebalance_timeout < 0:
            rebalance_timeout = session_timeout  # v0 had one timeout for both
        members.append(MemberMetadata(member_id, client_id, client_host, rebalance_timeout, session_timeout,
                                      subscription, assignment, instance_id))
    r.skip_tagged_fields()
    return GroupMetadataValue(protocol_type, generation, protocol, leader, current_state_timestamp, tuple(members))


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
    w = _Writer()
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
    w = _Writer(flexible=True)
    w.i16(0)
    w.i32(epoch)
    w.tagged([(0, _i64(tag0_i64))] if tag0_i64 else [])
    return bytes(w.out)


def encode_consumer_group_metadata_value(value: ConsumerGroupMetadataValue) -> bytes:
    return _epoch_value(value.epoch, value.metadata_hash)


def encode_member_metadata_value(value: ConsumerGroupMemberMetadataValue) -> bytes:
    w = _Writer(flexible=True)
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
    classic = _Writer(flexible=True)
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


def _write_topic_assignments(w: _Writer, topics: Sequence[TopicAssignment], *, with_epochs: bool) -> None:
    w.uvarint(len(topics) + 1)
    for t in topics:
        w.uuid(t.topic_id)
        w.compact_i32s(t.partitions)
        if with_epochs and t.assignment_epochs is not None:
            epochs = _Writer()
            epochs.compact_i32s(t.assignment_epochs)
            w.tagged([(0, bytes(epochs.out))])
        else:
            w.tagged([])


def encode_target_assignment_member_value(value: TargetAssignmentMemberValue) -> bytes:
    w = _Writer(flexible=True)
    w.i16(0)
    _write_topic_assignments(w, value.topic_partitions, with_epochs=False)
    w.tagged([])
    return bytes(w.out)


def encode_current_member_assignment_value(value: CurrentMemberAssignmentValue) -> bytes:
    w = _Writer(flexible=True)
    w.i16(0)
    w.i32(value.member_epoch)
    w.i32(value.previous_member_epoch)
    w.i8(value.state)
    _write_topic_assignments(w, value.assigned_partitions, with_epochs=True)
    _write_topic_assignments(w, value.partitions_pending_revocation, with_epochs=True)
    w.tagged([])
    return bytes(w.out)


def encode_regular_expression_value(value: RegularExpressionValue) -> bytes:
    w = _Writer(flexible=True)
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
    r = _Reader(data)
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


def _flexible_value(data: bytes, name: str) -> _Reader:
    r = _Reader(data, flexible=True)
    version = r.i16()
    if version != 0:
        raise RecordFormatError(f"unknown {name} version {version}")
    return r


def _tagged(r: _Reader) -> dict[int, bytes]:
    out: dict[int, bytes] = {}
    for _ in range(r.uvarint()):
        tag = r.uvarint()
        out[tag] = bytes(r._take(r.uvarint()))
    return out


def _compact_i32s(r: _Reader) -> tuple[int, ...]:
    return tuple(r.i32() for _ in range(r.array_length()))


def _read_topic_assignments(r: _Reader) -> tuple[TopicAssignment, ...]:
    out = []
    for _ in range(r.array_length()):
        topic_id = uuid.UUID(bytes=bytes(r._take(16)))
        partitions = _compact_i32s(r)
        tagged = _tagged(r)
        epochs = _compact_i32s(_Reader(tagged[0], flexible=True)) if 0 in tagged else None
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
        c = _Reader(tagged[0], 1, flexible=True)
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
    w = _Writer(flexible=True)
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
    w = _Writer(flexible=True)
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
    w = _Writer(flexible=True)
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


def _write_share_topics(w: _Writer, topics: Sequence[ShareTopicPartitions], *, with_partitions: bool) -> None:
    w.uvarint(len(topics) + 1)
    for t in topics:
        w.uuid(t.topic_id)
        w.compact_string(t.topic_name)
        if with_partitions:
            w.compact_i32s(t.partitions)
        w.tagged([])


def _read_share_topics(r: _Reader, *, with_partitions: bool) -> tuple[ShareTopicPartitions, ...]:
    out = []
    for _ in range(r.array_length()):
        topic_id = uuid.UUID(bytes=bytes(r._take(16)))
        name = r.string()
        partitions = _compact_i32s(r) if with_partitions else ()
        r.skip_tagged_fields()
        out.append(ShareTopicPartitions(topic_id, name, partitions))
    return tuple(out)


def encode_share_state_partition_metadata_value(value: ShareGroupStatePartitionMetadataValue) -> bytes:
    w = _Writer(flexible=True)
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
