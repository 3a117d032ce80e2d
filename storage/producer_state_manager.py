"""ProducerStateManager: per-partition state of idempotent and transactional producers.

For every producer id that wrote to the partition it keeps the epoch and the
metadata of its last five batches (Kafka's NUM_BATCHES_TO_RETAIN): a
retried batch that matches one of them is a duplicate and is answered with
the offsets it got the first time, without being written again. A batch
whose sequence does not follow the last one is OUT_OF_ORDER_SEQUENCE_NUMBER;
a batch from an older epoch is INVALID_PRODUCER_EPOCH. A producer the
partition does not know (new, or its state expired or was deleted with old
segments) may start at any sequence, as in Kafka since KIP-360.

The state is snapshotted to `<offset>.snapshot` (Kafka's ProducerSnapshot
format, below) when a segment rolls and when the log closes, and rebuilt on
load from the latest valid snapshot forward by replaying the batches after
it. It also tracks open transactions (first offset per producer) for the
last stable offset and the aborted-transaction index.

Snapshot file (version 1, big-endian):
    @0 int16 version | @2 uint32 CRC-32C of bytes 6..EOF | @6 int32 count,
    then per producer 46 bytes: producerId int64, epoch int16, lastSequence
    int32, lastOffset int64, offsetDelta int32, timestamp int64,
    coordinatorEpoch int32, currentTxnFirstOffset int64 (-1 = none).
A file whose CRC does not match is deleted and an older one is tried.

Thread-safety: mutations happen under the owning Log's lock; readers of the
unstable offset from other threads take this manager's own lock.
"""
from __future__ import annotations

import logging
import os
import struct
import threading
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec

from storage.transaction_index import AbortedTxn
from wire.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from wire.records import BatchHeader, ControlRecordType, crc32c, decode_records, parse_control_record

logger = logging.getLogger(__name__)

NUM_BATCHES_TO_RETAIN = 5
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
INT_MAX = 2**31 - 1
SNAPSHOT_FILE_SUFFIX = ".snapshot"
PRODUCER_SNAPSHOT_VERSION = 1
_HEADER = struct.Struct(">hIi")  # version, crc, entry count
_ENTRY = struct.Struct(">qhiqiqiq")  # 46 bytes
_CRC_START = 6  # the CRC covers everything after version and CRC


class CorruptSnapshotError(Exception):
    """A producer snapshot that cannot be read (bad version, CRC or length)."""


def increment_sequence(sequence: int, increment: int) -> int:
    """Sequences wrap from Integer.MAX_VALUE to 0 (Kafka's DefaultRecordBatch.incrementSequence)."""
    if sequence > INT_MAX - increment:
        return increment - (INT_MAX - sequence) - 1
    return sequence + increment


def decrement_sequence(sequence: int, decrement: int) -> int:
    if sequence < decrement:
        return INT_MAX - (decrement - sequence) + 1
    return sequence - decrement


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT_MAX)


def snapshot_file_name(offset: int) -> str:
    return f"{offset:020d}{SNAPSHOT_FILE_SUFFIX}"


class CompletedTxn(msgspec.Struct, frozen=True):
    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


