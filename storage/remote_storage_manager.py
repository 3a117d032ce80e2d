"""RemoteStorageManager: where a tiered topic's rolled segments go (KIP-405).

Kafka's plugin interface (org.apache.kafka.server.log.remote.storage.RemoteStorageManager),
in Python. A backend stores, for each remote segment, the files LogSegmentData names and
answers byte ranges of them. It knows nothing of offsets: the RemoteLogManager decides what
is copied and records it in `__remote_log_metadata` before and after each call here, so a
backend call that dies half-way leaves a segment in COPY_SEGMENT_STARTED that is deleted,
never one that readers trust.

Every method blocks (disk or network I/O) and is called from a worker thread, never from
the event loop. Two backends: `LocalTieredStorage` (a directory; tests and laptops) and
`S3RemoteStorageManager` (any S3-compatible store).
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Protocol

import msgspec

from wire.errors import UnknownServerError
from wire.remote_log_metadata_records import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    TopicIdPartition,
)

__all__ = ["LOCAL_TIERED_STORAGE", "S3_REMOTE_STORAGE", "RSM_CONFIG_PREFIX", "IndexType", "RemoteLogSegmentState",
           "TopicIdPartition", "RemoteLogSegmentId", "RemoteLogSegmentMetadata", "LogSegmentData", "RemoteStorageManager",
           "RemoteStorageError", "RemoteResourceNotFoundError"]

# remote.log.storage.manager.class.name of the built-in backends. Kafka's own test plugin's name
# for the local directory, so a server.properties written for Kafka's LocalTieredStorage works.
LOCAL_TIERED_STORAGE = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"
S3_REMOTE_STORAGE = "asyncbroker.S3RemoteStorageManager"
# remote.log.storage.manager.impl.prefix's default: the backend's own keys (rsm.config.dir, ...).
RSM_CONFIG_PREFIX = "rsm.config."

class IndexType(enum.Enum):
    """The files that travel with a segment (Kafka's RemoteStorageManager.IndexType)."""

    OFFSET = "index"
    TIMESTAMP = "timeindex"
    PRODUCER_SNAPSHOT = "snapshot"
    TRANSACTION = "txnindex"
    LEADER_EPOCH = "leader_epoch_checkpoint"


class LogSegmentData(msgspec.Struct, frozen=True):
    """What is copied for one rolled segment: its files, and the leader-epoch checkpoint bytes
    covering it (Kafka's LogSegmentData)."""

    log_segment: Path
    offset_index: Path
    time_index: Path
    transaction_index: Path | None  # None when the segment has no aborted transactions
    producer_snapshot_index: Path
    leader_epoch_index: bytes


class RemoteStorageError(UnknownServerError):
    """A backend failed (unreachable, refused, throttled, full): a copy is retried later and the
    local segment kept; a fetch that needed it answers UNKNOWN_SERVER_ERROR, as Kafka maps its
    RemoteStorageException (not a local disk's KAFKA_STORAGE_ERROR: the log dir is fine)."""


class RemoteResourceNotFoundError(RemoteStorageError):
    """The backend has no such segment or index (Kafka's RemoteResourceNotFoundException)."""


class RemoteStorageManager(Protocol):
    def copy_log_segment_data(self, metadata: RemoteLogSegmentMetadata, data: LogSegmentData) -> bytes | None:
        """Store the segment's files under `metadata.segment_id`; return custom metadata or None.
        A copy that raises may have stored part of the files: they are deleted later."""
        ...

    def fetch_log_segment(self, metadata: RemoteLogSegmentMetadata, start_position: int,
                          end_position: int | None = None) -> bytes:
        """Bytes of the `.log` from `start_position` to `end_position` inclusive (the end of
        the file when None or past it)."""
        ...

    def fetch_index(self, metadata: RemoteLogSegmentMetadata, index_type: IndexType) -> bytes:
        """The whole index file of that type; RemoteResourceNotFoundError when the segment had
        none (a transaction index is optional)."""
        ...

    def delete_log_segment_data(self, metadata: RemoteLogSegmentMetadata) -> None:
        """Delete every file of the segment. Deleting what is already gone succeeds."""
        ...

    def close(self) -> None:
        ...
