"""Tiered partitions without Spark or a broker: a crafted log dir whose `__remote_log_metadata`
partition lists remote segments, and a remote directory laid out by LocalTieredStorage.

Which segments are read (COPY_SEGMENT_FINISHED only, of this topic id), the order and the
once-only reading of offsets both remote and local, the log start, a remote tier not given or
wrong, and the broker's settings that name a tier."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

import pytest

from pipeline.kafka_log_source import ReadOptions
from pipeline.log_dir_scan import scan_log_dirs
from pipeline.record_schema import RECORD_SCHEMA
from pipeline.remote_tier import (
    RemoteTierNotGivenError,
    attach_remote_segments,
    redact,
    remote_tier,
    remote_tier_from_settings,
)
from pipeline.segment_reader import read_slice
from pipeline_testlib import data_batch, write_segment
from storage.config_def import ConfigException
from storage.local_tiered_storage import LocalTieredStorage
from storage.offset_checkpoint import LOG_START_OFFSET_CHECKPOINT_FILE, OffsetCheckpointFile
from storage.partition_metadata import PartitionMetadataFile
from storage.remote_storage_manager import LogSegmentData
from storage.topic_partition import TopicPartition
from wire.remote_log_metadata_records import (
    RemoteLogMetadata,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
    TopicIdPartition,
    encode_remote_log_metadata,
)

TOPIC_ID = uuid.UUID("6f1c6a53-26a4-4d6e-9a3b-8c2f7e0d5b11")
OLD_TOPIC_ID = uuid.UUID("0b0b0b0b-26a4-4d6e-9a3b-8c2f7e0d5b11")  # "t" deleted and made again
S = RemoteLogSegmentState


def _arrow_schema():  # noqa: ANN202
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(RECORD_SCHEMA, timezone="UTC")


def _offsets(slices) -> list[int]:  # noqa: ANN001
    schema = _arrow_schema()
    return [o for piece in slices for batch in read_slice(piece, schema) for o in batch.column("offset").to_pylist()]


def _batches(lo: int, hi: int) -> list[bytes]:
    return [data_batch(list(range(i, min(i + 10, hi)))) for i in range(lo, hi, 10)]


class Tier:
    """A log dir with partition t-0 (topic id TOPIC_ID) and a remote directory."""

    def __init__(self, root: Path) -> None:
        self.log_dir = root / "logs"
        self.remote_dir = root / "remote"
        self.staging = root / "staging"
        self.part = self.log_dir / "t-0"
        self.part.mkdir(parents=True)
        PartitionMetadataFile(self.part).write(TOPIC_ID)
        self.records: list[RemoteLogMetadata] = []

    def remote(self, start: int, end: int, *, topic_id: uuid.UUID = TOPIC_ID,
               states: tuple[RemoteLogSegmentState, ...] = (S.COPY_SEGMENT_FINISHED,), copy: bool = True
               ) -> RemoteLogSegmentMetadata:
        """A segment of offsets [start, end] copied to the remote directory, and its metadata records
        (COPY_SEGMENT_STARTED, then `states`)."""
        segment_id = RemoteLogSegmentId(TopicIdPartition(topic_id, "t", 0), uuid.uuid4())
        log = write_segment(self.staging / f"{start}-{uuid.uuid4().hex[:6]}", start, _batches(start, end + 1))
        metadata = RemoteLogSegmentMetadata(segment_id, start, end, 1, 1_700_000_000_000 + end, 1, ((0, start),),
                                            log.stat().st_size, S.COPY_SEGMENT_STARTED)
        if copy:
            snapshot = log.parent / "empty.snapshot"
            snapshot.write_bytes(b"")
            stem = str(log)[: -len(".log")]
            LocalTieredStorage(self.remote_dir).copy_log_segment_data(metadata, LogSegmentData(
                log, Path(stem + ".index"), Path(stem + ".timeindex"), None, snapshot, b""))
        self.records.append(metadata)
        for state in states:
            self.records.append(RemoteLogSegmentMetadataUpdate(metadata.segment_id, 1, 2, state))
        return metadata

    def local(self, start: int, end: int, *, active: bool = False) -> None:
        write_segment(self.part, start, _batches(start, end + 1), active=active)

    def write_metadata(self) -> None:
        """The records in two metadata partitions, as the broker spreads them (a segment's records
        all in one)."""
        values = [encode_remote_log_metadata(r) for r in self.records]
        write_segment(self.log_dir / "__remote_log_metadata-1", 0,
                      [data_batch([i], keys=[None], values=[v]) for i, v in enumerate(values)], active=True)
        write_segment(self.log_dir / "__remote_log_metadata-0", 0, [data_batch([0], keys=[None], values=[
            encode_remote_log_metadata(RemoteLogSegmentMetadata(
                RemoteLogSegmentId(TopicIdPartition(uuid.uuid4(), "other", 3), uuid.uuid4()), 0, 9, 1, 0, 0, (), 10,
                S.COPY_SEGMENT_STARTED))])], active=True)

    def options(self, **more: str) -> ReadOptions:
        return ReadOptions({"path": str(self.log_dir), "topics": "t", **more})


@pytest.fixture
def tier(tmp_path: Path) -> Tier:
    return Tier(tmp_path)


def _standard(tier: Tier) -> None:
    """Remote [0, 99] and [100, 199] (the second still local too), local [100, 199] and active [200, 249];
    besides: a dangling copy, a deleted segment, one being deleted and the old topic's segment."""
    tier.remote(0, 99)
    tier.remote(100, 199)
    tier.remote(200, 249, states=())  # COPY_SEGMENT_STARTED only: a copy a crash interrupted
    tier.remote(0, 49, states=(S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED))
    tier.remote(0, 99, states=(S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED))
    tier.remote(0, 299, topic_id=OLD_TOPIC_ID)
    tier.local(100, 199)
    tier.local(200, 249, active=True)
    tier.write_metadata()