class BatchMetadata(msgspec.Struct, frozen=True):
    """What is remembered of one appended batch: enough to answer its retry."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


class ProducerStateEntry:
    """One producer id's epoch and last batches (Kafka's ProducerStateEntry)."""

    __slots__ = ("producer_id", "producer_epoch", "batch_metadata", "coordinator_epoch", "last_timestamp",
                 "current_txn_first_offset")

    def __init__(self, producer_id: int, producer_epoch: int = NO_PRODUCER_EPOCH, coordinator_epoch: int = -1,
                 last_timestamp: int = -1, current_txn_first_offset: int = -1,
                 batches: Iterable[BatchMetadata] = ()) -> None:
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.batch_metadata: deque[BatchMetadata] = deque(batches, maxlen=NUM_BATCHES_TO_RETAIN)
        self.coordinator_epoch = coordinator_epoch
        self.last_timestamp = last_timestamp
        self.current_txn_first_offset = current_txn_first_offset

    def copy(self) -> "ProducerStateEntry":
        return ProducerStateEntry(self.producer_id, self.producer_epoch, self.coordinator_epoch,
                                  self.last_timestamp, self.current_txn_first_offset, self.batch_metadata)

    @property
    def is_empty(self) -> bool:
        return not self.batch_metadata

    @property
    def last_seq(self) -> int:
        return self.batch_metadata[-1].last_seq if self.batch_metadata else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batch_metadata[-1].last_offset if self.batch_metadata else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batch_metadata[-1].offset_delta if self.batch_metadata else 0

    def add_batch(self, producer_epoch: int, last_seq: int, last_offset: int, offset_delta: int,
                  timestamp: int) -> None:
        self.maybe_update_producer_epoch(producer_epoch)
        self.batch_metadata.append(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        self.last_timestamp = timestamp

    def maybe_update_producer_epoch(self, producer_epoch: int) -> bool:
        """A new epoch starts a new sequence space: the old batches no longer match retries."""
        if self.producer_epoch != producer_epoch:
            self.batch_metadata.clear()
            self.producer_epoch = producer_epoch
            return True
        return False

    def find_duplicate_batch(self, header: BatchHeader) -> BatchMetadata | None:
        if header.producer_epoch != self.producer_epoch:
            return None
        first_seq = header.base_sequence
        last_seq = increment_sequence(first_seq, header.last_offset_delta)
        for meta in self.batch_metadata:
            if meta.first_seq == first_seq and meta.last_seq == last_seq:
                return meta
        return None


class AppendAnalysis(msgspec.Struct):
    """The outcome of checking an append against the producer state, before it is written."""

    duplicate: BatchMetadata | None = None
    updated: dict[int, ProducerStateEntry] = msgspec.field(default_factory=dict)


class ProducerStateManager:
    def __init__(self, log_dir: Path | str | None = None) -> None:
        self._lock = threading.Lock()
        self.log_dir = Path(log_dir) if log_dir is not None else None
        self.producers: dict[int, ProducerStateEntry] = {}
        self._ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self.map_end_offset = 0
        self.last_snap_offset = 0

    def seed(self, entries: list[ProducerStateEntry], offset: int) -> None:
        """Start from a snapshot's entries (read with read_snapshot) taken at `offset`."""
        with self._lock:
            self._clear()
            self._seed_locked(entries, offset)

    def _seed_locked(self, entries: list[ProducerStateEntry], offset: int) -> None:
        for e in entries:
            self.producers[e.producer_id] = e
            if e.current_txn_first_offset >= 0:
                self._ongoing[e.producer_id] = e.current_txn_first_offset
        self.map_end_offset = offset
        self.last_snap_offset = offset

    # -- reading ------------------------------------------------------------------------------------
    def first_unstable_offset(self) -> int | None:
        if not self._ongoing:
            return None  # no open transaction (the common case, on every fetch: no lock)
        with self._lock:
            return min(self._ongoing.values()) if self._ongoing else None

    def is_empty(self) -> bool:
        return not self._ongoing and not self.producers

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    def active_producers(self) -> list[tuple[ProducerStateEntry, int]]:
        """Copies of every producer's entry with its open transaction's first offset (-1 if
        none), taken under the lock so a concurrent append cannot change them mid-read."""
        with self._lock:
            return [(e.copy(), self._ongoing.get(pid, -1)) for pid, e in self.producers.items()]

    # -- the append path ------------------------------------------------------------------------------
    def analyze_append(self, batches: Iterable[tuple[BatchHeader, int]], *, from_client: bool) -> AppendAnalysis:
        """Check every producer batch of one append; raise on a sequence or epoch violation.

        A client batch equal to one of the producer's last five is a duplicate:
        the analysis carries its metadata and nothing is to be written. Nothing
        changes here; `complete_append` applies the analysis once the write succeeded.
        """
        analysis = AppendAnalysis()
        for header, _pos in batches:
            pid = header.producer_id
            if pid < 0:
                continue
            current = self.producers.get(pid)
            if from_client and not header.is_control and current is not None:
                duplicate = current.find_duplicate_batch(header)
                if duplicate is not None:
                    analysis.duplicate = duplicate
                    return analysis
            updated = analysis.updated.get(pid)
            if updated is None:
                updated = current.copy() if current is not None else ProducerStateEntry(pid)
                analysis.updated[pid] = updated
            # `current` is the entry as it was before this append (Kafka's currentEntry).
            self._check_and_apply(header, current if current is not None else ProducerStateEntry(pid), updated,
                                  from_client)
        return analysis

    def _check_and_apply(self, header: BatchHeader, current: ProducerStateEntry, updated: ProducerStateEntry,
                         from_client: bool) -> None:
        epoch = header.producer_epoch
        first_offset = header.base_offset
        if epoch < updated.producer_epoch:
            message = (f"Epoch of producer {header.producer_id} at offset {first_offset} is {epoch}, "
                       f"which is smaller than the last seen epoch {updated.producer_epoch}")
            if from_client:
                raise InvalidProducerEpochError(message)
            logger.warning(message)
        if header.is_control:
            # A transaction marker bumps the epoch but carries no sequence.
            updated.maybe_update_producer_epoch(epoch)
            return
        first_seq = header.base_sequence
        if from_client:
            if epoch != updated.producer_epoch:
                if first_seq != 0 and updated.producer_epoch != NO_PRODUCER_EPOCH:
                    raise OutOfOrderSequenceError(
                        f"Invalid sequence number for new epoch of producer {header.producer_id} at offset "
                        f"{first_offset}: {epoch} (request epoch), {first_seq} (seq. number), "
                        f"{updated.producer_epoch} (current producer epoch)"
                    )
            else:
                if not updated.is_empty:
                    current_last_seq = updated.last_seq
                elif epoch == current.producer_epoch:
                    current_last_seq = current.last_seq
                else:
                    current_last_seq = NO_SEQUENCE
                # No known epoch (state expired or deleted with old segments): any sequence is accepted.
                if not (current.producer_epoch == NO_PRODUCER_EPOCH or in_sequence(current_last_seq, first_seq)):
                    raise OutOfOrderSequenceError(
                        f"Out of order sequence number for producer {header.producer_id} at offset "
                        f"{first_offset}: {first_seq} (incoming seq. number), {current_last_seq} "
                        f"(current end sequence number)"
                    )
        last_offset = header.base_offset + header.last_offset_delta
        updated.add_batch(epoch, increment_sequence(first_seq, header.last_offset_delta), last_offset,
                          header.last_offset_delta, header.max_timestamp)

    def complete_append(self, analysis: AppendAnalysis, end_offset: int) -> None:
        """The append was written: its producers' entries become the current state."""
        with self._lock:
            self.producers.update(analysis.updated)
            self.map_end_offset = end_offset

    def update(self, header: BatchHeader, buf: bytes | bytearray | memoryview | None, pos: int) -> CompletedTxn | None:
        """Account for one appended transactional batch; returns the transaction a marker completed."""
        if not header.is_transactional or header.producer_id < 0:
            return None
        last = header.base_offset + header.last_offset_delta
        with self._lock:
            if not header.is_control:
                self._ongoing.setdefault(header.producer_id, header.base_offset)
                entry = self.producers.get(header.producer_id)
                if entry is not None and entry.current_txn_first_offset < 0:
                    entry.current_txn_first_offset = self._ongoing[header.producer_id]
                return None
            first = self._ongoing.pop(header.producer_id, None)
            entry = self.producers.get(header.producer_id)
            if entry is not None:
                entry.current_txn_first_offset = -1
        if first is None or buf is None:
            return None
        records = decode_records(buf, pos)
        if not records:
            return None
        marker = parse_control_record(records[0].key, records[0].value)
        if marker.type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            return None
        return CompletedTxn(header.producer_id, first, last, marker.type == ControlRecordType.ABORT)

    def last_stable_offset_after(self, completed: CompletedTxn) -> int:
        """LSO once `completed` is done: the next open transaction's start, else its end + 1."""
        nxt = self.first_unstable_offset()
        return nxt if nxt is not None else completed.last_offset + 1

    def aborted(self, completed: CompletedTxn, last_stable_offset: int) -> AbortedTxn:
        return AbortedTxn(completed.producer_id, completed.first_offset, completed.last_offset, last_stable_offset)

    # -- replay (load, truncation) ----------------------------------------------------------------------
    def _replay_batch(self, header: BatchHeader) -> None:
        """Apply a batch already in the log (no validation: Kafka's REPLICATION origin)."""
        pid = header.producer_id
        if pid < 0:
            return
        entry = self.producers.get(pid)
        if entry is None:
            entry = self.producers[pid] = ProducerStateEntry(pid)
        if header.is_control:
            entry.maybe_update_producer_epoch(header.producer_epoch)
            entry.current_txn_first_offset = -1
            self._ongoing.pop(pid, None)
            return
        entry.add_batch(header.producer_epoch, increment_sequence(header.base_sequence, header.last_offset_delta),
                        header.base_offset + header.last_offset_delta, header.last_offset_delta,
                        header.max_timestamp)
        if header.is_transactional:
            first = self._ongoing.setdefault(pid, header.base_offset)
            entry.current_txn_first_offset = first

    def rebuild(self, segments: Any, log_start_offset: int, log_end_offset: int, *,
                reload_from_clean_shutdown: bool = False) -> None:
        """Kafka's rebuildProducerState: latest snapshot, then replay the batches after it.

        After a clean shutdown that left no snapshot (a log from a version
        without them) Kafka does not scan the log: it starts empty at the end.
        """
        with self._lock:
            if self.latest_snapshot_offset() is None and reload_from_clean_shutdown:
                self._clear()
                self.last_snap_offset = log_start_offset
                self.map_end_offset = log_end_offset
                self.take_snapshot()
                return
            self._truncate_and_reload_locked(log_start_offset, log_end_offset)
            if log_end_offset > self.map_end_offset:
                start = self.map_end_offset
                for segment in segments.values(start, log_end_offset):
                    for batch in segment.log.batches(0):
                        header = batch.header
                        last = header.base_offset + header.last_offset_delta
                        if last < start or header.base_offset >= log_end_offset:
                            continue
                        self._replay_batch(header)
            self.map_end_offset = log_end_offset

    def truncate_and_reload(self, log_start_offset: int, log_end_offset: int) -> None:
        """Drop snapshots outside [log start, log end] and reload the latest one (no replay)."""
        with self._lock:
            self._truncate_and_reload_locked(log_start_offset, log_end_offset)

    def _truncate_and_reload_locked(self, log_start_offset: int, log_end_offset: int) -> None:
        for offset, path in self._snapshot_files():
            if offset > log_end_offset or offset < log_start_offset:
                path.unlink(missing_ok=True)
        self._clear()
        self.map_end_offset = log_start_offset
        self._load_latest_snapshot(log_start_offset)

    def _clear(self) -> None:
        self.producers.clear()
        self._ongoing.clear()

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        """DeleteRecords or retention moved the log start. An open transaction stays open even
        when its first records are gone: its marker is still to come, and until then the last
        stable offset stays at its first offset, below the log start, as in Kafka."""
        with self._lock:
            if self.map_end_offset < log_start_offset:
                self.map_end_offset = log_start_offset
            # Snapshots below the log start describe data that is gone; keep the newest regardless.
            files = self._snapshot_files()
            for offset, path in files[:-1]:
                if offset < log_start_offset:
                    path.unlink(missing_ok=True)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        with self._lock:
            self._clear()
            for _, path in self._snapshot_files():
                path.unlink(missing_ok=True)
            self.map_end_offset = offset
            self.last_snap_offset = offset

    def update_map_end_offset(self, offset: int) -> None:
        self.map_end_offset = offset

    # -- expiration ---------------------------------------------------------------------------------
    def remove_expired_producers(self, now_ms: int, producer_id_expiration_ms: int) -> int:
        """Forget producers idle for producer.id.expiration.ms that have no open transaction."""
        with self._lock:
            expired = [pid for pid, e in self.producers.items()
                       if pid not in self._ongoing and now_ms - e.last_timestamp >= producer_id_expiration_ms]
            for pid in expired:
                del self.producers[pid]
            return len(expired)

    # -- snapshots ----------------------------------------------------------------------------------
    def _snapshot_files(self) -> list[tuple[int, Path]]:
        if self.log_dir is None or not self.log_dir.is_dir():
            return []
        found = []
        for name in os.listdir(self.log_dir):
            if name.endswith(SNAPSHOT_FILE_SUFFIX):
                try:
                    found.append((int(name[: -len(SNAPSHOT_FILE_SUFFIX)]), self.log_dir / name))
                except ValueError:
                    continue
        return sorted(found)

    def latest_snapshot_offset(self) -> int | None:
        files = self._snapshot_files()
        return files[-1][0] if files else None

    def snapshot_offsets(self) -> list[int]:
        return [offset for offset, _ in self._snapshot_files()]

    def take_snapshot(self, *, sync: bool = True) -> Path | None:
        """Write `<map end offset>.snapshot` when the state moved past the last snapshot."""
        if self.log_dir is None:
            return None
        offset = self.map_end_offset
        if offset <= self.last_snap_offset:
            return None  # Kafka: not a new offset, not worth another snapshot
        path = self.log_dir / snapshot_file_name(offset)
        entries = [
            _ENTRY.pack(e.producer_id, e.producer_epoch, e.last_seq, e.last_data_offset, e.last_offset_delta,
                        e.last_timestamp, e.coordinator_epoch, self._ongoing.get(e.producer_id, -1))
            for e in self.producers.values()
        ]
        body = struct.pack(">i", len(entries)) + b"".join(entries)
        data = struct.pack(">hI", PRODUCER_SNAPSHOT_VERSION, crc32c(body)) + body
        with open(path, "wb") as f:
            f.write(data)
            if sync:
                f.flush()
                os.fsync(f.fileno())
        self.last_snap_offset = offset
        return path

    def _load_latest_snapshot(self, log_start_offset: int) -> None:
        for offset, path in reversed(self._snapshot_files()):
            try:
                entries = read_snapshot(path)
            except (CorruptSnapshotError, OSError) as exc:
                logger.warning("Deleting corrupt producer snapshot %s: %s", path, exc)
                path.unlink(missing_ok=True)
                continue
            self._seed_locked(entries, offset)
            return
        self.map_end_offset = log_start_offset
        self.last_snap_offset = log_start_offset


