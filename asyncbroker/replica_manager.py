"""ReplicaManager: the route from request handlers to the partition logs (Kafka's name).

On Kafka the ReplicaManager owns every partition a broker hosts and is where KafkaApis hands
Produce, Fetch, ListOffsets, DeleteRecords and OffsetForLeaderEpoch after decoding them; the
coordinators write their internal topics and transaction markers through it. Here it owns
the partition lookup (a partition this node does not host is UNKNOWN_TOPIC_OR_PARTITION),
every blocking storage call (on the IO pool), the mapping of storage errors per partition,
and what must happen around a change of the log: pausing the cleaner, checkpointing the log
start offsets, waking parked fetches.

Moved here so far: ListOffsets, DeleteRecords, OffsetForLeaderEpoch and the transaction
markers (WriteTxnMarkers on one node). Produce and Fetch still reach storage from their
handlers (issue 18, step 1, continues).
"""
from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import msgspec

from asyncbroker.fetch_waiters import FetchWaiters
from asyncbroker.handlers import error_code_for
from asyncbroker.leader_epoch import LEADER_EPOCH, UNDEFINED, check_current_leader_epoch, end_offset_for
from storage.fault_injection import fault_point
from storage.topic_partition import TopicPartition
from wire.errors import (
    ErrorCode,
    KafkaError,
    OffsetOutOfRangeError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
)
from wire.records import ControlRecordType, build_control_batch

__all__ = ["DeleteRecordsResult", "EpochEndOffset", "FoundOffset", "OffsetQuery", "ReplicaManager"]

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


class ReplicaManager:
    def __init__(self, get_log: Callable[[TopicPartition], Any], hosts_topic: Callable[[str], bool],
                 fetch_waiters: FetchWaiters, run_blocking: Callable[..., Awaitable[Any]],
                 cleaner: Callable[[], Any], checkpoint_log_start_offsets: Callable[[], Awaitable[None]],
                 clock_ms: Callable[[], int]) -> None:
        self._get_log = get_log
        self._hosts_topic = hosts_topic
        self.fetch_waiters = fetch_waiters
        self._run_blocking = run_blocking
        self._cleaner = cleaner
        self._checkpoint_log_start_offsets = checkpoint_log_start_offsets
        self._clock_ms = clock_ms

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
            results.update(await self._run_blocking(self._lookup_all, lookups, isolation))
        return {tp: results[tp] for tp in queries}

    @staticmethod
    def _lookup_all(lookups: dict[TopicPartition, tuple[Any, int]], isolation: str) -> dict[TopicPartition, FoundOffset]:
        """Time-index searches: on the IO pool."""
        out = {}
        for tp, (log_, timestamp) in lookups.items():
            try:
                found = log_.fetch_offset_by_timestamp(timestamp, isolation=isolation)
            except Exception as exc:  # noqa: BLE001 - mapped per partition at the boundary
                out[tp] = FoundOffset(error_code_for(exc))
                continue
            if found is None:
                out[tp] = FoundOffset(ErrorCode.NONE)
            else:
                offset, ts = found
                out[tp] = FoundOffset(ErrorCode.NONE, offset, ts, LEADER_EPOCH if offset >= 0 else -1)
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
