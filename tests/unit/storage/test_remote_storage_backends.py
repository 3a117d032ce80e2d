"""The RemoteStorageManager contract, run against both backends: LocalTieredStorage in a tmp
dir and S3RemoteStorageManager on a real S3 API server (moto's, over a socket; the `s3_server`
fixture of tests/conftest.py). The segments are real ones: a Log in a tmp dir, appended to and
rolled, its files copied as the RemoteLogManager will copy them.

Then S3's failures, each against a real server: a missing bucket, a killed server (connection
refused), a server that never answers (read timeout), wrong credentials (moto checking
signatures), throttling (503 SlowDown) and a full store (507), injected by the server in front
of moto. Each surfaces as RemoteStorageError naming its cause, within the configured timeouts.
"""
from __future__ import annotations

import socket
import struct
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from asyncbroker.testing.s3_server import S3Server
from storage.clock import MockClock
from storage.config_def import ConfigException
from storage.local_tiered_storage import LocalTieredStorage, remote_segment_file_name
from storage.log import Log
from storage.log_config import LogConfig
from storage.log_file_utils import producer_snapshot_file
from storage.remote_storage_manager import (
    IndexType,
    LogSegmentData,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    RemoteResourceNotFoundError,
    RemoteStorageError,
    RemoteStorageManager,
    TopicIdPartition,
)
from storage.s3_remote_storage_manager import S3RemoteStorageManager
from storage_testlib import BASE_TS, batch
from wire.records import ControlRecordType, Record, build_batch, build_control_batch, read_batch_header

pytestmark = pytest.mark.timeout(120)

LEADER_EPOCHS = b"0\n2\n0 0\n3 40\n"  # a leader-epoch checkpoint slice: version 0, two entries
MiB = 1024 * 1024


class Segment(msgspec.Struct, frozen=True):
    """A rolled segment's files, and what the RemoteLogManager would send for it."""

    base_offset: int
    end_offset: int
    data: LogSegmentData

    def files(self) -> dict[IndexType | None, bytes]:
        """Each file's bytes by index type (None: the .log), as they are on disk now."""
        files: dict[IndexType | None, bytes] = {
            None: self.data.log_segment.read_bytes(), IndexType.OFFSET: self.data.offset_index.read_bytes(),
            IndexType.TIMESTAMP: self.data.time_index.read_bytes(),
            IndexType.PRODUCER_SNAPSHOT: self.data.producer_snapshot_index.read_bytes(),
            IndexType.LEADER_EPOCH: self.data.leader_epoch_index}
        if self.data.transaction_index is not None:
            files[IndexType.TRANSACTION] = self.data.transaction_index.read_bytes()
        return files


def rolled_segments(log: Log) -> list[Segment]:
    """The log's segments below the active one, with their files as LogSegmentData."""
    segments = log.segments.values()
    result = []
    for segment, following in zip(segments, segments[1:]):
        has_txns = bool(segment.txn_index.all_aborted_txns())
        result.append(Segment(segment.base_offset, following.base_offset - 1, LogSegmentData(
            log_segment=segment.log.path, offset_index=segment.offset_index.path, time_index=segment.time_index.path,
            transaction_index=segment.txn_index.path if has_txns else None,
            # Kafka sends the snapshot taken when the segment rolled: at the next segment's base offset.
            producer_snapshot_index=producer_snapshot_file(log.dir, following.base_offset),
            leader_epoch_index=LEADER_EPOCHS)))
    return result


