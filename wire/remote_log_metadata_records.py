"""The record values of `__remote_log_metadata`: where tiered storage says what is remote.

Kafka's topic-based RemoteLogMetadataManager appends one record per change of a remote
segment's state, and replays them at start to know which segments exist, so a directory
handed to Kafka must hold these bytes exactly. Each value is an API-message frame (see
wire.api_message_frame): uvarint 1, uvarint api key, uvarint version 0, then the flexible body
(storage/.../message/*.json in Kafka):

    0 RemoteLogSegmentMetadataRecord
        segment id { topic id partition { name string, id uuid, partition int32, tags },
                     id uuid, tags }
        start offset int64, end offset int64 (inclusive), broker id int32,
        max timestamp int64, event timestamp int64,
        segment leader epochs [ { leader epoch int32, offset int64, tags } ],
        segment size int32, custom metadata bytes?, state int8,
        tags { 0: txn index empty bool }
    1 RemoteLogSegmentMetadataUpdateRecord
        segment id, broker id int32, event timestamp int64, custom metadata bytes?,
        state int8, tags
    2 RemotePartitionDeleteMetadataRecord
        topic id partition, broker id int32, event timestamp int64, state int8, tags

(3, the snapshot record, lives only in Kafka's local snapshot files, never in the topic.)
The record key is null; Kafka picks the partition by hashing the topic-partition.
"""

from __future__ import annotations

import enum
import uuid

import msgspec

from wire.api_message_frame import FRAME_VERSION, ApiMessageReader, ApiMessageWriter
from wire.errors import CorruptRecordError

__all__ = ["RemoteLogSegmentState", "RemotePartitionDeleteState", "TopicIdPartition", "RemoteLogSegmentId",
           "RemoteLogSegmentMetadata", "RemoteLogSegmentMetadataUpdate", "RemotePartitionDeleteMetadata",
           "RemoteLogMetadata", "encode_remote_log_metadata", "decode_remote_log_metadata"]

SEGMENT_METADATA, SEGMENT_METADATA_UPDATE, PARTITION_DELETE = 0, 1, 2


class RemoteLogSegmentState(enum.IntEnum):
    """A remote segment's life. Only COPY_SEGMENT_FINISHED segments are read; the others are
    work to finish or clean up."""

    COPY_SEGMENT_STARTED = 0
    COPY_SEGMENT_FINISHED = 1
    DELETE_SEGMENT_STARTED = 2
    DELETE_SEGMENT_FINISHED = 3


class RemotePartitionDeleteState(enum.IntEnum):
    DELETE_PARTITION_MARKED = 0
    DELETE_PARTITION_STARTED = 1
    DELETE_PARTITION_FINISHED = 2


class TopicIdPartition(msgspec.Struct, frozen=True):
    topic_id: uuid.UUID
    topic: str
    partition: int


class RemoteLogSegmentId(msgspec.Struct, frozen=True):
    topic_id_partition: TopicIdPartition
    id: uuid.UUID


class RemoteLogSegmentMetadata(msgspec.Struct, frozen=True):
    """One remote segment: its offsets, the leader epochs that start inside it, and its state."""

    segment_id: RemoteLogSegmentId
    start_offset: int
    end_offset: int  # inclusive: the segment's last offset
    broker_id: int
    max_timestamp_ms: int
    event_timestamp_ms: int
    segment_leader_epochs: tuple[tuple[int, int], ...]  # (epoch, start offset), ascending
    segment_size_in_bytes: int
    state: RemoteLogSegmentState
    custom_metadata: bytes | None = None
    txn_index_empty: bool = False


class RemoteLogSegmentMetadataUpdate(msgspec.Struct, frozen=True):
    segment_id: RemoteLogSegmentId
    broker_id: int
    event_timestamp_ms: int
    state: RemoteLogSegmentState
    custom_metadata: bytes | None = None


class RemotePartitionDeleteMetadata(msgspec.Struct, frozen=True):
    topic_id_partition: TopicIdPartition
    broker_id: int
    event_timestamp_ms: int
    state: RemotePartitionDeleteState


RemoteLogMetadata = RemoteLogSegmentMetadata | RemoteLogSegmentMetadataUpdate | RemotePartitionDeleteMetadata


def _write_tp(w: ApiMessageWriter, tp: TopicIdPartition) -> None:
    w.compact_string(tp.topic).uuid(tp.topic_id).signed(tp.partition, 4).uvarint(0)


def _write_segment_id(w: ApiMessageWriter, sid: RemoteLogSegmentId) -> None:
    _write_tp(w, sid.topic_id_partition)
    w.uuid(sid.id).uvarint(0)


