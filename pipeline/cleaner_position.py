"""Where the log cleaner stands on one partition, computed from the files alone.

This is the driver-side half of the compaction audit: the numbers Kafka's
LogCleanerManager derives from segment metadata, never from record
contents, so they need no Spark job:

  first_dirty       the cleaner-offset-checkpoint entry, reset to the log
                    start when missing or outside [log start, log end]
                    (cleanableOffsets' self-heal)
  first_uncleanable min(active segment base, first segment younger than
                    min.compaction.lag.ms); the last stable offset is taken
                    as the log end (see `PartitionPosition.lso_note`)
  clean_bytes       sizes of segments overlapping [.., first_dirty)
  dirty_bytes       sizes of segments overlapping [first_dirty, first_uncleanable)
                    (LogToClean's cleanableBytes: the active segment never counts)
  dirty_ratio       dirty / (clean + dirty)
  eligible          ratio > min.cleanable.dirty.ratio, or max.compaction.lag.ms
                    exceeded by the earliest dirty closed segment's first batch

The segment files are only read: a local segment through a read-only
descriptor and storage's indexes opened read-only, one on another filesystem
(pipeline.log_dir_fs) by ranged reads.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from pathlib import Path

import msgspec

from pipeline.log_dir_fs import filesystem, read_bytes
from pipeline.log_dir_scan import PartitionDir, SegmentFile
from pipeline.segment_reader import index_positions, segment_bytes
from storage.errors import CorruptIndexError
from storage.file_records import BATCH_ERRORS
from storage.log_config import LogConfig
from storage.log_file_utils import TIME_INDEX_FILE_SUFFIX
from storage.time_index import TimeIndex
from wire.records import BATCH_HEADER_SIZE, LOG_OVERHEAD, BatchHeader, read_batch_header

__all__ = ["PartitionPosition", "cleaner_position", "CleanerSettings", "keys_per_pass"]

HEADER_WALK_CHUNK = 1 << 20
OFFSET_MAP_ENTRY_BYTES = 24  # MD5 (16) + offset (8): SkimpyOffsetMap's slot
MAX_OFFSET_MAP_BYTES = 2**31 - 1


class CleanerSettings(msgspec.Struct, frozen=True):
    """Broker-level cleaner keys the audit needs (Kafka's names and defaults)."""

    dedupe_buffer_size: int = 134_217_728  # log.cleaner.dedupe.buffer.size
    threads: int = 1  # log.cleaner.threads
    io_buffer_load_factor: float = 0.9  # log.cleaner.io.buffer.load.factor


def keys_per_pass(settings: CleanerSettings) -> int:
    """Distinct keys one cleaning pass can map: slots x load factor, per thread's buffer."""
    memory = min(settings.dedupe_buffer_size // max(settings.threads, 1), MAX_OFFSET_MAP_BYTES)
    slots = memory // OFFSET_MAP_ENTRY_BYTES
    return int(slots * settings.io_buffer_load_factor)


class PartitionPosition(msgspec.Struct, frozen=True):
    topic: str
    partition: int
    log_start_offset: int
    log_end_offset: int
    segments: int
    bytes: int
    active_segment_base: int
    checkpoint: int | None
    first_dirty: int
    first_uncleanable: int
    clean_bytes: int
    dirty_bytes: int
    dirty_ratio: float
    min_cleanable_dirty_ratio: float
    compact: bool
    max_compaction_lag_exceeded: bool
    eligible: bool
    earliest_dirty_segment_timestamp: int | None
    in_flight_files: int
    lso_note: str = "last stable offset taken as the log end offset (open transactions are not tracked)"


def _first_batch_timestamp(seg: SegmentFile) -> int | None:
    """maxTimestamp of the segment's first batch (what maxCompactionDelay looks at)."""
    head = segment_bytes(seg, 0, min(seg.size, BATCH_HEADER_SIZE))
    if head is None or len(head) < BATCH_HEADER_SIZE:
        return None
    try:
        return read_batch_header(head, 0).max_timestamp
    except BATCH_ERRORS:
        return None


def _largest_timestamp(seg: SegmentFile) -> int:
    """The segment's largest record timestamp from its time index, else the file's mtime."""
    path = seg.path[: -len(".log")] + TIME_INDEX_FILE_SUFFIX
    try:
        if seg.filesystem:
            data = read_bytes(seg.filesystem, path) or b""
            # The time index's format: (timestamp int64, relative offset int32), big-endian.
            stamps = [ts for ts, _rel in struct.iter_unpack(">qi", data[: len(data) // 12 * 12])]
        else:
            index = TimeIndex(Path(path), seg.base_offset, -1, writable=False)
            try:
                stamps = [index.entry(i).timestamp for i in range(index.entries)]
            finally:
                index.close_handler()
        best = max(stamps, default=-1)
        if best >= 0:
            return best
    except (FileNotFoundError, CorruptIndexError, ValueError, OSError):
        pass
    try:
        if seg.filesystem:
            modified = filesystem(seg.filesystem).get_file_info(seg.path).mtime
            return int(modified.timestamp() * 1000) if modified is not None else -1
        return int(os.stat(seg.path).st_mtime * 1000)
    except FileNotFoundError:
        return -1


def _next_offset(seg: SegmentFile) -> int:
    """The offset after the segment's last complete batch (its base when empty)."""
    start = 0
    for position in index_positions(seg):
        if start < position < seg.size:
            start = position
    next_offset = seg.base_offset
    try:
        for header in _batch_headers(seg, start):
            next_offset = header.base_offset + header.last_offset_delta + 1
    except BATCH_ERRORS:
        pass  # a torn tail: the log ends at the last good batch
    return next_offset


def _batch_headers(seg: SegmentFile, start: int) -> Iterator[BatchHeader]:
    """Headers of the whole batches from `start` to the segment's planned size, read a chunk
    at a time (a segment without a usable index is walked from 0 without holding it)."""
    pos = start
    while seg.size - pos >= BATCH_HEADER_SIZE:
        chunk = segment_bytes(seg, pos, min(HEADER_WALK_CHUNK, seg.size - pos))
        if not chunk:
            return
        rel = 0
        while len(chunk) - rel >= BATCH_HEADER_SIZE:
            header = read_batch_header(chunk, rel)
            size = header.batch_length + LOG_OVERHEAD
            if pos + rel + size > seg.size:
                return  # a partial trailing batch
            yield header
            rel += size  # may pass the chunk's end: the next chunk starts at the next batch
        if rel == 0:
            return
        pos += rel


def _overlapping_bytes(segments: list[SegmentFile], lo: int, hi: int) -> int:
    """Sizes of the segments that may hold offsets in [lo, hi) (LogSegments' floor semantics)."""
    if lo >= hi:
        return 0
    total = 0
    for i, seg in enumerate(segments):
        next_base = segments[i + 1].base_offset if i + 1 < len(segments) else None
        if seg.base_offset >= hi:
            break
        if next_base is not None and next_base <= lo:
            continue
        total += seg.size
    return total


def _from_floor(segments: list[SegmentFile], offset: int) -> list[SegmentFile]:
    """The segment holding `offset` (its floor) and every later one."""
    return [s for i, s in enumerate(segments) if i + 1 >= len(segments) or segments[i + 1].base_offset > offset]


def cleaner_position(part: PartitionDir, config: LogConfig, now_ms: int) -> PartitionPosition:
    segments = part.segments
    if not segments:
        start = part.log_start_offset
        return PartitionPosition(
            part.topic, part.partition, start, start, 0, 0, start, part.cleaner_checkpoint, start, start,
            0, 0, 0.0, config.min_cleanable_dirty_ratio, config.compact, False, False, None, part.in_flight_files,
        )
    active = segments[-1]
    log_start = part.log_start_offset
    log_end = _next_offset(active)
    if log_end == active.base_offset and len(segments) > 1:
        log_end = max(log_end, _next_offset(segments[-2]))
    checkpoint = part.cleaner_checkpoint
    first_dirty = checkpoint if checkpoint is not None else log_start
    if first_dirty < log_start or first_dirty > log_end:
        first_dirty = log_start  # Kafka resets an out-of-range checkpoint to the log start
    first_uncleanable = min(active.base_offset, log_end)
    dirty_closed = _from_floor(segments, first_dirty)[:-1]  # nonActiveLogSegmentsFrom(first_dirty)
    if config.min_compaction_lag_ms > 0:
        cutoff = now_ms - config.min_compaction_lag_ms
        for seg in dirty_closed:
            if _largest_timestamp(seg) > cutoff:
                first_uncleanable = min(first_uncleanable, seg.base_offset)
                break
    first_uncleanable = max(first_uncleanable, first_dirty)
    clean_bytes = _overlapping_bytes(segments, -1, first_dirty)
    dirty_bytes = _overlapping_bytes(segments, first_dirty, first_uncleanable)
    total = clean_bytes + dirty_bytes
    ratio = dirty_bytes / total if total > 0 else 0.0
    # max.compaction.lag.ms: the earliest first-batch timestamp of the dirty closed segments
    earliest: int | None = None
    for seg in dirty_closed:
        ts = _first_batch_timestamp(seg)
        if ts is not None and ts > 0:
            earliest = ts if earliest is None else min(earliest, ts)
    lag_exceeded = (
        earliest is not None and earliest < now_ms - max(config.max_compaction_lag_ms, 0) and dirty_bytes > 0
    )
    eligible = config.compact and ((ratio > config.min_cleanable_dirty_ratio) or lag_exceeded) and dirty_bytes > 0
    return PartitionPosition(
        topic=part.topic,
        partition=part.partition,
        log_start_offset=log_start,
        log_end_offset=log_end,
        segments=len(segments),
        bytes=sum(s.size for s in segments),
        active_segment_base=active.base_offset,
        checkpoint=checkpoint,
        first_dirty=first_dirty,
        first_uncleanable=first_uncleanable,
        clean_bytes=clean_bytes,
        dirty_bytes=dirty_bytes,
        dirty_ratio=ratio,
        min_cleanable_dirty_ratio=config.min_cleanable_dirty_ratio,
        compact=config.compact,
        max_compaction_lag_exceeded=lag_exceeded,
        eligible=eligible,
        earliest_dirty_segment_timestamp=earliest,
        in_flight_files=part.in_flight_files,
    )
