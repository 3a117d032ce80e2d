"""LogSegment: one `.log` plus its offset, time and transaction indexes.

Not thread-safe for mutation (the owning Log's lock serialises append/recover/truncate);
translate_offset/read/find_offset_by_timestamp may run concurrently with an append.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

import msgspec

from storage.clock import Clock
from storage.errors import LogSegmentOffsetOverflowError
from storage.file_records import BATCH_ERRORS, HEADER_SCAN_CHUNK, FileRecords, LogOffsetPosition, TimestampAndOffset
from storage.log_file_utils import (
    DELETED_FILE_SUFFIX,
    log_file,
    offset_index_file,
    time_index_file,
    transaction_index_file,
)
from storage.offset_index import OffsetIndex
from storage.time_index import NO_TIMESTAMP, TimeIndex, TimestampOffset
from storage.transaction_index import AbortedTxn, TransactionIndex, TxnIndexSearchResult
from wire.errors import InvalidRecordError
from wire.records import (
    BATCH_HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    validate_batch,
    walk_batch_lengths,
    whole_batches_end,
)

if TYPE_CHECKING:
    from storage.leader_epoch_cache import LeaderEpochFileCache
    from storage.log_config import LogConfig

INT_MAX = 0x7FFFFFFF
# A read of at most this many bytes takes them in one pread, from the offset index entry below
# its offset (LogSegment.read): a small Fetch made three reads (a walk to find its batch, a walk
# to find its end, its bytes) and makes one. A larger read is a range of the file (sent with
# sendfile), and its walks read headers only.
READ_WINDOW_MAX_BYTES = 32 * 1024


class RollParams(msgspec.Struct, frozen=True):
    max_segment_ms: int
    max_segment_bytes: int
    max_timestamp_in_messages: int
    max_offset_in_messages: int
    messages_size: int
    now: int


class SegmentRead(msgspec.Struct, frozen=True):
    """A byte range of one segment: where a fetch's data lives on disk."""

    fetch_offset: int
    position: int
    size: int
    # The range ends inside its first batch (max_size below that batch, not min_one_message).
    first_entry_incomplete: bool = False
    # The range's bytes, when the read took them already (a read of up to READ_WINDOW_MAX_BYTES).
    data: bytes | None = None


