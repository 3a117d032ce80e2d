"""ReplicaManager: the route from request handlers to the partition logs (Kafka's name).

On Kafka the ReplicaManager owns every partition a broker hosts and is where KafkaApis hands
Produce, Fetch, ListOffsets, DeleteRecords and OffsetForLeaderEpoch after decoding them; the
coordinators write their internal topics and transaction markers through it. Here it owns
the partition lookup (a partition this node does not host is UNKNOWN_TOPIC_OR_PARTITION),
every blocking storage call (on the IO pool), the mapping of storage errors per partition,
and what must happen around a change of the log: pausing the cleaner, checkpointing the log
start offsets, waking parked fetches.

Produce (the append, inline or pooled, with KIP-890's verification), Fetch (the reads and
the long poll), ListOffsets, DeleteRecords, OffsetForLeaderEpoch and the transaction markers
(WriteTxnMarkers on one node) all go through here; handlers decode, call and build. The
coordinators' internal topics still append on their own (offsets_topic.CoordinatorTopic).
"""
from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeVar

import msgspec

from asyncbroker.encoded_response import FileRegion
from asyncbroker.fetch_waiters import FetchWaiters
from asyncbroker.metrics import METRICS
from asyncbroker.handlers import error_code_for, error_message_for
from asyncbroker.leader_epoch import LEADER_EPOCH, UNDEFINED, check_current_leader_epoch, end_offset_for
from storage.errors import AppendWouldBlock, ReadWouldBlock
from storage.fault_injection import fault_point
from storage.log import LATEST_TIERED_TIMESTAMP
from storage.topic_name import is_internal
from storage.topic_partition import TopicPartition
from wire.errors import (
    CoordinatorNotAvailableError,
    ErrorCode,
    FencedLeaderEpochError,
    InvalidRequiredAcksError,
    InvalidTopicError,
    KafkaError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
    PolicyViolationError,
    UnknownLeaderEpochError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
)
from wire.records import Buffer, ControlRecordType, build_control_batch, read_batch_header
from wire.response_encoders import ProducePartitionResult

__all__ = ["DeleteRecordsResult", "EpochEndOffset", "FoundOffset", "OffsetQuery", "PartitionRead", "PartitionResult",
           "ReplicaManager", "SkippedReads"]

log = logging.getLogger(__name__)

T = TypeVar("T")

HIGH_WATERMARK = -1
"""DeleteRecords' "up to the high watermark"."""


class DeleteRecordsResult(msgspec.Struct, frozen=True):
    error: ErrorCode
    low_watermark: int = -1


class EpochEndOffset(msgspec.Struct, frozen=True):
    error: ErrorCode
    leader_epoch: int = UNDEFINED
    end_offset: int = UNDEFINED


class OffsetQuery(msgspec.Struct, frozen=True):
    """ListOffsets for one partition: a timestamp (-1 latest, -2 earliest, -3 max timestamp,
    -4 earliest local, -5 latest tiered) and the leader epoch the client believes current."""

    timestamp: int
    current_leader_epoch: int = UNDEFINED


class FoundOffset(msgspec.Struct, frozen=True):
    error: ErrorCode
    offset: int = -1
    timestamp: int = -1
    leader_epoch: int = -1


# The version that introduced each special timestamp (Kafka's ListOffsetsRequest): an older
# request naming it is UNSUPPORTED_VERSION; negative values not listed are never valid here.
_SPECIAL_SINCE = {-1: 0, -2: 0, -3: 7, -4: 8, -5: 9}


# Record slices at least this large are left in the file and sent with sendfile.
FILE_REGION_MIN_BYTES = 64 * 1024
# A fetch of at most this many partitions is first read on the loop (from the page cache, see
# _read): each partition's read is an index lookup and a short header scan, and bytes above
# FILE_REGION_MIN_BYTES are not copied but sent from the file. The index is a mapping: a page of
# it not in memory is read on the loop, as the produce fast path's index appends are.
INLINE_READ_MAX_PARTITIONS = 16
_NO_ERROR = ErrorCode.NONE


class PartitionRead(msgspec.Struct, gc=False):
    """One partition of a Fetch: the request's fields, then what the read found.

    Untracked by the cyclic GC (it holds no cycle): a fetch of 1,000 partitions makes 1,000 of
    them, and tracked ones set off collections that promoted each in-flight fetch's reads to
    the oldest generation, whose full scans were the p99 of such fetches."""

    topic: str | None
    topic_id: uuid.UUID | None
    index: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1  # negative: "none" in a Fetch
    last_fetched_epoch: int = -1
    log: Any = None
    error: int = ErrorCode.NONE
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: Any = b""  # bytes, or a FileRegion (a dup'd fd the connection closes)
    size: int = 0
    aborted: list[tuple[int, int]] | None = None
    diverging_epoch: tuple[int, int] | None = None
    # An incremental fetch's session entry for the partition (asyncbroker.fetch_session):
    # its answer compares what the read found with what was last sent.
    session_entry: Any = None
    # The log's offsets_generation when the read found the partition idle: caught up at the
    # log end with no open transaction below it, so that either isolation level reads nothing;
    # -1 otherwise, or when the generation was odd (a change under way). While the generation
    # stays, a read finds the same (a session skips it).
    idle_generation: int = -1

    def clone_request(self) -> "PartitionRead":
        """The same request, and what the checks before the read found (log, diverging epoch)."""
        other = PartitionRead(self.topic, self.topic_id, self.index, self.fetch_offset, self.max_bytes,
                              current_leader_epoch=self.current_leader_epoch, last_fetched_epoch=self.last_fetched_epoch)
        other.log, other.error, other.diverging_epoch = self.log, self.error, self.diverging_epoch
        return other

    def release(self) -> None:
        """Drop what the read found (closing its file region): an answer that leaves it out."""
        _release(self)

    def take_result(self, other: "PartitionRead") -> None:
        """What a read of `other` (a clone of this request) found."""
        _release(self)
        self.error, self.high_watermark, self.last_stable_offset = other.error, other.high_watermark, \
            other.last_stable_offset
        self.log_start_offset, self.records, self.size, self.aborted = other.log_start_offset, other.records, \
            other.size, other.aborted
        other.records, other.size = b"", 0  # handed over: releasing `other` must not close it

    def topic_partition(self) -> TopicPartition:
        """The partition read; only for reads whose topic is known (named, or its id resolved)."""
        if self.topic is None:
            raise ValueError(f"partition {self.index} of topic id {self.topic_id} was never resolved to a name")
        return TopicPartition(self.topic, self.index)


