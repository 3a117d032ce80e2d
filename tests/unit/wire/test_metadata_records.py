"""wire.metadata_records over frames laid out as Kafka 4.4 writes them (bytes copied from a
metadata log Kafka wrote: tests/logs/test_from_kafka.py reads whole ones)."""

from __future__ import annotations

import uuid

import pytest

from wire.errors import CorruptRecordError
from wire.metadata_records import (
    AccessControlEntryRecord,
    ClientQuotaRecord,
    ConfigRecord,
    FeatureLevelRecord,
    OtherMetadataRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RemoveTopicRecord,
    TopicRecord,
    UserScramCredentialRecord,
    decode_metadata_record,
    encode_metadata_record,
)

TOPIC_ID = uuid.UUID("2f891f52-d769-4175-9413-3d3bd0eb4863")


def test_topic_record() -> None:
    frame = bytes.fromhex("010200") + b"\ncompacted" + TOPIC_ID.bytes + b"\x00"
    assert decode_metadata_record(frame) == TopicRecord("compacted", TOPIC_ID)


def test_config_records_set_and_remove() -> None:
    assert decode_metadata_record(bytes.fromhex("010400") + b"\x02\ncompacted\x0fcleanup.policy\x08compact\x00") == \
        ConfigRecord(2, "compacted", "cleanup.policy", "compact")
    assert decode_metadata_record(bytes.fromhex("010400") + b"\x04\x01\x14min.insync.replicas\x021\x00") == \
        ConfigRecord(4, "", "min.insync.replicas", "1")
    assert decode_metadata_record(bytes.fromhex("010400") + b"\x02\x02t\x0bsegment.ms\x00\x00") == \
        ConfigRecord(2, "t", "segment.ms", None)


def test_remove_topic_and_others() -> None:
    assert decode_metadata_record(bytes.fromhex("010900") + TOPIC_ID.bytes + b"\x00") == RemoveTopicRecord(TOPIC_ID)
    assert decode_metadata_record(bytes.fromhex("011400") + b"\x00") == OtherMetadataRecord(20, 0)


@pytest.mark.parametrize("frame", [b"", bytes.fromhex("02"), bytes.fromhex("010200") + b"\ncomp",
                                   bytes.fromhex("010900") + b"\x01\x02"])
def test_what_does_not_parse(frame: bytes) -> None:
    with pytest.raises(CorruptRecordError):
        decode_metadata_record(frame)


# -- encoding: the same frames back, as Kafka writes them ---------------------------------------


def test_encoding_writes_the_frames_kafka_writes() -> None:
    assert encode_metadata_record(TopicRecord("compacted", TOPIC_ID)) == \
        bytes.fromhex("010200") + b"\ncompacted" + TOPIC_ID.bytes + b"\x00"
    assert encode_metadata_record(ConfigRecord(2, "compacted", "cleanup.policy", "compact")) == \
        bytes.fromhex("010400") + b"\x02\ncompacted\x0fcleanup.policy\x08compact\x00"
    assert encode_metadata_record(ConfigRecord(4, "", "min.insync.replicas", "1")) == \
        bytes.fromhex("010400") + b"\x04\x01\x14min.insync.replicas\x021\x00"
    # The format tool's first bootstrap record (23 bytes in DumpLogSegments' dump of it).
    feature = encode_metadata_record(FeatureLevelRecord("metadata.version", 33))
    assert feature == bytes.fromhex("010c00") + b"\x11metadata.version" + bytes.fromhex("0021") + b"\x00"
    assert len(feature) == 23


def test_partition_and_producer_ids_records_layout() -> None:
    directory = uuid.UUID(int=7)
    frame = encode_metadata_record(PartitionRecord(3, TOPIC_ID, [1], [1], 1, 5, 0, [directory]))
    assert frame == (bytes.fromhex("010301") + (3).to_bytes(4, "big") + TOPIC_ID.bytes
                     + b"\x02" + (1).to_bytes(4, "big") + b"\x02" + (1).to_bytes(4, "big") + b"\x01\x01"
                     + (1).to_bytes(4, "big") + (5).to_bytes(4, "big") + (0).to_bytes(4, "big")
                     + b"\x02" + directory.bytes + b"\x00")
    assert decode_metadata_record(frame) == OtherMetadataRecord(3, 1)
    frame = encode_metadata_record(ProducerIdsRecord(1, -1, 1000))
    assert frame == bytes.fromhex("010f00") + (1).to_bytes(4, "big") + (-1).to_bytes(8, "big", signed=True) \
        + (1000).to_bytes(8, "big") + b"\x00"


def test_security_records_round_trip() -> None:
    """The ACL, SCRAM and client-quota records `asyncbroker migrate` writes read back as written
    (their layouts are Kafka 4.4's generated classes': v0, flexible); Kafka reading them is
    tests/logs/test_security_state_moves.py."""
    acl = AccessControlEntryRecord(uuid.UUID(int=7), 2, "orders", 3, "User:alice", "*", 3, 3)
    scram = UserScramCredentialRecord("alice", 1, b"salt", b"s" * 32, b"k" * 32, 4096)
    quota = ClientQuotaRecord([("client-id", None), ("user", "alice")], "producer_byte_rate", 1024.0, False)
    for record in (acl, scram, quota):
        assert decode_metadata_record(encode_metadata_record(record)) == record
    # Frame 1, api key 18, version 0, then the id.
    assert encode_metadata_record(acl)[:3] == bytes([1, 18, 0]) and encode_metadata_record(acl)[3:19] == acl.id.bytes
    removed = ClientQuotaRecord([("user", None)], "request_percentage", 0.0, True)
    assert decode_metadata_record(encode_metadata_record(removed)) == removed
