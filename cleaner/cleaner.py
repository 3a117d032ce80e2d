"""Cleaner: Kafka's two-pass compaction of one partition log (Cleaner.doClean).

Pass 1 reads the dirty section [firstDirtyOffset, firstUncleanableOffset) and records
each key's latest offset in the SkimpyOffsetMap, stopping early when the map is "full"
(the clean then covers only a prefix of the dirty range). Pass 2 rereads every segment
below the map's end, in groups that fit one segment, and copies the survivors into
`.cleaned` segments (with offset/time/transaction indexes). Nothing here touches a live
Log: it runs in a worker process on paths and offsets, and the broker swaps the
`.cleaned` output in afterwards.

Per-record work is unavoidable (keys must be read), so the cleaner walks records with
wire.records' specialised walkers (record_layouts, record_keys_and_offsets): tight loops
over the decompressed section, no Record objects, short varints inlined; MD5 and the map
probe are batched per record batch here.
"""
from __future__ import annotations

import enum
import gc
import logging
import os
import time
from pathlib import Path
from typing import Callable


from cleaner.clean_request import CleanedSegment, CleanRequest, CleanResult, SegmentDescriptor
from cleaner.cleaner_stats import CleanerStats
from cleaner.offset_map import SkimpyOffsetMap
from cleaner.throttler import Throttler
from cleaner.transaction_metadata import CleanedTransactionMetadata
from storage.log_file_utils import CLEANED_FILE_SUFFIX, log_file, offset_index_file, time_index_file, transaction_index_file
from storage.log_segment import LogSegment
from storage.offset_index import OffsetIndex
from storage.transaction_index import AbortedTxn, TransactionIndex
from wire.compression import CompressionType, compress
from wire.errors import CorruptRecordError
from wire.records import (
    BATCH_HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    BatchHeaderFields,
    Buffer,
    RecordLayout,
    batch_length_at,
    encode_batch,
    read_batch_header,
    read_uvarint,
    rebuild_records,
    record_keys_and_offsets,
    record_layouts,
    records_section,
    validate_batch,
)

__all__ = [
    "Cleaner",
    "BatchRetention",
    "group_segments_by_size",
    "should_retain_record",
    "filter_batches",
    "FilterContext",
    "INT_MAX",
]

logger = logging.getLogger(__name__)

INT_MAX = 2**31 - 1


_CODEC_MASK = 0x07
_TIMESTAMP_TYPE_MASK = 0x08
_TRANSACTIONAL_MASK = 0x10
_CONTROL_MASK = 0x20
_DELETE_HORIZON_MASK = 0x40


class BatchRetention(enum.IntEnum):
    """Kafka's RecordFilter.BatchRetention."""

    DELETE = 0
    """Drop the whole batch, records and header."""
    DELETE_EMPTY = 1
    """Keep the batch only if some record survives."""
    RETAIN_EMPTY = 2
    """Keep the header even with no record (producer state, last offset of the round)."""


# -- grouping -------------------------------------------------------------------------------------


def group_segments_by_size(segments: list[SegmentDescriptor], max_size: int, max_index_size: int,
                           first_uncleanable_offset: int) -> list[list[SegmentDescriptor]]:
    """Group consecutive segments so each group can be rewritten into ONE segment.

    A group's log bytes stay <= segment.bytes, its offset and time index bytes <=
    segment.index.bytes, and its offsets span <= Int.MaxValue from the group's base (so
    every offset fits the 4-byte relative offset of the new segment's indexes). Merging
    small neighbours keeps repeated cleans from shrinking segments to nothing.
    """
    grouped: list[list[SegmentDescriptor]] = []
    rest = list(segments)
    while rest:
        first = rest.pop(0)
        group = [first]
        log_size = first.size
        index_size = first.offset_index_bytes
        time_index_size = first.time_index_bytes
        while rest:
            nxt = rest[0]
            if log_size + nxt.size > max_size:
                break
            if index_size + nxt.offset_index_bytes > max_index_size:
                break
            if time_index_size + nxt.time_index_bytes > max_index_size:
                break
            # An empty segment cannot overflow the offset range (avoids an empty segment left
            # behind every 2^31 offsets).
            if nxt.size != 0:
                last_offset = (rest[1].base_offset - 1) if len(rest) > 1 else first_uncleanable_offset - 1
                if last_offset - first.base_offset > INT_MAX:
                    break
            group.append(nxt)
            log_size += nxt.size
            index_size += nxt.offset_index_bytes
            time_index_size += nxt.time_index_bytes
            rest.pop(0)
        grouped.append(group)
    return grouped


