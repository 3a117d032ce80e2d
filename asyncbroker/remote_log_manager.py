"""RemoteLogManager: moves tiered topics' rolled segments to remote storage and reads them back.

Kafka's RemoteLogManager (KIP-405) for one node. Every `remote.log.manager.task.interval.ms`
each tiered partition (remote.storage.enable on a broker with remote.log.storage.system.enable)
gets two tasks, Kafka's RLMCopyTask and RLMExpirationTask:

- copy: every rolled segment above `highest_offset_in_remote_storage` whose records are all
  below the last stable offset (never the active segment) goes to the RemoteStorageManager with
  its indexes, producer snapshot and leader-epoch slice. The metadata record
  COPY_SEGMENT_STARTED is on disk before the upload and COPY_SEGMENT_FINISHED after it; only
  then does the log's highest remote offset move, which is what lets local retention
  (local.retention.ms / .bytes, storage.log.Log) delete the local copy.
- expiration: remote segments breaching retention.ms, retention.bytes (remote and local-only
  bytes together) or the log start offset (DeleteRecords) are deleted, DELETE_SEGMENT_STARTED
  first and DELETE_SEGMENT_FINISHED last, and the log start offset moves past them. Segments
  left in COPY_SEGMENT_STARTED by a failed or interrupted copy, and DELETE_SEGMENT_STARTED by an
  interrupted delete, are deleted here too: a crash never leaves a segment listed twice or
  half-written segments that readers trust.

Fetches below the local log start offset read here (`read`, on an IO thread): the segment holding
the offset, its position from the remote offset index, then the first batch at or after the
offset and as many bytes after it as the fetch allows, as Kafka's RemoteLogManager.read does.

Backend calls block and run on this manager's own threads, never on the event loop; metadata
records are written through the broker's coordinator-topic writer.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from storage import fault_injection
from storage.file_records import search_batch_for_timestamp
from storage.leader_epoch_cache import LeaderEpochCheckpointFile
from storage.log import Log
from storage.log_config import LogConfig
from storage.log_segment import LogSegment
from storage.partition_metadata import uuid_to_base64
from storage.producer_state_manager import empty_snapshot, snapshot_file_name
from storage.remote_storage_manager import (
    S3_REMOTE_STORAGE,
    IndexType,
    LogSegmentData,
    RemoteResourceNotFoundError,
    RemoteStorageError,
    RemoteStorageManager,
)
from storage.topic_partition import TopicPartition
from storage.transaction_index import AbortedTxn, parse_aborted_txns
from wire.errors import OffsetOutOfRangeError
from wire.records import BATCH_HEADER_SIZE, iter_batch_headers, walk_batch_lengths, whole_batches_end
from wire.remote_log_metadata_records import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
    TopicIdPartition,
)

from asyncbroker.remote_log_metadata_manager import TopicBasedRemoteLogMetadataManager

if TYPE_CHECKING:
    from storage.log_manager import LogManager

    from asyncbroker.config import KafkaConfig

log = logging.getLogger(__name__)

T = TypeVar("T")

# Bytes read past an offset index entry to find the batch holding the fetch offset: the index
# has an entry every index.interval.bytes (4096 by default), plus the batch that straddles it.
_INDEX_SLACK = 64 * 1024
_BATCH_HEADER = struct.Struct(">qi")  # base offset, length (after these 12 bytes)
_INDEX_ENTRY = struct.Struct(">ii")  # relative offset, position
_TIME_ENTRY = struct.Struct(">qi")  # timestamp, relative offset
_SEARCH_CHUNK = 1 << 20
# The remote index cache is held in memory (Kafka keeps it on disk, under remote-log-index-cache):
# bounded by remote.log.index.file.cache.total.size.bytes, and never above this, for the RSS target.
_INDEX_CACHE_MAX_BYTES = 16 << 20


def remote_storage_manager_for(config: KafkaConfig) -> RemoteStorageManager:
    """The backend `remote.log.storage.manager.class.name` names, built from its `rsm.config.`
    keys (KafkaConfig has checked that it is one of these and has what it needs)."""
    name = config.remote_log_storage_manager_class_name
    props = config.remote_storage_manager_props
    if name == S3_REMOTE_STORAGE:
        from storage.s3_remote_storage_manager import S3RemoteStorageManager

        return S3RemoteStorageManager.from_configs(props, config_prefix=config.remote_log_storage_manager_impl_prefix)
    from storage.local_tiered_storage import LocalTieredStorage

    return LocalTieredStorage(props["dir"])


class RemoteRead(msgspec.Struct):
    """What a fetch below the local log start got from remote storage."""

    records: bytes
    aborted: list[AbortedTxn] | None = None


class RemoteLogManagerStats(msgspec.Struct):
    """Kafka's remote storage broker metrics, as totals (RemoteCopyRequestsPerSec, ...)."""

    copied_segments: int = 0  # RemoteCopyRequests
    copied_bytes: int = 0  # RemoteCopyBytes
    failed_copies: int = 0  # RemoteCopyErrors
    deleted_segments: int = 0  # RemoteDeleteRequests
    failed_deletes: int = 0  # RemoteDeleteErrors
    fetch_requests: int = 0  # RemoteFetchRequests
    fetch_bytes: int = 0  # RemoteFetchBytes
    failed_fetches: int = 0  # RemoteFetchErrors