@pytest.fixture(scope="module")
def segments(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Segment]]:
    """Two rolled segments of an open Log: the first has an aborted transaction (a .txnindex)
    and plain batches of 1 KiB records (several offset and time index entries), the second has
    no aborted transaction."""
    log = Log.open(tmp_path_factory.mktemp("log") / "events-0", LogConfig(index_interval_bytes=2048),
                   clock=MockClock(BASE_TS))
    try:
        log.append_as_leader(build_batch([Record(offset=i, timestamp=BASE_TS, value=b"t") for i in range(3)],
                                         is_transactional=True, producer_id=42, producer_epoch=0, base_sequence=0))
        log.append_as_leader(build_control_batch(ControlRecordType.ABORT, producer_id=42, producer_epoch=0,
                                                 timestamp=BASE_TS), origin="coordinator")
        for i in range(40):
            log.append_as_leader(batch(2, ts=BASE_TS + 10 * i, value_size=1024))
        log.roll()
        for i in range(20):
            log.append_as_leader(batch(3, ts=BASE_TS + 1000 + i, value_size=500))
        log.roll()
        log.append_as_leader(batch(1))  # the active segment: never copied
        rolled = rolled_segments(log)
        assert rolled[0].data.transaction_index is not None and rolled[1].data.transaction_index is None
        assert len(rolled[0].data.offset_index.read_bytes()) >= 5 * 8  # several index entries to read by
        yield rolled
    finally:
        log.close()


def metadata_for(segment: Segment, topic_id: uuid.UUID | None = None) -> RemoteLogSegmentMetadata:
    tp = TopicIdPartition(topic_id or uuid.uuid4(), "events", 0)
    return RemoteLogSegmentMetadata(
        segment_id=RemoteLogSegmentId(tp, uuid.uuid4()), start_offset=segment.base_offset,
        end_offset=segment.end_offset, max_timestamp_ms=BASE_TS, broker_id=0, event_timestamp_ms=BASE_TS,
        segment_leader_epochs=((0, 0),), segment_size_in_bytes=segment.data.log_segment.stat().st_size,
        state=RemoteLogSegmentState.COPY_SEGMENT_STARTED)


def s3_manager(server: S3Server, bucket: str, prefix: str = "tiered/cluster-1", **kwargs: object) -> S3RemoteStorageManager:
    options: dict[str, object] = {"connect_timeout_ms": 2000, "read_timeout_ms": 5000, **kwargs}
    return S3RemoteStorageManager(bucket, prefix, server.endpoint_url, server.region, server.access_key_id,
                                  server.secret_access_key, **options)  # type: ignore[arg-type]


@pytest.fixture(params=["local", "s3"])
def rsm(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RemoteStorageManager]:
    """Each backend in turn, empty."""
    manager: RemoteStorageManager
    if request.param == "local":
        manager = LocalTieredStorage(tmp_path / "tier")
    else:
        manager = s3_manager(request.getfixturevalue("s3_server"), request.getfixturevalue("s3_bucket"))
    try:
        yield manager
    finally:
        manager.close()


# -- the contract ---------------------------------------------------------------------------------


def test_byte_ranges_of_a_copied_segment(rsm: RemoteStorageManager, segments: list[Segment]) -> None:
    segment = segments[0]
    metadata = metadata_for(segment)
    assert rsm.copy_log_segment_data(metadata, segment.data) is None
    log = segment.data.log_segment.read_bytes()
    size = len(log)
    assert rsm.fetch_log_segment(metadata, 0) == log
    assert rsm.fetch_log_segment(metadata, 0, 0) == log[:1]
    assert rsm.fetch_log_segment(metadata, 0, 99) == log[:100]  # the end is inclusive
    assert rsm.fetch_log_segment(metadata, 1000, 5999) == log[1000:6000]
    assert rsm.fetch_log_segment(metadata, size - 10, size - 1) == log[-10:]
    assert rsm.fetch_log_segment(metadata, size - 10) == log[-10:]
    assert rsm.fetch_log_segment(metadata, size - 10, size + 10_000) == log[-10:]  # an end past the end: to the end
    assert rsm.fetch_log_segment(metadata, size) == b""
    assert rsm.fetch_log_segment(metadata, size + 5, size + 100) == b""
    assert rsm.fetch_log_segment(metadata, 100, 50) == b""  # an end before the start: nothing


