"""`__remote_log_metadata` values byte for byte as Kafka 4.4 writes them.

The hex strings were printed by Kafka 4.4's own RemoteLogMetadataSerde (kafka-storage 4.4.0)
for the same metadata, built in Java with these values."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from storage.partition_metadata import uuid_from_base64
from wire.errors import CorruptRecordError
from wire.remote_log_metadata_records import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
    RemotePartitionDeleteMetadata,
    RemotePartitionDeleteState,
    TopicIdPartition,
    decode_remote_log_metadata,
    encode_remote_log_metadata,
)

TP = TopicIdPartition(uuid_from_base64("fKm6w0ZKQpuHULjM0ffz3w"), "tiered", 3)
SEGMENT = RemoteLogSegmentId(TP, uuid_from_base64("AAECAwQFBgcICQoLDA0ODw"))
# Printed by Kafka 4.4 (one line per record).
KAFKA_WROTE = {
    "segment": (
        RemoteLogSegmentMetadata(SEGMENT, 100, 199, 1, 1700000000123, 1700000000456, ((0, 100), (2, 150)), 1048000,
                                 RemoteLogSegmentState.COPY_SEGMENT_STARTED),
        "010000077469657265647ca9bac3464a429b8750b8ccd1f7f3df0000000300000102030405060708090a0b0c0d0e0f0000000000"
        "0000006400000000000000c7000000010000018bcfe5687b0000018bcfe569c80300000000000000000000006400000000020000"
        "00000000009600000ffdc0000000"),
    "segment with custom metadata and an empty transaction index": (
        RemoteLogSegmentMetadata(SEGMENT, 100, 199, 1, 1700000000123, 1700000000456, ((0, 100), (2, 150)), 1048000,
                                 RemoteLogSegmentState.COPY_SEGMENT_STARTED, b"\x01\x02\x03", True),
        "010000077469657265647ca9bac3464a429b8750b8ccd1f7f3df0000000300000102030405060708090a0b0c0d0e0f0000000000"
        "0000006400000000000000c7000000010000018bcfe5687b0000018bcfe569c80300000000000000000000006400000000020000"
        "00000000009600000ffdc0040102030001000101"),
    "update": (
        RemoteLogSegmentMetadataUpdate(SEGMENT, 1, 1700000000789, RemoteLogSegmentState.COPY_SEGMENT_FINISHED),
        "010100077469657265647ca9bac3464a429b8750b8ccd1f7f3df0000000300000102030405060708090a0b0c0d0e0f0000000001"
        "0000018bcfe56b15000100"),
    "partition delete": (
        RemotePartitionDeleteMetadata(TP, 1, 1700000000999, RemotePartitionDeleteState.DELETE_PARTITION_MARKED),
        "010200077469657265647ca9bac3464a429b8750b8ccd1f7f3df0000000300000000010000018bcfe56be70000"),
}


@pytest.mark.parametrize("name", sorted(KAFKA_WROTE))
def test_encodes_and_decodes_what_kafka_writes(name: str) -> None:
    record, kafka_hex = KAFKA_WROTE[name]
    assert encode_remote_log_metadata(record).hex() == kafka_hex
    assert decode_remote_log_metadata(bytes.fromhex(kafka_hex)) == record


@pytest.mark.parametrize("data", [b"", b"\x02\x00\x00", b"\x01\x09\x00", b"\x01\x00\x01",
                                  bytes.fromhex("010100077469657265647ca9bac3464a429b8750b8ccd1f7f3df00000003000001"),
                                  bytes.fromhex(KAFKA_WROTE["update"][1][:-4] + "0900")])
def test_bad_values_raise_corrupt_record(data: bytes) -> None:
    with pytest.raises(CorruptRecordError):
        decode_remote_log_metadata(data)


KAFKA_CAPTURE = json.loads((Path(__file__).parent / "kafka-4.4.0-remote-log-metadata.json").read_text())


@pytest.mark.parametrize("example", KAFKA_CAPTURE["examples"], ids=lambda e: e["kind"])
def test_values_kafka_wrote_to_its_topic_decode_and_encode_back(example: dict[str, object]) -> None:
    """Values read from `__remote_log_metadata` of a Kafka 4.4 broker with tiered storage
    (tests/jvm/capture_remote_log_metadata.py); Kafka's own rendering of each is kept beside it."""
    value = bytes.fromhex(str(example["value_hex"]))
    record = decode_remote_log_metadata(value)
    assert encode_remote_log_metadata(record) == value
    kafka = str(example["kafka"])
    assert f"state={record.state.name}" in kafka
    if isinstance(record, RemoteLogSegmentMetadata):
        assert f"startOffset={record.start_offset}, endOffset={record.end_offset}" in kafka
        epochs = ", ".join(f"{e}={o}" for e, o in record.segment_leader_epochs)
        assert f"segmentLeaderEpochs={{{epochs}}}" in kafka
        assert f"txnIdxEmpty={str(record.txn_index_empty).lower()}" in kafka


def test_kafka_put_each_partition_where_our_partitioner_does() -> None:
    from asyncbroker.remote_log_metadata_manager import metadata_partition

    partitions = KAFKA_CAPTURE["metadata_topic"]["partitions"]
    for assignment in KAFKA_CAPTURE["assignments"]:
        topic_id, _, topic_partition = assignment["topic_id_partition"].partition(":")
        topic, _, partition = topic_partition.rpartition("-")
        tp = TopicIdPartition(uuid_from_base64(topic_id), topic, int(partition))
        assert metadata_partition(tp, partitions) == assignment["metadata_partition"]