# -- the record rule --------------------------------------------------------------------------------


def should_retain_record(offset_map: SkimpyOffsetMap, delete_horizon_ms: int | None, offset: int,
                         key: bytes | None, has_value: bool, stats: CleanerStats, current_time: int) -> bool:
    """Kafka's Cleaner.shouldRetainRecord for a v2 batch.

    * beyond what pass 1 mapped (offset > map.latestOffset) -> keep;
    * no key -> invalid in a compacted log: drop and count;
    * otherwise keep only the key's latest offset, and a tombstone only while its batch
      has no delete horizon yet or the clock has not reached it.
    (The filter in `filter_batches` inlines exactly this logic for speed.)
    """
    if offset > offset_map.latest_offset:
        return True
    if key is None:
        stats.invalid_message()
        return False
    found = offset_map.get(key)
    latest_for_key = offset >= found
    retain_deletes = delete_horizon_ms is None or current_time < delete_horizon_ms
    return latest_for_key and (has_value or retain_deletes)


# -- batch rebuilding -------------------------------------------------------------------------------


def _rebuild_batch(h: BatchHeader, data: Buffer, retained: list[RecordLayout], delete_horizon_ms: int | None) -> bytes:
    """Kafka's buildRetainedRecordsInto: the retained records in a new batch with the input
    batch's codec, base offset, producer fields and lastOffsetDelta (kept so the producer's
    last sequence survives), baseTimestamp = delete horizon if any, else the first record's."""
    log_append = bool(h.attributes & _TIMESTAMP_TYPE_MASK)
    base_ts = h.base_timestamp
    if delete_horizon_ms is not None:
        new_base = delete_horizon_ms
    elif log_append:
        new_base = h.max_timestamp
    else:
        new_base = base_ts + _timestamp_delta(data, retained[0][2] + 1)
    # Only the timestampDeltas change (and not at all when new_base == base_ts).
    body, max_ts = rebuild_records(data, [(r[0], r[1]) for r in retained], base_ts, new_base, h.max_timestamp,
                                   log_append)
    codec = h.attributes & _CODEC_MASK
    payload = compress(CompressionType(codec), body) if codec else body
    attributes = h.attributes & (_CODEC_MASK | _TIMESTAMP_TYPE_MASK | _TRANSACTIONAL_MASK | _CONTROL_MASK)
    if delete_horizon_ms is not None:
        attributes |= _DELETE_HORIZON_MASK
    return encode_batch(BatchHeaderFields(
        base_offset=h.base_offset, partition_leader_epoch=h.partition_leader_epoch, attributes=attributes,
        last_offset_delta=h.last_offset_delta, base_timestamp=new_base, max_timestamp=max_ts,
        producer_id=h.producer_id, producer_epoch=h.producer_epoch, base_sequence=h.base_sequence,
        records_count=len(retained)), payload)


def _timestamp_delta(data: Buffer, p: int) -> int:
    """The zigzag varlong timestampDelta at `p` (a record's attributes byte + 1)."""
    v, _ = read_uvarint(data, p, len(data), 10)
    return (v >> 1) ^ -(v & 1)


def _empty_batch(h: BatchHeader) -> bytes:
    """Kafka's writeEmptyHeader: the header alone, keeping the offset range and producer fields."""
    attributes = h.attributes & (_TIMESTAMP_TYPE_MASK | _TRANSACTIONAL_MASK | _CONTROL_MASK)
    return encode_batch(BatchHeaderFields(
        base_offset=h.base_offset, partition_leader_epoch=h.partition_leader_epoch, attributes=attributes,
        last_offset_delta=h.last_offset_delta, base_timestamp=-1, max_timestamp=h.max_timestamp,
        producer_id=h.producer_id, producer_epoch=h.producer_epoch, base_sequence=h.base_sequence,
        records_count=0))


