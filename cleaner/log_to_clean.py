"""Selection arithmetic over a live log: cleanable offsets, byte split, compaction delay.

Kafka's LogToClean plus LogCleanerManager.cleanableOffsets / maxCompactionDelay, and the
snapshot of a log the manager sends a worker (`clean_request_for`). Runs in executor
threads of the broker (it stats files and reads a few batch headers).
"""
from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

import msgspec

from cleaner.clean_request import CleanRequest, SegmentDescriptor
from storage.log_segment import LogSegment
from wire.records import BATCH_HEADER_SIZE, read_batch_header

if TYPE_CHECKING:
    from storage.log import Log

__all__ = ["OffsetsToClean", "LogToClean", "cleanable_offsets", "max_compaction_delay", "clean_request_for",
           "cleanable_bytes"]

logger = logging.getLogger(__name__)

LONG_MAX = 2**63 - 1


class OffsetsToClean(msgspec.Struct, frozen=True):
    first_dirty_offset: int
    first_uncleanable_dirty_offset: int
    force_update_checkpoint: bool = False


class LogToClean(msgspec.Struct, frozen=True):
    """A compacted log and its clean/cleanable byte split; ordered by cleanable ratio."""

    log: "Log"  # msgspec never decodes this struct, so it never resolves the annotation
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    need_compaction_now: bool = False

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        total = self.total_bytes
        return self.cleanable_bytes / total if total else 0.0

    @classmethod
    def of(cls, log: "Log", first_dirty: int, first_uncleanable: int, need_compaction_now: bool = False) -> "LogToClean":
        clean, cleanable = cleanable_bytes(log, first_dirty, first_uncleanable)
        return cls(log, first_dirty, first_uncleanable, clean, cleanable, need_compaction_now)


def _segments(log: "Log", from_offset: int, to_offset: int) -> list[LogSegment]:
    """Kafka's logSegments(from, to)."""
    if from_offset >= to_offset:
        return []
    return log.segments.values(from_offset, to_offset)


def cleanable_bytes(log: "Log", first_dirty: int, first_uncleanable: int) -> tuple[int, int]:
    """(bytes below the first dirty offset, bytes of [first dirty, first uncleanable))."""
    clean = sum(s.size() for s in _segments(log, -1, first_dirty))
    cleanable = sum(s.size() for s in _segments(log, first_dirty, max(first_dirty, first_uncleanable)))
    return clean, cleanable


def _non_active_segments_from(log: "Log", from_offset: int) -> list[LogSegment]:
    active = log.segments.active_segment()
    if from_offset > active.base_offset:
        return []
    return _segments(log, from_offset, active.base_offset)


def cleanable_offsets(log: "Log", checkpoint: int | None, now: int) -> OffsetsToClean:
    """First dirty offset (the checkpoint, self-healed into [log start, log end]) and first
    uncleanable offset = min(last stable offset, active segment base, first segment younger
    than min.compaction.lag.ms)."""
    log_start = log.log_start_offset
    checkpoint_dirty = log_start if checkpoint is None else checkpoint
    force = False
    if checkpoint_dirty < log_start:
        if not log.config.delete:
            logger.warning("Resetting first dirty offset of %s to log start offset %d since the checkpointed "
                           "offset %d is invalid.", log.topic_partition, log_start, checkpoint_dirty)
        first_dirty, force = log_start, True
    elif checkpoint_dirty > log.log_end_offset:
        # Data corruption at the end of the log, say: conservatively clean it all again.
        logger.warning("The last checkpoint dirty offset for partition %s is %d, which is larger than the log "
                       "end offset %d. Resetting to the log start offset %d.", log.topic_partition,
                       checkpoint_dirty, log.log_end_offset, log_start)
        first_dirty, force = log_start, True
    else:
        first_dirty = checkpoint_dirty
    min_lag = max(log.config.min_compaction_lag_ms, 0)
    bounds = [log.last_stable_offset, log.segments.active_segment().base_offset]
    if min_lag > 0:
        for segment in _non_active_segments_from(log, first_dirty):
            if segment.largest_timestamp() > now - min_lag:
                bounds.append(segment.base_offset)
                break
    first_uncleanable = min(bounds)
    return OffsetsToClean(first_dirty, max(first_dirty, first_uncleanable), force)


def first_batch_timestamp(segment: LogSegment) -> int:
    """The first batch's max timestamp (Kafka's getFirstBatchTimestamp), LONG_MAX when empty."""
    if segment.size() < BATCH_HEADER_SIZE:
        return LONG_MAX
    head = segment.log.read(0, BATCH_HEADER_SIZE)
    if len(head) < BATCH_HEADER_SIZE:
        return LONG_MAX
    return read_batch_header(head).max_timestamp


def max_compaction_delay(log: "Log", first_dirty: int, now: int) -> int:
    """How long (ms) the earliest dirty segment has waited beyond max.compaction.lag.ms; > 0
    forces cleaning even below min.cleanable.dirty.ratio."""
    stamps = [t for t in (first_batch_timestamp(s) for s in _non_active_segments_from(log, first_dirty)) if t > 0]
    earliest = min(stamps) if stamps else LONG_MAX
    max_lag = max(log.config.max_compaction_lag_ms, 0)
    clean_until = now - max_lag
    return clean_until - earliest if earliest < clean_until else 0


def clean_request_for(log: "Log", first_dirty: int, first_uncleanable: int, now: int, *,
                      max_message_size: int | None = None) -> CleanRequest:
    """Snapshot what a worker needs: paths, config, offsets and the segment list."""
    descriptors = []
    for s in log.segments.values():
        descriptors.append(SegmentDescriptor(
            base_offset=s.base_offset,
            size=s.size(),
            offset_index_bytes=_index_bytes(s.offset_index),
            time_index_bytes=_index_bytes(s.time_index),
            last_modified_ms=_last_modified(s),
        ))
    return CleanRequest(
        dir=str(log.dir),
        topic=log.topic_partition.topic,
        partition=log.topic_partition.partition,
        config=log.config,
        segments=descriptors,
        first_dirty_offset=first_dirty,
        first_uncleanable_offset=first_uncleanable,
        current_time_ms=now,
        last_records_of_active_producers=_last_records_of_active_producers(log),
        max_message_size=max_message_size if max_message_size is not None else log.config.max_message_bytes,
    )


def _index_bytes(index: Any) -> int:
    """Bytes of valid entries, without mapping (or creating) an index that is not open yet:
    a closed index of a non-active segment is trimmed to its entries."""
    if index.is_mapped:
        return int(index.size_in_bytes)
    try:
        return os.path.getsize(index.path)
    except FileNotFoundError:
        return 0


def _last_modified(segment: LogSegment) -> int:
    try:
        return segment.last_modified_ms()
    except FileNotFoundError:
        return 0


def _last_records_of_active_producers(log: "Log") -> dict[int, tuple[int, int]]:
    """Kafka's lastRecordsOfActiveProducers: producer id -> (offset of its last data record or
    -1 when its last entry is a marker, its epoch), from storage's ProducerStateManager."""
    psm = log.producer_state_manager
    producers = getattr(psm, "producers", None)
    if not producers:
        return {}
    out: dict[int, tuple[int, int]] = {}
    for pid, entry in list(producers.items()):
        last = getattr(entry, "last_data_offset", -1)
        out[int(pid)] = (int(last) if last is not None and last >= 0 else -1, int(entry.producer_epoch))
    return out