class LogSegment:
    def __init__(self, log: FileRecords, offset_index: OffsetIndex, time_index: TimeIndex,
                 txn_index: TransactionIndex, base_offset: int, index_interval_bytes: int,
                 roll_jitter_ms: int, clock: Clock) -> None:
        self.log = log
        self.offset_index = offset_index
        self.time_index = time_index
        self.txn_index = txn_index
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.roll_jitter_ms = roll_jitter_ms
        self.clock = clock
        self.created = clock.milliseconds()
        self.bytes_since_last_index_entry = 0
        self._rolling_based_timestamp: int | None = None
        self._max_ts_and_offset: TimestampOffset | None = None  # loaded lazily from the time index

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def open(cls, dir: Path, base_offset: int, config: "LogConfig", clock: Clock, *,
             file_already_exists: bool = False, init_file_size: int = 0, preallocate: bool = False,
             file_suffix: str = "") -> "LogSegment":
        max_index_size = config.max_index_size
        return cls(
            FileRecords.open(log_file(dir, base_offset, file_suffix), file_already_exists=file_already_exists,
                             init_file_size=init_file_size, preallocate=preallocate),
            OffsetIndex(offset_index_file(dir, base_offset, file_suffix), base_offset, max_index_size),
            TimeIndex(time_index_file(dir, base_offset, file_suffix), base_offset, max_index_size),
            TransactionIndex(base_offset, transaction_index_file(dir, base_offset, file_suffix)),
            base_offset,
            config.index_interval_bytes,
            config.random_segment_jitter(),
            clock,
        )

    # -- sizes and timestamps -------------------------------------------------------------------
    def size(self) -> int:
        return self.log.size_in_bytes()

    @property
    def max_timestamp_and_offset_so_far(self) -> TimestampOffset:
        if self._max_ts_and_offset is None:
            self._max_ts_and_offset = self.time_index.last_entry()
        return self._max_ts_and_offset

    @property
    def max_timestamp_so_far(self) -> int:
        return self.max_timestamp_and_offset_so_far.timestamp

    @property
    def shallow_offset_of_max_timestamp_so_far(self) -> int:
        return self.max_timestamp_and_offset_so_far.offset

    def largest_timestamp(self) -> int:
        """Max record timestamp, else the file's mtime (the retention age of the segment)."""
        ts = self.max_timestamp_so_far
        return ts if ts >= 0 else self.log.last_modified_ms()

    def can_convert_to_relative_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT_MAX

    def _ensure_offset_in_range(self, offset: int) -> None:
        if not self.can_convert_to_relative_offset(offset):
            raise LogSegmentOffsetOverflowError(
                f"Detected offset overflow at offset {offset} in segment {self.log.path}"
            )

    # -- rolling --------------------------------------------------------------------------------
    def _load_first_batch_timestamp(self) -> None:
        if self._rolling_based_timestamp is None:
            for batch in self.log.batches(0):
                self._rolling_based_timestamp = batch.header.max_timestamp
                break

    def time_waited_for_roll(self, now: int, message_timestamp: int) -> int:
        if self._rolling_based_timestamp is None:
            self._load_first_batch_timestamp()
        ts = self._rolling_based_timestamp
        if ts is not None and ts >= 0:
            return message_timestamp - ts
        return now - self.created

    def should_roll(self, p: RollParams) -> bool:
        size = self.log.size_in_bytes()
        reached_roll_ms = self.time_waited_for_roll(p.now, p.max_timestamp_in_messages) > p.max_segment_ms - self.roll_jitter_ms
        return (
            size > p.max_segment_bytes - p.messages_size
            or (size > 0 and reached_roll_ms)
            or self.offset_index.is_full()
            or self.time_index.is_full()
            or not self.can_convert_to_relative_offset(p.max_offset_in_messages)
        )

    # -- append ---------------------------------------------------------------------------------
    def append(self, largest_offset: int, largest_timestamp: int, shallow_offset_of_max_timestamp: int,
               records: bytes | bytearray | memoryview, batches: Iterable[tuple[BatchHeader, int]]) -> None:
        """Write `records` (whose batch headers are `batches` as (header, position-in-records)).

        Index work is per batch, never per record.
        """
        if len(records) == 0:
            return
        physical_position = self.log.size_in_bytes()
        if physical_position == 0:
            self._rolling_based_timestamp = largest_timestamp
        if not 0 <= largest_offset - self.base_offset <= INT_MAX:  # (can_convert_to_relative_offset)
            self._ensure_offset_in_range(largest_offset)  # raises, naming the segment
        self.log.append(records)
        max_so_far = self.max_timestamp_and_offset_so_far
        for header, rel_pos in batches:
            batch_last = header.base_offset + header.last_offset_delta
            if header.max_timestamp > max_so_far.timestamp:
                max_so_far = TimestampOffset(header.max_timestamp, batch_last)
            if self.bytes_since_last_index_entry > self.index_interval_bytes:
                self.offset_index.append(batch_last, physical_position + rel_pos)
                self.time_index.maybe_append(max_so_far.timestamp, max_so_far.offset)
                self.bytes_since_last_index_entry = 0
            self.bytes_since_last_index_entry += header.batch_length + LOG_OVERHEAD
        self._max_ts_and_offset = max_so_far

    def update_txn_index(self, aborted: AbortedTxn) -> None:
        self.txn_index.append(aborted)

    # -- reading --------------------------------------------------------------------------------
    def translate_offset(self, offset: int, starting_file_position: int = 0, *,
                         nonblocking: bool = False) -> LogOffsetPosition | None:
        """Position of the batch holding `offset`: sparse index lookup, then a short forward scan."""
        mapping = self.offset_index.lookup(offset)
        return self.log.search_for_offset_from_position(offset, max(mapping.position, starting_file_position),
                                                        nonblocking=nonblocking)

    def read(self, start_offset: int, max_size: int, max_position: int | None = None,
             min_one_message: bool = False, *, nonblocking: bool = False) -> SegmentRead | None:
        """Byte range starting at the batch holding start_offset, at most max_size bytes
        (at least that batch when min_one_message), never past max_position. None if beyond the segment.

        A read of at most READ_WINDOW_MAX_BYTES reads its window first: the bytes from the index
        entry below the offset, an index interval (a header chunk at most) and a header past
        `max_size`. Its batch and its end are found in them, and they are its bytes (`data`), when
        the window holds them; the header walks below read the file only for what the window does
        not hold."""
        if max_size < 0:
            raise ValueError(f"Invalid max size {max_size} for log read from segment {self.log.path}")
        if max_position is None:
            max_position = self.size()
        entry = self.offset_index.lookup(start_offset).position
        window = b""
        if 0 < max_size <= READ_WINDOW_MAX_BYTES and max_position > entry:
            # The slack past max_size is an index interval, a header chunk at most (a sparse index
            # must not make every small read a large one): the walks go on in the file past it.
            slack = min(self.index_interval_bytes, HEADER_SCAN_CHUNK) + BATCH_HEADER_SIZE
            window = self.log.read(entry, min(max_position - entry, max_size + slack), nonblocking=nonblocking)
        stop = walk_batch_lengths(window, until_offset=start_offset)
        if stop.found:
            found: LogOffsetPosition | None = LogOffsetPosition(stop.last_offset, entry + stop.position, stop.size)
        else:  # on from the batch the window could not step over (a batch boundary)
            found = self.log.search_for_offset_from_position(start_offset, entry + stop.position,
                                                             nonblocking=nonblocking)
        if found is None:
            return None
        start_position = found.position
        adjusted_max = max(max_size, found.size) if min_one_message else max_size
        if adjusted_max == 0:
            return SegmentRead(start_offset, start_position, 0)
        fetch_size = min(max_position - start_position, adjusted_max)
        in_window = stop.found and stop.position + fetch_size <= len(window)
        if found.size < fetch_size < max_position - start_position:
            # The limit falls after the first batch: end the range at the last whole batch before it,
            # walked from the index entry below the limit (at most an index interval of batches).
            # A trailing part of a batch is allowed but useless: every client drops it, and it costs
            # its bytes on the wire both ways (issue 17).
            limit = start_position + fetch_size
            walk_from = max(self.offset_index.floor_by_position(limit).position, start_position)  # a batch starts there
            if in_window:
                limit = entry + whole_batches_end(window, walk_from - entry, limit - entry)
            else:
                limit = self.log.whole_batches_end(walk_from, limit, nonblocking=nonblocking)
            fetch_size = limit - start_position
        data = None
        if in_window and fetch_size > 0:
            at = stop.position
            data = window if at == 0 and fetch_size == len(window) else window[at:at + fetch_size]
        return SegmentRead(start_offset, start_position, max(fetch_size, 0), adjusted_max < found.size, data)

    def read_next_offset(self) -> int:
        """The offset after the last batch (the base offset when empty)."""
        start = self.offset_index.last_entry().position
        next_offset = self.base_offset
        for batch in self.log.batches(start):
            next_offset = batch.header.base_offset + batch.header.last_offset_delta + 1
        return next_offset

    def ends_on_whole_batch(self) -> bool:
        """Whether the batches from the last index entry on end exactly at the end of the file (a
        header walk, no CRC): what a clean shutdown promises of the active segment."""
        end = self.offset_index.last_entry().position
        try:
            for batch in self.log.batches(end):
                end = batch.position + batch.header.batch_length + LOG_OVERHEAD
        except BATCH_ERRORS:
            return False
        return end == self.log.size_in_bytes()

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int | None = None) -> TimestampAndOffset | None:
        if starting_offset is None:
            starting_offset = self.base_offset
        ts_offset = self.time_index.lookup(timestamp)
        position = self.offset_index.lookup(max(ts_offset.offset, starting_offset)).position
        return self.log.search_for_timestamp(timestamp, position, starting_offset)

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int, *,
                             nonblocking: bool = False) -> TxnIndexSearchResult:
        return self.txn_index.collect_aborted_txns(fetch_offset, upper_bound_offset, nonblocking=nonblocking)

    # -- recovery -------------------------------------------------------------------------------
    def recover(self, leader_epoch_cache: "LeaderEpochFileCache | None" = None) -> int:
        """Revalidate every batch, rebuild the indexes, truncate at the first invalid byte.

        Returns the number of bytes truncated.
        """
        self.offset_index.reset()
        self.time_index.reset()
        self.txn_index.reset()
        valid_bytes = 0
        last_index_entry = 0
        max_so_far = TimestampOffset(NO_TIMESTAMP, self.base_offset)
        self._rolling_based_timestamp = None
        try:
            # Grow the indexes back to their preallocated size so a rebuild never runs out of slots.
            self.offset_index.resize(self.offset_index.max_index_size)
            self.time_index.resize(self.time_index.max_index_size)
            expected_next = self.base_offset
            for batch in self.log.batches(0, with_data=True):
                header = validate_batch(batch.buf, batch.offset_in_buf)  # type: ignore[arg-type]
                batch_last = header.base_offset + header.last_offset_delta
                if header.base_offset < expected_next:
                    raise InvalidRecordError(
                        f"Out of order offset {header.base_offset} (expected >= {expected_next}) in {self.log.path}"
                    )
                self._ensure_offset_in_range(batch_last)
                if self._rolling_based_timestamp is None:
                    self._rolling_based_timestamp = header.max_timestamp
                if header.max_timestamp > max_so_far.timestamp:
                    max_so_far = TimestampOffset(header.max_timestamp, batch_last)
                if valid_bytes - last_index_entry > self.index_interval_bytes:
                    self.offset_index.append(batch_last, valid_bytes)
                    self.time_index.maybe_append(max_so_far.timestamp, max_so_far.offset)
                    last_index_entry = valid_bytes
                valid_bytes += header.batch_length + LOG_OVERHEAD
                expected_next = batch_last + 1
                if leader_epoch_cache is not None and header.partition_leader_epoch >= 0:
                    leader_epoch_cache.assign(header.partition_leader_epoch, header.base_offset)
        except BATCH_ERRORS + (InvalidRecordError,):
            pass  # everything from the first invalid byte on is dropped below
        truncated = self.log.size_in_bytes() - valid_bytes
        if truncated > 0:
            self.log.truncate_to(valid_bytes)
        else:
            self.log.trim()
        self._max_ts_and_offset = max_so_far
        self.offset_index.trim_to_valid_size()
        self.time_index.maybe_append(max_so_far.timestamp, max_so_far.offset, skip_full_check=True)
        self.time_index.trim_to_valid_size()
        self.bytes_since_last_index_entry = valid_bytes - last_index_entry
        return truncated

    def sanity_check(self, time_index_file_newly_created: bool = False, txn_index_exists: bool = True) -> None:
        """Cheap checks at load (no mapping): index shapes and the txn index; raises CorruptIndexError
        (also for a missing offset index, which the loader then rebuilds)."""
        if time_index_file_newly_created:
            self.time_index.resize(0)
        self.offset_index.sanity_check()
        if not time_index_file_newly_created:
            self.time_index.sanity_check()
        if txn_index_exists:
            self.txn_index.sanity_check()

    # -- truncation -----------------------------------------------------------------------------
    def truncate_to(self, offset: int) -> int:
        """Cut the log at the batch holding `offset` (that batch and all later ones go); returns bytes removed."""
        mapping = self.translate_offset(offset)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        self.offset_index.resize(self.offset_index.max_index_size)
        self.time_index.resize(self.time_index.max_index_size)
        truncated = 0 if mapping is None else self.log.truncate_to(mapping.position)
        if self.log.size_in_bytes() == 0:
            self.created = self.clock.milliseconds()
            self._rolling_based_timestamp = None
        self.bytes_since_last_index_entry = 0
        if self.max_timestamp_so_far >= 0 or truncated:
            self._max_ts_and_offset = self._read_largest_timestamp()
        return truncated

    def _read_largest_timestamp(self) -> TimestampOffset:
        last = self.time_index.last_entry()
        start = self.offset_index.lookup(last.offset).position
        best = last
        for batch in self.log.batches(start):
            h = batch.header
            if h.max_timestamp > best.timestamp:
                best = TimestampOffset(h.max_timestamp, h.base_offset + h.last_offset_delta)
        return best

    # -- lifecycle ------------------------------------------------------------------------------
    def on_become_inactive_segment(self) -> None:
        """Record the true max timestamp in the reserved slot, then trim the preallocated files."""
        ts = self.max_timestamp_and_offset_so_far
        self.time_index.maybe_append(ts.timestamp, ts.offset, skip_full_check=True)
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()
        self.log.trim()

    def resize_indexes(self, size: int) -> None:
        self.offset_index.resize(size)
        self.time_index.resize(size)

    def flush(self) -> None:
        self.log.flush()
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def close(self) -> None:
        if self.offset_index.is_mapped or self.time_index.is_mapped:
            ts = self.max_timestamp_and_offset_so_far
            if ts.timestamp >= 0:
                self.time_index.maybe_append(ts.timestamp, ts.offset, skip_full_check=True)
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()
        self.log.trim()
        self.log.close()

    def close_handlers(self) -> None:
        """Unmap the indexes without trimming (a crash, or a log being deleted); the .log fd is
        left to close when its last reader drops it."""
        self.offset_index.close_handler()
        self.time_index.close_handler()

    def files(self) -> list[Path]:
        return [self.log.path, self.offset_index.path, self.time_index.path, self.txn_index.path]

    def change_file_suffixes(self, old_suffix: str, new_suffix: str) -> None:
        def rename(path: Path) -> Path:
            name = path.name
            if old_suffix and name.endswith(old_suffix):
                name = name[: -len(old_suffix)]
            return path.with_name(name + new_suffix)

        self.log.rename_to(rename(self.log.path))
        self.offset_index.rename_to(rename(self.offset_index.path))
        self.time_index.rename_to(rename(self.time_index.path))
        self.txn_index.rename_to(rename(self.txn_index.path))

    def has_suffix(self, suffix: str) -> bool:
        return self.log.path_str.endswith(suffix)

    def delete_if_exists(self) -> None:
        self.offset_index.delete_if_exists()
        self.time_index.delete_if_exists()
        self.txn_index.delete_if_exists()
        self.log.delete_if_exists()

    def rename_to_deleted(self) -> None:
        self.change_file_suffixes("", DELETED_FILE_SUFFIX)

    def update_parent_dir(self, parent: Path) -> None:
        self.log.update_parent_dir(parent)
        self.offset_index.update_parent_dir(parent)
        self.time_index.update_parent_dir(parent)
        self.txn_index.update_parent_dir(parent)

    def last_modified_ms(self) -> int:
        return self.log.last_modified_ms()

    def set_last_modified(self, ms: int) -> None:
        os.utime(self.log.path, (ms / 1000, ms / 1000))
        if self.offset_index.path.exists():
            os.utime(self.offset_index.path, (ms / 1000, ms / 1000))

    def __repr__(self) -> str:
        return f"LogSegment(baseOffset={self.base_offset}, size={self.size()}, path={self.log.path})"
