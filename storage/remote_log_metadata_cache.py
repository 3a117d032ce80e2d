"""What `__remote_log_metadata` says is remote: its records replayed into per-segment states.

Kafka's RemoteLogMetadataCache. Every change of a remote segment's state is one record of the
topic (wire.remote_log_metadata_records); replaying a tiered partition's records in log order
gives, for each of its remote segments, the last step known to be done:

    COPY_SEGMENT_STARTED -> COPY_SEGMENT_FINISHED -> DELETE_SEGMENT_STARTED -> DELETE_SEGMENT_FINISHED

Only COPY_SEGMENT_FINISHED segments are readable; a STARTED state is work a crash left to finish
or clean up, and DELETE_SEGMENT_FINISHED removes the segment from the cache (as a partition's
DELETE_PARTITION_FINISHED removes all of its segments).

Two users, one replay: the broker's TopicBasedRemoteLogMetadataManager (which also appends the
records) and the offline readers (pipeline.log_dir_scan), which read the topic's segment files
of a log directory and plan the remote segments as they plan local ones.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from wire.remote_log_metadata_records import (
    RemoteLogMetadata,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
    RemotePartitionDeleteMetadata,
    RemotePartitionDeleteState,
    TopicIdPartition,
)

__all__ = ["REMOTE_LOG_METADATA_TOPIC", "RemoteLogMetadataError", "RemoteLogMetadataCache"]

REMOTE_LOG_METADATA_TOPIC = "__remote_log_metadata"

# RemoteLogSegmentState.isValidTransition: the steps a segment may take.
_NEXT_STATES = {
    RemoteLogSegmentState.COPY_SEGMENT_STARTED: {RemoteLogSegmentState.COPY_SEGMENT_FINISHED,
                                                 RemoteLogSegmentState.DELETE_SEGMENT_STARTED},
    RemoteLogSegmentState.COPY_SEGMENT_FINISHED: {RemoteLogSegmentState.DELETE_SEGMENT_STARTED},
    RemoteLogSegmentState.DELETE_SEGMENT_STARTED: {RemoteLogSegmentState.DELETE_SEGMENT_FINISHED},
}


class RemoteLogMetadataError(Exception):
    """A state change the segment's current state does not allow (Kafka's
    RemoteResourceNotFoundException / IllegalStateException from the metadata cache)."""


class RemoteLogMetadataCache:
    """The remote segments of every tiered partition, by topic-id-partition and segment id.

    One thread applies records (the broker's loop); the readers (`list_remote_log_segments` and
    what builds on it) may run on others: each partition's segments by start offset are a tuple
    replaced whole on every change, never mutated."""

    def __init__(self) -> None:
        self._segments: dict[TopicIdPartition, dict[uuid.UUID, RemoteLogSegmentMetadata]] = {}
        self._sorted: dict[TopicIdPartition, tuple[RemoteLogSegmentMetadata, ...]] = {}
        self._partition_deletes: dict[TopicIdPartition, RemotePartitionDeleteMetadata] = {}

    def apply(self, record: RemoteLogMetadata) -> None:
        """Replay one record. An update of a segment whose adding record is unknown is ignored
        (nothing to apply it to); replay does not check transitions, `check_update` does. A
        partition's DELETE_PARTITION_FINISHED forgets its segments."""
        self._change(record)
        tp = (record.topic_id_partition if isinstance(record, RemotePartitionDeleteMetadata)
              else record.segment_id.topic_id_partition)
        by_id = self._segments.get(tp)
        if by_id:
            self._sorted[tp] = tuple(sorted(by_id.values(), key=lambda m: (m.start_offset, m.event_timestamp_ms)))
        else:
            self._sorted.pop(tp, None)

    def _change(self, record: RemoteLogMetadata) -> None:
        if isinstance(record, RemoteLogSegmentMetadata):
            self._segments.setdefault(record.segment_id.topic_id_partition, {})[record.segment_id.id] = record
        elif isinstance(record, RemoteLogSegmentMetadataUpdate):
            by_id = self._segments.get(record.segment_id.topic_id_partition, {})
            current = by_id.get(record.segment_id.id)
            if current is None:
                return
            if record.state == RemoteLogSegmentState.DELETE_SEGMENT_FINISHED:
                del by_id[record.segment_id.id]
            else:
                custom = record.custom_metadata if record.custom_metadata is not None else current.custom_metadata
                by_id[record.segment_id.id] = RemoteLogSegmentMetadata(
                    current.segment_id, current.start_offset, current.end_offset, record.broker_id,
                    current.max_timestamp_ms, record.event_timestamp_ms, current.segment_leader_epochs,
                    current.segment_size_in_bytes, record.state, custom, current.txn_index_empty)
        else:
            self._partition_deletes[record.topic_id_partition] = record
            if record.state == RemotePartitionDeleteState.DELETE_PARTITION_FINISHED:
                self._segments.pop(record.topic_id_partition, None)

    def check_new_segment(self, metadata: RemoteLogSegmentMetadata) -> None:
        if metadata.state != RemoteLogSegmentState.COPY_SEGMENT_STARTED:
            raise RemoteLogMetadataError(f"A new remote segment must be COPY_SEGMENT_STARTED, not {metadata.state.name}")

    def check_update(self, update: RemoteLogSegmentMetadataUpdate) -> None:
        """RemoteLogMetadataError unless the segment exists and may move to `update.state`."""
        current = self._segments.get(update.segment_id.topic_id_partition, {}).get(update.segment_id.id)
        if current is None:
            raise RemoteLogMetadataError(f"No remote log segment metadata found for {update.segment_id}")
        if update.state not in _NEXT_STATES.get(current.state, set()):
            raise RemoteLogMetadataError(
                f"Invalid transition of {update.segment_id} from {current.state.name} to {update.state.name}")

    def list_remote_log_segments(self, tp: TopicIdPartition) -> list[RemoteLogSegmentMetadata]:
        """Every segment known for the partition, in any state, by start offset (any thread)."""
        return list(self._sorted.get(tp, ()))

    def copied_segments(self, tp: TopicIdPartition) -> list[RemoteLogSegmentMetadata]:
        """The readable segments (COPY_SEGMENT_FINISHED), by start offset."""
        return [m for m in self.list_remote_log_segments(tp) if m.state == RemoteLogSegmentState.COPY_SEGMENT_FINISHED]

    def segment_for_offset(self, tp: TopicIdPartition, offset: int) -> RemoteLogSegmentMetadata | None:
        """The copied segment holding `offset`, or the first one after it (an offset removed by
        compaction or a transaction marker's gap still reads from the next batch)."""
        for m in self.copied_segments(tp):
            if m.end_offset >= offset:
                return m
        return None

    def highest_offset_in_remote_storage(self, tp: TopicIdPartition) -> int:
        return max((m.end_offset for m in self.copied_segments(tp)), default=-1)

    def remote_log_size(self, tp: TopicIdPartition) -> int:
        return sum(m.segment_size_in_bytes for m in self.copied_segments(tp))

    def partition_ids(self) -> list[TopicIdPartition]:
        """The partitions with remote segments (in any state)."""
        return list(self._sorted)

    def partition_deletes(self) -> Mapping[TopicIdPartition, RemotePartitionDeleteMetadata]:
        """The last partition-deletion record of each partition that had one."""
        return self._partition_deletes
