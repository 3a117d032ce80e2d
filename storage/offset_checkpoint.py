"""OffsetCheckpointFile: Kafka's `version / count / topic partition offset` text checkpoints."""
from __future__ import annotations

import threading
from pathlib import Path

from storage.atomic_file import write_atomically
from storage.errors import KafkaStorageError
from storage.topic_partition import TopicPartition

CURRENT_VERSION = 0
RECOVERY_POINT_CHECKPOINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT_FILE = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT_FILE = "replication-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT_FILE = "cleaner-offset-checkpoint"


class CorruptCheckpointError(KafkaStorageError):
    """A checkpoint file whose text does not follow the format."""


class OffsetCheckpointFile:
    """One per log dir and kind (recovery point, log start, HW, cleaner offset)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def write(self, offsets: dict[TopicPartition, int]) -> None:
        lines = [str(CURRENT_VERSION), str(len(offsets))]
        lines += [f"{tp.topic} {tp.partition} {offset}" for tp, offset in offsets.items()]
        data = ("\n".join(lines) + "\n").encode()
        with self._lock:
            write_atomically(self.path, data, fault_point="checkpoint")

    def read(self) -> dict[TopicPartition, int]:
        """Entries of the file; {} if it does not exist; CorruptCheckpointError if malformed."""
        with self._lock:
            try:
                text = self.path.read_text()
            except FileNotFoundError:
                return {}
        return self.parse(text, str(self.path))

    @staticmethod
    def parse(text: str, source: str) -> dict[TopicPartition, int]:
        """The entries of a checkpoint's text (`source` names it in errors): also for copies
        of a log dir that are not local files (an object store)."""
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        try:
            version = int(lines[0])
            if version != CURRENT_VERSION:
                raise CorruptCheckpointError(f"Unrecognized version of the checkpoint file {source}: {version}")
            expected = int(lines[1])
            result: dict[TopicPartition, int] = {}
            for line in lines[2:]:
                topic, partition, offset = line.split(" ")
                result[TopicPartition(topic, int(partition))] = int(offset)
        except (IndexError, ValueError) as exc:
            raise CorruptCheckpointError(f"Malformed line in checkpoint file {source}: {exc}") from None
        if len(result) != expected or len(lines) - 2 != expected:
            raise CorruptCheckpointError(
                f"Expected {expected} entries in checkpoint file {source}, but found only {len(lines) - 2}"
            )
        return result
