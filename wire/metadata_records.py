"""KRaft metadata records: the values in Kafka's `__cluster_metadata` log and its snapshots.

Each record value is a frame (Kafka's MetadataRecordSerde):

    frame version   uvarint (1)
    api key         uvarint   the record type: 2 TopicRecord, 4 ConfigRecord, 9 RemoveTopicRecord, ...
    version         uvarint   the record type's version
    body            the record in Kafka's message encoding, flexible (compact strings,
                    tagged fields at the end)

Only the records that say which topics exist and how they are configured are decoded;
the others come back as `OtherMetadataRecord`. Sans-io: bytes in, structs out.
"""

from __future__ import annotations

import uuid

import msgspec

from wire.errors import CorruptRecordError
from wire.records import read_uvarint

__all__ = ["TOPIC_RECORD", "CONFIG_RECORD", "REMOVE_TOPIC_RECORD", "TopicRecord", "ConfigRecord",
           "RemoveTopicRecord", "OtherMetadataRecord", "MetadataRecord", "decode_metadata_record"]

TOPIC_RECORD, CONFIG_RECORD, REMOVE_TOPIC_RECORD = 2, 4, 9
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