class SkippedReads(Protocol):
    """Partitions a fetch left out of its reads, each read found idle at a log generation that
    has not moved since (an incremental session's, asyncbroker.fetch_session): a read now
    would find what the client was last told."""

    def topic_partitions(self) -> list[TopicPartition]:
        """The partitions skipped: a parked fetch is woken by appends to them too."""
        ...

    def reads(self) -> list[PartitionRead]:
        """The fetch's reads anew (after a wait), in answer order: the skipped partitions
        whose log moved meanwhile among them. (Partitions are skipped only without an
        authorizer, so these need no READ check.)"""
        ...


def read_partitions(reads: list[PartitionRead], max_bytes: int, read_committed: bool, use_file_regions: bool,
                    nonblocking: bool = False, remote: Any = None) -> int:
    """Read every partition within the byte budgets; return the bytes read. On an IO thread, or
    `nonblocking` on the loop: then every byte must be in the page cache and at most
    INLINE_READ_MAX_PARTITIONS partitions may need a read (the others are caught up at their
    log's end: an idle consumer's many partitions), else ReadWouldBlock (what was read is
    released by the caller, which reads again on an IO thread).

    `max_bytes` bounds the whole response and each partition's own bound applies, except that
    the first partition with data returns at least one whole batch even when larger (KIP-74);
    a later partition whose first batch does not fit returns nothing rather than part of one.
    A local read ends at its last whole batch (LogSegment.read), so what a limit would have cut
    off stays in the budget (KD-215).

    An offset below a tiered log's local start is read from remote storage through `remote`
    (the RemoteLogManager), under the same limits; never on the loop.
    """
    # First every partition's offsets, as they were before its read (as Kafka reports them),
    # and the answer of those caught up; then the reads, in request order (the caught-up
    # partitions take nothing from the byte budgets).
    to_read: list[PartitionRead] = []
    for r in reads:
        log_ = r.log
        if log_ is None:
            continue
        if r.size:
            _release(r)  # an earlier read's, before re-reading (long-poll completion)
        generation = log_.offsets_generation.value  # taken before the offsets it vouches for
        high_watermark, last_stable, log_start, log_end = log_.fetch_offsets()
        r.high_watermark, r.last_stable_offset, r.log_start_offset = high_watermark, last_stable, log_start
        if r.diverging_epoch is not None:
            r.idle_generation = -1
            continue
        offset = r.fetch_offset
        if offset == (last_stable if read_committed else high_watermark) == log_end \
                and offset >= log_start and not log_.is_closed:
            # Caught up (most partitions of an idle consumer's fetch): what Log.read answers
            # there, an empty read with no aborted transactions, without building it. (At the
            # log end the offset is in the local log, tiered or not.)
            r.error = _NO_ERROR
            if read_committed:
                r.aborted = []
            # Kept idle while the generation stays (an odd one: a change under way, not kept).
            r.idle_generation = generation if last_stable == high_watermark and not generation & 1 else -1
            continue
        r.idle_generation = -1
        to_read.append(r)
    if nonblocking and len(to_read) > INLINE_READ_MAX_PARTITIONS:
        raise ReadWouldBlock(f"{len(to_read)} partitions to read")  # the loop's share stays bounded
    remaining = max(0, max_bytes)
    min_one = True
    total = 0
    isolation = "read_committed" if read_committed else "read_uncommitted"
    for r in to_read:
        log_ = r.log
        limit = min(r.max_bytes, remaining)
        in_remote = remote is not None and r.log_start_offset <= r.fetch_offset < log_.local_log_start_offset \
            and log_.remote_log_enabled
        info = None
        if not in_remote:
            try:
                info = log_.read(r.fetch_offset, limit, isolation=isolation, min_one_message=min_one,
                                 nonblocking=nonblocking)
            except ReadWouldBlock:
                raise
            except OffsetOutOfRangeError as exc:
                # Local retention may have moved the local start past the offset since the check:
                # then it is in remote storage, not out of range.
                in_remote = (remote is not None and log_.remote_log_enabled
                             and log_.log_start_offset <= r.fetch_offset < log_.local_log_start_offset)
                if not in_remote:
                    r.error = error_code_for(exc)
                    r.high_watermark = r.last_stable_offset = r.log_start_offset = -1
                    continue
            except Exception as exc:  # noqa: BLE001 - mapped per partition at the boundary
                # A failed partition reports no offsets (-1), as Kafka's error answers do.
                r.error = error_code_for(exc)
                r.high_watermark = r.last_stable_offset = r.log_start_offset = -1
                continue
        if info is None:
            if nonblocking:
                raise ReadWouldBlock()
            try:
                got = remote.read(log_, r.fetch_offset, limit, min_one_message=min_one, read_committed=read_committed)
            except Exception as exc:  # noqa: BLE001 - mapped per partition at the boundary
                r.error = error_code_for(exc)
                r.high_watermark = r.last_stable_offset = r.log_start_offset = -1
                continue
            r.error = _NO_ERROR  # (the offsets as the first pass found them)
            if read_committed:
                r.aborted = [(a.producer_id, a.first_offset) for a in (got.aborted or ())]
            if got.records:
                r.records, r.size = got.records, len(got.records)
                total += r.size
                remaining = max(0, remaining - r.size)
                min_one = False
            continue
        r.error = _NO_ERROR  # (the offsets as the first pass found them)
        size = 0 if info.first_entry_incomplete else info.size  # v3+: never part of a first batch
        if read_committed:
            r.aborted = [(a.producer_id, a.first_offset) for a in (info.aborted_transactions or ())]
        if size <= 0:
            continue
        if use_file_regions and size >= FILE_REGION_MIN_BYTES and info.file is not None:
            # A dup of the segment's fd: the slice stays readable even if the
            # segment is closed or deleted before the connection sends it.
            r.records = FileRegion(os.dup(info.file.fileno()), info.position, size)
        else:
            r.records = info.read_bytes(nonblocking=nonblocking)
        r.size = size
        total += size
        remaining = max(0, remaining - size)
        min_one = False
    return total


