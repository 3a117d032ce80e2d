"""KRaft metadata records: the values in Kafka's `__cluster_metadata` log and its snapshots.

Each record value is a frame (Kafka's MetadataRecordSerde):

    frame version   uvarint (1)
    api key         uvarint   the record type: 2 TopicRecord, 4 ConfigRecord, 9 RemoveTopicRecord, ...
    version         uvarint   the record type's version
    body            the record in Kafka's message encoding, flexible (compact strings,
                    tagged fields at the end)

Only the records that say which topics exist and how they are configured, and the security
state (ACLs, SCRAM credentials, client quotas), are decoded; the others come back as
`OtherMetadataRecord`. Encoding covers what a new node's bootstrap needs to start with our
topics (`encode_metadata_record`): feature levels, topics, their partitions, configs, the
next producer id, and the ACLs, SCRAM users and client quotas. Sans-io: bytes in, structs out, and back.
"""

from __future__ import annotations

import struct
import uuid

import msgspec

from wire.errors import CorruptRecordError
from wire.api_message_frame import FRAME_VERSION, ApiMessageReader, ApiMessageWriter

__all__ = ["TOPIC_RECORD", "CONFIG_RECORD", "REMOVE_TOPIC_RECORD", "TopicRecord", "ConfigRecord",
           "RemoveTopicRecord", "OtherMetadataRecord", "MetadataRecord", "decode_metadata_record",
           "FeatureLevelRecord", "PartitionRecord", "ProducerIdsRecord", "encode_metadata_record",
           "encode_snapshot_header", "encode_snapshot_footer", "AccessControlEntryRecord",
           "RemoveAccessControlEntryRecord", "UserScramCredentialRecord", "RemoveUserScramCredentialRecord",
           "ClientQuotaRecord"]

TOPIC_RECORD, PARTITION_RECORD, CONFIG_RECORD, REMOVE_TOPIC_RECORD = 2, 3, 4, 9
FEATURE_LEVEL_RECORD, PRODUCER_IDS_RECORD = 12, 15
USER_SCRAM_CREDENTIAL_RECORD, CLIENT_QUOTA_RECORD = 11, 14
ACCESS_CONTROL_ENTRY_RECORD, REMOVE_ACCESS_CONTROL_ENTRY_RECORD, REMOVE_USER_SCRAM_CREDENTIAL_RECORD = 18, 19, 22
# ConfigRecord.ResourceType: ConfigResource.Type's ids.
TOPIC_RESOURCE, BROKER_RESOURCE, GROUP_RESOURCE = 2, 4, 32


class TopicRecord(msgspec.Struct, frozen=True):
    name: str
    topic_id: uuid.UUID


class ConfigRecord(msgspec.Struct, frozen=True):
    resource_type: int
    resource_name: str
    name: str
    value: str | None  # None: the key was removed


class RemoveTopicRecord(msgspec.Struct, frozen=True):
    topic_id: uuid.UUID


class FeatureLevelRecord(msgspec.Struct, frozen=True):
    name: str
    feature_level: int


class PartitionRecord(msgspec.Struct, frozen=True):
    """A partition's assignment (version 1: with the log directory of each replica)."""

    partition_id: int
    topic_id: uuid.UUID
    replicas: list[int]
    isr: list[int]
    leader: int
    leader_epoch: int
    partition_epoch: int
    directories: list[uuid.UUID]


class ProducerIdsRecord(msgspec.Struct, frozen=True):
    """The controller hands out producer ids from `next_producer_id` on."""

    broker_id: int
    broker_epoch: int
    next_producer_id: int


class AccessControlEntryRecord(msgspec.Struct, frozen=True):
    """One ACL (the enums are the protocol's ids)."""

    id: uuid.UUID
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


class RemoveAccessControlEntryRecord(msgspec.Struct, frozen=True):
    id: uuid.UUID


class UserScramCredentialRecord(msgspec.Struct, frozen=True):
    """One user's credential for one mechanism (1 SCRAM-SHA-256, 2 SCRAM-SHA-512)."""

    name: str
    mechanism: int
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


class RemoveUserScramCredentialRecord(msgspec.Struct, frozen=True):
    name: str
    mechanism: int


class ClientQuotaRecord(msgspec.Struct, frozen=True):
    """One key of a quota entity set (or removed): entity parts are (type, name or None)."""

    entity: list[tuple[str, str | None]]
    key: str
    value: float
    remove: bool


class OtherMetadataRecord(msgspec.Struct, frozen=True):
    api_key: int
    version: int


MetadataRecord = (TopicRecord | ConfigRecord | RemoveTopicRecord | AccessControlEntryRecord
                  | RemoveAccessControlEntryRecord | UserScramCredentialRecord | RemoveUserScramCredentialRecord
                  | ClientQuotaRecord | OtherMetadataRecord)