class RemoteLogManager:
    def __init__(self, config: KafkaConfig, rsm: RemoteStorageManager, rlmm: TopicBasedRemoteLogMetadataManager,
                 log_manager: LogManager, *, broker_id: int, clock_ms: Callable[[], int],
                 checkpoint_log_start_offsets: Callable[[], Awaitable[None]] | None = None) -> None:
        self.config = config
        self.rsm = rsm
        self.rlmm = rlmm
        self.log_manager = log_manager
        self.broker_id = broker_id
        self.clock_ms = clock_ms
        # Writes log-start-offset-checkpoint; awaited before remote files are deleted.
        self.checkpoint_log_start_offsets = checkpoint_log_start_offsets
        threads = max(1, min(config.remote_log_manager_copier_thread_pool_size, 4))
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="remote-log-manager")
        # Fetches that read remote storage (remote.log.reader.threads), apart from the copies.
        self._readers = ThreadPoolExecutor(max_workers=max(1, config.remote_log_reader_threads),
                                           thread_name_prefix="remote-log-reader")
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._running: asyncio.Future[None] | None = None
        self._copying: set[uuid.UUID] = set()
        self._copying_stopped: set[TopicIdPartition] = set()  # partitions whose remote log is being deleted
        self._background: set[asyncio.Future[None]] = set()
        self._failures: dict[TopicIdPartition, tuple[int, float]] = {}  # consecutive failures, retry at
        self._index_cache: OrderedDict[tuple[uuid.UUID, IndexType], bytes] = OrderedDict()
        self._index_lock = threading.Lock()
        self._index_cache_bytes = 0
        self.stats = RemoteLogManagerStats()
        self._stats_lock = threading.Lock()  # reads count from IO threads

    # -- lifecycle -------------------------------------------------------------------------------
    async def startup(self) -> None:
        """Replay `__remote_log_metadata`, give each tiered log its highest remote offset, and
        start the periodic tasks."""
        await self.rlmm.load()
        for partition_log in self._tiered_logs():
            tip = self._tip(partition_log)
            if tip is not None:
                partition_log.update_highest_offset_in_remote_storage(self.rlmm.highest_offset_in_remote_storage(tip))
        orphans = self._orphaned_partitions()
        if orphans:  # a partition deletion the last run did not finish
            log.info("[RemoteLogManager=%d] Deleting the remote segments of %d partition(s) no longer tiered here: %s",
                     self.broker_id, len(orphans), ", ".join(describe(t) for t in orphans))
            await self._delete_partitions(orphans)
        self._task = asyncio.create_task(self._loop(), name="remote-log-manager")
        log.info("RemoteLogManager started: %s, task interval %d ms", type(self.rsm).__name__,
                 self.config.remote_log_manager_task_interval_ms)

    async def shutdown(self) -> None:
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - stopping
                pass
        await asyncio.get_running_loop().run_in_executor(None, self._executor.shutdown, True)
        await asyncio.get_running_loop().run_in_executor(None, self._readers.shutdown, True)
        self.rsm.close()

    async def _loop(self) -> None:
        interval = self.config.remote_log_manager_task_interval_ms / 1000
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), interval)
            except asyncio.TimeoutError:
                pass
            self._wake.clear()
            try:
                await self.run_once()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - the next round tries again
                log.exception("RemoteLogManager task failed")

    async def run_once(self) -> None:
        """One round of copy and expiration over every tiered partition (the periodic task, and
        the test lever). Concurrent callers share one round."""
        if self._running is not None:
            await asyncio.shield(self._running)
            return
        self._running = asyncio.get_running_loop().create_future()
        try:
            for partition_log in self._tiered_logs():
                tip = self._tip(partition_log)
                if tip is None:
                    continue
                if tip in self._copying_stopped:
                    continue
                if not partition_log.config.remote_log_copy_disable and self._may_retry(tip):
                    await self._copy_partition(partition_log, tip)
                await self._expire_partition(partition_log, tip)
        finally:
            self._running.set_result(None)
            self._running = None

    def _tiered_logs(self) -> list[Log]:
        return [partition_log for partition_log in self.log_manager.all_logs()
                if partition_log.remote_log_enabled and not partition_log.is_closed]

    @staticmethod
    def _tip(partition_log: Log) -> TopicIdPartition | None:
        if partition_log.topic_id is None:
            return None
        tp = partition_log.topic_partition
        return TopicIdPartition(partition_log.topic_id, tp.topic, tp.partition)

    def remote_fetch_max_wait_ms(self) -> int:
        """remote.fetch.max.wait.ms as in force (dynamic)."""
        return int(self.config.effective("remote.fetch.max.wait.ms"))

    async def run_reader(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a fetch's read on the remote reader threads."""
        return await asyncio.get_running_loop().run_in_executor(self._readers, fn, *args)

    async def _blocking(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    def _may_retry(self, tip: TopicIdPartition) -> bool:
        failure = self._failures.get(tip)
        return failure is None or time.monotonic() >= failure[1]

    def _record_failure(self, tip: TopicIdPartition) -> None:
        count = self._failures.get(tip, (0, 0.0))[0] + 1
        backoff_ms = min(self.config.remote_log_manager_task_retry_backoff_ms * 2 ** (count - 1),
                         self.config.remote_log_manager_task_retry_backoff_max_ms)
        self._failures[tip] = (count, time.monotonic() + backoff_ms / 1000)
        self.stats.failed_copies += 1

    def partition_gauges(self) -> dict[str, tuple[int, int, int]]:
        """Per topic: remote log size, and the bytes and segments rolled but not yet copied
        (Kafka's RemoteLogSizeBytes, RemoteCopyLagBytes, RemoteCopyLagSegments)."""
        out: dict[str, tuple[int, int, int]] = {}
        for partition_log in self._tiered_logs():
            tip = self._tip(partition_log)
            if tip is None:
                continue
            highest = partition_log.highest_offset_in_remote_storage
            lagging = [s.size() for s in partition_log.segments.values()[:-1] if s.base_offset > highest]
            size, lag_bytes, lag_segments = out.get(tip.topic, (0, 0, 0))
            out[tip.topic] = (size + self.rlmm.remote_log_size(tip), lag_bytes + sum(lagging),
                              lag_segments + len(lagging))
        return out

    # -- copy ------------------------------------------------------------------------------------
    async def _copy_partition(self, partition_log: Log, tip: TopicIdPartition) -> None:
        """Kafka's copyLogSegmentsToRemote: the rolled segments past the highest remote offset
        whose every record is below the last stable offset, oldest first, as long as
        remote.copy.lag.ms / .bytes let them go (candidateLogSegments)."""
        from_offset = max(partition_log.highest_offset_in_remote_storage + 1, partition_log.local_log_start_offset)
        lso = partition_log.last_stable_offset
        segments = [s for s in partition_log.segments.values() if s.base_offset >= from_offset]
        total_size = sum(s.size() for s in segments)
        copied_size = 0
        now = self.clock_ms()
        for segment, next_segment in zip(segments, segments[1:]):
            if next_segment.base_offset > lso or tip in self._copying_stopped or not partition_log.remote_log_enabled:
                break
            copied_size += segment.size()
            if not _eligible_for_upload(partition_log.config, segment, now, total_size, copied_size):
                break
            try:
                await self._copy_segment(partition_log, tip, segment, next_segment.base_offset)
            except RemoteStorageError as exc:
                self._record_failure(tip)
                log.warning("[RemoteLogManager=%d partition=%s] Error occurred while copying log segments of "
                            "partition %s; retrying after back-off: %s", self.broker_id, describe(tip), describe(tip), exc)
                return
            self._failures.pop(tip, None)

    async def _copy_segment(self, partition_log: Log, tip: TopicIdPartition, segment: Any, next_base: int) -> None:
        end_offset = next_base - 1
        epochs = [(epoch, offset) for epoch, offset in partition_log.leader_epoch_cache.entries() if offset < next_base]
        segment_epochs = _segment_leader_epochs(epochs, segment.base_offset)
        txn_index = segment.txn_index
        txn_empty = not txn_index.path.exists() or txn_index.path.stat().st_size == 0
        snapshot = partition_log.dir / snapshot_file_name(next_base)
        if not snapshot.exists():
            # Rolls snapshot producer state at the next segment's base; a log recovered from
            # an older format may lack one: an empty snapshot says "no producers known here".
            await self._blocking(_write_empty_producer_snapshot, snapshot)
        metadata = RemoteLogSegmentMetadata(
            RemoteLogSegmentId(tip, uuid.uuid4()), segment.base_offset, end_offset, self.broker_id,
            segment.max_timestamp_so_far, self.clock_ms(), segment_epochs, segment.size(),
            RemoteLogSegmentState.COPY_SEGMENT_STARTED, None, txn_empty)
        data = LogSegmentData(segment.log.path, segment.offset_index.path, segment.time_index.path,
                              None if txn_empty else txn_index.path, snapshot,
                              LeaderEpochCheckpointFile.encode(epochs))
        log.info("[RemoteLogManager=%d partition=%s] Copying %s to remote storage.", self.broker_id, describe(tip),
                 segment.log.path.name)
        await self.rlmm.add_remote_log_segment_metadata(metadata)
        self._copying.add(metadata.segment_id.id)
        try:
            started = time.monotonic()
            custom = await self._blocking(self.rsm.copy_log_segment_data, metadata, data)
            fault_injection.fault_point("remote.copy")  # copied, COPY_SEGMENT_FINISHED not yet written
            await self._throttle(metadata.segment_size_in_bytes, time.monotonic() - started)
            await self.rlmm.update_remote_log_segment_metadata(RemoteLogSegmentMetadataUpdate(
                metadata.segment_id, self.broker_id, self.clock_ms(), RemoteLogSegmentState.COPY_SEGMENT_FINISHED,
                custom))
        finally:
            self._copying.discard(metadata.segment_id.id)
        partition_log.update_highest_offset_in_remote_storage(end_offset)
        self.stats.copied_segments += 1
        self.stats.copied_bytes += metadata.segment_size_in_bytes
        log.info("[RemoteLogManager=%d partition=%s] Copied %s to remote storage with segment-id: %s",
                 self.broker_id, describe(tip), segment.log.path.name, uuid_to_base64(metadata.segment_id.id))

    async def _throttle(self, copied: int, took_s: float) -> None:
        """remote.log.manager.copy.max.bytes.per.second: wait out what the copy ran ahead."""
        rate = int(self.config.effective("remote.log.manager.copy.max.bytes.per.second"))  # dynamic
        due = copied / rate - took_s if rate > 0 else 0
        if due > 0:
            await asyncio.sleep(due)

    # -- expiration ------------------------------------------------------------------------------
    async def _expire_partition(self, partition_log: Log, tip: TopicIdPartition) -> None:
        """Kafka's cleanupExpiredRemoteLogSegments: dangling copies and deletes first, then the
        retention rules on the copied segments, oldest first, and the log start offset after them."""
        for metadata in self.rlmm.list_remote_log_segments(tip):
            if ((metadata.state == RemoteLogSegmentState.COPY_SEGMENT_STARTED
                 and metadata.segment_id.id not in self._copying)
                    or metadata.state == RemoteLogSegmentState.DELETE_SEGMENT_STARTED):
                await self._delete_remote_segment(metadata, "dangling")
        copied = self.rlmm.copied_segments(tip)
        if not copied:
            return
        config = partition_log.config
        now = self.clock_ms()
        log_start = partition_log.log_start_offset
        remaining = -1
        if config.retention_bytes >= 0:
            local_only = sum(s.size() for s in partition_log.segments.values()
                             if s.base_offset > partition_log.highest_offset_in_remote_storage)
            remaining = sum(m.segment_size_in_bytes for m in copied) + local_only - config.retention_bytes
        new_log_start = log_start
        durable_log_start: int | None = None  # unknown: DeleteRecords may have moved it a moment ago
        for metadata in copied:
            if metadata.end_offset < log_start:
                reason = f"log start offset {log_start} breach"
            elif config.retention_ms >= 0 and metadata.max_timestamp_ms <= now - config.retention_ms:
                reason = f"retention time {config.retention_ms}ms breach"
            elif remaining >= metadata.segment_size_in_bytes:
                remaining -= metadata.segment_size_in_bytes
                reason = f"retention size {config.retention_bytes} breach"
            else:
                break
            new_log_start = max(new_log_start, metadata.end_offset + 1)
            if new_log_start > log_start:
                # The log start moves first: a fetch never reaches a segment being deleted.
                await self._blocking(partition_log.maybe_increment_log_start_offset,
                                     min(new_log_start, partition_log.high_watermark), "segment deletion")
                log_start = partition_log.log_start_offset
            if log_start != durable_log_start and self.checkpoint_log_start_offsets is not None:
                # Deleted data is never re-exposed: the log start past this segment is on disk
                # before its remote files go, so a crash in between cannot bring it back as the
                # start of a log whose first records are gone.
                await self.checkpoint_log_start_offsets()
                durable_log_start = log_start
            await self._delete_remote_segment(metadata, reason)

    async def _delete_remote_segment(self, metadata: RemoteLogSegmentMetadata, reason: str) -> None:
        sid = metadata.segment_id
        if metadata.state != RemoteLogSegmentState.DELETE_SEGMENT_STARTED:
            await self.rlmm.update_remote_log_segment_metadata(RemoteLogSegmentMetadataUpdate(
                sid, self.broker_id, self.clock_ms(), RemoteLogSegmentState.DELETE_SEGMENT_STARTED))
        try:
            await self._blocking(self.rsm.delete_log_segment_data, metadata)
            fault_injection.fault_point("remote.delete")  # deleted, DELETE_SEGMENT_FINISHED not yet written
        except RemoteStorageError as exc:
            self.stats.failed_deletes += 1
            log.warning("[RemoteLogManager=%d partition=%s] Failed to delete remote segment %s; retrying in the next "
                        "round: %s", self.broker_id, describe(sid.topic_id_partition), uuid_to_base64(sid.id), exc)
            return
        await self.rlmm.update_remote_log_segment_metadata(RemoteLogSegmentMetadataUpdate(
            sid, self.broker_id, self.clock_ms(), RemoteLogSegmentState.DELETE_SEGMENT_FINISHED))
        with self._index_lock:
            for index_type in IndexType:
                self._index_cache_bytes -= len(self._index_cache.pop((sid.id, index_type), b""))
        self.stats.deleted_segments += 1
        log.info("[RemoteLogManager=%d partition=%s] Deleted remote log segment %s (offsets %d-%d) due to %s",
                 self.broker_id, describe(sid.topic_id_partition), uuid_to_base64(sid.id), metadata.start_offset, metadata.end_offset, reason)

    def stop_partitions(self, tips: list[TopicIdPartition], *, delete: bool) -> None:
        """Topic deletion, or remote.storage.enable turned off with remote.log.delete.on.disable
        (Kafka's stopPartitions): no more copies, and with `delete` every remote segment of the
        partitions goes, in the background: DELETE_SEGMENT_STARTED for all of them first, then
        each one's files and its DELETE_SEGMENT_FINISHED, as Kafka 4.4 writes them. A restart
        in between finishes the job (`startup`)."""
        if not delete or not tips:
            return
        self._copying_stopped.update(tips)
        task = asyncio.ensure_future(self._delete_partitions(tips))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _delete_partitions(self, tips: list[TopicIdPartition]) -> None:
        try:
            for tip in tips:
                segments = self.rlmm.list_remote_log_segments(tip)
                for metadata in segments:
                    if metadata.state != RemoteLogSegmentState.DELETE_SEGMENT_STARTED:
                        await self.rlmm.update_remote_log_segment_metadata(RemoteLogSegmentMetadataUpdate(
                            metadata.segment_id, self.broker_id, self.clock_ms(),
                            RemoteLogSegmentState.DELETE_SEGMENT_STARTED))
                for metadata in self.rlmm.list_remote_log_segments(tip):
                    await self._delete_remote_segment(metadata, "partition deletion")
                if segments:
                    log.info("[RemoteLogManager=%d partition=%s] Deleted the %d remote segment(s) of the partition",
                             self.broker_id, describe(tip), len(segments))
        except Exception:  # noqa: BLE001 - finished at the next start
            log.exception("[RemoteLogManager=%d] Failed to delete the remote logs of %s", self.broker_id,
                          ", ".join(describe(t) for t in tips))
        finally:
            self._copying_stopped.difference_update(tips)

    def _orphaned_partitions(self) -> list[TopicIdPartition]:
        """Partitions with remote segments and no tiered log here: their topic was deleted, or
        its remote storage turned off, before the deletion of their segments finished."""
        out = []
        for tip in self.rlmm.partition_ids():
            partition_log = self.log_manager.get_log(TopicPartition(tip.topic, tip.partition))
            if partition_log is None or partition_log.topic_id != tip.topic_id or not partition_log.remote_log_enabled:
                out.append(tip)
        return out

    # -- reads (blocking: on an IO thread) -------------------------------------------------------
    def read(self, partition_log: Log, fetch_offset: int, max_bytes: int, *, min_one_message: bool,
             read_committed: bool) -> RemoteRead:
        """A fetch below the local log start (see `_read`), counted in the fetch metrics."""
        try:
            got = self._read(partition_log, fetch_offset, max_bytes, min_one_message=min_one_message,
                             read_committed=read_committed)
        except Exception:
            with self._stats_lock:
                self.stats.fetch_requests += 1
                self.stats.failed_fetches += 1
            raise
        with self._stats_lock:
            self.stats.fetch_requests += 1
            self.stats.fetch_bytes += len(got.records)
        return got

    def _read(self, partition_log: Log, fetch_offset: int, max_bytes: int, *, min_one_message: bool,
              read_committed: bool) -> RemoteRead:
        """Records from `fetch_offset`, below the local log start: the first batch holding or
        following it, then the following whole batches of that remote segment within `max_bytes`
        (a whole first batch however large when `min_one_message`), as locally (KD-215)."""
        tip = self._tip(partition_log)
        metadata = self.rlmm.segment_for_offset(tip, fetch_offset) if tip is not None else None
        if metadata is None:
            raise OffsetOutOfRangeError(
                f"Received request for offset {fetch_offset} for partition {partition_log.topic_partition}, which "
                f"does not exist in remote tiered storage.")
        position = self._lookup_position(metadata, fetch_offset)
        # Every range ends within the segment: a read reaching its end (a consumer's fetch, most
        # often) never asks the store for the bytes past it, which over S3 was a second GET per
        # read, answered 416.
        segment_end = metadata.segment_size_in_bytes if metadata.segment_size_in_bytes > 0 else 1 << 62

        def fetch(start: int, end: int) -> bytes:
            """Bytes [start, end) of the segment, cut at its end."""
            end = min(end, segment_end)
            return self.rsm.fetch_log_segment(metadata, start, end - 1) if start < end else b""

        window = fetch(position, position + max(max_bytes, 0) + _INDEX_SLACK)
        at = 0
        while True:
            # A bad header raises (CorruptRecordError) rather than stepping by its length.
            stop = walk_batch_lengths(window, at, 1 << 62, fetch_offset)
            if stop.found:
                break
            if stop.position == 0:
                return RemoteRead(b"", [] if read_committed else None)  # past the segment's last whole header
            # The next header is cut by the window's end, or lies past it (the walk stepped over
            # batches it did not hold): the window moves there, rather than growing by bytes no
            # one reads.
            position += stop.position
            window = fetch(position, position + max(max_bytes, 0) + _INDEX_SLACK)
            at = 0
        at, first_size = stop.position, stop.size
        if first_size > max_bytes and not min_one_message:
            return RemoteRead(b"", [] if read_committed else None)
        take = max(max_bytes, first_size) if min_one_message else max_bytes
        end = at + take
        if end > len(window):
            window += fetch(position + len(window), position + end)
        if first_size < take and end <= len(window) and position + end < segment_end:
            # The limit falls after the first batch, before the segment's end: no piece of a batch.
            end = self._last_whole_batch_end(metadata, window, position, at, end)
        records = bytes(window[at:end])
        aborted = None
        if read_committed:
            upper = self._upper_bound_offset(metadata, position + end)
            aborted = self._aborted_transactions(tip, metadata, fetch_offset, upper)  # type: ignore[arg-type]
        return RemoteRead(records, aborted)

    def find_offset_by_timestamp(self, partition_log: Log, timestamp: int) -> tuple[int, int] | None:
        """ListOffsets by time on a tiered log: the first record at or after the log start
        offset with a timestamp at least `timestamp`, searched in the copied remote segments
        (their time and offset indexes, then their batches); None when none has one, and
        the local segments are searched next (Kafka's findOffsetByTimestamp)."""
        tip = self._tip(partition_log)
        if tip is None:
            return None
        start = partition_log.log_start_offset
        for metadata in self.rlmm.copied_segments(tip):
            if metadata.end_offset < start or metadata.max_timestamp_ms < timestamp:
                continue
            position = self._lookup_position(metadata, max(self._lookup_timestamp(metadata, timestamp), start))
            found = self._search_segment(metadata, position, timestamp, start)
            if found is not None:
                return found
        return None

    def _lookup_timestamp(self, metadata: RemoteLogSegmentMetadata, timestamp: int) -> int:
        """The offset of the last time index entry at or below `timestamp` (the segment's start if none)."""
        index = self._index(metadata, IndexType.TIMESTAMP)
        found = metadata.start_offset
        for pos in range(0, len(index) - len(index) % 12, 12):
            ts, relative = _TIME_ENTRY.unpack_from(index, pos)
            if (ts == 0 and relative == 0 and pos > 0) or ts > timestamp:
                break  # preallocated zeroes, or past the target
            found = metadata.start_offset + relative
        return found

    def _search_segment(self, metadata: RemoteLogSegmentMetadata, position: int, timestamp: int,
                        start_offset: int) -> tuple[int, int] | None:
        end = metadata.segment_size_in_bytes
        while position < end:
            chunk = self.rsm.fetch_log_segment(metadata, position, min(end, position + _SEARCH_CHUNK) - 1)
            if len(chunk) < 12:
                return None
            at = 0
            for header, at in iter_batch_headers(chunk):
                found = search_batch_for_timestamp(header, chunk, at, timestamp, start_offset)
                if found is not None:
                    return (found.offset, found.timestamp)
                at += 12 + header.batch_length
            if at == 0:  # one batch larger than the chunk: fetch it whole
                if len(chunk) < BATCH_HEADER_SIZE:
                    return None  # a header cut by the segment's end (a whole one was checked above)
                _base, length = _BATCH_HEADER.unpack_from(chunk, 0)
                chunk = self.rsm.fetch_log_segment(metadata, position, position + 12 + length - 1)
                for header, pos in iter_batch_headers(chunk):
                    found = search_batch_for_timestamp(header, chunk, pos, timestamp, start_offset)
                    if found is not None:
                        return (found.offset, found.timestamp)
                at = 12 + length
            position += at
        return None

    def _upper_bound_offset(self, metadata: RemoteLogSegmentMetadata, limit: int) -> int:
        """Where the aborted transactions a read_committed remote read lists end, as a local read
        bounds them (Log._fetch_upper_bound_offset): the offset of the first index entry at or
        past byte `limit`, the end of the bytes read, else the segment's end. The records read
        are never parsed for it: past the first batch they are served as they are."""
        index = self._index(metadata, IndexType.OFFSET)
        following = _index_entry(index, _last_index_slot(index, lambda _relative, position: position < limit) + 1)
        return metadata.end_offset + 1 if following is None else metadata.start_offset + following[0]

    def _lookup_position(self, metadata: RemoteLogSegmentMetadata, offset: int) -> int:
        """The byte position of the last offset index entry at or below `offset` (0 if none)."""
        target = offset - metadata.start_offset
        return self._floor_position(metadata, lambda relative, _position: relative <= target)

    def _floor_position(self, metadata: RemoteLogSegmentMetadata, at_or_below: Callable[[int, int], bool]) -> int:
        """The byte position of the last offset index entry (relative offset, position) that
        `at_or_below` accepts (0 if none)."""
        index = self._index(metadata, IndexType.OFFSET)
        found = _index_entry(index, _last_index_slot(index, at_or_below))
        return 0 if found is None else found[1]

    def _last_whole_batch_end(self, metadata: RemoteLogSegmentMetadata, window: bytes, position: int, at: int,
                              end: int) -> int:
        """Where the last batch ending at or before `end` ends in `window` (segment bytes from
        `position`; a batch starts at `at` and ends before `end`): a header walk from the index
        entry below `end`, at most an index interval of batches (LogSegment.read's rule)."""
        limit = position + end
        pos = max(self._floor_position(metadata, lambda _relative, entry: entry <= limit) - position, at)
        return whole_batches_end(memoryview(window)[:end], pos)

    def _index(self, metadata: RemoteLogSegmentMetadata, index_type: IndexType) -> bytes:
        """Kafka's RemoteIndexCache, in memory: the most recently used indexes, by bytes."""
        key = (metadata.segment_id.id, index_type)
        with self._index_lock:
            cached = self._index_cache.get(key)
            if cached is not None:
                self._index_cache.move_to_end(key)
                return cached
        data = self.rsm.fetch_index(metadata, index_type)
        bound = min(_INDEX_CACHE_MAX_BYTES, int(self.config.effective("remote.log.index.file.cache.total.size.bytes")))
        with self._index_lock:
            self._index_cache_bytes += len(data) - len(self._index_cache.get(key, b""))  # two threads may both miss
            self._index_cache[key] = data
            while self._index_cache_bytes > bound and len(self._index_cache) > 1:
                _, evicted = self._index_cache.popitem(last=False)
                self._index_cache_bytes -= len(evicted)
        return data

    def _aborted_transactions(self, tip: TopicIdPartition, metadata: RemoteLogSegmentMetadata, fetch_offset: int,
                              upper_bound: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [fetch_offset, upper_bound) from the remote
        transaction indexes of this segment and the later copied ones."""
        out: list[AbortedTxn] = []
        for m in self.rlmm.copied_segments(tip):
            if m.end_offset < metadata.start_offset or m.txn_index_empty:
                continue
            try:
                data = self._index(m, IndexType.TRANSACTION)
            except RemoteResourceNotFoundError:
                continue
            out.extend(txn for txn in parse_aborted_txns(data, m.segment_id)
                       if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound)
            if m.end_offset >= upper_bound:
                break
        return out


def _index_entry(index: bytes, slot: int) -> tuple[int, int] | None:
    """Offset index entry `slot` (relative offset, position); None past the last entry: past
    the bytes, or among the preallocated zeroes that follow it."""
    if slot < 0 or (slot + 1) * 8 > len(index):
        return None
    relative, position = _INDEX_ENTRY.unpack_from(index, slot * 8)
    return None if relative == 0 and position == 0 and slot > 0 else (relative, position)


def _last_index_slot(index: bytes, accepts: Callable[[int, int], bool]) -> int:
    """The slot of the last offset index entry that `accepts` takes (-1 if none): a binary
    search, since offsets and positions grow together."""
    lo, hi, found = 0, len(index) // 8 - 1, -1
    while lo <= hi:
        mid = (lo + hi) // 2
        entry = _index_entry(index, mid)
        if entry is not None and accepts(*entry):
            found, lo = mid, mid + 1
        else:
            hi = mid - 1
    return found


def describe(tip: TopicIdPartition) -> str:
    """As Kafka prints a TopicIdPartition: `<topic id>:<topic>-<partition>`."""
    return f"{uuid_to_base64(tip.topic_id)}:{tip.topic}-{tip.partition}"


def _eligible_for_upload(config: LogConfig, segment: LogSegment, now_ms: int, total_size: int,
                         cumulative_size: int) -> bool:
    """remote.copy.lag.ms / .bytes (Kafka's isEligibleForUpload): with both set (neither 0), a
    segment waits until it is old enough by its largest timestamp, or until the bytes after it
    reach the size lag; either -1 means that rule never lets it go."""
    lag_ms, lag_bytes = config.remote_copy_lag_ms, config.remote_copy_lag_bytes
    if lag_ms == 0 or lag_bytes == 0:
        return True
    if lag_ms > 0:
        age = now_ms - segment.largest_timestamp()
        if age < 0 or age >= lag_ms:
            return True
    return lag_bytes > 0 and total_size - cumulative_size >= lag_bytes


def _segment_leader_epochs(epochs: list[tuple[int, int]], base_offset: int) -> tuple[tuple[int, int], ...]:
    """The epochs that lead records of the segment: the one in force at its base offset (starting
    there), then those starting inside it."""
    before = [e for e in epochs if e[1] <= base_offset]
    inside = [e for e in epochs if e[1] > base_offset]
    first = [(before[-1][0], base_offset)] if before else []
    return tuple(first + inside)


def _write_empty_producer_snapshot(path: Path) -> None:
    path.write_bytes(empty_snapshot())