# -- the per-batch filter (MemoryRecords.filterTo with the cleaner's RecordFilter) ------------------


class FilterContext:
    """Everything the pass-2 filter needs besides the bytes: map, clock, horizons, producers."""

    __slots__ = ("offset_map", "current_time", "delete_retention_ms", "txn", "last_records_of_active_producers",
                 "upper_bound_offset_of_round", "stats")

    def __init__(self, offset_map: SkimpyOffsetMap, current_time: int, delete_retention_ms: int,
                 txn: CleanedTransactionMetadata, last_records_of_active_producers: dict[int, tuple[int, int]],
                 upper_bound_offset_of_round: int, stats: CleanerStats) -> None:
        self.offset_map = offset_map
        self.current_time = current_time
        self.delete_retention_ms = delete_retention_ms
        self.txn = txn
        self.last_records_of_active_producers = last_records_of_active_producers
        self.upper_bound_offset_of_round = upper_bound_offset_of_round
        self.stats = stats


def _is_last_batch_of_active_producer(ctx: FilterContext, h: BatchHeader) -> bool:
    last = ctx.last_records_of_active_producers.get(h.producer_id)
    if last is None:
        return False
    last_data_offset, producer_epoch = last
    if last_data_offset >= 0:
        return h.base_offset + h.last_offset_delta == last_data_offset
    # The producer's last entry is a marker: keep it, it carries the latest epoch (fencing).
    return bool(h.attributes & _CONTROL_MASK) and h.producer_epoch == producer_epoch


def filter_batches(buf: bytes | memoryview, ctx: FilterContext) -> tuple[int, bytearray, int]:
    """Filter the complete batches at the start of `buf` into a new buffer.

    Returns (bytes consumed, output, messages retained). A trailing partial batch is left
    for the next read. CRCs are checked so corrupt input is never re-stamped with a
    fresh CRC. Counts reads/writes into ctx.stats.
    """
    out = bytearray()
    stats = ctx.stats
    offset_map = ctx.offset_map
    now = ctx.current_time
    txn = ctx.txn
    latest = offset_map.latest_offset
    n = len(buf)
    pos = 0
    retained_messages = 0
    while n - pos >= BATCH_HEADER_SIZE:
        batch_length = batch_length_at(buf, pos)
        size = batch_length + LOG_OVERHEAD
        if size > n - pos:
            break
        h = validate_batch(buf, pos)
        attrs = h.attributes
        is_control = bool(attrs & _CONTROL_MASK)
        last_offset = h.base_offset + h.last_offset_delta
        stats.bytes_read += size
        count = h.records_count
        data: Buffer = b""
        records: list[RecordLayout] = []
        # -- batch level (checkBatchRetention) --
        if is_control:
            if count:
                data = records_section(buf, pos, h)
                records = record_layouts(data, count)
            can_discard = txn.on_control_batch_read(last_offset, h.producer_id, records[0][4] if records else None)
            has_horizon = bool(attrs & _DELETE_HORIZON_MASK)
            discard_batch_records = can_discard and has_horizon and h.base_timestamp <= now
        else:
            can_discard = txn.on_batch_read(last_offset, h.producer_id, bool(attrs & _TRANSACTIONAL_MASK))
            discard_batch_records = can_discard
        if h.producer_id >= 0 and _is_last_batch_of_active_producer(ctx, h):
            retention = BatchRetention.RETAIN_EMPTY
        elif last_offset + 1 == ctx.upper_bound_offset_of_round:
            # The round's last batch stays, even empty, so the log's last offset is not lost.
            retention = BatchRetention.RETAIN_EMPTY
        elif discard_batch_records:
            retention = BatchRetention.DELETE
        else:
            retention = BatchRetention.DELETE_EMPTY
        contains_marker_for_empty_txn = can_discard and is_control
        if retention == BatchRetention.DELETE:
            pos += size
            continue
        # -- record level (shouldRetainRecord) --
        if count and not is_control:
            data = records_section(buf, pos, h)
            records = record_layouts(data, count)
        stats.messages_read += len(records)
        if discard_batch_records:
            retained: list[RecordLayout] = []
        elif is_control:
            retained = records
        else:
            has_horizon = bool(attrs & _DELETE_HORIZON_MASK)
            retain_deletes = not has_horizon or now < h.base_timestamp
            base = h.base_offset
            keys = [r[4] for r in records]
            if last_offset <= latest and None not in keys:
                # The common case, as one comprehension: every record mapped, every key set.
                found = offset_map.get_keys(keys)  # type: ignore[arg-type]  # no None: checked just above
                retained = [r for r, f in zip(records, found) if base + r[3] >= f and (retain_deletes or not r[5])]
            else:
                lookup_keys = [r[4] for r in records if base + r[3] <= latest and r[4] is not None]
                found_iter = iter(offset_map.get_keys(lookup_keys)) if lookup_keys else iter(())
                retained = []
                for r in records:
                    offset = base + r[3]
                    if offset > latest:
                        retained.append(r)
                    elif r[4] is None:
                        stats.invalid_messages_read += 1
                    elif offset >= next(found_iter) and (not r[5] or retain_deletes):
                        retained.append(r)
        if retained:
            tombstones = sum(1 for r in retained if r[5]) if not is_control else 0
            stats.tombstones_retained += tombstones
            has_horizon = bool(attrs & _DELETE_HORIZON_MASK)
            need_horizon = (tombstones > 0 or contains_marker_for_empty_txn) and not has_horizon
            if len(retained) == len(records) and not need_horizon:
                out += buf[pos:pos + size]
            else:
                if need_horizon:
                    horizon: int | None = now + ctx.delete_retention_ms
                else:
                    horizon = h.base_timestamp if has_horizon else None
                out += _rebuild_batch(h, data, retained, horizon)
            retained_messages += len(retained)
        elif retention == BatchRetention.RETAIN_EMPTY:
            out += _empty_batch(h)
        pos += size
    return pos, out, retained_messages