def decode_metadata_record(value: bytes) -> MetadataRecord:
    """One record value of the metadata log; CorruptRecordError when it does not parse."""
    r = ApiMessageReader(value)
    frame = r.uvarint()
    if frame != FRAME_VERSION:
        raise CorruptRecordError(f"unknown metadata record frame version {frame}")
    api_key, version = r.uvarint(), r.uvarint()
    # Each record type read here has one layout in every version Kafka 4.4 writes (their later
    # versions only add tagged fields, which follow the body and are not needed).
    if api_key == TOPIC_RECORD:
        return TopicRecord(r.string(), r.uuid())
    if api_key == CONFIG_RECORD:
        return ConfigRecord(r.int8(), r.string(), r.string(), r.compact_string())
    if api_key == REMOVE_TOPIC_RECORD:
        return RemoveTopicRecord(r.uuid())
    if api_key == ACCESS_CONTROL_ENTRY_RECORD:
        return AccessControlEntryRecord(r.uuid(), r.int8(), r.string(), r.int8(), r.string(), r.string(), r.int8(),
                                        r.int8())
    if api_key == REMOVE_ACCESS_CONTROL_ENTRY_RECORD:
        return RemoveAccessControlEntryRecord(r.uuid())
    if api_key == USER_SCRAM_CREDENTIAL_RECORD:
        return UserScramCredentialRecord(r.string(), r.int8(), r.compact_bytes(), r.compact_bytes(),
                                         r.compact_bytes(), r.int32())
    if api_key == REMOVE_USER_SCRAM_CREDENTIAL_RECORD:
        return RemoveUserScramCredentialRecord(r.string(), r.int8())
    if api_key == CLIENT_QUOTA_RECORD:
        entity = []
        for _ in range(r.uvarint() - 1):
            entity.append((r.string(), r.compact_string()))
            r.skip_tagged_fields()
        key = r.string()
        quota: float = struct.unpack(">d", r.take(8))[0]
        return ClientQuotaRecord(entity, key, quota, r.take(1) != b"\x00")
    return OtherMetadataRecord(api_key, version)


def encode_metadata_record(record: TopicRecord | PartitionRecord | ConfigRecord | FeatureLevelRecord
                           | ProducerIdsRecord | AccessControlEntryRecord | UserScramCredentialRecord
                           | ClientQuotaRecord) -> bytes:
    """The framed value of one metadata record, as Kafka's MetadataRecordSerde writes it."""
    w = ApiMessageWriter().uvarint(FRAME_VERSION)
    if isinstance(record, TopicRecord):
        w.uvarint(TOPIC_RECORD).uvarint(0).compact_string(record.name).uuid(record.topic_id)
    elif isinstance(record, PartitionRecord):
        w.uvarint(PARTITION_RECORD).uvarint(1).signed(record.partition_id, 4).uuid(record.topic_id)
        w.int32_array(record.replicas).int32_array(record.isr).int32_array([]).int32_array([])
        w.signed(record.leader, 4).signed(record.leader_epoch, 4).signed(record.partition_epoch, 4)
        w.uvarint(len(record.directories) + 1)
        for d in record.directories:
            w.uuid(d)
    elif isinstance(record, ConfigRecord):
        w.uvarint(CONFIG_RECORD).uvarint(0).signed(record.resource_type, 1)
        w.compact_string(record.resource_name).compact_string(record.name).compact_string(record.value)
    elif isinstance(record, FeatureLevelRecord):
        w.uvarint(FEATURE_LEVEL_RECORD).uvarint(0).compact_string(record.name).signed(record.feature_level, 2)
    elif isinstance(record, AccessControlEntryRecord):
        w.uvarint(ACCESS_CONTROL_ENTRY_RECORD).uvarint(0).uuid(record.id).signed(record.resource_type, 1)
        w.compact_string(record.resource_name).signed(record.pattern_type, 1).compact_string(record.principal)
        w.compact_string(record.host).signed(record.operation, 1).signed(record.permission_type, 1)
    elif isinstance(record, UserScramCredentialRecord):
        w.uvarint(USER_SCRAM_CREDENTIAL_RECORD).uvarint(0).compact_string(record.name).signed(record.mechanism, 1)
        w.compact_bytes(record.salt).compact_bytes(record.stored_key).compact_bytes(record.server_key)
        w.signed(record.iterations, 4)
    elif isinstance(record, ClientQuotaRecord):
        w.uvarint(CLIENT_QUOTA_RECORD).uvarint(0).uvarint(len(record.entity) + 1)
        for entity_type, name in record.entity:
            w.compact_string(entity_type).compact_string(name).uvarint(0)
        w.compact_string(record.key).raw(struct.pack(">d", record.value)).raw(b"\x01" if record.remove else b"\x00")
    else:
        w.uvarint(PRODUCER_IDS_RECORD).uvarint(0).signed(record.broker_id, 4).signed(record.broker_epoch, 8)
        w.signed(record.next_producer_id, 8)
    return w.no_tagged_fields()


def encode_snapshot_header(last_contained_log_timestamp: int) -> bytes:
    """SnapshotHeaderRecord (version 0): the value of a snapshot's first control record."""
    return ApiMessageWriter().signed(0, 2).signed(last_contained_log_timestamp, 8).no_tagged_fields()


def encode_snapshot_footer() -> bytes:
    """SnapshotFooterRecord (version 0): the value of a snapshot's last control record."""
    return ApiMessageWriter().signed(0, 2).no_tagged_fields()