def test_reading_a_batch_by_the_remote_offset_index(rsm: RemoteStorageManager, segments: list[Segment]) -> None:
    """What a remote fetch does: find a position in the remote .index, read from there."""
    segment = segments[0]
    metadata = metadata_for(segment)
    rsm.copy_log_segment_data(metadata, segment.data)
    index = rsm.fetch_index(metadata, IndexType.OFFSET)
    entries = [struct.unpack_from(">ii", index, at) for at in range(0, len(index), 8)]
    assert len(entries) >= 5
    for relative_offset, position in entries:
        # An entry names a batch's last offset and where the batch starts; its header is 61 bytes.
        header = read_batch_header(rsm.fetch_log_segment(metadata, position, position + 60))
        assert header.base_offset + header.last_offset_delta == segment.base_offset + relative_offset


def test_every_index_comes_back_as_copied(rsm: RemoteStorageManager, segments: list[Segment]) -> None:
    segment = segments[0]
    metadata = metadata_for(segment)
    rsm.copy_log_segment_data(metadata, segment.data)
    files = segment.files()
    assert set(files) == {None, *IndexType}
    for index_type in IndexType:
        assert rsm.fetch_index(metadata, index_type) == files[index_type], index_type
    assert rsm.fetch_index(metadata, IndexType.LEADER_EPOCH) == LEADER_EPOCHS


def test_a_segment_without_aborted_transactions_has_no_transaction_index(
        rsm: RemoteStorageManager, segments: list[Segment]) -> None:
    segment = segments[1]
    metadata = metadata_for(segment)
    rsm.copy_log_segment_data(metadata, segment.data)
    with pytest.raises(RemoteResourceNotFoundError):
        rsm.fetch_index(metadata, IndexType.TRANSACTION)
    files = segment.files()
    for index_type in set(IndexType) - {IndexType.TRANSACTION}:
        assert rsm.fetch_index(metadata, index_type) == files[index_type]
    assert rsm.fetch_log_segment(metadata, 0) == files[None]


def test_delete_removes_every_file_and_is_idempotent(rsm: RemoteStorageManager, segments: list[Segment]) -> None:
    topic_id = uuid.uuid4()
    first, second = metadata_for(segments[0], topic_id), metadata_for(segments[1], topic_id)
    rsm.copy_log_segment_data(first, segments[0].data)
    rsm.copy_log_segment_data(second, segments[1].data)
    rsm.delete_log_segment_data(first)
    with pytest.raises(RemoteResourceNotFoundError):
        rsm.fetch_log_segment(first, 0)
    with pytest.raises(RemoteResourceNotFoundError):
        rsm.fetch_log_segment(first, 10, 20)
    for index_type in IndexType:
        with pytest.raises(RemoteResourceNotFoundError):
            rsm.fetch_index(first, index_type)
    rsm.delete_log_segment_data(first)  # already gone: fine
    assert rsm.fetch_log_segment(second, 0) == segments[1].data.log_segment.read_bytes()  # the other one stays
    rsm.delete_log_segment_data(second)
    rsm.delete_log_segment_data(metadata_for(segments[0]))  # never copied at all: fine too


def test_a_segment_never_copied_is_not_found(rsm: RemoteStorageManager, segments: list[Segment]) -> None:
    metadata = metadata_for(segments[0])
    with pytest.raises(RemoteResourceNotFoundError):
        rsm.fetch_log_segment(metadata, 0, 100)
    with pytest.raises(RemoteResourceNotFoundError):
        rsm.fetch_index(metadata, IndexType.OFFSET)


def test_copying_again_overwrites(rsm: RemoteStorageManager, segments: list[Segment]) -> None:
    """A copy retried after a failure half-way stores the same files again."""
    metadata = metadata_for(segments[0])
    rsm.copy_log_segment_data(metadata, segments[0].data)
    rsm.copy_log_segment_data(metadata, segments[0].data)
    assert rsm.fetch_log_segment(metadata, 0) == segments[0].data.log_segment.read_bytes()


# -- S3: the layout, from_configs, multipart ---------------------------------------------------------


