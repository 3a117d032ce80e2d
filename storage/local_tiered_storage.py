"""LocalTieredStorage: a directory as the remote tier, for tests and laptops.

The layout follows Kafka's test plugin of the same name, one directory per partition and one
file per segment file, named by the segment's start offset and its remote id:

    <storage dir>/<topic>-<partition>-<topic id>/<start offset, 20 digits>-<segment id>.log
                                                 ... .index .timeindex .txnindex .snapshot
                                                 ... .leader_epoch_checkpoint

Ids are printed as Kafka prints a Uuid (unpadded URL-safe base64). `S3RemoteStorageManager`
uses the same names as object keys under its prefix.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from storage.partition_metadata import uuid_to_base64
from storage.remote_storage_manager import (
    IndexType,
    LogSegmentData,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteResourceNotFoundError,
    RemoteStorageError,
)

__all__ = ["LocalTieredStorage", "remote_segment_file_name", "LOG_SUFFIX"]

LOG_SUFFIX = "log"


def remote_segment_file_name(segment_id: RemoteLogSegmentId, start_offset: int, suffix: str) -> str:
    """`<topic>-<partition>-<topic id>/<start offset>-<segment id>.<suffix>`: a segment file's
    path relative to the tier's root (the object key below a prefix on S3)."""
    tp = segment_id.topic_id_partition
    return (f"{tp.topic}-{tp.partition}-{uuid_to_base64(tp.topic_id)}/"
            f"{start_offset:020d}-{uuid_to_base64(segment_id.id)}.{suffix}")


class LocalTieredStorage:
    """RemoteStorageManager over a local directory (`rsm.config.dir`)."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, metadata: RemoteLogSegmentMetadata, suffix: str) -> Path:
        return self.root / remote_segment_file_name(metadata.segment_id, metadata.start_offset, suffix)

    def copy_log_segment_data(self, metadata: RemoteLogSegmentMetadata, data: LogSegmentData) -> bytes | None:
        files: list[tuple[Path, str]] = [(data.log_segment, LOG_SUFFIX), (data.offset_index, IndexType.OFFSET.value),
                                         (data.time_index, IndexType.TIMESTAMP.value),
                                         (data.producer_snapshot_index, IndexType.PRODUCER_SNAPSHOT.value)]
        if data.transaction_index is not None:
            files.append((data.transaction_index, IndexType.TRANSACTION.value))
        try:
            self._path(metadata, LOG_SUFFIX).parent.mkdir(parents=True, exist_ok=True)
            for source, suffix in files:
                shutil.copyfile(source, self._path(metadata, suffix))
            self._path(metadata, IndexType.LEADER_EPOCH.value).write_bytes(data.leader_epoch_index)
        except OSError as exc:
            raise RemoteStorageError(f"Failed to copy {metadata.segment_id} to {self.root}: {exc}") from exc
        return None

    def fetch_log_segment(self, metadata: RemoteLogSegmentMetadata, start_position: int,
                          end_position: int | None = None) -> bytes:
        path = self._path(metadata, LOG_SUFFIX)
        try:
            with open(path, "rb") as f:
                f.seek(start_position)
                return f.read() if end_position is None else f.read(max(0, end_position - start_position + 1))
        except FileNotFoundError as exc:
            raise RemoteResourceNotFoundError(f"No remote segment {path}") from exc
        except OSError as exc:
            raise RemoteStorageError(f"Failed to read {path}: {exc}") from exc

    def fetch_index(self, metadata: RemoteLogSegmentMetadata, index_type: IndexType) -> bytes:
        path = self._path(metadata, index_type.value)
        try:
            return path.read_bytes()
        except FileNotFoundError as exc:
            raise RemoteResourceNotFoundError(f"No remote {index_type.name} index {path}") from exc
        except OSError as exc:
            raise RemoteStorageError(f"Failed to read {path}: {exc}") from exc

    def delete_log_segment_data(self, metadata: RemoteLogSegmentMetadata) -> None:
        try:
            for suffix in (LOG_SUFFIX, *(t.value for t in IndexType)):
                self._path(metadata, suffix).unlink(missing_ok=True)
        except OSError as exc:
            raise RemoteStorageError(f"Failed to delete {metadata.segment_id} from {self.root}: {exc}") from exc

    def close(self) -> None:
        pass