def test_only_copied_segments_of_this_topic_id_are_remote(tier: Tier) -> None:
    _standard(tier)
    (part,) = tier.options(remoteStorage=str(tier.remote_dir)).scan().partitions
    assert [(s.start_offset, s.end_offset) for s in part.remote_segments] == [(0, 99), (100, 199)]
    assert (part.log_start_offset, part.local_log_start_offset) == (0, 100)
    assert all(s.file is not None and s.file.path.startswith(str(tier.remote_dir)) for s in part.remote_segments)
    assert part.remote_size_in_bytes == sum(s.file.size for s in part.remote_segments if s.file is not None)
    # The metadata partitions are read whatever the topics asked for, and listed only when asked for.
    local = scan_log_dirs([tier.log_dir], topics=["t"])
    assert [p.topic for p in local.partitions] == ["t"] and local.partitions[0].remote_segments == []
    assert [(p.topic, p.partition) for p in local.remote_log_metadata] == [("__remote_log_metadata", 0),
                                                                          ("__remote_log_metadata", 1)]
    everything = attach_remote_segments(scan_log_dirs([tier.log_dir]), remote_tier(str(tier.remote_dir)))
    assert [p.topic for p in everything.partitions] == ["__remote_log_metadata"] * 2 + ["t"]
    assert len(everything.partitions[2].remote_segments) == 2


def test_remote_then_local_each_offset_once(tier: Tier) -> None:
    _standard(tier)
    slices = tier.options(remoteStorage=str(tier.remote_dir), maxPartitionBytes="512").plan()
    assert _offsets(slices) == list(range(250))
    remote = [s for s in slices if s.path.startswith(str(tier.remote_dir))]
    assert {s.base_offset for s in remote} == {0}  # [100, 199] is read from its local copy
    assert len(remote) > 3  # split at the remote offset index's entries
    later = tier.options(remoteStorage=str(tier.remote_dir), startingOffsets="50", endingOffsets="120").plan()
    assert _offsets(later) == list(range(50, 120))


def test_the_log_start_offset_skips_remote_records(tier: Tier) -> None:
    _standard(tier)
    checkpoint = OffsetCheckpointFile(tier.log_dir / LOG_START_OFFSET_CHECKPOINT_FILE)
    checkpoint.write({TopicPartition("t", 0): 42})
    options = tier.options(remoteStorage=str(tier.remote_dir))
    assert options.scan().partitions[0].log_start_offset == 42
    assert _offsets(options.plan()) == list(range(42, 250))
    checkpoint.write({TopicPartition("t", 0): 120})  # remote [0, 99] wholly below: not read, nor needed
    assert _offsets(tier.options().plan()) == list(range(120, 250))
    assert _offsets(tier.options(respectLogStartOffset="false", remoteStorage=str(tier.remote_dir)).plan()) \
        == list(range(250))


def test_overlapping_remote_segments_are_read_once(tier: Tier) -> None:
    tier.remote(0, 99)
    tier.remote(50, 149)  # not what a broker writes; read from past the previous one's end
    tier.local(150, 159, active=True)
    tier.write_metadata()
    assert _offsets(tier.options(remoteStorage=str(tier.remote_dir)).plan()) == list(range(160))