class _ExpiredRemoteRead(msgspec.Struct):
    records: bytes
    aborted: list[Any]


class _RemoteReadExpired:
    """remote.fetch.max.wait.ms passed: the remote partitions get no records and no error."""

    def read(self, _log: Any, _offset: int, _limit: int, *, min_one_message: bool,
             read_committed: bool) -> _ExpiredRemoteRead:
        return _ExpiredRemoteRead(b"", [])


REMOTE_READ_EXPIRED = _RemoteReadExpired()


def _reads_remote(r: PartitionRead) -> bool:
    """The read's offset is only in remote storage (checked again by the read itself)."""
    log_ = r.log
    return (log_ is not None and r.diverging_epoch is None and log_.remote_log_enabled
            and log_.log_start_offset <= r.fetch_offset < log_.local_log_start_offset)


def _release(r: PartitionRead) -> None:
    if isinstance(r.records, FileRegion):
        r.records.close()
    r.records = b""
    r.size = 0


def _check_epochs(log_: Any, replica_id: int, r: PartitionRead) -> tuple[int, int] | None:
    """Kafka's Partition.fetchRecords checks before the read, in its order: the client's
    current leader epoch, a follower's replica id, then last_fetched_epoch. Returns the
    diverging epoch (epoch, end offset) to report instead of records, if any."""
    current = r.current_leader_epoch
    if current > LEADER_EPOCH:
        raise UnknownLeaderEpochError(f"Current leader epoch {current} is newer than this leader's {LEADER_EPOCH}")
    if 0 <= current < LEADER_EPOCH:
        raise FencedLeaderEpochError(f"Current leader epoch {current} is older than this leader's {LEADER_EPOCH}")
    if replica_id >= 0:
        # Not one of this partition's replicas (it has no other): Kafka's followerReplicaOrThrow.
        message = f"Replica {replica_id} is not recognized as a valid replica in leader epoch {LEADER_EPOCH}"
        if current >= 0:
            raise UnknownLeaderEpochError(message)
        raise NotLeaderOrFollowerError(message)
    last_fetched = r.last_fetched_epoch
    if last_fetched < 0:
        return None
    epoch, end_offset = end_offset_for(log_, last_fetched)
    if epoch == UNDEFINED or end_offset == UNDEFINED:
        raise OffsetOutOfRangeError(f"Could not determine the end offset of the last fetched epoch {last_fetched}")
    if r.fetch_offset < log_.log_start_offset:
        raise OffsetOutOfRangeError(f"Received request for offset {r.fetch_offset}, below the log start offset "
                                    f"{log_.log_start_offset}")
    if epoch < last_fetched or end_offset < r.fetch_offset:
        return (epoch, end_offset)
    return None


# Errors Kafka's ReplicaManager reports without the partition's log start offset (its
# appendToLocalLog treats these as "known" failures and answers UNKNOWN_LOG_APPEND_INFO).
_NO_LOG_START_OFFSET = frozenset({
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.MESSAGE_TOO_LARGE,
    ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.CORRUPT_MESSAGE, ErrorCode.KAFKA_STORAGE_ERROR,
})


class PartitionResult(ProducePartitionResult, gc=False):
    """What one partition's append produced: offsets, or an error. It is the answer's own
    partition entry (wire's ProducePartitionResult), encoded as it is; `error_message` is set
    only with an error."""

    def fail(self, exc: BaseException, log_start_offset: int = -1) -> None:
        """An append that failed. Kafka sends a message only for rejected records (the
        record errors of v8+); the log start offset unless the error is a "known" one."""
        self.error_code = error_code_for(exc)
        self.record_errors = list(getattr(exc, "record_errors", None) or [])
        self.error_message = error_message_for(exc) if self.record_errors else None
        if self.error_code not in _NO_LOG_START_OFFSET:
            self.log_start_offset = log_start_offset


