"""storage's replay of `__remote_log_metadata` (the broker's manager and the offline readers share it):
which segments are readable, what an update of an unknown segment does, which steps are allowed."""

from __future__ import annotations

import uuid

import pytest

from storage.remote_log_metadata_cache import RemoteLogMetadataCache, RemoteLogMetadataError
from wire.remote_log_metadata_records import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState,
    RemotePartitionDeleteMetadata,
    RemotePartitionDeleteState,
    TopicIdPartition,
    decode_remote_log_metadata,
    encode_remote_log_metadata,
)

S = RemoteLogSegmentState
TP = TopicIdPartition(uuid.uuid4(), "t", 0)


def _segment(start: int, end: int) -> RemoteLogSegmentMetadata:
    return RemoteLogSegmentMetadata(RemoteLogSegmentId(TP, uuid.uuid4()), start, end, 1, 100 + end, 5, ((0, start),),
                                    1000, S.COPY_SEGMENT_STARTED)


def _update(m: RemoteLogSegmentMetadata, state: RemoteLogSegmentState, at: int = 9) -> RemoteLogSegmentMetadataUpdate:
    return RemoteLogSegmentMetadataUpdate(m.segment_id, 2, at, state, b"custom" if state == S.COPY_SEGMENT_FINISHED
                                          else None)


def test_replay_keeps_the_last_state_and_only_finished_copies_are_readable() -> None:
    cache = RemoteLogMetadataCache()
    a, b, c, d = _segment(0, 9), _segment(10, 19), _segment(20, 29), _segment(30, 39)
    records = [a, _update(a, S.COPY_SEGMENT_FINISHED), b, _update(b, S.COPY_SEGMENT_FINISHED),
               _update(b, S.DELETE_SEGMENT_STARTED), c, d, _update(d, S.COPY_SEGMENT_FINISHED),
               _update(d, S.DELETE_SEGMENT_STARTED), _update(d, S.DELETE_SEGMENT_FINISHED),
               _update(_segment(40, 49), S.COPY_SEGMENT_FINISHED)]  # an update of a segment never added
    for record in records:
        cache.apply(decode_remote_log_metadata(encode_remote_log_metadata(record)))  # as read from the topic
    assert [(m.start_offset, m.state) for m in cache.list_remote_log_segments(TP)] == [
        (0, S.COPY_SEGMENT_FINISHED), (10, S.DELETE_SEGMENT_STARTED), (20, S.COPY_SEGMENT_STARTED)]
    (copied,) = cache.copied_segments(TP)
    assert (copied.segment_id, copied.broker_id, copied.event_timestamp_ms, copied.custom_metadata) == \
        (a.segment_id, 2, 9, b"custom")
    assert cache.highest_offset_in_remote_storage(TP) == 9 and cache.remote_log_size(TP) == 1000
    assert cache.segment_for_offset(TP, 5) == copied and cache.segment_for_offset(TP, 10) is None
    assert cache.partition_ids() == [TP]
    cache.apply(RemotePartitionDeleteMetadata(TP, 1, 3, RemotePartitionDeleteState.DELETE_PARTITION_MARKED))
    assert cache.partition_deletes()[TP].state == RemotePartitionDeleteState.DELETE_PARTITION_MARKED
    assert len(cache.list_remote_log_segments(TP)) == 3  # marked: its segments are still there to delete
    cache.apply(RemotePartitionDeleteMetadata(TP, 1, 4, RemotePartitionDeleteState.DELETE_PARTITION_FINISHED))
    assert cache.copied_segments(TP) == [] and cache.highest_offset_in_remote_storage(TP) == -1
    assert cache.partition_ids() == []


def test_transitions() -> None:
    cache = RemoteLogMetadataCache()
    a = _segment(0, 9)
    with pytest.raises(RemoteLogMetadataError, match="must be COPY_SEGMENT_STARTED"):
        cache.check_new_segment(RemoteLogSegmentMetadata(a.segment_id, 0, 9, 1, 0, 0, (), 1, S.COPY_SEGMENT_FINISHED))
    with pytest.raises(RemoteLogMetadataError, match="No remote log segment metadata"):
        cache.check_update(_update(a, S.COPY_SEGMENT_FINISHED))
    cache.check_new_segment(a)
    cache.apply(a)
    cache.check_update(_update(a, S.COPY_SEGMENT_FINISHED))
    cache.check_update(_update(a, S.DELETE_SEGMENT_STARTED))  # a dangling copy is deleted
    with pytest.raises(RemoteLogMetadataError, match="from COPY_SEGMENT_STARTED to DELETE_SEGMENT_FINISHED"):
        cache.check_update(_update(a, S.DELETE_SEGMENT_FINISHED))
    cache.apply(_update(a, S.COPY_SEGMENT_FINISHED))
    with pytest.raises(RemoteLogMetadataError, match="Invalid transition"):
        cache.check_update(_update(a, S.COPY_SEGMENT_FINISHED))