def test_no_remote_tier_given_is_an_error_unless_nothing_remote_is_read(tier: Tier) -> None:
    _standard(tier)
    with pytest.raises(RemoteTierNotGivenError, match=r"t-0 \(offsets 0 to 99: 1 segment\(s\), \d+ bytes\)"):
        tier.options().plan()
    assert _offsets(tier.options(startingOffsets="100").plan()) == list(range(100, 250))
    assert _offsets(tier.options(localOnly="true").plan()) == list(range(100, 250))
    (part,) = tier.options().scan().partitions  # the scan alone lists them, without files
    assert [s.file for s in part.remote_segments] == [None, None]


def test_a_tier_missing_segments(tier: Tier, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    tier.remote(0, 99)
    tier.remote(100, 199, copy=False)  # listed as copied, absent: a hole
    tier.remote(200, 299)
    tier.local(300, 309, active=True)
    tier.write_metadata()
    with pytest.raises(FileNotFoundError, match="lacks t-0-.*/00000000000000000100-.*\\.log"):
        tier.options(remoteStorage=str(tier.remote_dir)).plan()
    with pytest.raises(FileNotFoundError, match="has none of them"):
        tier.options(remoteStorage=str(tmp_path / "elsewhere")).plan()


def test_the_oldest_segments_gone_is_remote_retention(tier: Tier, caplog: pytest.LogCaptureFixture) -> None:
    tier.remote(0, 99, copy=False)  # deleted by remote retention since the metadata was read
    tier.remote(100, 199)
    tier.local(200, 209, active=True)
    tier.write_metadata()
    with caplog.at_level(logging.WARNING):
        slices = tier.options(remoteStorage=str(tier.remote_dir)).plan()
    assert _offsets(slices) == list(range(100, 210))
    assert "remote retention" in caplog.text


def test_the_brokers_settings_name_the_tier(tmp_path: Path) -> None:
    local = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"
    found = remote_tier_from_settings({"remote.log.storage.manager.class.name": local, "rsm.config.dir": "/r/t"})
    assert found is not None and (found.filesystem, found.root) == ("", "/r/t")
    assert remote_tier_from_settings({"rsm.config.dir": "/r/t"}) == found  # the class is implied
    assert remote_tier_from_settings({"remote.log.storage.manager.impl.prefix": "x.", "x.dir": "/r/t"}) == found
    assert remote_tier_from_settings({"log.dirs": "/data"}) is None
    s3 = remote_tier_from_settings({
        "remote.log.storage.manager.class.name": "asyncbroker.S3RemoteStorageManager",
        "rsm.config.s3.bucket": "b", "rsm.config.s3.prefix": "/kafka/tier/", "rsm.config.s3.region": "eu-west-1",
        "rsm.config.s3.endpoint.url": "http://127.0.0.1:9000", "rsm.config.s3.access.key.id": "AK/1",
        "rsm.config.s3.secret.access.key": "s+cr/t"})
    assert s3 is not None and s3.root == "b/kafka/tier"
    assert s3.location == ("s3://AK%2F1:s%2Bcr%2Ft@b/kafka/tier?region=eu-west-1&endpoint_override=127.0.0.1:9000"
                           "&scheme=http")
    assert s3.describe() == "s3://***@b/kafka/tier?region=eu-west-1&endpoint_override=127.0.0.1:9000&scheme=http"
    aws = remote_tier_from_settings({"rsm.config.s3.bucket": "b"})
    assert aws is not None and aws.location == "s3://b?region=us-east-1"
    for bad, message in (({"remote.log.storage.manager.class.name": local}, "rsm.config.dir must name"),
                         ({"remote.log.storage.manager.class.name": "com.example.Tier"}, "not a backend"),
                         ({"remote.log.storage.manager.class.name": "asyncbroker.S3RemoteStorageManager"},
                          "Missing required configuration rsm.config.s3.bucket"),
                         ({"rsm.config.s3.bucket": "b", "rsm.config.s3.access.key.id": "k"}, "go together")):
        with pytest.raises((ValueError, ConfigException), match=message):
            remote_tier_from_settings(bad)
    assert redact("/plain/dir") == "/plain/dir" and redact("s3://b/p") == "s3://b/p"


def test_segments_below_the_log_start_need_not_be_in_the_tier(tier: Tier, caplog: pytest.LogCaptureFixture) -> None:
    tier.remote(0, 99, copy=False)  # due for deletion: the log start is past it
    tier.remote(100, 199)
    tier.local(200, 209, active=True)
    tier.write_metadata()
    OffsetCheckpointFile(tier.log_dir / LOG_START_OFFSET_CHECKPOINT_FILE).write({TopicPartition("t", 0): 150})
    with caplog.at_level(logging.WARNING):
        slices = tier.options(remoteStorage=str(tier.remote_dir)).plan()
    assert _offsets(slices) == list(range(150, 210)) and "remote retention" not in caplog.text