# -- reading segments ---------------------------------------------------------------------------------


class _SegmentFile:
    """Read-only view of one live segment's `.log`, bounded by its size at selection time."""

    def __init__(self, dir: Path, desc: SegmentDescriptor) -> None:
        self.desc = desc
        self.path = log_file(dir, desc.base_offset)
        self.fd = os.open(self.path, os.O_RDONLY)

    def read(self, position: int, size: int) -> bytes:
        return os.pread(self.fd, size, position)

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> "_SegmentFile":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _floor_index(segments: list[SegmentDescriptor], offset: int) -> int:
    idx = 0
    for i, s in enumerate(segments):
        if s.base_offset <= offset:
            idx = i
        else:
            break
    return idx


def segments_in_range(segments: list[SegmentDescriptor], from_offset: int, to_offset: int) -> list[SegmentDescriptor]:
    """Kafka's logSegments(from, to): the floor segment of `from` up to those based below `to`."""
    if from_offset >= to_offset:
        return []
    start = _floor_index(segments, from_offset)
    return [s for s in segments[start:] if s.base_offset < to_offset]


class _ConstantClock:
    def __init__(self, ms: int) -> None:
        self._ms = ms

    def milliseconds(self) -> int:
        return self._ms

    def nanoseconds(self) -> int:
        return time.monotonic_ns()


# -- the cleaner ----------------------------------------------------------------------------------------


