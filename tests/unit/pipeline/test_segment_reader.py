"""Planning and reading segment slices without Spark: live files only, torn tails, splits."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipeline.kafka_log_source import ReadOptions
from pipeline.log_dir_scan import live_segments, scan_log_dirs
from pipeline.record_schema import RECORD_SCHEMA
from pipeline.segment_reader import plan_slices, read_slice
from pipeline_testlib import CODECS, data_batch, storage_records, write_segment
from storage.offset_checkpoint import LOG_START_OFFSET_CHECKPOINT_FILE, OffsetCheckpointFile
from storage.topic_partition import TopicPartition
from wire.errors import CorruptRecordError

pa = pytest.importorskip("pyarrow")


def _arrow_schema():  # noqa: ANN202
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(RECORD_SCHEMA, timezone="UTC")


def _offsets(slices) -> list[int]:  # noqa: ANN001
    schema = _arrow_schema()
    out: list[int] = []
    for piece in slices:
        for batch in read_slice(piece, schema):
            out += batch.column("offset").to_pylist()
    return out


def test_only_live_segments_and_serving_dirs(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    write_segment(part, 0, [data_batch([0, 1])])
    write_segment(part, 2, [data_batch([2, 3])], active=True)
    for name in ("00000000000000000000.log.deleted", "00000000000000000002.log.cleaned",
                 "00000000000000000002.log.swap", "00000000000000000002.index.swap"):
        (part / name).write_bytes(b"junk")
    write_segment(tmp_path / "t-1.0123456789abcdef0123456789abcdef-delete", 0, [data_batch([0])])
    write_segment(tmp_path / "t-2.0123456789abcdef0123456789abcdef-future", 0, [data_batch([0])])
    (tmp_path / "not-a-partition").mkdir()
    segments, in_flight = live_segments(part, "t", 0)
    assert [(s.base_offset, s.is_active) for s in segments] == [(0, False), (2, True)]
    assert in_flight == 4
    view = scan_log_dirs([tmp_path])
    assert [(p.topic, p.partition) for p in view.partitions] == [("t", 0)]


def test_large_segment_split_at_index_entries_reads_each_record_once(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    batches = [data_batch(list(range(i, i + 20)), codec=CODECS[i // 20 % 5], headers=True) for i in range(0, 2000, 20)]
    write_segment(part, 0, batches, active=True)
    [segment] = live_segments(part, "t", 0)[0]
    slices = plan_slices([segment], max_slice_bytes=4096)
    assert len(slices) > 5
    assert slices[0].start_position == 0 and slices[-1].end_position == segment.size
    assert all(a.end_position == b.start_position for a, b in zip(slices, slices[1:]))
    assert _offsets(slices) == list(range(2000))
    assert [r[2] for r in storage_records(part)] == list(range(2000))


def test_offset_range_skips_whole_segments_and_trims_batches(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    write_segment(part, 0, [data_batch(list(range(0, 10)))])
    write_segment(part, 10, [data_batch(list(range(10, 20)))])
    write_segment(part, 20, [data_batch(list(range(20, 30)))], active=True)
    segments, _ = live_segments(part, "t", 0)
    slices = plan_slices(segments, start_offset=12, end_offset=21)
    assert [s.base_offset for s in slices] == [10, 20]
    assert _offsets(slices) == list(range(12, 21))


def test_log_start_checkpoint_hides_deleted_records(tmp_path: Path) -> None:
    write_segment(tmp_path / "t-0", 0, [data_batch(list(range(0, 10)))], active=True)
    OffsetCheckpointFile(tmp_path / LOG_START_OFFSET_CHECKPOINT_FILE).write({TopicPartition("t", 0): 4})
    [part] = scan_log_dirs([tmp_path]).partitions
    assert part.log_start_offset == 4
    assert _offsets(ReadOptions({"path": str(tmp_path)}).plan()) == list(range(4, 10))
    everything = ReadOptions({"path": str(tmp_path), "respectLogStartOffset": "false"}).plan()
    assert _offsets(everything) == list(range(10))


def test_active_segment_torn_tail_and_preallocated_zeros_end_the_read(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    path = write_segment(part, 0, [data_batch([0, 1, 2]), data_batch([3, 4])], active=True)
    with open(path, "ab") as f:
        f.write(data_batch([5, 6, 7])[:-3])  # the writer is mid-batch
    assert _offsets(plan_slices(live_segments(part, "t", 0)[0])) == [0, 1, 2, 3, 4]
    with open(path, "ab") as f:
        f.write(b"\x00" * 4096)  # preallocated space after it
    assert _offsets(plan_slices(live_segments(part, "t", 0)[0])) == [0, 1, 2, 3, 4]


def test_corrupt_closed_segment_raises(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    path = write_segment(part, 0, [data_batch([0, 1, 2]), data_batch([3, 4])])
    write_segment(part, 5, [data_batch([5])], active=True)
    data = bytearray(path.read_bytes())
    data[-2] ^= 0xFF  # flip a byte inside the second batch's records: CRC mismatch
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordError):
        _offsets(plan_slices(live_segments(part, "t", 0)[0]))


def test_segment_swapped_out_after_planning(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    path = write_segment(part, 0, [data_batch([0, 1, 2])])
    write_segment(part, 3, [data_batch([3])], active=True)
    slices = plan_slices(live_segments(part, "t", 0)[0])
    os.rename(path, str(path) + ".deleted")  # the cleaner's swap retired it meanwhile...
    cleaned = part / "cleaned"
    write_segment(cleaned, 0, [data_batch([2])])
    os.rename(cleaned / path.name, path)  # ...and put the cleaned segment under the old name
    assert _offsets(slices) == [0, 1, 2, 3]  # the planned (old) file, not a mix
    os.unlink(str(path) + ".deleted")  # the delayed delete removed the old file
    assert _offsets(slices) == [3]
    assert _offsets(plan_slices(live_segments(part, "t", 0)[0])) == [2, 3]  # a new plan sees the new file
