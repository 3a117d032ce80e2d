"""LeaderEpochFileCache: (epoch -> first offset) lineage, persisted as `leader-epoch-checkpoint`."""
from __future__ import annotations

import bisect
import threading
from pathlib import Path

from storage.atomic_file import write_atomically
from storage.errors import KafkaStorageError

LEADER_EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"
CURRENT_VERSION = 0


class LeaderEpochCheckpointFile:
    """`0\\n<count>\\n<epoch> <startOffset>` lines."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @staticmethod
    def encode(entries: list[tuple[int, int]]) -> bytes:
        """The file's bytes for `entries` (also what tiered storage copies with a segment)."""
        lines = [str(CURRENT_VERSION), str(len(entries))] + [f"{e} {o}" for e, o in entries]
        return ("\n".join(lines) + "\n").encode()

    def write(self, entries: list[tuple[int, int]], *, sync: bool = True) -> None:
        write_atomically(self.path, self.encode(entries), sync=sync)

    def read(self) -> list[tuple[int, int]]:
        try:
            lines = self.path.read_text().split("\n")
        except FileNotFoundError:
            return []
        if lines and lines[-1] == "":
            lines.pop()
        try:
            if int(lines[0]) != CURRENT_VERSION:
                raise KafkaStorageError(f"Unrecognized version of {self.path}")
            count = int(lines[1])
            entries = [(int(a), int(b)) for a, b in (ln.split(" ") for ln in lines[2:])]
        except (IndexError, ValueError) as exc:
            raise KafkaStorageError(f"Malformed leader epoch checkpoint {self.path}: {exc}") from None
        if len(entries) != count:
            raise KafkaStorageError(f"Expected {count} entries in {self.path}, found {len(entries)}")
        return entries


class LeaderEpochFileCache:
    """Epochs are append-only and strictly increasing; an epoch's start offset is never reassigned."""

    def __init__(self, checkpoint: LeaderEpochCheckpointFile) -> None:
        self.checkpoint = checkpoint
        self._lock = threading.RLock()
        self._epochs: list[int] = []
        self._offsets: list[int] = []
        entries = checkpoint.read()
        for epoch, offset in entries:
            self._epochs.append(epoch)
            self._offsets.append(offset)
        # What the file holds (None: no file yet): a flush that would write the same skips it,
        # as when a load's truncation of a log's last epoch is undone by its becoming leader.
        self._on_disk: list[tuple[int, int]] | None = entries if checkpoint.path.exists() else None

    def entries(self) -> list[tuple[int, int]]:
        with self._lock:
            return list(zip(self._epochs, self._offsets))

    @property
    def latest_epoch(self) -> int | None:
        with self._lock:
            return self._epochs[-1] if self._epochs else None

    def is_new_epoch(self, epoch: int, start_offset: int) -> bool:
        """Whether assign(epoch, start_offset) would record (and checkpoint) a new epoch."""
        if epoch < 0:
            return False
        with self._lock:
            return not self._epochs or (epoch > self._epochs[-1] and start_offset >= self._offsets[-1])

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that `epoch` starts at `start_offset` (no-op when it is not a new, higher epoch)."""
        with self._lock:  # reentrant: is_new_epoch takes it again
            if not self.is_new_epoch(epoch, start_offset):
                return
            self._epochs.append(epoch)
            self._offsets.append(start_offset)
            self._flush()

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """OffsetsForLeaderEpoch: (epoch, end offset); (-1, -1) when unknown."""
        with self._lock:
            if not self._epochs or epoch < self._epochs[0]:
                return (-1, -1)
            if epoch >= self._epochs[-1]:
                return (self._epochs[-1], log_end_offset)
            i = bisect.bisect_right(self._epochs, epoch)
            return (self._epochs[i - 1], self._offsets[i])

    def epoch_for_offset(self, offset: int) -> int | None:
        with self._lock:
            i = bisect.bisect_right(self._offsets, offset)
            return self._epochs[i - 1] if i else None

    def truncate_from_end(self, end_offset: int, *, flush: bool = True) -> None:
        """Drop epochs starting at or after `end_offset` (log truncated to end_offset). Without
        `flush` the checkpoint is written by the next `flush()` (a load: see Log.open)."""
        with self._lock:
            i = bisect.bisect_left(self._offsets, end_offset)
            if i < len(self._offsets):
                del self._epochs[i:], self._offsets[i:]
                if flush:
                    self._flush()

    def truncate_from_start(self, start_offset: int, *, flush: bool = True) -> None:
        """Log start moved to `start_offset`: the epoch covering it now starts there."""
        with self._lock:
            i = bisect.bisect_right(self._offsets, start_offset)
            if i == 0:
                return
            changed = i > 1 or self._offsets[0] != start_offset
            del self._epochs[: i - 1], self._offsets[: i - 1]
            self._offsets[0] = start_offset
            if changed and flush:
                self._flush()

    def clear(self) -> None:
        with self._lock:
            self._epochs.clear()
            self._offsets.clear()
            self._flush()

    def flush(self) -> None:
        """Write the checkpoint unless the file holds these entries already (or there is no
        file and nothing to put in one: a new log's, until an epoch is assigned)."""
        with self._lock:
            if self._on_disk is None and not self._epochs:
                return
            self._flush()

    def _flush(self) -> None:
        entries = list(zip(self._epochs, self._offsets))
        if entries == self._on_disk:
            return
        self.checkpoint.write(entries)
        self._on_disk = entries