def empty_snapshot() -> bytes:
    """A snapshot that knows no producer (for a remote segment whose local snapshot is gone)."""
    body = struct.pack(">i", 0)
    return struct.pack(">hI", PRODUCER_SNAPSHOT_VERSION, crc32c(body)) + body


def read_snapshot(path: Path) -> list[ProducerStateEntry]:
    """Parse a producer snapshot file; CorruptSnapshotError on any inconsistency."""
    data = Path(path).read_bytes()
    if len(data) < _HEADER.size:
        raise CorruptSnapshotError(f"{path} is shorter than its header")
    version, crc, count = _HEADER.unpack_from(data, 0)
    if version != PRODUCER_SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"{path} has unknown snapshot version {version}")
    if crc32c(data[_CRC_START:]) != crc:
        raise CorruptSnapshotError(f"{path} fails its CRC check")
    if count < 0 or len(data) != _HEADER.size + count * _ENTRY.size:
        raise CorruptSnapshotError(f"{path} has {len(data)} bytes for {count} entries")
    entries = []
    for i in range(count):
        pid, epoch, last_seq, last_offset, delta, ts, coord_epoch, txn_first = _ENTRY.unpack_from(
            data, _HEADER.size + i * _ENTRY.size)
        batches = [BatchMetadata(last_seq, last_offset, delta, ts)] if last_offset >= 0 else []
        entries.append(ProducerStateEntry(pid, epoch, coord_epoch, ts, txn_first, batches))
    return entries