class _Append(msgspec.Struct, gc=False):
    tp: TopicPartition
    log: Any
    records: Buffer
    result: PartitionResult
    appended_bytes: int = 0
    appended_records: int = 0



# Appends that provably cannot block are done on the event loop: storage's nonblocking append
# refuses (AppendWouldBlock, nothing changed) when the log's lock is taken or the append would
# roll a segment, write the leader-epoch checkpoint or fsync, and only logs whose validation is
# per batch (not compacted, no topic codec to recompress to, no bound on old timestamps) and
# requests of at most INLINE_APPEND_MAX_BYTES qualify, so the loop's cost stays bounded. The
# executor hop costs a thread wake-up each way: on this VM a bare run_in_executor round trip
# takes 110-120 us of CPU, most of a small produce's round trip, and more than a whole 1 MB
# batch's validation and write.
INLINE_APPEND_MAX_BYTES = 1024 * 1024
"""Bytes of records one request may append on the loop: a whole batch as librdkafka and the Java
producer fill one under the default message.max.bytes. At this size the loop spends 0.2-0.3 ms
(its CRC alone 50 us). Measured against 256 KiB (alternating runs, Python producer): broker CPU
per 100 B message 0.215 -> 0.165 us, per 10 KiB one 13.6 -> 11.8 us; a probe's round trip
during a flat-out 1 MB-batch producer p50 0.4-0.5 -> 0.6-0.9 ms, its p99 alike (2.4-7.5 ms),
also with vm.dirty_bytes at 64 MB so that writes were throttled."""


def _append(a: _Append, *, nonblocking: bool) -> None:
    try:
        info = a.log.append_as_leader(a.records, leader_epoch=LEADER_EPOCH, nonblocking=nonblocking)
    except AppendWouldBlock:
        raise
    except Exception as exc:  # noqa: BLE001 - mapped per partition at the boundary
        a.result.fail(exc, a.log.log_start_offset)
        return
    r = a.result
    r.base_offset = info.first_offset
    r.log_append_time_ms = info.log_append_time
    r.log_start_offset = info.log_start_offset
    a.appended_bytes = info.valid_bytes
    a.appended_records = info.num_messages


def _append_inline(appends: list[_Append]) -> list[_Append]:
    """Loop side: append what cannot block; returns the appends left for an IO thread."""
    left: list[_Append] = []
    budget = INLINE_APPEND_MAX_BYTES
    for a in appends:
        size = len(a.records)
        if size > budget or not a.log.validation_is_per_batch:
            left.append(a)  # record-level validation or recompression: CPU that grows with the records
            continue
        try:
            _append(a, nonblocking=True)
        except AppendWouldBlock:
            left.append(a)
            continue
        budget -= size
    return left


def _append_all(appends: list[_Append]) -> None:
    """Executor side: append every partition; errors stay per partition."""
    for a in appends:
        _append(a, nonblocking=False)



# Coordinator answers a producer retries: on older clients these were never sent by Produce,
# so Kafka hands them NOT_ENOUGH_REPLICAS, which every producer treats as retriable.
_RETRIABLE_VERIFICATION = frozenset({
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
    ErrorCode.CONCURRENT_TRANSACTIONS,
})


async def _verify_transaction(coordinator: Any, appends: list[_Append], version: int, transactional_id: str
                              ) -> dict[TopicPartition, PartitionResult]:
    """KIP-890: a transactional batch may only land in a partition of its open transaction.

    A partition where the producer already has an open transaction needs no check. Otherwise
    a v12+ producer (transactions v2) has the partition added to its transaction here, and an
    older one must have added it itself (AddPartitionsToTxn), else TRANSACTION_ABORTABLE.
    """
    to_check: dict[TopicPartition, tuple[int, int]] = {}
    for a in appends:
        header = read_batch_header(a.records, 0)
        if not header.is_transactional:
            continue
        entry = a.log.producer_state_manager.last_entry(header.producer_id)
        if entry is not None and entry.current_txn_first_offset >= 0 and entry.producer_epoch == header.producer_epoch:
            continue  # already in a transaction on this partition
        to_check[a.tp] = (header.producer_id, header.producer_epoch)
    rejected: dict[TopicPartition, PartitionResult] = {}
    for key, (producer_id, producer_epoch) in to_check.items():
        tp = key
        if version >= 12:
            try:
                await coordinator.handle_add_partitions_to_transaction(transactional_id, producer_id, producer_epoch,
                                                                       [tp], 2)
                code = ErrorCode.NONE
            except Exception as exc:  # noqa: BLE001 - mapped at the boundary
                code = error_code_for(exc)
        else:
            code = coordinator.handle_verify_partitions_in_transaction(transactional_id, producer_id,
                                                                       producer_epoch, [tp])[tp]
        if code in _RETRIABLE_VERIFICATION:
            code = ErrorCode.NOT_ENOUGH_REPLICAS
        elif code == ErrorCode.PRODUCER_FENCED:
            code = ErrorCode.INVALID_PRODUCER_EPOCH  # what Produce has always answered a stale epoch
        elif code == ErrorCode.TRANSACTION_ABORTABLE and version < 11:
            code = ErrorCode.INVALID_TXN_STATE  # TRANSACTION_ABORTABLE is known from Produce v11 (KIP-1050)
        if code != ErrorCode.NONE:
            result = rejected[key] = PartitionResult(key.partition, code)
            if code == ErrorCode.INVALID_TXN_STATE:
                result.error_message = "Partition was not added to the transaction"
    return rejected