def encode_remote_log_metadata(record: RemoteLogMetadata) -> bytes:
    """The framed value Kafka's RemoteLogMetadataSerde writes for `record`."""
    w = ApiMessageWriter().uvarint(FRAME_VERSION)
    if isinstance(record, RemoteLogSegmentMetadata):
        w.uvarint(SEGMENT_METADATA).uvarint(0)
        _write_segment_id(w, record.segment_id)
        w.signed(record.start_offset, 8).signed(record.end_offset, 8).signed(record.broker_id, 4)
        w.signed(record.max_timestamp_ms, 8).signed(record.event_timestamp_ms, 8)
        w.uvarint(len(record.segment_leader_epochs) + 1)
        for epoch, offset in record.segment_leader_epochs:
            w.signed(epoch, 4).signed(offset, 8).uvarint(0)
        w.signed(record.segment_size_in_bytes, 4).nullable_compact_bytes(record.custom_metadata)
        w.signed(record.state, 1)
        if record.txn_index_empty:  # a tagged field is written only when it differs from its default
            return bytes(w.uvarint(1).uvarint(0).uvarint(1).raw(b"\x01").out)
        return w.no_tagged_fields()
    if isinstance(record, RemoteLogSegmentMetadataUpdate):
        w.uvarint(SEGMENT_METADATA_UPDATE).uvarint(0)
        _write_segment_id(w, record.segment_id)
        w.signed(record.broker_id, 4).signed(record.event_timestamp_ms, 8)
        w.nullable_compact_bytes(record.custom_metadata).signed(record.state, 1)
        return w.no_tagged_fields()
    w.uvarint(PARTITION_DELETE).uvarint(0)
    _write_tp(w, record.topic_id_partition)
    w.signed(record.broker_id, 4).signed(record.event_timestamp_ms, 8).signed(record.state, 1)
    return w.no_tagged_fields()


def _read_tp(r: ApiMessageReader) -> TopicIdPartition:
    topic, topic_id, partition = r.string(), r.uuid(), r.int32()
    r.skip_tagged_fields()
    return TopicIdPartition(topic_id, topic, partition)


def _read_segment_id(r: ApiMessageReader) -> RemoteLogSegmentId:
    tp = _read_tp(r)
    sid = r.uuid()
    r.skip_tagged_fields()
    return RemoteLogSegmentId(tp, sid)


def _segment_state(value: int) -> RemoteLogSegmentState:
    try:
        return RemoteLogSegmentState(value)
    except ValueError:
        raise CorruptRecordError(f"unknown remote log segment state {value}") from None


def decode_remote_log_metadata(value: bytes) -> RemoteLogMetadata:
    """One value of `__remote_log_metadata`; CorruptRecordError when it does not parse."""
    r = ApiMessageReader(value)
    frame = r.uvarint()
    if frame != FRAME_VERSION:
        raise CorruptRecordError(f"unknown remote log metadata frame version {frame}")
    api_key, version = r.uvarint(), r.uvarint()
    if version != 0:
        raise CorruptRecordError(f"unknown version {version} of remote log metadata record {api_key}")
    if api_key == SEGMENT_METADATA:
        sid = _read_segment_id(r)
        start, end, broker, max_ts, event_ts = r.int64(), r.int64(), r.int32(), r.int64(), r.int64()
        epochs = []
        for _ in range(r.uvarint() - 1):
            epochs.append((r.int32(), r.int64()))
            r.skip_tagged_fields()
        size, custom, state = r.int32(), r.nullable_compact_bytes(), _segment_state(r.int8())
        txn_index_empty = False
        for _ in range(r.uvarint()):
            tag, length = r.uvarint(), r.uvarint()
            body = r.take(length)
            if tag == 0:
                txn_index_empty = body != b"\x00"
        return RemoteLogSegmentMetadata(sid, start, end, broker, max_ts, event_ts, tuple(epochs), size, state,
                                        custom, txn_index_empty)
    if api_key == SEGMENT_METADATA_UPDATE:
        sid = _read_segment_id(r)
        broker, event_ts, custom, state = r.int32(), r.int64(), r.nullable_compact_bytes(), _segment_state(r.int8())
        r.skip_tagged_fields()
        return RemoteLogSegmentMetadataUpdate(sid, broker, event_ts, state, custom)
    if api_key == PARTITION_DELETE:
        tp = _read_tp(r)
        broker, event_ts, raw_state = r.int32(), r.int64(), r.int8()
        r.skip_tagged_fields()
        try:
            delete_state = RemotePartitionDeleteState(raw_state)
        except ValueError:
            raise CorruptRecordError(f"unknown remote partition delete state {raw_state}") from None
        return RemotePartitionDeleteMetadata(tp, broker, event_ts, delete_state)
    raise CorruptRecordError(f"unknown remote log metadata record type {api_key}")
