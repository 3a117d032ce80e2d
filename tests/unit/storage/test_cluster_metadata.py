"""storage.cluster_metadata: the bootstrap snapshot `asyncbroker migrate` writes reads back as
the image it describes, laid out as Kafka's format tool lays one out."""

from __future__ import annotations

import uuid
from pathlib import Path

from storage.cluster_metadata import (
    BOOTSTRAP_SNAPSHOT_FILE,
    CLUSTER_METADATA_DIR,
    ClusterMetadataImage,
    read_cluster_metadata,
    write_bootstrap_snapshot,
)
from wire.metadata_records import (
    BROKER_RESOURCE,
    TOPIC_RESOURCE,
    ConfigRecord,
    FeatureLevelRecord,
    PartitionRecord,
    TopicRecord,
    encode_metadata_record,
)
from wire.records import ControlRecordType, decode_records, iter_batch_headers, parse_control_record, validate_batch

TOPIC_ID = uuid.UUID("2f891f52-d769-4175-9413-3d3bd0eb4863")


def test_bootstrap_snapshot_reads_back(tmp_path: Path) -> None:
    records = [FeatureLevelRecord("metadata.version", 33), TopicRecord("t", TOPIC_ID),
               PartitionRecord(0, TOPIC_ID, [1], [1], 1, 0, 0, [uuid.UUID(int=9)]),
               ConfigRecord(TOPIC_RESOURCE, "t", "cleanup.policy", "compact"),
               ConfigRecord(BROKER_RESOURCE, "", "log.retention.ms", "5")]
    path = write_bootstrap_snapshot(tmp_path, [encode_metadata_record(r) for r in records], 1_700_000_000_000)
    assert path == tmp_path / CLUSTER_METADATA_DIR / BOOTSTRAP_SNAPSHOT_FILE
    assert path.name == "00000000000000000000-0000000000.checkpoint"
    assert read_cluster_metadata(tmp_path) == ClusterMetadataImage(
        {"t": TOPIC_ID}, {"t": {"cleanup.policy": "compact"}}, {"": {"log.retention.ms": "5"}})


def test_bootstrap_snapshot_layout(tmp_path: Path) -> None:
    """A header control batch at offset 0, the records from offset 1 (a batch per 1000), a
    footer control batch; every batch's CRC holds and the leader epoch is 0."""
    values = [encode_metadata_record(TopicRecord(f"t{i}", uuid.UUID(int=i + 1))) for i in range(1500)]
    data = write_bootstrap_snapshot(tmp_path, values, 5).read_bytes()
    batches = list(iter_batch_headers(data, strict=True))
    assert [(b.header.base_offset, b.header.is_control) for b in batches] == [
        (0, True), (1, False), (1001, False), (1501, True)]
    for b in batches:
        validate_batch(data, b.position)
        assert b.header.partition_leader_epoch == 0
    kinds = [parse_control_record(r.key, r.value).type for b in (batches[0], batches[-1])
             for r in decode_records(data, b.position)]
    assert kinds == [ControlRecordType.SNAPSHOT_HEADER, ControlRecordType.SNAPSHOT_FOOTER]
    assert [r.offset for b in batches[1:3] for r in decode_records(data, b.position)] == list(range(1, 1501))
