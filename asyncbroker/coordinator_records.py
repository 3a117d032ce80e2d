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

The consumer protocol's (KIP-848) and share groups' (KIP-932) record formats are in
consumer_group_records.py, loaded with the first such group or record: a broker whose
clients use classic groups never needs them.
"""

from __future__ import annotations

import enum
import struct
import uuid
from collections.abc import Sequence

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


class RecordWriter:
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
    w = RecordWriter()
    w.i16(CoordinatorRecordType.OFFSET_COMMIT)
    w.string(key.group)
    w.string(key.topic)
    w.i32(key.partition)
    return bytes(w.out)


def encode_group_metadata_key(key: GroupMetadataKey) -> bytes:
    w = RecordWriter()
    w.i16(CoordinatorRecordType.GROUP_METADATA)
    w.string(key.group)
    return bytes(w.out)


def encode_offset_commit_value(value: OffsetCommitValue) -> bytes:
    """v1 when an expire timestamp is set (the only version that has one), else v3, as Kafka writes."""
    w = RecordWriter()
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
    w = RecordWriter()
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


class RecordReader:
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
    r = RecordReader(data)
    record_type = r.i16()
    if record_type in (CoordinatorRecordType.LEGACY_OFFSET_COMMIT, CoordinatorRecordType.OFFSET_COMMIT):
        return OffsetCommitKey(r.string(), r.string(), r.i32())
    if record_type == CoordinatorRecordType.GROUP_METADATA:
        return GroupMetadataKey(r.string())
    return None


def decode_offset_commit_value(data: bytes) -> OffsetCommitValue:
    r = RecordReader(data)
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
    r = RecordReader(data)
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