class ReplicaManager:
    def __init__(self, get_log: Callable[[TopicPartition], Any], topic_logs: Callable[[str], Mapping[int, Any]],
                 hosts_topic: Callable[[str], bool],
                 fetch_waiters: FetchWaiters, run_blocking: Callable[..., Awaitable[Any]],
                 cleaner: Callable[[], Any], checkpoint_log_start_offsets: Callable[[], Awaitable[None]],
                 clock_ms: Callable[[], int], transaction_coordinator: Callable[[], Any],
                 verification_enabled: Callable[[], bool], remote_log_manager: Callable[[], Any] = lambda: None) -> None:
        self._get_log = get_log
        self._topic_logs = topic_logs  # a topic's logs by partition number (LogManager.topic_logs)
        self._hosts_topic = hosts_topic
        self.fetch_waiters = fetch_waiters
        self._run_blocking = run_blocking
        self._cleaner = cleaner
        self._checkpoint_log_start_offsets = checkpoint_log_start_offsets
        self._clock_ms = clock_ms
        self._transaction_coordinator = transaction_coordinator
        self._verification_enabled = verification_enabled
        self._remote_log_manager = remote_log_manager  # the RemoteLogManager, when tiered storage is on

    def log_of(self, tp: TopicPartition) -> Any | None:
        """The partition's Log when this node hosts it (its topic exists and the log is open)."""
        return self._get_log(tp) if self._hosts_topic(tp.topic) else None

    # -- DeleteRecords ---------------------------------------------------------------------------
    async def delete_records(self, targets: Mapping[TopicPartition, int]) -> dict[TopicPartition, DeleteRecordsResult]:
        """Raise each partition's log start offset to its target (-1: the high watermark).

        The cleaner must not swap segments of a partition while its log start moves, so any
        clean of it is stopped (waiting for the worker) and kept paused until this is done; the
        new log start offsets are on disk before the answer (a crash must not bring the
        deleted records back); parked fetches are woken to see the new log start.
        """
        logs = {tp: self.log_of(tp) for tp in targets}
        results: dict[TopicPartition, DeleteRecordsResult] = {
            tp: DeleteRecordsResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) for tp, log_ in logs.items() if log_ is None}
        hosted = {tp: log_ for tp, log_ in logs.items() if log_ is not None}
        cleaner = self._cleaner()
        paused: list[TopicPartition] = []
        try:
            if cleaner is not None:
                for tp in hosted:
                    await cleaner.abort_and_pause_cleaning(tp)
                    paused.append(tp)
            results.update(await self._run_blocking(self._delete_all, hosted, dict(targets)))
            if any(r.error == ErrorCode.NONE for tp, r in results.items() if tp in hosted):
                await self._checkpoint_log_start_offsets()
        finally:
            if paused:
                cleaner.resume_cleaning(paused)
        for tp, result in results.items():
            if result.error == ErrorCode.NONE:
                self.fetch_waiters.wake_partition(tp)
        return {tp: results[tp] for tp in targets}

    @staticmethod
    def _delete_all(logs: dict[TopicPartition, Any], targets: dict[TopicPartition, int]
                    ) -> dict[TopicPartition, DeleteRecordsResult]:
        out = {}
        for tp, log_ in logs.items():
            offset = targets[tp]
            try:
                if not log_.config.delete:
                    # Kafka's Partition.deleteRecordsOnLeader: a compacted-only log keeps its records.
                    raise PolicyViolationError(
                        f"Records of partition {tp} can not be deleted due to the configured policy")
                target = log_.high_watermark if offset == HIGH_WATERMARK else offset
                if target < 0:
                    raise OffsetOutOfRangeError(
                        f"Cannot delete records of partition {tp} before offset {offset}: not a valid offset")
                if log_.maybe_increment_log_start_offset(target, "client delete records"):
                    log.info("Incremented log start offset of %s to %d due to client delete records request",
                             tp, target)
                out[tp] = DeleteRecordsResult(ErrorCode.NONE, log_.log_start_offset)
            except Exception as exc:  # noqa: BLE001 - mapped per partition at the boundary
                out[tp] = DeleteRecordsResult(error_code_for(exc))
        return out

    # -- Produce ---------------------------------------------------------------------------------
    async def append_records(self, entries: Mapping[TopicPartition, Buffer], *, acks: int,
                             transactional_id: str | None, produce_version: int) -> dict[TopicPartition, PartitionResult]:
        """Append each partition's (validated, framed) batch, as Kafka's appendRecords: the acks
        check, internal topics refused (their coordinators write them), KIP-890's transaction
        verification, then the append; parked fetches are woken with what was appended.

        Appends that provably cannot block run on the event loop (see _append_inline); the rest
        take one executor hop together.
        """
        results: dict[TopicPartition, PartitionResult] = {}
        appends: list[_Append] = []
        valid_acks = acks in (0, 1, -1)
        for tp, records in entries.items():
            r = results[tp] = PartitionResult(tp.partition)
            if not valid_acks:
                r.fail(InvalidRequiredAcksError(f"Invalid required acks: {acks}"))
                continue
            if is_internal(tp.topic):
                r.fail(InvalidTopicError(f"Cannot append to internal topic {tp.topic}"))
                continue
            log_ = self.log_of(tp)
            if log_ is None:
                r.fail(UnknownTopicOrPartitionError("This server does not host this topic-partition."))
                continue
            appends.append(_Append(tp, log_, records, r))
        if transactional_id is not None and appends and self._verification_enabled():
            refused = await _verify_transaction(self._transaction_coordinator(), appends, produce_version,
                                                transactional_id)
            if refused:
                results.update(refused)
                appends = [a for a in appends if a.tp not in refused]
        if appends:
            blocking = _append_inline(appends)
            if blocking:
                await self._run_blocking(_append_all, blocking)
            for a in appends:
                self._appended(a)
        return results

    def _appended(self, a: _Append) -> None:
        """After an append: parked fetches woken, messages counted, or the failure logged."""
        if a.appended_bytes:
            self.fetch_waiters.on_append(a.tp, a.appended_bytes)
            METRICS.messages_in(a.tp.topic, a.appended_records)
        elif a.result.error_code != ErrorCode.NONE:
            log.debug("Produce to %s failed: %s %s", a.tp, ErrorCode(a.result.error_code).name,
                      a.result.error_message)

    def try_append_inline(self, tp: TopicPartition, records: Buffer) -> PartitionResult | None:
        """append_records for the usual produce, without its per-request bookkeeping: one
        partition of a non-transactional request with acks 1 or -1, appended on the event loop,
        its result (or error) as append_records reports it.

        None leaves the log as it was and sends the caller to append_records, which decides
        what this does not: an internal topic, a partition not hosted here, a log whose
        validation reads records, more than INLINE_APPEND_MAX_BYTES, an append that would block.
        """
        log_ = self.log_of(tp)
        if log_ is None or not log_.validation_is_per_batch or len(records) > INLINE_APPEND_MAX_BYTES \
                or is_internal(tp.topic):
            return None
        a = _Append(tp, log_, records, PartitionResult(tp.partition))
        try:
            _append(a, nonblocking=True)
        except AppendWouldBlock:
            return None
        self._appended(a)
        return a.result

    # -- the coordinators' internal topics (blocking: call on the IO pool, or nonblocking on the loop)
    def append_to_internal_topic(self, tp: TopicPartition, data: bytes, *, transactional: bool,
                                 nonblocking: bool = False) -> Any:
        """Append a coordinator's batches to its internal topic (Kafka's appendRecords with
        internal topics allowed); COORDINATOR_NOT_AVAILABLE while the partition is missing.
        A transactional write (TxnOffsetCommit's offsets) carries no sequence: Kafka's
        COORDINATOR origin. Returns the LogAppendInfo. With `nonblocking` (on the event loop),
        AppendWouldBlock leaves the log unchanged, as for a Produce (_append_inline)."""
        log_ = self.log_of(tp)
        if log_ is None:
            raise CoordinatorNotAvailableError(f"{tp} is not available")
        return log_.append_as_leader(data, LEADER_EPOCH, origin="coordinator" if transactional else "client",
                                     nonblocking=nonblocking)

    def read_internal_topic(self, tp: TopicPartition, offset: int, max_bytes: int) -> tuple[bytes, int, int] | None:
        """Bytes of an internal topic from `offset` (for a coordinator's load), with the
        partition's log start offset and high watermark; None when the partition is missing."""
        log_ = self.log_of(tp)
        if log_ is None:
            return None
        start, end = log_.log_start_offset, log_.high_watermark
        data = log_.read(max(offset, start), max_bytes).read_bytes() if max(offset, start) < end else b""
        return data, start, end

    # -- Fetch -----------------------------------------------------------------------------------
    async def fetch_messages(self, reads: list[PartitionRead], *, replica_id: int, max_wait_ms: int, min_bytes: int,
                             max_bytes: int, read_committed: bool, use_file_regions: bool,
                             on_parked: Callable[[int], None] | None = None,
                             skipped: SkippedReads | None = None) -> list[PartitionRead]:
        """Read the partitions, long-polling until `min_bytes` or `max_wait_ms`; returns the
        reads in Kafka's answer order (partitions not hosted here after those read).

        A read with an error already set (an unknown topic id) is answered as is. When fewer
        than min_bytes are available the fetch parks on the fetch waiters, registered before
        the first read so no append is missed, until appends bring enough bytes, the wait
        passes or the broker shuts down; then it reads once more. `skipped` partitions count
        as read (nothing new): the wait watches them as well, and the read after it is of
        `skipped.reads()`.
        """
        served, unhosted, answer_now = self._resolve(reads, replica_id)
        # Kafka answers at once when nothing can be read, or a read failed or diverged.
        answer_now = answer_now or not (served or skipped)
        everything = served + unhosted
        waiter = None
        if max_wait_ms > 0 and min_bytes > 0 and not answer_now:
            # Registered before reading: an append racing with the read still wakes us.
            watched = [r.topic_partition() for r in served]
            if skipped is not None:
                watched += skipped.topic_partitions()
            waiter = self.fetch_waiters.watch(watched, min_bytes)
        try:
            deadline = time.monotonic() + max_wait_ms / 1000
            total = await self._read(everything, max_bytes, read_committed, use_file_regions)
            if waiter is not None and total < min_bytes and not any(r.error for r in served):
                waiter.needed = max(1, min_bytes - total)
                if waiter.accumulated < waiter.needed:
                    parked_at = time.perf_counter_ns()
                    await waiter.wait(deadline - time.monotonic())
                    if on_parked is not None:
                        on_parked(time.perf_counter_ns() - parked_at)  # not request time (client quotas)
                if skipped is not None:
                    for r in everything:
                        _release(r)
                    served, unhosted, _ = self._resolve(skipped.reads(), replica_id)
                    everything = served + unhosted
                total = await self._read(everything, max_bytes, read_committed, use_file_regions)
        except BaseException:
            for r in everything:
                _release(r)
            raise
        finally:
            if waiter is not None:
                self.fetch_waiters.unwatch(waiter)
        return everything

    def _resolve(self, reads: list[PartitionRead],
                 replica_id: int) -> tuple[list[PartitionRead], list[PartitionRead], bool]:
        """(the reads of hosted partitions, in order, each with its log; the others, answered
        UNKNOWN_TOPIC_OR_PARTITION or UNKNOWN_TOPIC_ID; whether a check before the read already
        decided the answer)."""
        served: list[PartitionRead] = []
        unhosted: list[PartitionRead] = []
        # Per topic, asked once (a consumer's fetch names many partitions of few): its logs by
        # partition number when this node hosts it, else none.
        hosted: dict[str, Mapping[int, Any]] = {}
        answer_now = False
        last_topic: str | None = None  # (consecutive reads of one topic: the usual request)
        logs: Mapping[int, Any] = {}
        for r in reads:
            topic = r.topic
            log_ = None
            if topic is not None and not r.error:
                if topic is not last_topic:
                    found = hosted.get(topic)
                    if found is None:
                        found = hosted[topic] = self._topic_logs(topic) if self._hosts_topic(topic) else {}
                    logs, last_topic = found, topic
                log_ = logs.get(r.index)
            if log_ is None:
                # Kafka answers these before reading (aborted transactions: an empty list,
                # not null) and lists them after the partitions it read. No name: an id no
                # topic has (v13+).
                r.error = r.error or (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if topic is not None
                                      else ErrorCode.UNKNOWN_TOPIC_ID)
                r.aborted = []
                unhosted.append(r)
                continue
            if r.topic_id is not None and log_.topic_id is not None and r.topic_id != log_.topic_id:
                # A fetch session's partition, kept by id, of a topic since deleted and created
                # again under its name (as Kafka's ReplicaManager checks).
                r.error = ErrorCode.INCONSISTENT_TOPIC_ID
                served.append(r)
                answer_now = True
                continue
            if replica_id < 0 and r.last_fetched_epoch < 0 and (r.current_leader_epoch == LEADER_EPOCH
                                                                 or r.current_leader_epoch < 0):
                r.log = log_  # a consumer with nothing to check (_check_epochs would pass)
            else:
                try:
                    r.diverging_epoch = _check_epochs(log_, replica_id, r)
                except KafkaError as exc:
                    r.error = exc.error_code
                    answer_now = True
                else:
                    r.log = log_
                    answer_now = answer_now or r.diverging_epoch is not None
            served.append(r)
        return served, unhosted, answer_now

    async def _read(self, reads: list[PartitionRead], max_bytes: int, read_committed: bool,
                    use_file_regions: bool) -> int:
        """read_partitions on the loop when every byte it needs is in the page cache (a fetch of
        a few partitions: no executor hop, as appends that cannot block), else
        on the IO pool; if the fetch is cancelled meanwhile (the client went away), the regions
        the pooled read still creates are closed when it finishes.

        A fetch that reads remote storage (an offset below a tiered log's local start) runs on
        the RemoteLogManager's reader threads (remote.log.reader.threads), never on the IO pool:
        a slow store must not hold up local reads and appends."""
        remote = self._remote_log_manager()
        if remote is not None and any(_reads_remote(r) for r in reads):
            return await self._read_with_remote(reads, max_bytes, read_committed, use_file_regions, remote)
        else:
            try:
                # `remote` too: a read that became remote meanwhile leaves the loop (ReadWouldBlock).
                return read_partitions(reads, max_bytes, read_committed, use_file_regions, nonblocking=True,
                                       remote=remote)
            except ReadWouldBlock:
                for r in reads:
                    _release(r)
            task = asyncio.ensure_future(self._run_blocking(read_partitions, reads, max_bytes, read_committed,
                                                            use_file_regions, False, remote))
        try:
            return int(await asyncio.shield(task))
        except asyncio.CancelledError:
            def release_all(_task: object) -> None:
                for r in reads:
                    _release(r)

            task.add_done_callback(release_all)
            raise

    async def _read_with_remote(self, reads: list[PartitionRead], max_bytes: int, read_committed: bool,
                                use_file_regions: bool, remote: Any) -> int:
        """A fetch that reads remote storage, on the reader threads, for at most
        remote.fetch.max.wait.ms (Kafka's DelayedRemoteFetch). It reads copies of the partitions:
        when the store is late, the fetch is answered from a local read of the originals, the
        remote partitions without records and without an error (as Kafka answers on expiry), and
        the late read's results are dropped when it ends."""
        work = [r.clone_request() for r in reads]
        task = asyncio.ensure_future(remote.run_reader(read_partitions, work, max_bytes, read_committed,
                                                       use_file_regions, False, remote))

        def release_work(_task: object) -> None:
            for r in work:
                _release(r)

        wait_s = remote.remote_fetch_max_wait_ms() / 1000
        try:
            done, _ = await asyncio.wait({task}, timeout=wait_s)
        except asyncio.CancelledError:
            task.add_done_callback(release_work)
            raise
        if task in done:
            total = int(task.result())
            for r, w in zip(reads, work):
                r.take_result(w)
            return total
        task.add_done_callback(release_work)
        log.debug("A remote read took longer than remote.fetch.max.wait.ms (%d ms): answered without it",
                  int(wait_s * 1000))
        return int(await self._run_blocking(read_partitions, reads, max_bytes, read_committed, use_file_regions,
                                            False, REMOTE_READ_EXPIRED))

    # -- ListOffsets -----------------------------------------------------------------------------
    async def fetch_offsets(self, queries: Mapping[TopicPartition, OffsetQuery], *, version: int,
                            read_committed: bool) -> dict[TopicPartition, FoundOffset]:
        """Kafka's fetchOffsetForTimestamp per partition, after its checks in its order (a
        special timestamp newer than the request's version, an unhosted partition, the current
        leader epoch). Every error answers offset, timestamp and epoch -1; a timestamp later than
        every record finds offset and timestamp -1 (and no epoch)."""
        results: dict[TopicPartition, FoundOffset] = {}
        lookups: dict[TopicPartition, tuple[Any, int]] = {}
        for tp, q in queries.items():
            try:
                if q.timestamp < 0 and version < _SPECIAL_SINCE.get(q.timestamp, version + 1):
                    raise UnsupportedVersionError(f"ListOffsets v{version} does not support timestamp {q.timestamp}")
                log_ = self.log_of(tp)
                if log_ is None:
                    raise UnknownTopicOrPartitionError("This server does not host this topic-partition.")
                check_current_leader_epoch(q.current_leader_epoch)
            except KafkaError as exc:
                results[tp] = FoundOffset(exc.error_code)
                continue
            lookups[tp] = (log_, q.timestamp)
        if lookups:
            isolation = "read_committed" if read_committed else "read_uncommitted"
            results.update(await self._run_blocking(self._lookup_all, lookups, isolation, self._remote_log_manager()))
        return {tp: results[tp] for tp in queries}

    @staticmethod
    def _lookup_all(lookups: dict[TopicPartition, tuple[Any, int]], isolation: str,
                    remote: Any = None) -> dict[TopicPartition, FoundOffset]:
        """Time-index searches: on the IO pool. A tiered log is searched in its remote
        segments first, then locally."""
        out = {}
        for tp, (log_, timestamp) in lookups.items():
            try:
                found = None
                if remote is not None and timestamp >= 0 and log_.remote_log_enabled:
                    found = remote.find_offset_by_timestamp(log_, timestamp)
                if found is None:
                    found = log_.fetch_offset_by_timestamp(timestamp, isolation=isolation)
            except Exception as exc:  # noqa: BLE001 - mapped per partition at the boundary
                out[tp] = FoundOffset(error_code_for(exc))
                continue
            if found is None:
                out[tp] = FoundOffset(ErrorCode.NONE)
            else:
                offset, ts = found
                epoch = LEADER_EPOCH if offset >= 0 else -1
                if timestamp == LATEST_TIERED_TIMESTAMP and offset >= 0:
                    # Kafka reads the epoch of the highest tiered offset from the epoch cache, which
                    # no longer has it once the log start passed it (DeleteRecords): -1 then.
                    known = log_.leader_epoch_cache.epoch_for_offset(offset)
                    epoch = -1 if known is None or offset < log_.log_start_offset else known
                out[tp] = FoundOffset(ErrorCode.NONE, offset, ts, epoch)
        return out

    # -- OffsetForLeaderEpoch --------------------------------------------------------------------
    def offsets_for_leader_epoch(self, tp: TopicPartition, current_leader_epoch: int,
                                 leader_epoch: int) -> EpochEndOffset:
        """Where `leader_epoch` ends in the partition, after the same checks as the other reads."""
        log_ = self.log_of(tp)
        if log_ is None:
            return EpochEndOffset(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        try:
            check_current_leader_epoch(current_leader_epoch)
        except KafkaError as exc:
            return EpochEndOffset(exc.error_code)
        epoch, offset = end_offset_for(log_, leader_epoch)
        return EpochEndOffset(ErrorCode.NONE, epoch, offset)

    # -- transaction markers ---------------------------------------------------------------------
    async def write_txn_markers(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                                result: ControlRecordType, partitions: frozenset[TopicPartition]
                                ) -> dict[TopicPartition, ErrorCode]:
        """WriteTxnMarkers on this node: one COMMIT/ABORT control batch per partition, appended
        as the coordinator's (Kafka's COORDINATOR origin: control batches allowed)."""
        outcome: dict[TopicPartition, ErrorCode] = {}
        logs = {}
        for tp in partitions:
            log_ = self.log_of(tp)
            if log_ is None:
                outcome[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                logs[tp] = log_
        now = self._clock_ms()

        def append_all() -> dict[TopicPartition, int | BaseException]:
            done: dict[TopicPartition, int | BaseException] = {}
            for tp, log_ in logs.items():
                batch = build_control_batch(result, producer_id=producer_id, producer_epoch=producer_epoch,
                                            timestamp=now, coordinator_epoch=coordinator_epoch)
                try:
                    done[tp] = log_.append_as_leader(batch, leader_epoch=LEADER_EPOCH, origin="coordinator").valid_bytes
                except Exception as exc:  # noqa: BLE001 - reported per partition
                    done[tp] = exc
                fault_point("txn.marker")  # some partitions have their marker, others not yet
            return done

        for tp, appended in (await self._run_blocking(append_all)).items():
            if isinstance(appended, BaseException):
                outcome[tp] = error_code_for(appended)
                continue
            outcome[tp] = ErrorCode.NONE
            self.fetch_waiters.on_append(tp, appended)
        return outcome
