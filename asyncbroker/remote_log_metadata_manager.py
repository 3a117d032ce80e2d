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
RemoteLogManager finishes (a delete) or cleans up (a partial copy). The replay itself is
storage.remote_log_metadata_cache's, shared with the offline readers of a log directory
(pipeline.remote_tier).
"""

from __future__ import annotations

import logging

from storage.remote_log_metadata_cache import (
    REMOTE_LOG_METADATA_TOPIC,
    RemoteLogMetadataCache,
    RemoteLogMetadataError,
)
from wire.remote_log_metadata_records import (
    RemoteLogMetadata,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataUpdate,
    TopicIdPartition,
    decode_remote_log_metadata,
    encode_remote_log_metadata,
)

from asyncbroker.offsets_topic import CoordinatorTopic

__all__ = ["REMOTE_LOG_METADATA_TOPIC", "RemoteLogMetadataError", "TopicBasedRemoteLogMetadataManager",
           "metadata_partition", "murmur2"]

log = logging.getLogger(__name__)


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


class TopicBasedRemoteLogMetadataManager:
    """The remote segments of every tiered partition, kept in memory (a RemoteLogMetadataCache:
    storage's replay, which the offline readers of a log dir share) and in `__remote_log_metadata`."""

    def __init__(self, topic: CoordinatorTopic) -> None:
        self.topic = topic
        self.cache = RemoteLogMetadataCache()
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
            self.cache.apply(decode_remote_log_metadata(stored.value))
            count += 1
        log.info("Loaded %d remote log metadata record(s) for %d partition(s) from %s", count,
                 len(self.cache.partition_ids()), REMOTE_LOG_METADATA_TOPIC)

    async def _publish(self, tp: TopicIdPartition, record: RemoteLogMetadata) -> None:
        await self.topic.append(metadata_partition(tp, self.topic.num_partitions),
                                [(None, encode_remote_log_metadata(record))])
        self.cache.apply(record)

    async def add_remote_log_segment_metadata(self, metadata: RemoteLogSegmentMetadata) -> None:
        self.cache.check_new_segment(metadata)
        await self._publish(metadata.segment_id.topic_id_partition, metadata)

    async def update_remote_log_segment_metadata(self, update: RemoteLogSegmentMetadataUpdate) -> None:
        self.cache.check_update(update)
        await self._publish(update.segment_id.topic_id_partition, update)

    def list_remote_log_segments(self, tp: TopicIdPartition) -> list[RemoteLogSegmentMetadata]:
        """Every segment known for the partition, in any state, by start offset (any thread)."""
        return self.cache.list_remote_log_segments(tp)

    def copied_segments(self, tp: TopicIdPartition) -> list[RemoteLogSegmentMetadata]:
        """The readable segments (COPY_SEGMENT_FINISHED), by start offset."""
        return self.cache.copied_segments(tp)

    def segment_for_offset(self, tp: TopicIdPartition, offset: int) -> RemoteLogSegmentMetadata | None:
        """The copied segment holding `offset`, or the first one after it."""
        return self.cache.segment_for_offset(tp, offset)

    def highest_offset_in_remote_storage(self, tp: TopicIdPartition) -> int:
        return self.cache.highest_offset_in_remote_storage(tp)

    def remote_log_size(self, tp: TopicIdPartition) -> int:
        return self.cache.remote_log_size(tp)

    def partition_ids(self) -> list[TopicIdPartition]:
        """The partitions with remote segments (in any state)."""
        return self.cache.partition_ids()