def test_s3_keys_are_the_local_tiers_file_names_under_the_prefix(
        s3_server: S3Server, s3_bucket: str, segments: list[Segment], tmp_path: Path) -> None:
    metadata = metadata_for(segments[0])
    local = LocalTieredStorage(tmp_path / "tier")
    local.copy_log_segment_data(metadata, segments[0].data)
    s3 = s3_manager(s3_server, s3_bucket, prefix="/a/b/")
    s3.copy_log_segment_data(metadata, segments[0].data)
    names = sorted(str(p.relative_to(local.root)) for p in local.root.rglob("*") if p.is_file())
    assert len(names) == 6
    assert s3_server.keys(s3_bucket) == [f"a/b/{name}" for name in names]
    assert names[0] == remote_segment_file_name(metadata.segment_id, 0, "index")
    unprefixed = s3_manager(s3_server, s3_bucket, prefix="")
    unprefixed.copy_log_segment_data(metadata, segments[0].data)
    assert sorted(set(s3_server.keys(s3_bucket)) - {f"a/b/{name}" for name in names}) == names
    s3.close()
    unprefixed.close()


def test_from_configs(s3_server: S3Server, s3_bucket: str, segments: list[Segment]) -> None:
    manager = S3RemoteStorageManager.from_configs(s3_server.rsm_configs(s3_bucket, "p"))
    assert (manager.bucket, manager.prefix, manager.endpoint_url, manager.region) == (
        s3_bucket, "p", s3_server.endpoint_url, "us-east-1")
    assert (manager.max_attempts, manager.connect_timeout_ms, manager.path_style_access) == (3, 3000, True)
    metadata = metadata_for(segments[1])
    manager.copy_log_segment_data(metadata, segments[1].data)
    assert manager.fetch_index(metadata, IndexType.LEADER_EPOCH) == LEADER_EPOCHS
    manager.close()

    defaults = S3RemoteStorageManager.from_configs({"s3.bucket": "b-1", "s3.endpoint.url": ""})
    assert (defaults.prefix, defaults.endpoint_url, defaults.region, defaults.path_style_access) == (
        "", None, "us-east-1", False)
    tuned = S3RemoteStorageManager.from_configs({"s3.bucket": "b-1", "s3.max.attempts": "5", "s3.read.timeout.ms": "100",
                                                 "s3.path.style.access.enabled": "true"})
    assert (tuned.max_attempts, tuned.read_timeout_ms, tuned.path_style_access) == (5, 100, True)
    with pytest.raises(ConfigException, match="rsm.config.s3.bucket") as missing:
        S3RemoteStorageManager.from_configs({"s3.prefix": "x"})
    assert missing.value.key == "rsm.config.s3.bucket"
    with pytest.raises(ConfigException, match="rsm.config.s3.secret.access.key"):
        S3RemoteStorageManager.from_configs({"s3.bucket": "b-1", "s3.access.key.id": "AKIA"})
    with pytest.raises(ConfigException, match="Invalid value soon for configuration rsm.config.s3.connect.timeout.ms"):
        S3RemoteStorageManager.from_configs({"s3.bucket": "b-1", "s3.connect.timeout.ms": "soon"})
    with pytest.raises(ConfigException, match="s3.max.attempts: Value must be at least 1"):
        S3RemoteStorageManager.from_configs({"s3.bucket": "b-1", "s3.max.attempts": "0"})


def test_a_segment_larger_than_a_part_goes_up_in_parts(s3_server: S3Server, s3_bucket: str, tmp_path: Path) -> None:
    """A 12 MiB segment with 5 MiB parts: a multipart upload, read back across part boundaries."""
    log = Log.open(tmp_path / "big-0", LogConfig(), clock=MockClock(BASE_TS))
    try:
        for i in range(13):
            log.append_as_leader(batch(3, ts=BASE_TS + i, value_size=340 * 1024))
        log.roll()
        [segment] = rolled_segments(log)
    finally:
        log.close()
    manager = s3_manager(s3_server, s3_bucket, part_size=5 * MiB)
    metadata = metadata_for(segment)
    manager.copy_log_segment_data(metadata, segment.data)
    data = segment.data.log_segment.read_bytes()
    assert len(data) > 12 * MiB
    assert manager.fetch_log_segment(metadata, 0) == data
    assert manager.fetch_log_segment(metadata, 5 * MiB - 10, 5 * MiB + 9) == data[5 * MiB - 10:5 * MiB + 10]
    s3 = s3_server.client()
    head = s3.head_object(Bucket=s3_bucket, Key=manager.object_key(metadata, "log"))
    s3.close()
    assert head["ETag"].endswith('-3"')  # S3's multipart ETag: <md5 of the part md5s>-<parts>
    manager.close()


