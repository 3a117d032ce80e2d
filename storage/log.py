"""Log: Kafka's UnifiedLog + LocalLog for one partition.

Offsets: log start offset <= last stable offset <= high watermark <= log end offset, and the
log always has at least one segment. All mutations hold `self._lock` (one writer); reads take
snapshots of the offset metadata and segment list and never block on the writer.

`offsets_generation` goes up before and after every change of what `fetch_offsets` returns, and
when the log closes: it is odd while a change is under way. A reader that took an even value
before the offsets knows, while it is unchanged, that a read at the same offset would find the
same (fetch_offsets keeps its answer on that, and an incremental fetch session skips its idle
partitions, asyncbroker.fetch_session). Writers run on other threads than the readers, and a
change can take milliseconds (retention writes checkpoints between moving the log start offset
and finishing): were the value to move only after it, a reader could be answered from before a
change that another request had already seen. It is an OffsetsGeneration apart from the Log, so
that such a watcher never keeps a deleted log, and its open files, alive.
"""
from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator, Literal

import msgspec

from storage import fault_injection
from storage.atomic_file import fsync_dir
from storage.clock import SYSTEM_CLOCK, Clock
from storage.errors import AppendWouldBlock, KafkaStorageError
from storage.leader_epoch_cache import LEADER_EPOCH_CHECKPOINT_FILE, LeaderEpochCheckpointFile, LeaderEpochFileCache
from storage.log_dir_failure_channel import LogDirFailureChannel
from storage.log_file_utils import CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX
from storage.log_config import LogConfig
from storage.log_loader import LogLoader
from storage.log_segment import LogSegment, RollParams
from storage.log_segments import LogSegments
from storage.fetch_data_info import FetchDataInfo
from storage.log_append_info import LogAppendInfo
from storage.log_offset_metadata import LogOffsetMetadata
from storage.log_validator import LogValidator, header_to_restore, restore_header
from storage.offset_index import OffsetPosition
from storage.partition_metadata import PartitionMetadataFile
from storage.producer_state_manager import ProducerStateManager
from storage.topic_name import is_internal
from storage.topic_partition import TopicPartition
from storage.transaction_index import AbortedTxn
from wire.errors import OffsetOutOfRangeError, RecordBatchTooLargeError
from wire.records import TRANSACTIONAL_FLAG_MASK, BatchHeader

logger = logging.getLogger(__name__)

Isolation = Literal["read_uncommitted", "read_committed", "log_end"]

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5