class Cleaner:
    """One worker's cleaner: its offset map and I/O buffers are reused across logs.

    `check_done` raises LogCleaningAbortedError when the manager aborted this clean; it is
    called between segments and between reads, as Kafka's checkDone is.
    """

    def __init__(self, id: int, offset_map: SkimpyOffsetMap, io_buffer_size: int, max_io_buffer_size: int,
                 dup_buffer_load_factor: float, throttler: Throttler | None = None,
                 check_done: Callable[[], None] | None = None) -> None:
        self.id = id
        self.offset_map = offset_map
        self.io_buffer_size = max(io_buffer_size, BATCH_HEADER_SIZE)
        self.max_io_buffer_size = max_io_buffer_size
        self.dup_buffer_load_factor = dup_buffer_load_factor
        self.throttler = throttler or Throttler(float("inf"))
        self.check_done = check_done or (lambda: None)
        self._read_size = self.io_buffer_size

    # -- entry point -------------------------------------------------------------------------------
    def clean(self, request: CleanRequest) -> CleanResult:
        """Clean [first dirty, first uncleanable) of the log in request.dir; write `.cleaned` segments.

        On any failure (including an abort) every `.cleaned` file written so far is removed.
        """
        # The walkers allocate millions of short-lived tuples and no cycles: the cyclic GC
        # would only rescan them over and over.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        cpu_start = time.process_time()
        try:
            result = self._clean(request)
            result.stats.cpu_secs = time.process_time() - cpu_start
            return result
        finally:
            if gc_was_enabled:
                gc.enable()

    def _clean(self, request: CleanRequest) -> CleanResult:
        stats = CleanerStats()
        dir = Path(request.dir)
        segments = list(request.segments)
        logger.info("Beginning cleaning of log %s", request.log_name)
        self.build_offset_map(dir, segments, request.first_dirty_offset, request.first_uncleanable_offset,
                              stats, request.max_message_size)
        end_offset = self.offset_map.latest_offset + 1
        stats.index_done()
        written: list[CleanedSegment] = []
        try:
            txn = CleanedTransactionMetadata()
            to_clean = segments_in_range(segments, 0, end_offset)
            groups = group_segments_by_size(to_clean, request.config.segment_size, request.config.max_index_size,
                                            request.first_uncleanable_offset)
            for group in groups:
                written.append(self._clean_segments(dir, request, segments, group, stats, txn,
                                                    request.first_uncleanable_offset))
        except BaseException:
            for cleaned in written:
                _delete_cleaned_files(dir, cleaned.base_offset)
            raise
        stats.buffer_utilization = self.offset_map.utilization
        stats.all_done()
        return CleanResult(end_offset=end_offset, stats=stats, segments=written)

    # -- pass 1 ---------------------------------------------------------------------------------------
    def build_offset_map(self, dir: Path, segments: list[SegmentDescriptor], start: int, end: int,
                         stats: CleanerStats, max_message_size: int) -> None:
        """Map key -> latest offset over the dirty section; stops when the map is full."""
        offset_map = self.offset_map
        offset_map.clear()
        dirty = segments_in_range(segments, start, end)
        txn = CleanedTransactionMetadata()
        txn.add_aborted_transactions(_collect_aborted_transactions(dir, segments, start, end))
        max_desired = int(offset_map.slots * self.dup_buffer_load_factor)
        for i, segment in enumerate(dirty):
            self.check_done()
            next_start = dirty[i + 1].base_offset if i + 1 < len(dirty) else end
            full = self._build_offset_map_for_segment(dir, segment, start, next_start, max_desired, txn, stats,
                                                      max_message_size)
            if full:
                logger.debug("Offset map is full, %d segments fully mapped, segment with base offset %d is "
                             "partially mapped", i, segment.base_offset)
                break

    def _build_offset_map_for_segment(self, dir: Path, segment: SegmentDescriptor, start: int, end: int,
                                      max_desired: int, txn: CleanedTransactionMetadata, stats: CleanerStats,
                                      max_message_size: int) -> bool:
        offset_map = self.offset_map
        position = _index_lookup(dir, segment, start)
        reached_end = False
        with _SegmentFile(dir, segment) as f:
            while position < segment.size and not reached_end:
                self.check_done()
                buf = f.read(position, min(self._read_size, segment.size - position))
                self.throttler.maybe_throttle(len(buf))
                start_position = position
                n = len(buf)
                pos = 0
                while n - pos >= BATCH_HEADER_SIZE:
                    batch_length = batch_length_at(buf, pos)
                    size = batch_length + LOG_OVERHEAD
                    if size > n - pos:
                        break
                    h = validate_batch(buf, pos)
                    if h.base_offset >= end:
                        # Never map past the first uncleanable offset (it may sit inside this segment).
                        reached_end = True
                        break
                    last_offset = h.base_offset + h.last_offset_delta
                    if h.attributes & _CONTROL_MASK:
                        records = (record_layouts(records_section(buf, pos, h), h.records_count)
                                   if h.records_count else [])
                        txn.on_control_batch_read(last_offset, h.producer_id, records[0][4] if records else None)
                        stats.index_messages_read(1)
                    elif txn.on_batch_read(last_offset, h.producer_id, bool(h.attributes & _TRANSACTIONAL_MASK)):
                        stats.index_messages_read(h.records_count)  # aborted: not mapped
                    elif h.records_count:
                        keys, offsets = record_keys_and_offsets(records_section(buf, pos, h), h.records_count,
                                                                h.base_offset, start)
                        if keys:
                            stored = offset_map.put_keys(keys, offsets, max_desired)
                            if stored < len(keys):
                                stats.index_bytes_read(pos)
                                return True
                        stats.index_messages_read(h.records_count)
                    if last_offset >= start:
                        offset_map.update_latest_offset(last_offset)
                    pos += size
                position += pos
                stats.index_bytes_read(pos)
                if position == start_position and not reached_end:
                    self._grow_buffers_or_fail(f, position, buf, max_message_size)
        # Offsets with no keyed record (gaps, markers) up to the next segment count as mapped.
        offset_map.update_latest_offset(end - 1)
        self._restore_buffers()
        return False

    # -- pass 2 ---------------------------------------------------------------------------------------
    def _clean_segments(self, dir: Path, request: CleanRequest, all_segments: list[SegmentDescriptor],
                        group: list[SegmentDescriptor], stats: CleanerStats, txn: CleanedTransactionMetadata,
                        upper_bound_offset_of_round: int) -> CleanedSegment:
        """Rewrite one group into a single `.cleaned` segment based at the group's first base."""
        base = group[0].base_offset
        _delete_cleaned_files(dir, base)
        cleaned = LogSegment.open(dir, base, request.config, _ConstantClock(request.current_time_ms),
                                  file_suffix=CLEANED_FILE_SUFFIX)
        try:
            txn.cleaned_index_append = cleaned.txn_index.append
            ctx = FilterContext(self.offset_map, request.current_time_ms, request.config.delete_retention_ms, txn,
                                request.last_records_of_active_producers, upper_bound_offset_of_round, stats)
            for segment in group:
                self.check_done()
                idx = all_segments.index(segment)
                upper = all_segments[idx + 1].base_offset if idx + 1 < len(all_segments) else request.first_uncleanable_offset
                # The whole segment's aborted transactions: the new txn index is rebuilt from them.
                txn.add_aborted_transactions(_collect_aborted_transactions(dir, all_segments, segment.base_offset, upper))
                self._clean_into(dir, segment, cleaned, ctx, request.max_message_size)
            cleaned.on_become_inactive_segment()
            cleaned.flush()
            size = cleaned.size()
            cleaned.close()
            # Keep the old files' age so time-based retention of compact,delete logs is unchanged.
            modified = group[-1].last_modified_ms or _mtime_ms(log_file(dir, group[-1].base_offset))
            cleaned.set_last_modified(modified)
        except BaseException:
            cleaned.close_handlers()
            cleaned.log.close()
            _delete_cleaned_files(dir, base)
            raise
        finally:
            txn.cleaned_index_append = None
        return CleanedSegment(base_offset=base, replaces=[s.base_offset for s in group], size=size)

    def _clean_into(self, dir: Path, segment: SegmentDescriptor, dest: LogSegment, ctx: FilterContext,
                    max_message_size: int) -> None:
        stats = ctx.stats
        position = 0
        with _SegmentFile(dir, segment) as f:
            while position < segment.size:
                self.check_done()
                buf = f.read(position, min(self._read_size, segment.size - position))
                self.throttler.maybe_throttle(len(buf))
                consumed, out, retained = filter_batches(buf, ctx)
                start_position = position
                position += consumed
                if out:
                    batches = []
                    p = 0
                    largest = -1
                    largest_ts = -1
                    shallow = -1
                    while p < len(out):
                        hdr = read_batch_header(out, p)
                        batches.append((hdr, p))
                        last = hdr.base_offset + hdr.last_offset_delta
                        largest = max(largest, last)
                        if hdr.max_timestamp > largest_ts:
                            largest_ts, shallow = hdr.max_timestamp, last
                        p += hdr.batch_length + LOG_OVERHEAD
                    dest.append(largest, largest_ts, shallow, out, batches)
                    stats.recopy_messages(retained, len(out))
                    self.throttler.maybe_throttle(len(out))
                if position == start_position:
                    self._grow_buffers_or_fail(f, position, buf, max_message_size)
        self._restore_buffers()

    # -- buffers ----------------------------------------------------------------------------------------
    def _grow_buffers_or_fail(self, f: _SegmentFile, position: int, buf: bytes, max_message_size: int) -> None:
        """No complete batch fit the read: double the buffer up to max(message.max.bytes, max I/O
        buffer); past that the batch is genuinely too large (or the segment is corrupt)."""
        max_buffer = max(max_message_size, self.max_io_buffer_size)
        if self._read_size >= max_buffer:
            where = f"log segment {f.path} at position {position}"
            if len(buf) < LOG_OVERHEAD:
                raise CorruptRecordError(f"Log segment may be corrupt: {len(buf)} trailing bytes at {where}")
            batch_length = batch_length_at(buf)
            next_size = batch_length + LOG_OVERHEAD
            if batch_length <= 0:
                raise CorruptRecordError(f"Invalid batch size {next_size} for {where}")
            left = f.desc.size - position
            if next_size > left:
                raise CorruptRecordError(
                    f"Log segment may be corrupt, batch size {next_size} > {left} bytes left in segment for {where}")
            raise CorruptRecordError(f"Batch size {next_size} > buffer size {self._read_size} for {where}")
        if len(buf) >= self._read_size:
            self._read_size = min(self._read_size * 2, max_buffer)
        else:
            # The segment ends inside a batch: growing cannot help.
            raise CorruptRecordError(
                f"Log segment may be corrupt: partial batch of {len(buf)} bytes at the end of {f.path}")

    def _restore_buffers(self) -> None:
        self._read_size = self.io_buffer_size


