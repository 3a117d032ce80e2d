"""KRaft metadata records: the values in Kafka's `__cluster_metadata` log and its snapshots.

Each record value is a frame (Kafka's MetadataRecordSerde):

    frame version   uvarint (1)
    api key         uvarint   the record type: 2 TopicRecord, 4 ConfigRecord, 9 RemoveTopicRecord, ...
    version         uvarint   the record type's version
    body            the record in Kafka's message encoding, flexible (compact strings,
                    tagged fields at the end)

Only the records that say which topics exist and how they are configured are decoded;
the others come back as `OtherMetadataRecord`. Encoding covers what a new node's bootstrap
needs to start with our topics (`encode_metadata_record`): feature levels, topics, their
partitions, configs and the next producer id. Sans-io: bytes in, structs out, and back.
"""

from __future__ import annotations

import uuid

import msgspec

from wire.errors import CorruptRecordError
from wire.records import read_uvarint, write_uvarint

__all__ = ["TOPIC_RECORD", "CONFIG_RECORD", "REMOVE_TOPIC_RECORD", "TopicRecord", "ConfigRecord",
           "RemoveTopicRecord", "OtherMetadataRecord", "MetadataRecord", "decode_metadata_record",
           "FeatureLevelRecord", "PartitionRecord", "ProducerIdsRecord", "encode_metadata_record",
           "encode_snapshot_header", "encode_snapshot_footer"]

TOPIC_RECORD, PARTITION_RECORD, CONFIG_RECORD, REMOVE_TOPIC_RECORD = 2, 3, 4, 9
FEATURE_LEVEL_RECORD, PRODUCER_IDS_RECORD = 12, 15
FRAME_VERSION = 1
# ConfigRecord.ResourceType: ConfigResource.Type's ids.
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4


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


class OtherMetadataRecord(msgspec.Struct, frozen=True):
    api_key: int
    version: int


MetadataRecord = TopicRecord | ConfigRecord | RemoveTopicRecord | OtherMetadataRecord


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def uvarint(self) -> int:
        value, self.pos = read_uvarint(self.data, self.pos, len(self.data), 5)
        return value

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise CorruptRecordError("truncated metadata record")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def int8(self) -> int:
        return int.from_bytes(self.take(1), "big", signed=True)

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=self.take(16))

    def compact_string(self) -> str | None:
        n = self.uvarint()
        return None if n == 0 else self.take(n - 1).decode("utf-8")

    def string(self) -> str:
        s = self.compact_string()
        if s is None:
            raise CorruptRecordError("null where a metadata record needs a string")
        return s


def decode_metadata_record(value: bytes) -> MetadataRecord:
    """One record value of the metadata log; CorruptRecordError when it does not parse."""
    r = _Reader(value)
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
    return OtherMetadataRecord(api_key, version)


class _Writer:
    def __init__(self) -> None:
        self.out = bytearray()

    def uvarint(self, value: int) -> "_Writer":
        write_uvarint(self.out, value)
        return self

    def signed(self, value: int, size: int) -> "_Writer":
        self.out += value.to_bytes(size, "big", signed=True)
        return self

    def uuid(self, value: uuid.UUID) -> "_Writer":
        self.out += value.bytes
        return self

    def compact_string(self, value: str | None) -> "_Writer":
        if value is None:
            return self.uvarint(0)
        data = value.encode("utf-8")
        self.uvarint(len(data) + 1)
        self.out += data
        return self

    def int32_array(self, values: list[int]) -> "_Writer":
        self.uvarint(len(values) + 1)
        for v in values:
            self.signed(v, 4)
        return self

    def no_tagged_fields(self) -> bytes:
        self.uvarint(0)
        return bytes(self.out)


def encode_metadata_record(record: TopicRecord | PartitionRecord | ConfigRecord | FeatureLevelRecord
                           | ProducerIdsRecord) -> bytes:
    """The framed value of one metadata record, as Kafka's MetadataRecordSerde writes it."""
    w = _Writer().uvarint(FRAME_VERSION)
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
    else:
        w.uvarint(PRODUCER_IDS_RECORD).uvarint(0).signed(record.broker_id, 4).signed(record.broker_epoch, 8)
        w.signed(record.next_producer_id, 8)
    return w.no_tagged_fields()


def encode_snapshot_header(last_contained_log_timestamp: int) -> bytes:
    """SnapshotHeaderRecord (version 0): the value of a snapshot's first control record."""
    return _Writer().signed(0, 2).signed(last_contained_log_timestamp, 8).no_tagged_fields()


def encode_snapshot_footer() -> bytes:
    """SnapshotFooterRecord (version 0): the value of a snapshot's last control record."""
    return _Writer().signed(0, 2).no_tagged_fields()
