"""Checkpoint and metadata files: Kafka's text formats, atomic replacement, corruption."""
from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from storage.errors import KafkaStorageError
from storage.leader_epoch_cache import LeaderEpochCheckpointFile, LeaderEpochFileCache
from storage.meta_properties import MetaProperties, read_meta_properties, write_meta_properties
from storage.offset_checkpoint import CorruptCheckpointError, OffsetCheckpointFile
from storage.partition_metadata import PartitionMetadataFile, uuid_from_base64, uuid_to_base64
from storage.topic_partition import TopicPartition


def test_offset_checkpoint_format_and_roundtrip(tmp_path: Path) -> None:
    cp = OffsetCheckpointFile(tmp_path / "recovery-point-offset-checkpoint")
    assert cp.read() == {}
    offsets = {TopicPartition("orders", 0): 105823, TopicPartition("orders", 1): 105640}
    cp.write(offsets)
    assert cp.path.read_text() == "0\n2\norders 0 105823\norders 1 105640\n"
    assert cp.read() == offsets
    assert not list(tmp_path.glob("*.tmp"))
    cp.write({})
    assert cp.path.read_text() == "0\n0\n"


@pytest.mark.parametrize("text", ["1\n0\n", "0\n2\nt 0 1\n", "0\n1\nt x 1\n", "", "0\n1\nt 0\n"])
def test_offset_checkpoint_corruption(tmp_path: Path, text: str) -> None:
    path = tmp_path / "cp"
    path.write_text(text)
    with pytest.raises(CorruptCheckpointError):
        OffsetCheckpointFile(path).read()


def test_leader_epoch_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    cache = LeaderEpochFileCache(LeaderEpochCheckpointFile(path))
    cache.assign(0, 0)
    cache.assign(0, 5)  # same epoch: ignored
    cache.assign(3, 10)
    cache.assign(2, 20)  # lower epoch: ignored
    cache.assign(5, 30)
    assert path.read_text() == "0\n3\n0 0\n3 10\n5 30\n"
    assert cache.end_offset_for(3, 100) == (3, 30)
    assert cache.end_offset_for(5, 100) == (5, 100)
    cache.truncate_from_end(25)
    assert cache.entries() == [(0, 0), (3, 10)]
    cache.truncate_from_start(12)
    assert cache.entries() == [(3, 12)]
    assert LeaderEpochFileCache(LeaderEpochCheckpointFile(path)).entries() == [(3, 12)]


def test_partition_metadata(tmp_path: Path) -> None:
    tid = uuid.uuid4()
    f = PartitionMetadataFile(tmp_path)
    assert f.read() is None
    f.write(tid)
    text = f.path.read_text()
    assert text.startswith("version: 0\ntopic_id: ") and "=" not in text
    assert f.read() == tid
    assert uuid_from_base64(uuid_to_base64(tid)) == tid
    assert len(uuid_to_base64(tid)) == 22


def test_meta_properties(tmp_path: Path) -> None:
    meta = MetaProperties(1, "MkU3OEVBNTcwNTJENDM2Qg", 3, "AAAAAAAAAAAAAAAAAAAAAA")
    write_meta_properties(tmp_path, meta)
    assert read_meta_properties(tmp_path) == meta
    (tmp_path / "meta.properties").write_text("#\nversion=1\ncluster.id=abc\nnode.id=2\n")
    assert read_meta_properties(tmp_path) == MetaProperties(1, "abc", 2, None)
    (tmp_path / "meta.properties").write_text("node.id=2\n")
    with pytest.raises(KafkaStorageError):
        read_meta_properties(tmp_path)
