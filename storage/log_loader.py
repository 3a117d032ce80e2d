"""LogLoader: rebuild a partition's segments from disk at startup.

Order (each step makes a crash at any point recoverable): delete `.deleted` / `.cleaned`
leftovers, complete interrupted `.swap` operations, open every segment (deleting orphan
indexes, rebuilding missing or corrupt ones), recover from the recovery point unless the
shutdown was clean, and wipe the log when the log-start checkpoint is past its end.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path

import msgspec

from storage.clock import Clock
from storage.errors import CorruptIndexError
from storage.leader_epoch_cache import LeaderEpochFileCache
from storage.log_config import LogConfig
from storage.log_file_utils import (
    CLEANED_FILE_SUFFIX,
    DELETED_FILE_SUFFIX,
    INDEX_FILE_SUFFIX,
    LOG_FILE_SUFFIX,
    SWAP_FILE_SUFFIX,
    TIME_INDEX_FILE_SUFFIX,
    TXN_INDEX_FILE_SUFFIX,
    is_index_file,
    offset_from_file_name,
)
from storage.log_offset_metadata import LogOffsetMetadata
from storage.log_segment import LogSegment
from storage.log_segments import LogSegments
from storage.producer_state_manager import (
    CorruptSnapshotError,
    ProducerStateManager,
    read_snapshot,
    snapshot_file_name,
)

logger = logging.getLogger(__name__)


class LoadedLogOffsets(msgspec.Struct, frozen=True):
    log_start_offset: int
    recovery_point: int
    next_offset_metadata: LogOffsetMetadata


def _delete_indices_if_exist(dir: Path, base_offset: int, suffix: str = "") -> None:
    for kind in (INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX):
        (dir / f"{base_offset:020d}{kind}{suffix}").unlink(missing_ok=True)


class LogLoader:
    def __init__(self, dir: Path, config: LogConfig, clock: Clock, segments: LogSegments, *,
                 log_start_offset_checkpoint: int, recovery_point_checkpoint: int, had_clean_shutdown: bool,
                 leader_epoch_cache: LeaderEpochFileCache, producer_state_manager: ProducerStateManager,
                 remote_log_enabled: bool = False) -> None:
        self.dir = Path(dir)
        self.config = config
        self.clock = clock
        self.segments = segments
        self.log_start_offset_checkpoint = log_start_offset_checkpoint
        self.recovery_point_checkpoint = recovery_point_checkpoint
        self.had_clean_shutdown = had_clean_shutdown
        self.leader_epoch_cache = leader_epoch_cache
        self.producer_state_manager = producer_state_manager
        # A tiered log's start offset may lie below its first local segment (the older ones
        # are remote): the checkpoint is then the log start, not a lower bound of it.
        self.remote_log_enabled = remote_log_enabled
        self.recovered_segments: list[int] = []  # base offsets recovered (for tests and metrics)
        # A clean shutdown whose active segment did not end on a whole batch (recovered anyway).
        self.torn_after_clean_shutdown = False

    def load(self) -> "LoadedLogOffsets":
        swap_files = self._remove_temp_files_and_collect_swap_files()
        self._complete_swap_operations(swap_files)
        self._load_segment_files()
        recovery_point, next_offset = self._recover_log()
        active = self.segments.active_segment()
        active.resize_indexes(self.config.max_index_size)
        # (Written by Log.open when it returns, or by its caller after it: defer_epoch_checkpoint.)
        self.leader_epoch_cache.truncate_from_end(next_offset, flush=False)
        first_base = self.segments.first_segment().base_offset  # type: ignore[union-attr]
        log_start = (min(self.log_start_offset_checkpoint, next_offset) if self.remote_log_enabled
                     else max(self.log_start_offset_checkpoint, first_base))
        self.leader_epoch_cache.truncate_from_start(log_start, flush=False)
        # A recovered torn tail makes the snapshot taken at shutdown (at the old end) stale.
        self.producer_state_manager.rebuild(
            self.segments, log_start, next_offset,
            reload_from_clean_shutdown=self.had_clean_shutdown and not self.torn_after_clean_shutdown)
        return LoadedLogOffsets(
            log_start_offset=log_start,
            recovery_point=recovery_point,
            next_offset_metadata=LogOffsetMetadata(next_offset, active.base_offset, active.size()),
        )

    # -- step 1: temp files ---------------------------------------------------------------------
    def _remove_temp_files_and_collect_swap_files(self) -> list[Path]:
        swap_files: list[Path] = []
        cleaned_files: list[Path] = []
        min_cleaned_offset: int | None = None
        for name in sorted(os.listdir(self.dir)):
            if not name.endswith((DELETED_FILE_SUFFIX, CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX)):
                continue
            path = self.dir / name
            if not path.is_file():
                continue
            if name.endswith(DELETED_FILE_SUFFIX):
                path.unlink(missing_ok=True)  # the second phase of an async delete that never ran
            elif name.endswith(CLEANED_FILE_SUFFIX):
                offset = offset_from_file_name(name)
                min_cleaned_offset = offset if min_cleaned_offset is None else min(min_cleaned_offset, offset)
                cleaned_files.append(path)
            elif name.endswith(SWAP_FILE_SUFFIX):
                base_name = name[: -len(SWAP_FILE_SUFFIX)]
                offset = offset_from_file_name(base_name)
                if is_index_file(base_name):
                    _delete_indices_if_exist(self.dir, offset)
                elif base_name.endswith(LOG_FILE_SUFFIX):
                    _delete_indices_if_exist(self.dir, offset)
                    swap_files.append(path)
        # A .swap at or above the smallest .cleaned offset is from an incomplete split: not valid yet.
        valid_swaps = []
        for path in swap_files:
            if min_cleaned_offset is not None and offset_from_file_name(path.name) >= min_cleaned_offset:
                path.unlink(missing_ok=True)
                _delete_indices_if_exist(self.dir, offset_from_file_name(path.name), SWAP_FILE_SUFFIX)
            else:
                valid_swaps.append(path)
        for path in cleaned_files:
            path.unlink(missing_ok=True)
        return valid_swaps

    # -- step 2: swaps --------------------------------------------------------------------------
    def _complete_swap_operations(self, swap_files: list[Path]) -> None:
        if not swap_files:
            return
        min_swap: int | None = None
        max_swap = -1
        for path in swap_files:
            base = offset_from_file_name(path.name)
            segment = LogSegment.open(self.dir, base, self.config, self.clock, file_already_exists=True,
                                      file_suffix=SWAP_FILE_SUFFIX)
            try:
                segment.recover(None)
                next_offset = segment.read_next_offset()
            finally:
                segment.close()
            min_swap = base if min_swap is None else min(min_swap, base)
            max_swap = max(max_swap, next_offset)
        # The swap replaces every live segment file whose base lies in [min_swap, max_swap).
        for path in list(self.dir.iterdir()):
            if not path.is_file() or path.name.endswith(SWAP_FILE_SUFFIX):
                continue
            try:
                offset = offset_from_file_name(path.name)
            except ValueError:
                continue
            if min_swap is not None and min_swap <= offset < max_swap:
                path.unlink(missing_ok=True)
        for path in list(self.dir.iterdir()):
            if path.is_file() and path.name.endswith(SWAP_FILE_SUFFIX):
                os.replace(path, path.with_name(path.name[: -len(SWAP_FILE_SUFFIX)]))

    # -- step 3: open segments ------------------------------------------------------------------
    def _load_segment_files(self) -> None:
        names = sorted(os.listdir(self.dir))
        present = set(names)
        for name in names:
            if is_index_file(name):
                base = name[: name.index(".")]
                if base + LOG_FILE_SUFFIX not in present:
                    (self.dir / name).unlink(missing_ok=True)  # orphan index
        for name in names:
            if not name.endswith(LOG_FILE_SUFFIX):
                continue
            try:
                base_offset = offset_from_file_name(name)
            except ValueError:
                continue
            prefix = name[: -len(LOG_FILE_SUFFIX)]
            time_index_newly_created = prefix + TIME_INDEX_FILE_SUFFIX not in present
            segment = LogSegment.open(self.dir, base_offset, self.config, self.clock, file_already_exists=True)
            try:
                segment.sanity_check(time_index_newly_created, prefix + TXN_INDEX_FILE_SUFFIX in present)
            except CorruptIndexError:
                # Indexes carry no checksum: rebuild them from the log.
                for index in (segment.offset_index, segment.time_index):
                    index.close_handler()
                    index.path.unlink(missing_ok=True)
                segment.txn_index.delete_if_exists()
                self._recover_segment(segment)
            self.segments.add(segment)

    def _recover_segment(self, segment: LogSegment) -> int:
        # An offset overflow (a legacy segment Kafka would split) propagates: it is not a torn tail.
        truncated = segment.recover(self.leader_epoch_cache)
        self._rebuild_transaction_index(segment)
        self.recovered_segments.append(segment.base_offset)
        return truncated

    def _rebuild_transaction_index(self, segment: LogSegment) -> None:
        """Recovery emptied the segment's `.txnindex`: refill it from the markers the segment
        holds, with the entries the appends wrote (an aborted transaction's first and last
        offsets, and the last stable offset once it ended).

        Which transactions were open at the segment's start comes from the latest producer
        snapshot at or below it (one is taken at every roll) and the batch headers between
        that snapshot and the segment; earlier segments are intact by then (a truncation drops
        every later segment).
        """
        state = ProducerStateManager(None)
        start = self.log_start_offset_checkpoint
        for offset in reversed(self.producer_state_manager.snapshot_offsets()):
            if offset > segment.base_offset or offset < start:
                continue
            try:
                state.seed(read_snapshot(self.dir / snapshot_file_name(offset)), offset)
            except (CorruptSnapshotError, OSError):
                continue  # an older snapshot, or the log's start, will do
            start = offset
            break
        for earlier in self.segments.values(start, segment.base_offset):
            if earlier.base_offset >= segment.base_offset:
                break
            for batch in earlier.log.batches(0):
                header = batch.header
                if header.is_transactional and header.base_offset >= start:
                    state.update(header, None, 0)  # a marker ends its transaction whatever its type
        segment.txn_index.reset()
        for batch in segment.log.batches(0, with_data=True):
            header = batch.header
            if not header.is_transactional:
                continue
            completed = state.update(header, batch.buf, batch.offset_in_buf)
            if completed is not None and completed.is_aborted:
                segment.update_txn_index(state.aborted(completed, state.last_stable_offset_after(completed)))

    # -- step 4: recovery -----------------------------------------------------------------------
    def _recover_log(self) -> tuple[int, int]:
        if not self.had_clean_shutdown:
            unflushed = self.segments.values(self.recovery_point_checkpoint, None)
            for i, segment in enumerate(unflushed):
                truncated = self._recover_segment(segment)
                if truncated > 0:
                    # Everything after the first invalid byte is gone, including later segments.
                    for later in unflushed[i + 1 :]:
                        self.segments.remove(later.base_offset)
                        later.delete_if_exists()
                    break
        elif not self.segments.is_empty() and not self.segments.active_segment().ends_on_whole_batch():
            # Stricter than Kafka, which trusts the marker: a tail that is not a whole batch (a
            # write lost after the marker, a cut or copied file) would have the next append land
            # behind the torn bytes and its offsets served twice. Recovering the active segment
            # truncates at its last valid batch.
            active = self.segments.active_segment()
            truncated = self._recover_segment(active)
            self.torn_after_clean_shutdown = True
            logger.warning("%s: the active segment %d did not end on a whole batch after a clean shutdown; "
                           "recovered it (%d bytes truncated)", self.dir, active.base_offset, truncated)
        log_end = self._delete_segments_if_log_start_greater_than_log_end()
        if self.segments.is_empty():
            segment = LogSegment.open(self.dir, self.log_start_offset_checkpoint, self.config, self.clock,
                                      init_file_size=self.config.segment_size, preallocate=self.config.preallocate)
            self.segments.add(segment)
        next_offset = log_end if log_end is not None else self.log_start_offset_checkpoint
        recovery_point = next_offset if self.had_clean_shutdown else min(self.recovery_point_checkpoint, next_offset)
        return recovery_point, next_offset

    def _delete_segments_if_log_start_greater_than_log_end(self) -> int | None:
        if self.segments.is_empty():
            return None
        log_end = self.segments.active_segment().read_next_offset()
        if log_end >= self.log_start_offset_checkpoint:
            return log_end
        # Segment files vanished under the checkpoint: restart empty at the checkpointed start.
        for segment in self.segments.values():
            self.segments.remove(segment.base_offset)
            segment.delete_if_exists()
        self.leader_epoch_cache.clear()
        self.producer_state_manager.truncate_fully_and_start_at(self.log_start_offset_checkpoint)
        return None