def test_boto3_is_imported_at_the_first_call_only() -> None:
    code = ("import sys; from storage.s3_remote_storage_manager import S3RemoteStorageManager as M\n"
            "m = M.from_configs({'s3.bucket': 'b-1', 's3.endpoint.url': 'http://127.0.0.1:9'}); repr(m); m.close()\n"
            "assert not any(n.split('.')[0] in ('boto3', 'botocore') for n in sys.modules), 'boto3 imported'")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr


# -- S3 failures, against real servers ---------------------------------------------------------------


@pytest.fixture(scope="module")
def faulty_s3() -> Iterator[S3Server]:
    """An S3 server of this module's own, for injected faults."""
    with S3Server() as server:
        yield server


@pytest.fixture
def faulty_bucket(faulty_s3: S3Server) -> Iterator[str]:
    yield faulty_s3.create_bucket(f"faulty-{uuid.uuid4().hex[:12]}")
    faulty_s3.clear_fault()


def test_a_missing_bucket_is_an_error_never_a_missing_segment(s3_server: S3Server, segments: list[Segment]) -> None:
    manager = s3_manager(s3_server, f"no-such-bucket-{uuid.uuid4().hex[:8]}")
    metadata = metadata_for(segments[0])
    calls = [lambda: manager.copy_log_segment_data(metadata, segments[0].data),
             lambda: manager.fetch_log_segment(metadata, 0, 10), lambda: manager.fetch_index(metadata, IndexType.OFFSET),
             lambda: manager.delete_log_segment_data(metadata)]
    for call in calls:
        with pytest.raises(RemoteStorageError, match=r"NoSuchBucket \(HTTP 404\)") as failure:
            call()
        assert not isinstance(failure.value, RemoteResourceNotFoundError)  # the RLM must not forget the segment
        assert manager.bucket in str(failure.value) and s3_server.endpoint_url in str(failure.value)
    manager.close()


@pytest.mark.timeout(30)
def test_a_dead_server_fails_fast(segments: list[Segment]) -> None:
    """Connection refused on every attempt: an error within the retries' backoff, not a hang."""
    server = S3Server().start()
    bucket = server.create_bucket("dead")
    manager = s3_manager(server, bucket, max_attempts=3)
    metadata = metadata_for(segments[0])
    manager.copy_log_segment_data(metadata, segments[0].data)
    server.kill()
    calls = [lambda: manager.copy_log_segment_data(metadata, segments[0].data),
             lambda: manager.fetch_log_segment(metadata, 0, 10), lambda: manager.fetch_index(metadata, IndexType.OFFSET),
             lambda: manager.delete_log_segment_data(metadata)]
    for call in calls:
        started = time.monotonic()
        with pytest.raises(RemoteStorageError, match="Could not connect to the endpoint URL") as failure:
            call()
        elapsed = time.monotonic() - started
        assert not isinstance(failure.value, RemoteResourceNotFoundError)
        assert elapsed < 10, elapsed
    manager.close()