def _handles_io_errors(operation: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Kafka's maybeHandleIOException: an OSError (ENOSPC, EIO...) in a log operation takes the
    whole log dir offline through the LogDirFailureChannel and surfaces as KafkaStorageError
    (KAFKA_STORAGE_ERROR to clients) instead of leaving a half-applied change in service."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def inner(self: "Log", *args: Any, **kwargs: Any) -> Any:
            try:
                return fn(self, *args, **kwargs)
            except OSError as exc:
                raise self._log_dir_failure(exc, operation) from exc

        return inner

    return wrap


def _remote_log_enabled(dir: Path, config: LogConfig, system_enable: bool) -> bool:
    return system_enable and config.remote_storage_enable and not is_internal(
        TopicPartition.from_dir_name(Path(dir).name).topic)


class OffsetsGeneration:
    """A log's count of changes to what a fetch of it reports, odd during one (see the module doc)."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


class Log:
    """One partition's log. Create through `Log.open` (which runs LogLoader) or LogManager."""

    # A broker holds a Log per partition (50 for __consumer_offsets alone): slots keep each
    # one's attributes out of an instance dict.
    __slots__ = ("dir", "topic_partition", "config", "_validator", "validation_is_per_batch", "_segment_size",
                 "segments", "clock", "leader_epoch_cache", "producer_state_manager", "background",
                 "roll_listener", "_lock", "_log_start_offset", "_recovery_point", "_next_offset_metadata",
                 "_high_watermark", "offsets_generation", "_fetch_offsets_at", "_last_flushed_ms", "_closed",
                 "_pending_deletes", "log_dir_failure_channel", "_flush_cond", "_flushing", "_dir_needs_fsync",
                 "partition_metadata_file", "topic_id", "remote_storage_system_enable",
                 "_highest_offset_in_remote_storage")

    def __init__(self, dir: Path, config: LogConfig, segments: LogSegments, *, log_start_offset: int,
                 recovery_point: int, next_offset_metadata: LogOffsetMetadata, clock: Clock,
                 leader_epoch_cache: LeaderEpochFileCache, producer_state_manager: ProducerStateManager,
                 topic_id: uuid.UUID | None = None,
                 background: Callable[[Callable[[], None]], None] | None = None,
                 log_dir_failure_channel: LogDirFailureChannel | None = None,
                 roll_listener: Callable[["Log"], None] | None = None) -> None:
        self.dir = Path(dir)
        self.topic_partition = TopicPartition.from_dir_name(self.dir.name)
        self._apply_config(config)
        self.segments = segments
        self.clock = clock
        self.leader_epoch_cache = leader_epoch_cache
        self.producer_state_manager = producer_state_manager
        self.background = background
        # Told of each roll, under the log's lock (LogManager: a compacted log's first
        # non-active segment is the cleaner's first work).
        self.roll_listener = roll_listener
        self._lock = threading.RLock()
        self._log_start_offset = log_start_offset
        self._recovery_point = recovery_point
        self._next_offset_metadata = next_offset_metadata
        self._high_watermark = LogOffsetMetadata(log_start_offset)
        self.offsets_generation = OffsetsGeneration()
        # fetch_offsets() as it was at a generation (-1: never taken).
        self._fetch_offsets_at: tuple[int, tuple[int, int, int, int]] = (-1, (0, 0, 0, 0))
        self._last_flushed_ms = clock.milliseconds()
        self._closed = False
        self._pending_deletes: list[tuple[LogSegment, int]] = []
        self.log_dir_failure_channel = log_dir_failure_channel
        # Group commit (flush.messages): one fsync at a time; appends that land while it runs
        # wait for it, then share the next one. Made under the lock by the first append that
        # must be durable: most logs never fsync on append and need none.
        self._flush_cond: threading.Condition | None = None
        self._flushing = False
        self._dir_needs_fsync = False  # a segment file was created since the last dir fsync
        self.partition_metadata_file = PartitionMetadataFile(self.dir)
        self.topic_id = topic_id
        if topic_id is None:
            self.topic_id = self.partition_metadata_file.read()
        elif self.partition_metadata_file.read() != topic_id:
            self.partition_metadata_file.write(topic_id)
        # Single node: everything appended is replicated, so the HW is the LEO.
        self._high_watermark = next_offset_metadata
        # Tiered storage (KIP-405): remote.log.storage.system.enable, set by the LogManager, and
        # the last offset already in remote storage (-1: none), which the RemoteLogManager
        # raises after each copy and local retention reads: only copied segments go locally.
        self.remote_storage_system_enable = False
        self._highest_offset_in_remote_storage = -1

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def open(cls, dir: Path | str, config: LogConfig | None = None, *, clock: Clock = SYSTEM_CLOCK,
             log_start_offset: int = 0, recovery_point: int = 0, had_clean_shutdown: bool = False,
             topic_id: uuid.UUID | None = None,
             background: Callable[[Callable[[], None]], None] | None = None,
             log_dir_failure_channel: LogDirFailureChannel | None = None,
             roll_listener: Callable[["Log"], None] | None = None,
             remote_storage_system_enable: bool = False, defer_epoch_checkpoint: bool = False) -> "Log":
        """Open (creating if needed) the log in `dir`, recovering it as LogLoader does.

        The load truncates the leader epochs to the log (Kafka's truncateFromEnd); with
        `defer_epoch_checkpoint` their checkpoint is left to the caller's
        `leader_epoch_cache.flush()`, after it has assigned its own epoch: an empty log's
        epoch, dropped by the load and assigned again, is then not written twice."""
        dir = Path(dir)
        config = config or LogConfig()
        dir.mkdir(parents=True, exist_ok=True)
        epoch_cache = LeaderEpochFileCache(LeaderEpochCheckpointFile(dir / LEADER_EPOCH_CHECKPOINT_FILE))
        producer_state = ProducerStateManager(dir)
        segments = LogSegments()
        offsets = LogLoader(dir, config, clock, segments, log_start_offset_checkpoint=log_start_offset,
                            recovery_point_checkpoint=recovery_point, had_clean_shutdown=had_clean_shutdown,
                            leader_epoch_cache=epoch_cache, producer_state_manager=producer_state,
                            remote_log_enabled=_remote_log_enabled(dir, config, remote_storage_system_enable)).load()
        log = cls(dir, config, segments, log_start_offset=offsets.log_start_offset,
                  recovery_point=offsets.recovery_point, next_offset_metadata=offsets.next_offset_metadata,
                  clock=clock, leader_epoch_cache=epoch_cache, producer_state_manager=producer_state,
                  topic_id=topic_id, background=background, log_dir_failure_channel=log_dir_failure_channel,
                  roll_listener=roll_listener)
        log.remote_storage_system_enable = remote_storage_system_enable
        if not defer_epoch_checkpoint:
            epoch_cache.flush()
        return log

    # -- offsets --------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.dir.name

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def local_log_start_offset(self) -> int:
        """The first offset on local disk. Below the log start offset only on a tiered log,
        whose older segments are in remote storage."""
        first = self.segments.first_segment()
        return max(first.base_offset, self._log_start_offset) if first is not None else self._log_start_offset

    @property
    def remote_log_enabled(self) -> bool:
        """Kafka's UnifiedLog.remoteLogEnabled: the broker has tiered storage, the topic asks for
        it, and it is not an internal topic."""
        return _remote_log_enabled(self.dir, self.config, self.remote_storage_system_enable)

    @property
    def _tiered_and_copying(self) -> bool:
        """Kafka's remoteLogEnabledAndRemoteCopyEnabled: local retention waits for copies and
        uses local.retention.*; with remote.log.copy.disable it is plain retention again."""
        return self.remote_log_enabled and not self.config.remote_log_copy_disable

    @property
    def highest_offset_in_remote_storage(self) -> int:
        return self._highest_offset_in_remote_storage

    def forget_remote_storage(self) -> None:
        """Remote storage was turned off and its segments deleted: nothing of this log is remote."""
        with self._lock:
            self._highest_offset_in_remote_storage = -1

    def update_highest_offset_in_remote_storage(self, offset: int) -> None:
        """Called after a segment's copy is confirmed (or from the metadata at start); never
        moves back."""
        with self._lock:
            if offset > self._highest_offset_in_remote_storage:
                self._highest_offset_in_remote_storage = offset

    @property
    def log_end_offset(self) -> int:
        return self._next_offset_metadata.message_offset

    @property
    def log_end_offset_metadata(self) -> LogOffsetMetadata:
        return self._next_offset_metadata

    @property
    def high_watermark(self) -> int:
        return self._high_watermark.message_offset

    @property
    def last_stable_offset(self) -> int:
        return self.fetch_offsets()[1]

    def fetch_offsets(self) -> tuple[int, int, int, int]:
        """(high watermark, last stable offset, log start offset, log end offset) in one call: a
        fetch reports the first three for every partition it names, and compares its offset
        with the end (one call, not four properties, per partition of a 1,000-partition fetch).

        Kept from one call to the next while the offsets generation stays: it moves before and
        after every change of these offsets, so a value taken at an even generation holds until it
        moves. One taken mid-change (odd) is what a read a moment earlier or later would have
        found, and is not kept."""
        generation = self.offsets_generation.value  # before the offsets (a change moves it first)
        taken_at, offsets = self._fetch_offsets_at
        if taken_at == generation:
            return offsets
        hw = self._high_watermark.message_offset
        first_unstable = self.producer_state_manager.first_unstable_offset()
        lso = hw if first_unstable is None or first_unstable > hw else first_unstable
        offsets = hw, lso, self._log_start_offset, self._next_offset_metadata.message_offset
        if not generation & 1:
            self._fetch_offsets_at = generation, offsets
        return offsets

    def _begin_offsets_change(self) -> bool:
        """Before the first write of an offset fetch_offsets() reports (under self._lock): the
        generation turns odd, so no reader keeps or reuses an answer from before the change.
        False when a change is under way already (a roll inside an append or a retention
        pass): the outer change ends it."""
        generation = self.offsets_generation
        if generation.value & 1:
            return False
        generation.value += 1
        return True

    def _end_offsets_change(self, began: bool) -> None:
        if began:
            self.offsets_generation.value += 1

    @contextlib.contextmanager
    def _offsets_change(self) -> Iterator[None]:
        """One change of what fetch_offsets() reports, between _begin_offsets_change and
        _end_offsets_change (the append path calls those itself: this costs a generator)."""
        began = self._begin_offsets_change()
        try:
            yield
        finally:
            self._end_offsets_change(began)

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def size_in_bytes(self) -> int:
        return self.segments.size_in_bytes()

    @property
    def active_segment(self) -> LogSegment:
        return self.segments.active_segment()

    @property
    def num_segments(self) -> int:
        return len(self.segments)

    @property
    def unflushed_messages(self) -> int:
        return self.log_end_offset - self._recovery_point

    @property
    def last_flush_time(self) -> int:
        return self._last_flushed_ms

    def update_config(self, new: LogConfig) -> None:
        with self._lock:
            self._apply_config(new)

    def _apply_config(self, config: LogConfig) -> None:
        """The config, and what every append derives from it, derived once per config."""
        self.config = config
        self._validator = LogValidator(config)
        self.validation_is_per_batch = self._validator.per_batch
        self._segment_size = config.segment_size

    def assign_topic_id(self, topic_id: uuid.UUID) -> None:
        with self._lock:
            self.topic_id = topic_id
            self.partition_metadata_file.write(topic_id)

    # -- append ---------------------------------------------------------------------------------
    def append_as_leader(self, records: bytes | bytearray | memoryview, leader_epoch: int = 0, *,
                         origin: Literal["client", "coordinator"] = "client",
                         nonblocking: bool = False) -> LogAppendInfo:
        """Validate, assign offsets, write; the HW follows the LEO (single node).

        origin="coordinator" is the WriteTxnMarkers path: control batches are allowed.
        nonblocking=True is the event loop's fast path: rather than wait for the lock,
        roll a segment, write the leader-epoch checkpoint or fsync, it raises
        AppendWouldBlock with the log unchanged, and the caller appends from a thread.
        Writable `records` are the caller's to give: the append assigns offsets in them. A
        nonblocking one does so only in one batch, whose header it puts back before raising
        AppendWouldBlock (the caller appends the same records again, and those must still
        read as the producer sent them); other records it patches in a copy.
        """
        # _handles_io_errors' handling, written out: every Produce comes through here, and the
        # decorator's *args/**kwargs packing was a measurable part of a small one's time.
        try:
            return self._append_as_leader(records, leader_epoch, origin == "client", nonblocking)
        except OSError as exc:
            raise self._log_dir_failure(exc, "appending to the log") from exc

    def _append_as_leader(self, records: bytes | bytearray | memoryview, leader_epoch: int, from_client: bool,
                          nonblocking: bool) -> LogAppendInfo:
        if not self._lock.acquire(blocking=not nonblocking):
            raise AppendWouldBlock("the log is locked")
        began = False
        try:
            if self._closed:
                self._check_open()  # raises
            leo = self._next_offset_metadata.message_offset
            if len(records) == 0:
                return LogAppendInfo(leo, leo - 1, -1, -1, self._log_start_offset, 0, 0)
            now = self.clock.milliseconds()
            # Offsets are assigned in the caller's records, on the loop too where the patch can be
            # undone: the caller appends the same records again after AppendWouldBlock.
            saved = header_to_restore(records) if nonblocking else None
            try:
                result = self._validator.validate_and_assign_offsets(records, leo, now, leader_epoch,
                                                                     from_client=from_client,
                                                                     topic_partition=self.topic_partition,
                                                                     in_place=not nonblocking or saved is not None)
                data = result.records
                if len(data) > self._segment_size:
                    raise RecordBatchTooLargeError(
                        f"Message batch size is {len(data)} bytes in append to partition {self.topic_partition} "
                        f"which exceeds the maximum configured segment size of {self.config.segment_size}."
                    )
                psm = self.producer_state_manager
                batches = result.batches
                producers = None
                idempotent = transactional = False
                for header, _ in batches:  # one pass over the headers: producers, transactions
                    if header.producer_id >= 0:
                        idempotent = True
                    if header.attributes & TRANSACTIONAL_FLAG_MASK:
                        transactional = True
                if idempotent:
                    # Idempotence: sequence/epoch checks, and a retried batch answered with its first offsets.
                    producers = psm.analyze_append(batches, from_client=from_client)
                    if producers.duplicate is not None:
                        dup = producers.duplicate
                        return LogAppendInfo(dup.first_offset, dup.last_offset, dup.timestamp, dup.timestamp,
                                             self._log_start_offset, 0, 0)
                info = LogAppendInfo(result.first_offset, result.last_offset, result.max_timestamp,
                                     result.log_append_time, self._log_start_offset, result.num_messages, len(data),
                                     result.shallow_offset_of_max_timestamp)
                first_epoch = batches[0][0].partition_leader_epoch
                if nonblocking and self._append_would_sync(info, first_epoch, batches[0][0].base_offset):
                    # Checked before the first mutation of the log (the records' patch is undone).
                    raise AppendWouldBlock("the append would write a checkpoint or fsync")
                segment = self._maybe_roll(len(data), info, now, nonblocking=nonblocking)
            except AppendWouldBlock:
                if saved is not None:
                    restore_header(records, saved)  # the log is unchanged, and so are the records
                raise
            if first_epoch >= 0 and not nonblocking:  # all batches of an append carry the leader's epoch
                # (a nonblocking append has checked already that its epoch is not a new one)
                self.leader_epoch_cache.assign(first_epoch, batches[0][0].base_offset)
            if fault_injection.ARMED and fault_injection.hit("append.torn"):
                segment.log.append(memoryview(data)[: max(1, len(data) // 2)])
                fault_injection.crash()
            segment.append(info.last_offset, info.max_timestamp, info.shallow_offset_of_max_timestamp,
                           data, batches)
            if fault_injection.ARMED:
                fault_injection.fault_point("append")
            leo = info.last_offset + 1
            began = self._begin_offsets_change()
            self._update_log_end_offset(leo, segment)
            if producers is not None:
                psm.complete_append(producers, leo)
            else:
                psm.update_map_end_offset(leo)
            if transactional:
                self._track_transactions(batches, data, segment)
            self._high_watermark = self._next_offset_metadata
            durable_to = leo if leo - self._recovery_point >= self.config.flush_messages else 0
            if durable_to and self._flush_cond is None:
                self._flush_cond = threading.Condition(threading.Lock())
        finally:
            # After every offset above moved, and after an append that failed part-way too: the
            # generation must not stay odd (what fetch_offsets() keeps would never be kept again).
            self._end_offsets_change(began)
            self._lock.release()
        if durable_to:
            self._group_commit(durable_to)  # outside the lock: later appends join the next fsync
        return info

    def _append_would_sync(self, info: LogAppendInfo, leader_epoch: int, base_offset: int) -> bool:
        """Whether appending `info` would fsync (flush.messages) or checkpoint a new leader epoch
        (the epoch its first batch carries, from `base_offset`)."""
        if self.unflushed_messages + info.num_messages >= self.config.flush_messages:
            return True
        return leader_epoch >= 0 and self.leader_epoch_cache.is_new_epoch(leader_epoch, base_offset)

    def _track_transactions(self, batches: list[tuple[BatchHeader, int]], data: bytearray | memoryview,
                            segment: LogSegment) -> None:
        psm = self.producer_state_manager
        for header, pos in batches:
            if not header.is_transactional:
                continue
            completed = psm.update(header, data, pos)
            if completed is not None and completed.is_aborted:
                lso = psm.last_stable_offset_after(completed)
                segment.update_txn_index(psm.aborted(completed, lso))

    def _update_log_end_offset(self, offset: int, segment: LogSegment) -> None:
        self._next_offset_metadata = LogOffsetMetadata(offset, segment.base_offset, segment.size())

    @_handles_io_errors("assigning a leader epoch")
    def maybe_assign_epoch_start_offset(self, leader_epoch: int, start_offset: int) -> None:
        """This node became the partition's leader in `leader_epoch` from `start_offset`
        (Kafka's makeLeader): recorded and checkpointed now, so the epoch is on disk before
        any append in it, and the first append has no checkpoint to write. A no-op when the
        epoch is already the latest."""
        with self._lock:
            self._check_open()
            self.leader_epoch_cache.assign(leader_epoch, start_offset)

    # -- rolling --------------------------------------------------------------------------------
    def _maybe_roll(self, messages_size: int, info: LogAppendInfo, now: int, *,
                    nonblocking: bool = False) -> LogSegment:
        segment = self.segments.active_segment()
        params = RollParams(self.config.segment_ms, self._segment_size, info.max_timestamp,
                            info.last_offset, messages_size, now)
        if segment.should_roll(params):
            if nonblocking:
                raise AppendWouldBlock("the append would roll a segment")  # file creates, index resizes
            return self._roll_locked(info.first_offset)
        return segment

    @_handles_io_errors("rolling the log")
    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        with self._lock:
            self._check_open()
            return self._roll_locked(expected_next_offset)

    def _roll_locked(self, expected_next_offset: int | None) -> LogSegment:
        new_offset = max(expected_next_offset or 0, self.log_end_offset)
        active = self.segments.active_segment()
        existing = self.segments.get(new_offset)
        if existing is not None:
            if existing is active and active.size() == 0:
                # KAFKA-6388: an empty active segment whose index reports full is recreated in place.
                self.segments.remove(new_offset)
                active.delete_if_exists()
            else:
                raise KafkaStorageError(
                    f"Trying to roll a new log segment for topic partition {self.topic_partition} with start "
                    f"offset {new_offset} =max(provided offset = {expected_next_offset}, LEO = "
                    f"{self.log_end_offset}) while it already exists."
                )
        elif new_offset < active.base_offset:
            raise KafkaStorageError(f"Trying to roll to offset {new_offset} below the active segment {active.base_offset}")
        else:
            active.on_become_inactive_segment()
        for stale in (".log", ".index", ".timeindex", ".txnindex"):
            path = self.dir / f"{new_offset:020d}{stale}"
            if path.exists():
                path.unlink()  # a leftover from an earlier incarnation of this offset
        segment = LogSegment.open(self.dir, new_offset, self.config, self.clock,
                                  init_file_size=self.config.segment_size, preallocate=self.config.preallocate)
        self._dir_needs_fsync = True  # the new file's name is durable only after a dir fsync
        fault_injection.fault_point("roll")
        with self._offsets_change():
            self.segments.add(segment)
            self._update_log_end_offset(self.log_end_offset, segment)
            if self._high_watermark.message_offset == self.log_end_offset:
                self._high_watermark = self._next_offset_metadata
            # Kafka snapshots producer state at every roll, so recovery replays at most one segment.
            self.producer_state_manager.update_map_end_offset(new_offset)
            self.producer_state_manager.take_snapshot()
        if self.background is not None:
            # Flush the finished segment off the append path (Kafka schedules "flush-log").
            self.background(lambda: self.flush(new_offset))
        if self.roll_listener is not None:
            self.roll_listener(self)
        return segment

    # -- flush ----------------------------------------------------------------------------------
    def _group_commit(self, offset: int) -> None:
        """Return once everything below `offset` is fsynced (flush.messages reached).

        Group commit: while one thread fsyncs, appends that arrive wait for it to finish, and
        then one of them fsyncs everything appended meanwhile for all of them. Durable acks
        then cost one fsync per group instead of one per append.
        """
        cond = self._flush_cond
        assert cond is not None  # made under the lock, by this append or an earlier one
        with cond:
            while self._flushing and self._recovery_point < offset:
                cond.wait()
            if self._recovery_point >= offset:
                return
            self._flushing = True
        try:
            self.flush()
        finally:
            with cond:
                self._flushing = False
                cond.notify_all()
        if self._recovery_point < offset and self._closed:
            raise KafkaStorageError(f"The log for partition {self.topic_partition} was closed before "
                                    f"offset {offset} was flushed")

    @_handles_io_errors("flushing the log")
    def flush(self, up_to: int | None = None) -> None:
        """fsync segments below `up_to` (default: the LEO); the recovery point only moves on a real fsync.

        The fsyncs run outside the lock so appends are not stalled behind the disk.
        """
        with self._lock:
            if self._closed:
                return
            target = self.log_end_offset if up_to is None else min(up_to, self.log_end_offset)
            if target <= self._recovery_point:
                return
            segments = self.segments.values(self._recovery_point, target)
        for segment in segments:
            try:
                segment.flush()
            except (OSError, ValueError):
                if self._closed or self.segments.get(segment.base_offset) is not segment:
                    return  # closed or truncated away meanwhile: nothing to make durable
                raise
        if self._dir_needs_fsync:
            # A segment created by a roll: its directory entry must be durable before the
            # recovery point moves past data in it (else a power cut loses the whole file).
            self._dir_needs_fsync = False
            try:
                fsync_dir(self.dir)
            except OSError:
                self._dir_needs_fsync = True
                raise
        fault_injection.fault_point("flush")
        with self._lock:
            # A truncation meanwhile may have moved the LEO below the target: then do not advance.
            if self._recovery_point < target <= self.log_end_offset:
                self._recovery_point = target
                self._last_flushed_ms = self.clock.milliseconds()

    def flush_if_due(self) -> bool:
        """The flush.ms rule (LogManager's flusher calls this periodically)."""
        if self.clock.milliseconds() - self._last_flushed_ms >= self.config.flush_ms and self.unflushed_messages > 0:
            self.flush()
            return True
        return False

    # -- read -----------------------------------------------------------------------------------
    def read(self, fetch_offset: int, max_bytes: int, *, isolation: Isolation = "read_uncommitted",
             min_one_message: bool = True, nonblocking: bool = False) -> FetchDataInfo:
        """File range of the batches from fetch_offset, bounded by max_bytes and the isolation's upper offset.

        nonblocking=True is the event loop's fast path: the batch headers it scans must be in the
        page cache (else ReadWouldBlock, nothing changed); with read_committed, the aborted
        transactions' index reads are nonblocking too."""
        if self._closed:
            # Offline (its dir failed) or deleted: KAFKA_STORAGE_ERROR rather than a read of closed files.
            raise KafkaStorageError(f"The log for partition {self.topic_partition} is offline")
        end_metadata = self._next_offset_metadata
        if fetch_offset < self._log_start_offset or fetch_offset > end_metadata.message_offset:
            raise OffsetOutOfRangeError(
                f"Received request for offset {fetch_offset} for partition {self.topic_partition}, but we only "
                f"have log segments upto {end_metadata.message_offset} and log start offset {self._log_start_offset}."
            )
        if fetch_offset < self.local_log_start_offset:
            # On a tiered log these offsets are in remote storage: the RemoteLogManager reads them.
            raise OffsetOutOfRangeError(
                f"Received request for offset {fetch_offset} for partition {self.topic_partition}, which is below "
                f"the local log start offset {self.local_log_start_offset}."
            )
        if isolation == "log_end":
            max_metadata = end_metadata
        elif isolation == "read_committed":
            max_metadata = self._last_stable_offset_metadata()
        else:
            max_metadata = self._high_watermark
        if fetch_offset >= max_metadata.message_offset:
            return FetchDataInfo(self._offset_metadata_or_offset(fetch_offset))
        if max_metadata.message_offset_only:
            max_metadata = self._convert_to_offset_metadata(max_metadata.message_offset, nonblocking=nonblocking)
        segment = self.segments.floor_segment(fetch_offset)
        if segment is None:
            # Retention removed the segment after the check above (it moves the log start offset
            # first): out of range, as Kafka answers, rather than an empty read below the HW.
            raise OffsetOutOfRangeError(
                f"Received request for offset {fetch_offset} for partition {self.topic_partition}, but we only "
                f"have log segments starting from offset: {self.local_log_start_offset}.")
        while segment is not None:
            if segment.base_offset < max_metadata.segment_base_offset:
                max_position = segment.size()
            elif segment.base_offset == max_metadata.segment_base_offset:
                max_position = max_metadata.relative_position_in_segment
            else:
                break
            found = segment.read(fetch_offset, max_bytes, max_position, min_one_message, nonblocking=nonblocking)
            if found is not None:
                info = FetchDataInfo(
                    LogOffsetMetadata(fetch_offset, segment.base_offset, found.position),
                    file=segment.log.file, position=found.position, size=found.size,
                    first_entry_incomplete=found.first_entry_incomplete, path=segment.log.path_str, data=found.data,
                )
                if isolation == "read_committed":
                    info.aborted_transactions = self._collect_aborted(
                        fetch_offset, self._fetch_upper_bound_offset(segment, fetch_offset, found.position, found.size),
                        nonblocking=nonblocking)
                return info
            segment = self.segments.higher_segment(segment.base_offset)
        return FetchDataInfo(LogOffsetMetadata(fetch_offset))

    def read_bytes(self, fetch_offset: int, max_bytes: int, **kwargs: Any) -> bytes:
        return self.read(fetch_offset, max_bytes, **kwargs).read_bytes()

    def _fetch_upper_bound_offset(self, segment: LogSegment, fetch_offset: int, position: int, size: int) -> int:
        """Where the aborted transactions a read_committed fetch lists end, as Kafka bounds
        them: the first offset-index entry past the bytes read (the index is sparse, so this
        often reaches further than the fetched batches), else the next segment, else the LEO.
        Consumers drop the entries beyond what they received, so the extra ones are harmless."""
        upper = segment.offset_index.fetch_upper_bound_offset(OffsetPosition(fetch_offset, position), size)
        if upper is not None:
            return upper.offset
        following = self.segments.higher_segment(segment.base_offset)
        return following.base_offset if following is not None else self.log_end_offset

    def _collect_aborted(self, fetch_offset: int, upper_bound: int, *, nonblocking: bool = False) -> list[AbortedTxn]:
        found: list[AbortedTxn] = []
        for segment in self.segments.values(fetch_offset, None):
            result = segment.collect_aborted_txns(fetch_offset, upper_bound, nonblocking=nonblocking)
            found.extend(result.aborted_transactions)
            if result.is_complete:
                break
        return found

    def _last_stable_offset_metadata(self) -> LogOffsetMetadata:
        hw = self._high_watermark
        first_unstable = self.producer_state_manager.first_unstable_offset()
        if first_unstable is None or first_unstable >= hw.message_offset:
            return hw
        return self._convert_to_offset_metadata(first_unstable)

    def _convert_to_offset_metadata(self, offset: int, *, nonblocking: bool = False) -> LogOffsetMetadata:
        if offset == self._next_offset_metadata.message_offset:
            return self._next_offset_metadata
        segment = self.segments.floor_segment(offset)
        if segment is None:
            return LogOffsetMetadata(offset)
        found = segment.translate_offset(offset, nonblocking=nonblocking)
        if found is None:
            return LogOffsetMetadata(offset, segment.base_offset, segment.size())
        return LogOffsetMetadata(offset, segment.base_offset, found.position)

    def _offset_metadata_or_offset(self, offset: int) -> LogOffsetMetadata:
        if offset == self._next_offset_metadata.message_offset:
            return self._next_offset_metadata
        return LogOffsetMetadata(offset)

    # -- timestamps -----------------------------------------------------------------------------
    def fetch_offset_by_timestamp(self, timestamp: int, *, isolation: Isolation = "read_uncommitted"
                                  ) -> tuple[int, int] | None:
        """ListOffsets: (offset, timestamp) of the first record with timestamp >= `timestamp`.

        Special values: -2 earliest, -1 latest (HW, or LSO for read_committed), -3 the record with
        the largest timestamp, -4 earliest local. None when no record qualifies.
        """
        if timestamp == EARLIEST_TIMESTAMP:
            return (self._log_start_offset, -1)
        if timestamp == EARLIEST_LOCAL_TIMESTAMP:
            return (self.local_log_start_offset, -1)
        if timestamp == LATEST_TIMESTAMP:
            return (self.last_stable_offset if isolation == "read_committed" else self.high_watermark, -1)
        if timestamp == LATEST_TIERED_TIMESTAMP:
            # Kafka answers -1 when nothing is tiered (or the log is not tiered).
            return (self._highest_offset_in_remote_storage if self.remote_log_enabled else -1, -1)
        segments = self.segments.values()
        if timestamp == MAX_TIMESTAMP:
            return self._max_timestamp_offset(segments)
        if timestamp < 0:
            return None
        for segment in segments:
            if segment.max_timestamp_so_far >= timestamp:
                found = segment.find_offset_by_timestamp(timestamp, self._log_start_offset)
                if found is not None:
                    return (found.offset, found.timestamp)
        return None

    def _max_timestamp_offset(self, segments: list[LogSegment]) -> tuple[int, int] | None:
        best: LogSegment | None = None
        for segment in segments:
            if best is None or segment.max_timestamp_so_far > best.max_timestamp_so_far:
                best = segment
        if best is None or best.max_timestamp_so_far < 0:
            return None
        target = best.max_timestamp_and_offset_so_far
        position = best.offset_index.lookup(target.offset).position
        for batch in best.log.batches(position, with_data=True):
            if batch.header.max_timestamp == target.timestamp:
                return (best.log.offset_of_max_timestamp(batch), target.timestamp)
        return None

    # -- log start offset / truncation ----------------------------------------------------------
    def maybe_increment_log_start_offset(self, new_log_start_offset: int, reason: str = "client delete records") -> bool:
        """DeleteRecords: raise the log start offset, never past the high watermark."""
        with self._lock:
            self._check_open()
            if new_log_start_offset > self.high_watermark:
                raise OffsetOutOfRangeError(
                    f"Cannot increment the log start offset to {new_log_start_offset} of partition "
                    f"{self.topic_partition} since it is larger than the high watermark {self.high_watermark}"
                )
            if new_log_start_offset <= self._log_start_offset:
                return False
            with self._offsets_change():
                self._log_start_offset = new_log_start_offset
                self.leader_epoch_cache.truncate_from_start(new_log_start_offset)
                self.producer_state_manager.on_log_start_offset_incremented(new_log_start_offset)
            if self._recovery_point < new_log_start_offset:
                self._recovery_point = new_log_start_offset
            return True

    @_handles_io_errors("truncating the log")
    def truncate_to(self, target_offset: int) -> bool:
        """Drop everything at and above target_offset. Returns whether anything was removed."""
        if target_offset < 0:
            raise ValueError(f"Cannot truncate partition {self.topic_partition} to a negative offset ({target_offset}).")
        with self._lock:
            self._check_open()
            if target_offset >= self.log_end_offset:
                return False
            first = self.segments.first_segment()
            if first is None or target_offset < first.base_offset:
                self.truncate_fully_and_start_at(target_offset)
                return True
            with self._offsets_change():
                for segment in self.segments.higher_segments(target_offset):
                    if segment.base_offset >= target_offset and segment is not first:
                        self.segments.remove(segment.base_offset)
                        segment.delete_if_exists()
                active = self.segments.active_segment()
                active.truncate_to(target_offset)
                self._update_log_end_offset(active.read_next_offset(), active)
                self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
                self._log_start_offset = min(self._log_start_offset, self.log_end_offset)
                self.producer_state_manager.rebuild(self.segments, self._log_start_offset, self.log_end_offset)
                self._high_watermark = self._next_offset_metadata  # single node: HW == LEO
                self._recovery_point = min(self._recovery_point, self.log_end_offset)
            return True

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Delete every segment and restart the log empty at new_offset."""
        with self._lock:
            self._check_open()
            with self._offsets_change():
                for segment in self.segments.values():
                    self.segments.remove(segment.base_offset)
                    segment.delete_if_exists()
                segment = LogSegment.open(self.dir, new_offset, self.config, self.clock,
                                          init_file_size=self.config.segment_size,
                                          preallocate=self.config.preallocate)
                self.segments.add(segment)
                self._update_log_end_offset(new_offset, segment)
                self.leader_epoch_cache.clear()
                self.producer_state_manager.truncate_fully_and_start_at(new_offset)
                self._log_start_offset = new_offset
                self._recovery_point = new_offset
                self._high_watermark = self._next_offset_metadata

    # -- retention (cleanup.policy=delete) ----------------------------------------------------
    @_handles_io_errors("deleting old segments")
    def delete_old_segments(self) -> int:
        """Delete whole oldest segments breaching the log start offset, retention.bytes, retention.ms.

        A tiered log applies local.retention.bytes and local.retention.ms instead (-2: the total
        ones) and deletes only segments already copied to remote storage, or wholly below the
        log start offset; its log start offset does not move (the RemoteLogManager's expiration
        moves it). Compact-only logs drop just the segments below the log start offset. Never deletes at or
        above the high watermark and never leaves the log without a segment.
        """
        with self._lock:
            if self._closed:
                return 0
            if self.config.delete:
                return (self._delete_log_start_offset_breached_segments()
                        + self._delete_retention_size_breached_segments()
                        + self._delete_retention_ms_breached_segments())
            return self._delete_log_start_offset_breached_segments()

    def _delete_log_start_offset_breached_segments(self) -> int:
        def breached(segment: LogSegment, next_segment: LogSegment | None) -> bool:
            return next_segment is not None and next_segment.base_offset <= self._log_start_offset

        return self._delete_segments(self._deletable_segments(breached),
                                     f"log start offset {self._log_start_offset} breach")

    def _delete_retention_size_breached_segments(self) -> int:
        retention = self.config.retention_bytes
        if self._tiered_and_copying and self.config.local_retention_bytes != -2:
            retention = self.config.local_retention_bytes
        size = self.size_in_bytes
        if retention < 0 or size < retention:
            return 0
        diff = size - retention

        def breached(segment: LogSegment, next_segment: LogSegment | None) -> bool:
            nonlocal diff
            if diff - segment.size() >= 0:
                diff -= segment.size()
                return True
            return False

        deletable = self._deletable_segments(breached)
        after = size - sum(segment.size() for segment in deletable)
        return self._delete_segments(
            deletable, f"log retention size {retention} breach. Log size after deletion will be {after}.")

    def _delete_retention_ms_breached_segments(self) -> int:
        retention = self.config.retention_ms
        if self._tiered_and_copying and self.config.local_retention_ms != -2:
            retention = self.config.local_retention_ms
        if retention < 0:
            return 0
        now = self.clock.milliseconds()

        def breached(segment: LogSegment, next_segment: LogSegment | None) -> bool:
            largest = segment.largest_timestamp()
            if largest > now:
                # A future-dated segment is never old enough: it, and every later segment, stays.
                logger.warning(
                    "[UnifiedLog partition=%s, dir=%s] Retention of %r is blocked: its largest timestamp %d is in "
                    "the future (now %d); retention.ms=%d cannot delete it or any later segment until then",
                    self.topic_partition, self.dir.parent, segment, largest, now, retention)
            return now - largest > retention

        return self._delete_segments(
            self._deletable_segments(breached),
            f"log retention time {retention}ms breach based on the largest record timestamp in the segment")

    def _deletable_segments(self, predicate: Callable[[LogSegment, LogSegment | None], bool]) -> list[LogSegment]:
        """Oldest-first prefix of segments satisfying predicate, wholly below the HW, never the
        empty active segment."""
        with self._lock:
            segments = self.segments.values()
            hw = self.high_watermark
            tiered = self._tiered_and_copying
            deletable: list[LogSegment] = []
            should_roll = False
            for i, segment in enumerate(segments):
                next_segment = segments[i + 1] if i + 1 < len(segments) else None
                if next_segment is not None:
                    upper_bound, last_and_empty = next_segment.base_offset, False
                else:
                    upper_bound, last_and_empty = self.log_end_offset, segment.size() == 0
                breached = hw >= upper_bound and predicate(segment, next_segment)
                if breached and self.remote_log_enabled and next_segment is None and segment.size() > 0:
                    should_roll = True  # the active segment is due: rolled, it can be copied, then go
                # A tiered log keeps every segment not yet in remote storage: the local copy is the only one.
                eligible = not tiered or (
                    upper_bound - 1 <= self._highest_offset_in_remote_storage
                    or (next_segment is not None and self._log_start_offset >= next_segment.base_offset))
                if breached and not last_and_empty and eligible:
                    deletable.append(segment)
                else:
                    break
            if should_roll:
                logger.info("[UnifiedLog partition=%s, dir=%s] Rolling the active segment to make it eligible for "
                            "deletion", self.topic_partition, self.dir.parent)
                self._roll_locked(None)
            return deletable

    def _delete_segments(self, deletable: list[LogSegment], reason: str) -> int:
        if not deletable:
            return 0
        with self._lock:
            self._check_open()
            # One change from the roll to the new log start offset: a reader in between (another
            # thread) must not be answered, from before it, a log start whose segments are gone.
            with self._offsets_change():
                if len(self.segments) == len(deletable):
                    self._roll_locked(None)  # the log must always keep a segment
                kept = self.segments.higher_segment(deletable[-1].base_offset)
                new_start = None
                if kept is not None and kept.base_offset > self._log_start_offset and not self._tiered_and_copying:
                    # Before the segments leave the map, as Kafka orders it: a read below the new
                    # start is then out of range, never a lookup that finds no segment.
                    new_start = self._log_start_offset = kept.base_offset
                # Right after the new start, with no I/O between: a reader (on the loop, unlocked)
                # that sees the new start must also find the segments gone, e.g. in the size.
                for segment in deletable:
                    self.segments.remove(segment.base_offset)
                if new_start is not None:
                    self.leader_epoch_cache.truncate_from_start(new_start, flush=False)
                    self.producer_state_manager.on_log_start_offset_incremented(new_start)
            if new_start is not None:
                # The checkpoint's write (an fsync) once the change is visible, as Kafka's
                # truncateFromStartAsyncFlush keeps it out of the way; still under the lock, so
                # no other change of the epochs comes between.
                self.leader_epoch_cache.flush()
            self._recovery_point = max(self._recovery_point, self.local_log_start_offset)
            for segment in deletable:
                logger.info("[UnifiedLog partition=%s, dir=%s] Deleting segment %r due to %s",
                            self.topic_partition, self.dir.parent, segment, reason)
            self._schedule_delete_locked(deletable)
            if self.config.file_delete_delay_ms == 0:
                self.delete_pending_files()
        logger.info("Deleted %d segment(s) of %s: %s", len(deletable), self.topic_partition, reason)
        return len(deletable)

    def delete_pending_files(self, now_ms: int | None = None) -> int:
        """Unlink `.deleted` segments whose file.delete.delay.ms has passed (LogManager's job)."""
        now = self.clock.milliseconds() if now_ms is None else now_ms
        with self._lock:
            due = [(s, t) for s, t in self._pending_deletes if t <= now]
            self._pending_deletes = [(s, t) for s, t in self._pending_deletes if t > now]
        for segment, _ in due:
            segment.delete_if_exists()
        return len(due)

    # -- segment replacement (the cleaner's swap; Kafka's LocalLog.replaceSegments) -------------
    @property
    def lock(self) -> threading.RLock:
        """The Log's (reentrant) writer lock. Hold it to make several mutations one step for
        appends, rolls and truncations: the cleaner swaps all groups of one clean under it."""
        return self._lock

    def schedule_delete(self, segments: list[LogSegment]) -> None:
        """Two-phase delete of segments already out of the segment map: renamed `.deleted` now
        (never served again), unlinked by `delete_pending_files` after file.delete.delay.ms so
        reads already holding the files finish."""
        with self._lock:
            self._schedule_delete_locked(segments)

    def _schedule_delete_locked(self, segments: list[LogSegment]) -> None:
        """Kafka's two-phase delete: rename now (no longer served), unlink after
        file.delete.delay.ms so in-flight reads holding the files can finish."""
        due = self.clock.milliseconds() + self.config.file_delete_delay_ms
        for segment in segments:
            segment.rename_to_deleted()
            # Unmap the indexes now: each mapping holds a file descriptor until the unlink, and
            # one pass over thousands of segments would exhaust RLIMIT_NOFILE. A reader that
            # still needs an index re-maps the `.deleted` file lazily.
            segment.close_handlers()
            self._pending_deletes.append((segment, due))

    def replace_segments(self, new_segments: list[LogSegment], old_segments: list[LogSegment], *,
                         on_step: Callable[[str], None] | None = None) -> list[LogSegment]:
        """Swap `new_segments` (opened with the `.cleaned` suffix) in for `old_segments`, crash-safely.

        Kafka's replaceSegments: `.cleaned` -> `.swap` (highest base offset first); the new
        segments enter the map; the old ones leave it (unless replaced in place, same base
        offset) and are scheduled for deletion; `.swap` -> live names; fsync the directory.
        A crash at any point leaves LogLoader the old or the new segments, never a mix. Fault
        points `cleaner.swap.<step>` (and `on_step(step)`) follow each step. Returns the old
        segments that were not replaced in place.
        """

        def step(name: str) -> None:
            fault_injection.fault_point(f"cleaner.swap.{name}")  # crash-test hook; no-op unless armed
            if on_step is not None:
                on_step(name)

        with self._lock:
            self._check_open()
            segments = self.segments
            sorted_new = sorted(new_segments, key=lambda s: s.base_offset)
            # An old segment already removed (and scheduled for deletion) must not be deleted twice.
            sorted_old = sorted((s for s in old_segments if segments.get(s.base_offset) is s),
                                key=lambda s: s.base_offset)
            for seg in reversed(sorted_new):
                seg.change_file_suffixes(CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX)
            step("renamed_to_swap")
            for seg in reversed(sorted_new):
                segments.add(seg)
            step("added_to_index")
            new_bases = {s.base_offset for s in sorted_new}
            for seg in sorted_old:
                if seg.base_offset != sorted_new[0].base_offset:
                    segments.remove(seg.base_offset)
            self.schedule_delete(sorted_old)
            step("old_renamed_deleted")
            for seg in sorted_new:
                seg.change_file_suffixes(SWAP_FILE_SUFFIX, "")
            step("renamed_live")
            fsync_dir(self.dir)
            step("dir_flushed")
            if self.config.file_delete_delay_ms == 0:
                self.delete_pending_files()
        return [seg for seg in sorted_old if seg.base_offset not in new_bases]

    # -- lifecycle ------------------------------------------------------------------------------
    def _log_dir_failure(self, exc: OSError, operation: str) -> KafkaStorageError:
        parent = self.dir.parent
        message = f"Error while {operation} for {self.topic_partition} in dir {parent}: {exc}"
        if self.log_dir_failure_channel is not None:
            self.log_dir_failure_channel.maybe_add_offline_log_dir(parent, message, exc)
        return KafkaStorageError(message)

    def _check_open(self) -> None:
        if self._closed:
            raise KafkaStorageError(f"The log for partition {self.topic_partition} is closed")

    def close(self) -> None:
        """Trim and unmap indexes, close files (no fsync: callers flush first if they need to)."""
        with self._lock:
            if self._closed:
                return
            try:
                self.producer_state_manager.update_map_end_offset(self.log_end_offset)
                self.producer_state_manager.take_snapshot()
            except OSError as exc:
                logger.warning("Could not snapshot producer state of %s at close: %s", self.topic_partition, exc)
            self._mark_closed()
            self.segments.close()

    def _mark_closed(self) -> None:
        """Stop serving; the generation moves so that a fetch session's idle entry is read again
        (and finds the log closed)."""
        with self._offsets_change():
            self._closed = True

    def remove_expired_producers(self, now_ms: int, producer_id_expiration_ms: int) -> int:
        """producer.id.expiration.ms: forget idle producers (their next batch may use any sequence)."""
        with self._lock:
            return self.producer_state_manager.remove_expired_producers(now_ms, producer_id_expiration_ms)

    def close_handlers(self) -> None:
        """Stop serving without trimming or closing `.log` fds (the log is about to be deleted;
        in-flight fetches keep their file objects)."""
        with self._lock:
            if self._closed:
                return
            self._mark_closed()
            for segment in self.segments.values():
                segment.close_handlers()

    def rename_dir(self, new_dir: Path) -> None:
        with self._lock:
            os.replace(self.dir, new_dir)
            self.dir = Path(new_dir)
            self.producer_state_manager.log_dir = self.dir
            for segment in self.segments.values():
                segment.update_parent_dir(self.dir)
            self.partition_metadata_file = PartitionMetadataFile(self.dir)
            self.leader_epoch_cache.checkpoint.path = self.dir / LEADER_EPOCH_CHECKPOINT_FILE

    def delete(self) -> None:
        """Close and remove the whole partition directory."""
        with self._lock:
            if not self._closed:
                self._mark_closed()
                for segment in self.segments.values():
                    segment.close_handlers()
            self.segments.clear()
            import shutil  # here: with bz2 and lzma it is 0.4 MB that an idle broker never uses

            shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def is_closed(self) -> bool:
        return self._closed

    def __repr__(self) -> str:
        return (f"Log({self.topic_partition}, start={self.log_start_offset}, hw={self.high_watermark}, "
                f"leo={self.log_end_offset}, segments={len(self.segments)})")


