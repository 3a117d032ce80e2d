"""Crafting Kafka log directories for the pipeline tests, and reading them back with storage.

Segments are written with storage's LogSegment (the way the cleaner writes
its output), so batches may carry offset gaps, tombstones and control
markers exactly as a compacted, transactional log does; no broker needed.
The reference reader is storage's `Log.read` + `wire.records.decode_records`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from storage.clock import MockClock
from storage.log import Log
from storage.log_config import LogConfig
from storage.log_segment import LogSegment
from storage.offset_checkpoint import CLEANER_OFFSET_CHECKPOINT_FILE, OffsetCheckpointFile
from storage.topic_partition import TopicPartition
from wire.compression import CompressionType
from wire.records import (
    ControlRecordType,
    Record,
    build_batch,
    build_control_batch,
    decode_records,
    iter_batch_headers,
)

BASE_TS = 1_700_000_000_000
CODECS = [CompressionType.NONE, CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4,
          CompressionType.ZSTD]
SMALL_SEGMENTS = LogConfig(segment_bytes=64 * 1024, index_interval_bytes=512)


def write_segment(part_dir: Path, base_offset: int, batches: Sequence[bytes], *, active: bool = False,
                  config: LogConfig = SMALL_SEGMENTS) -> Path:
    """Append `batches` (offsets already assigned) to a new segment at `base_offset`."""
    part_dir.mkdir(parents=True, exist_ok=True)
    segment = LogSegment.open(part_dir, base_offset, config, MockClock(BASE_TS))
    for data in batches:
        found = list(iter_batch_headers(data, strict=True))
        last = found[-1].header
        max_ts = max(b.header.max_timestamp for b in found)
        segment.append(last.last_offset, max_ts, last.last_offset, data, [(b.header, b.position) for b in found])
    if not active:
        segment.on_become_inactive_segment()
    path = segment.log.path
    segment.close()
    return path


def data_batch(offsets: Sequence[int], *, keys: Sequence[bytes | None] | None = None,
               values: Sequence[bytes | None] | None = None, ts: int = BASE_TS,
               codec: CompressionType = CompressionType.NONE, headers: bool = False,
               producer_id: int = -1, transactional: bool = False) -> bytes:
    recs = []
    for i, off in enumerate(offsets):
        key = keys[i] if keys is not None else f"key-{off}".encode()
        value = values[i] if values is not None else f"value-{off}".encode()
        hdrs = [("h", f"{off}".encode()), ("null", None)] if headers else []
        recs.append(Record(off, ts + i, key, value, hdrs))
    return build_batch(
        recs,
        base_offset=offsets[0],
        compression=codec,
        producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=0 if producer_id >= 0 else -1,
        is_transactional=transactional,
        last_offset_delta=offsets[-1] - offsets[0],
    )


def commit_marker(offset: int, producer_id: int, ts: int = BASE_TS) -> bytes:
    return build_control_batch(ControlRecordType.COMMIT, producer_id=producer_id, producer_epoch=0, timestamp=ts,
                               base_offset=offset)


def write_cleaner_checkpoint(log_dir: Path, offsets: dict[TopicPartition, int]) -> None:
    OffsetCheckpointFile(log_dir / CLEANER_OFFSET_CHECKPOINT_FILE).write(offsets)


def storage_records(part_dir: Path, *, include_control: bool = False) -> list[tuple]:
    """Every record of the partition as storage reads it: (topic, partition, offset, ts_ms, key, value, headers)."""
    log = Log.open(part_dir, SMALL_SEGMENTS, clock=MockClock(BASE_TS), had_clean_shutdown=True)
    tp = log.topic_partition
    out: list[tuple] = []
    try:
        pos = log.log_start_offset
        while pos < log.log_end_offset:
            data = log.read(pos, 1 << 30, isolation="log_end").read_bytes()
            if not data:
                break
            for header, at in iter_batch_headers(data):
                pos = header.next_offset
                if header.is_control and not include_control:
                    continue
                for r in decode_records(data, at):
                    out.append((tp.topic, tp.partition, r.offset, r.timestamp, r.key, r.value,
                                [(k, v) for k, v in r.headers]))
    finally:
        log.close()
    return out


def spark_rows_as_tuples(rows: Sequence) -> list[tuple]:
    """Rows of the kafka-log source (with `ts_ms` = unix_millis(timestamp)) in storage_records' shape."""
    return [
        (r["topic"], r["partition"], r["offset"], r["ts_ms"],
         None if r["key"] is None else bytes(r["key"]),
         None if r["value"] is None else bytes(r["value"]),
         [(h["key"], None if h["value"] is None else bytes(h["value"])) for h in r["headers"] or []])
        for r in rows
    ]