@pytest.mark.timeout(30)
def test_a_server_that_never_answers_times_out(segments: list[Segment]) -> None:
    """It accepts connections (the kernel's backlog) and never answers: the read timeout ends
    each attempt."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}"
        manager = S3RemoteStorageManager("silent", "", endpoint, access_key_id="k", secret_access_key="s",
                                         read_timeout_ms=500, max_attempts=2)
        started = time.monotonic()
        with pytest.raises(RemoteStorageError, match="Read timeout on endpoint URL"):
            manager.fetch_index(metadata_for(segments[0]), IndexType.OFFSET)
        assert time.monotonic() - started < 10
        manager.close()


@pytest.mark.timeout(60)
def test_wrong_credentials(segments: list[Segment]) -> None:
    """moto checking signatures against the IAM users it knows (S3Server(require_auth=True))."""
    with S3Server(require_auth=True) as server:
        bucket = server.create_bucket("guarded")
        metadata = metadata_for(segments[0])
        right = s3_manager(server, bucket)
        right.copy_log_segment_data(metadata, segments[0].data)
        assert right.fetch_index(metadata, IndexType.OFFSET) == segments[0].data.offset_index.read_bytes()
        right.close()
        unknown = S3RemoteStorageManager(bucket, "tiered/cluster-1", server.endpoint_url,
                                         access_key_id="AKIAWRONGWRONGWRONG0", secret_access_key="nope")
        with pytest.raises(RemoteStorageError, match=r"InvalidAccessKeyId \(HTTP 403\).*check the S3 credentials"):
            unknown.copy_log_segment_data(metadata, segments[0].data)
        with pytest.raises(RemoteStorageError, match=r"InvalidAccessKeyId \(HTTP 403\)") as failure:
            unknown.fetch_index(metadata, IndexType.OFFSET)
        assert not isinstance(failure.value, RemoteResourceNotFoundError)
        unknown.close()
        bad_secret = S3RemoteStorageManager(bucket, "tiered/cluster-1", server.endpoint_url,
                                            access_key_id=server.access_key_id, secret_access_key="not-the-secret")
        with pytest.raises(RemoteStorageError, match=r"SignatureDoesNotMatch \(HTTP 403\)"):
            bad_secret.fetch_log_segment(metadata, 0, 100)
        with pytest.raises(RemoteStorageError, match=r"SignatureDoesNotMatch \(HTTP 403\)"):
            bad_secret.delete_log_segment_data(metadata)
        bad_secret.close()


@pytest.mark.timeout(60)
def test_throttling_is_retried_then_reported(faulty_s3: S3Server, faulty_bucket: str, segments: list[Segment]) -> None:
    manager = s3_manager(faulty_s3, faulty_bucket, max_attempts=3)
    metadata = metadata_for(segments[0])
    manager.copy_log_segment_data(metadata, segments[0].data)
    # Throttled twice, then served: the retries absorb it.
    faulty_s3.inject_fault(503, "SlowDown", count=2)
    before = faulty_s3.requests
    assert manager.fetch_log_segment(metadata, 0, 99) == segments[0].data.log_segment.read_bytes()[:100]
    assert faulty_s3.requests - before == 3
    # Throttled for good: max_attempts requests, then the error names it.
    faulty_s3.inject_fault(503, "SlowDown")
    before = faulty_s3.faulted_requests
    with pytest.raises(RemoteStorageError, match=r"SlowDown \(HTTP 503\).*throttled by the store, after 3 attempts"):
        manager.fetch_index(metadata, IndexType.TIMESTAMP)
    assert faulty_s3.faulted_requests - before == 3
    with pytest.raises(RemoteStorageError, match=r"upload of .*\.log .*SlowDown \(HTTP 503\)"):
        manager.copy_log_segment_data(metadata, segments[0].data)
    manager.close()


def test_a_full_store(faulty_s3: S3Server, faulty_bucket: str, segments: list[Segment]) -> None:
    """MinIO's answer to writes when its drives are full (S3 itself has no such limit): copies
    fail, segments already there still read."""
    manager = s3_manager(faulty_s3, faulty_bucket)
    stored = metadata_for(segments[1])
    manager.copy_log_segment_data(stored, segments[1].data)
    faulty_s3.inject_fault(507, "XMinioStorageFull", "Storage backend has reached its minimum free drive threshold.",
                           methods=("PUT", "POST"))
    with pytest.raises(RemoteStorageError, match=r"XMinioStorageFull \(HTTP 507\): Storage backend has reached"):
        manager.copy_log_segment_data(metadata_for(segments[0]), segments[0].data)
    assert manager.fetch_log_segment(stored, 0) == segments[1].data.log_segment.read_bytes()
    manager.close()