# -- helpers --------------------------------------------------------------------------------------------


def _index_lookup(dir: Path, segment: SegmentDescriptor, offset: int) -> int:
    """File position to start reading `offset` from, via the segment's sparse offset index."""
    path = offset_index_file(dir, segment.base_offset)
    if offset <= segment.base_offset or not path.exists() or path.stat().st_size == 0:
        return 0
    index = OffsetIndex(path, segment.base_offset, -1, writable=False)
    try:
        return index.lookup(offset).position
    finally:
        index.close_handler()


def _collect_aborted_transactions(dir: Path, segments: list[SegmentDescriptor], start: int, upper: int
                                  ) -> list[AbortedTxn]:
    """Kafka's collectAbortedTransactions(start, upper) over the segments' `.txnindex` files.

    An aborted transaction is indexed where its marker landed, which may be any later
    segment: the search runs from the floor segment of `start` on, until an entry shows the
    index is complete for `upper`, not only over the segments of [start, upper)."""
    found: list[AbortedTxn] = []
    if start >= upper:
        return found
    for segment in segments[_floor_index(segments, start):]:
        path = transaction_index_file(dir, segment.base_offset)
        if not path.exists():
            continue
        result = TransactionIndex(segment.base_offset, path).collect_aborted_txns(start, upper)
        found.extend(result.aborted_transactions)
        if result.is_complete:
            break
    return found


def _delete_cleaned_files(dir: Path, base_offset: int) -> None:
    for make in (log_file, offset_index_file, time_index_file, transaction_index_file):
        make(dir, base_offset, CLEANED_FILE_SUFFIX).unlink(missing_ok=True)


def _mtime_ms(path: Path) -> int:
    return int(path.stat().st_mtime * 1000)


def describe_segments(dir: Path, segments: list[tuple[int, int]]) -> list[SegmentDescriptor]:
    """SegmentDescriptors for (base offset, size) pairs, with index sizes and mtimes from disk."""
    out = []
    for base, size in segments:
        out.append(SegmentDescriptor(
            base_offset=base,
            size=size,
            offset_index_bytes=_size_or_zero(offset_index_file(dir, base)),
            time_index_bytes=_size_or_zero(time_index_file(dir, base)),
            last_modified_ms=_mtime_ms_or_zero(log_file(dir, base)),
        ))
    return out


def _size_or_zero(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _mtime_ms_or_zero(path: Path) -> int:
    try:
        return _mtime_ms(path)
    except FileNotFoundError:
        return 0
