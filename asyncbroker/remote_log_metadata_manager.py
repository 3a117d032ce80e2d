"""TopicBasedRemoteLogMetadataManager: which segments of which partitions are remote.

Kafka keeps tiered storage's bookkeeping in the internal topic `__remote_log_metadata`
(`remote.log.metadata.topic.num.partitions`, 50 by default; cleanup.policy=delete and
retention.ms=-1, so nothing is compacted away). Every change of a remote segment's state is one
record (wire.remote_log_metadata_records) in the partition chosen for its topic-partition:

    murmur2(4 bytes of Objects.hash(topicId.lsb, topicId.msb, partition)) & 0x7fffffff % partitions

A segment moves COPY_SEGMENT_STARTED -> COPY_SEGMENT_FINISHED -> DELETE_SEGMENT_STARTED ->
DELETE_SEGMENT_FINISHED; the record of each step is on disk before the step's work starts (or
after it ends, for the FINISHED ones), so replaying the topic at start gives, for every
segment, the last step known to be done. A crash leaves a STARTED state behind, which the
RemoteLogManager finishes (a delete) or cleans up (a partial copy).
"""

from __future__ import annotations

import logging
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
    decode_remote_log_metadata,
    encode_remote_log_metadata,
)

from asyncbroker.offsets_topic import CoordinatorTopic

log = logging.getLogger(__name__)

REMOTE_LOG_METADATA_TOPIC = "__remote_log_metadata"
# RemoteLogSegmentState.isValidTransition: the steps a segment may take.
_NEXT_STATES = {
    RemoteLogSegmentState.COPY_SEGMENT_STARTED: {RemoteLogSegmentState.COPY_SEGMENT_FINISHED,
                                                 RemoteLogSegmentState.DELETE_SEGMENT_STARTED},
    RemoteLogSegmentState.COPY_SEGMENT_FINISHED: {RemoteLogSegmentState.DELETE_SEGMENT_STARTED},
    RemoteLogSegmentState.DELETE_SEGMENT_STARTED: {RemoteLogSegmentState.DELETE_SEGMENT_FINISHED},
}


def _java_long_hash(value: int) -> int:
    value &= 0xFFFFFFFFFFFFFFFF
    return (value ^ (value >> 32)) & 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's Utils.murmur2 (32-bit, seed 0x9747b28c), as a signed int."""
    m, mask = 0x5BD1E995, 0xFFFFFFFF
    length = len(data)
    h = (0x9747B28C ^ length) & mask
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * m) & mask
        k ^= k >> 24
        k = (k * m) & mask
        h = ((h * m) & mask) ^ k
    tail = length & ~3
    rest = length % 4
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def metadata_partition(tp: TopicIdPartition, num_partitions: int) -> int:
    """RemoteLogMetadataTopicPartitioner.metadataPartition."""
    h = 1
    for part in (_java_long_hash(tp.topic_id.int & 0xFFFFFFFFFFFFFFFF), _java_long_hash(tp.topic_id.int >> 64),
                 tp.partition & 0xFFFFFFFF):
        h = (31 * h + part) & 0xFFFFFFFF
    return (murmur2(h.to_bytes(4, "big")) & 0x7FFFFFFF) % num_partitions


class RemoteLogMetadataError(Exception):
    """A state change the segment's current state does not allow (Kafka's
    RemoteResourceNotFoundException / IllegalStateException from the metadata cache)."""


class TopicBasedRemoteLogMetadataManager:
    """The remote segments of every tiered partition, kept in memory and in `__remote_log_metadata`."""

    def __init__(self, topic: CoordinatorTopic) -> None:
        self.topic = topic
        self._segments: dict[TopicIdPartition, dict[uuid.UUID, RemoteLogSegmentMetadata]] = {}
        # Each partition's segments by start offset, replaced whole on every change (never
        # mutated): fetches and scrapes read them from other threads while the loop writes.
        self._sorted: dict[TopicIdPartition, tuple[RemoteLogSegmentMetadata, ...]] = {}
        self._partition_deletes: dict[TopicIdPartition, RemotePartitionDeleteMetadata] = {}
        self._loaded = False

    async def load(self) -> None:
        """Replay the topic (once, at start)."""
        if self._loaded:
            return
        self._loaded = True
        if not self.topic.exists():
            return
        count = 0
        for stored in await self.topic.read_all():
            if stored.control is not None or stored.value is None:
                continue
            self._apply(decode_remote_log_metadata(stored.value))
            count += 1
        log.info("Loaded %d remote log metadata record(s) for %d partition(s) from %s", count, len(self._segments),
                 REMOTE_LOG_METADATA_TOPIC)

    def _apply(self, record: RemoteLogMetadata) -> None:
        self._change(record)
        tp = (record.segment_id.topic_id_partition if not isinstance(record, RemotePartitionDeleteMetadata)
              else record.topic_id_partition)
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
                return  # an update of a segment whose adding record is gone: nothing to apply it to
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

    async def _publish(self, tp: TopicIdPartition, record: RemoteLogMetadata) -> None:
        await self.topic.append(metadata_partition(tp, self.topic.num_partitions),
                                [(None, encode_remote_log_metadata(record))])
        self._apply(record)

    async def add_remote_log_segment_metadata(self, metadata: RemoteLogSegmentMetadata) -> None:
        if metadata.state != RemoteLogSegmentState.COPY_SEGMENT_STARTED:
            raise RemoteLogMetadataError(f"A new remote segment must be COPY_SEGMENT_STARTED, not {metadata.state.name}")
        await self._publish(metadata.segment_id.topic_id_partition, metadata)

    async def update_remote_log_segment_metadata(self, update: RemoteLogSegmentMetadataUpdate) -> None:
        tp = update.segment_id.topic_id_partition
        current = self._segments.get(tp, {}).get(update.segment_id.id)
        if current is None:
            raise RemoteLogMetadataError(f"No remote log segment metadata found for {update.segment_id}")
        if update.state not in _NEXT_STATES.get(current.state, set()):
            raise RemoteLogMetadataError(
                f"Invalid transition of {update.segment_id} from {current.state.name} to {update.state.name}")
        await self._publish(tp, update)

    async def put_remote_partition_delete_metadata(self, metadata: RemotePartitionDeleteMetadata) -> None:
        await self._publish(metadata.topic_id_partition, metadata)

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
        copied = self.copied_segments(tp)
        return max((m.end_offset for m in copied), default=-1)

    def remote_log_size(self, tp: TopicIdPartition) -> int:
        return sum(m.segment_size_in_bytes for m in self.copied_segments(tp))

    def partition_ids(self) -> list[TopicIdPartition]:
        """The partitions with remote segments (in any state)."""
        return list(self._sorted)
