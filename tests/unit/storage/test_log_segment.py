"""LogSegment: append/read/translate, recovery, truncation, roll conditions, timestamps."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage_testlib import BASE_TS, batch
from storage.clock import MockClock
from storage.errors import LogSegmentOffsetOverflowError
from storage.log_config import LogConfig
from storage import file_records, log_segment
from storage.log_segment import READ_WINDOW_MAX_BYTES, LogSegment, RollParams
from wire.records import BATCH_HEADER_SIZE, LOG_OVERHEAD, assign_offsets, iter_batch_headers


def _segment(tmp_path: Path, base: int = 40, **config) -> LogSegment:
    cfg = LogConfig(**{"index_interval_bytes": 1, **config})
    return LogSegment.open(tmp_path, base, cfg, MockClock(BASE_TS))


def _append(seg: LogSegment, first_offset: int, n: int, ts: int = BASE_TS) -> bytes:
    data = bytearray(batch(n, ts=ts))
    assign_offsets(data, 0, first_offset, 0)
    headers = [(bp.header, bp.position) for bp in iter_batch_headers(data)]
    last = first_offset + n - 1
    seg.append(last, ts + n - 1, last, data, headers)
    return bytes(data)


def _pread_sizes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of every pread the segment's file makes from now on, in order."""
    reads: list[int] = []
    real_pread = file_records.pread

    def pread(fd: int, size: int, position: int, *, nonblocking: bool = False) -> bytes:
        reads.append(size)
        return real_pread(fd, size, position, nonblocking=nonblocking)

    monkeypatch.setattr(file_records, "pread", pread)
    return reads


def test_read_before_first_and_past_last(tmp_path: Path) -> None:
    seg = _segment(tmp_path)
    assert seg.read(40, 200) is None  # empty segment
    _append(seg, 50, 2)
    _append(seg, 60, 2)
    first = seg.read(41, 10_000)  # before the first offset: the first batch
    assert first is not None and first.position == 0 and first.size == seg.size()
    assert seg.read(62, 10_000) is None  # past the last offset
    seg.close()


def test_read_starts_at_batch_and_respects_max_size(tmp_path: Path) -> None:
    seg = _segment(tmp_path)
    a = _append(seg, 40, 3)
    b = _append(seg, 43, 3)
    r = seg.read(44, 10_000)
    assert r is not None and r.position == len(a) and r.size == len(b)
    r = seg.read(40, 10)  # smaller than a batch, partial bytes allowed
    assert r is not None and r.size == 10
    r = seg.read(40, 10, min_one_message=True)
    assert r is not None and r.size == len(a)
    r = seg.read(40, 10_000, max_position=len(a))
    assert r is not None and r.size == len(a)
    seg.close()


@pytest.mark.parametrize("index_interval_bytes", [1, 300, 4096, 1 << 20])
def test_a_read_cut_after_its_first_batch_ends_at_the_last_whole_batch(tmp_path: Path,
                                                                        index_interval_bytes: int) -> None:
    """A limit that falls inside a later batch ends the range at the batch before it (issue 17:
    clients drop a trailing part of a batch); the first batch still goes whole under KIP-74, and
    a limit on a batch boundary, or below the first batch without min_one_message, is unchanged.
    Every index density: the walk starts at the index entry below the limit."""
    seg = _segment(tmp_path, base=0, index_interval_bytes=index_interval_bytes)
    ends = [0]
    for i in range(40):
        _append(seg, i * 3, 3)
        ends.append(seg.size())
    for start_batch in (0, 7):
        start = ends[start_batch]
        for limit in range(1, seg.size() - start + 1, 7):
            for min_one in (False, True):
                r = seg.read(start_batch * 3 + 1, limit, min_one_message=min_one)
                assert r is not None and r.position == start
                first = ends[start_batch + 1] - start
                whole = max(e for e in ends if e <= start + limit) - start
                if limit < first:
                    assert (r.size, r.first_entry_incomplete) == ((first, False) if min_one else (limit, True))
                else:
                    assert (r.size, r.first_entry_incomplete) == (whole, False), (start, limit)
    assert seg.read(0, ends[5]).size == ends[5]  # on a boundary: nothing to cut
    assert seg.read(0, ends[5], max_position=ends[3]).size == ends[3]  # the high watermark's bound
    seg.close()


_batches = st.lists(st.tuples(st.integers(1, 4), st.sampled_from([1, 50, 300, 2_000, 9_000, 40_000])),
                    min_size=1, max_size=24)


@settings(max_examples=60, deadline=None)
@given(batches=_batches, index_interval_bytes=st.sampled_from([1, 700, 4096, 1 << 20]), data=st.data())
def test_a_small_read_from_one_window_answers_as_the_range_read(
        batches: list[tuple[int, int]], index_interval_bytes: int, data: st.DataObject) -> None:
    """A small read from its window (one pread from the index entry) against the range path (walks,
    READ_WINDOW_MAX_BYTES at 0): the same position, size and first_entry_incomplete for any
    offset, limit, high watermark and min_one_message, and its bytes are the file's."""
    with tempfile.TemporaryDirectory() as d:
        seg = _segment(Path(d), base=0, index_interval_bytes=index_interval_bytes)
        ends, offset = [0], 0
        for records, value_size in batches:
            raw = bytearray(batch(records, value_size=value_size))
            assign_offsets(raw, 0, offset, 0)
            offset += records
            seg.append(offset - 1, BASE_TS, offset - 1, raw, [(bp.header, bp.position) for bp in iter_batch_headers(raw)])
            ends.append(seg.size())
        file = seg.log.read(0, seg.size())
        for _ in range(12):
            start = data.draw(st.integers(0, offset), label="offset")
            limit = data.draw(st.integers(1, READ_WINDOW_MAX_BYTES), label="limit")
            max_position = data.draw(st.sampled_from(ends[1:]), label="max_position")
            min_one = data.draw(st.booleans(), label="min_one_message")
            got = seg.read(start, limit, max_position, min_one)
            saved, log_segment.READ_WINDOW_MAX_BYTES = log_segment.READ_WINDOW_MAX_BYTES, 0
            try:
                expected = seg.read(start, limit, max_position, min_one)
            finally:
                log_segment.READ_WINDOW_MAX_BYTES = saved
            if expected is None:
                assert got is None
                continue
            assert got is not None and expected.data is None
            assert (got.position, got.size, got.first_entry_incomplete) == \
                (expected.position, expected.size, expected.first_entry_incomplete), (start, limit, max_position)
            if got.data is not None:
                assert got.data == file[got.position:got.position + got.size]
        seg.close()


@pytest.mark.parametrize("index_interval_bytes", [1, 4096])
def test_a_small_read_is_one_pread(tmp_path: Path, index_interval_bytes: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A consumer's small Fetch (here 16 KiB of 1-record batches of 200 B values, from any offset,
    under the high watermark or not): one pread, from the index entry below the offset, whose
    bytes are the answer; not a walk to find the batch, another to find where the answer ends,
    and a third read for its bytes."""
    seg = _segment(tmp_path, base=0, index_interval_bytes=index_interval_bytes)
    for i in range(200):
        raw = bytearray(batch(1, value_size=200))
        assign_offsets(raw, 0, i, 0)
        seg.append(i, BASE_TS, i, raw, [(bp.header, bp.position) for bp in iter_batch_headers(raw)])
    file = seg.log.read(0, seg.size())
    starts = [pos for _, pos in iter_batch_headers(file)]
    reads = _pread_sizes(monkeypatch)
    for offset in (0, 1, 37, 150, 199):
        for max_position in {seg.size(), ([*starts, seg.size()])[min(offset + 10, 200)]}:
            reads.clear()
            got = seg.read(offset, 16 << 10, max_position, min_one_message=True)
            assert got is not None and got.data is not None and len(reads) == 1, (offset, max_position)
            assert got.position == starts[offset]
            end = max(p for p in [*starts, seg.size()] if p <= min(max_position, starts[offset] + (16 << 10)))
            assert got.data == file[starts[offset]:end] and got.size == end - starts[offset]
    seg.close()


@pytest.mark.parametrize("index_interval_bytes", [1, 4096, 1 << 30])
def test_the_whole_batch_end_steps_over_batches_larger_than_a_header_chunk(
        tmp_path: Path, index_interval_bytes: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches from 0.1 KB to 1 MB, around HEADER_SCAN_CHUNK (16 KiB), each after a small one:
    every cut still ends at the last whole batch, every offset is found in its batch, and no walk
    reads more than a header chunk (a 1 MB batch is not read to find where it ends)."""
    seg = _segment(tmp_path, base=0, index_interval_bytes=index_interval_bytes)
    ends = [0]
    for i, value_size in enumerate([100, 40_000, 20, 16_300, 16_400, 1_000_000, 5_000, 33_000, 10, 60_000, 300]):
        _append(seg, 2 * i, 1)
        ends.append(seg.size())
        data = bytearray(batch(1, value_size=value_size))
        assign_offsets(data, 0, 2 * i + 1, 0)
        seg.append(2 * i + 1, BASE_TS, 2 * i + 1, data, [(bp.header, bp.position) for bp in iter_batch_headers(data)])
        ends.append(seg.size())
    reads = _pread_sizes(monkeypatch)
    for limit in sorted({*range(1, seg.size() + 1, 4_999), *(e + d for e in ends for d in (-1, 0, 1))}):
        if not 0 < limit <= seg.size():
            continue
        reads.clear()
        r = seg.read(0, limit)
        assert r is not None and r.position == 0
        whole = max(e for e in ends if e <= limit)
        assert r.size == (whole if whole else limit), limit
        # A small read takes its answer's bytes in one window: those, plus at most an index
        # interval (a header chunk at most) and a header. Every other read is a header chunk at most.
        window = limit + min(index_interval_bytes, file_records.HEADER_SCAN_CHUNK) + BATCH_HEADER_SIZE \
            if limit <= READ_WINDOW_MAX_BYTES else 0
        assert max(reads) <= max(file_records.HEADER_SCAN_CHUNK, window), limit
    for offset, position in enumerate(ends[:-1]):  # and the batch holding each offset, the same way
        reads.clear()
        found = seg.translate_offset(offset)
        assert found is not None and (found.offset, found.position, found.size) == \
            (offset, position, ends[offset + 1] - position)
        assert max(reads) <= file_records.HEADER_SCAN_CHUNK, offset
    assert seg.translate_offset(len(ends) - 1) is None
    seg.close()


def test_translate_offset_with_sparse_index(tmp_path: Path) -> None:
    seg = _segment(tmp_path, base=0, index_interval_bytes=300)
    positions = []
    for i in range(50):
        positions.append(seg.size())
        _append(seg, i * 2, 2)
    assert 0 < seg.offset_index.entries < 50
    for i in range(50):
        found = seg.translate_offset(i * 2 + 1)
        assert found is not None and found.position == positions[i] and found.offset == i * 2 + 1
    seg.close()


def test_recover_rebuilds_identical_indexes(tmp_path: Path) -> None:
    seg = _segment(tmp_path, base=0, index_interval_bytes=200)
    for i in range(40):
        _append(seg, i * 3, 3, ts=BASE_TS + i * 10)
    offsets, times = seg.offset_index.entries_list(), seg.time_index.entries_list()
    assert seg.recover() == 0
    assert seg.offset_index.entries_list() == offsets
    assert seg.time_index.entries_list()[: len(times)] == times
    assert seg.read_next_offset() == 120
    seg.close()


def test_recover_truncates_garbage_tail(tmp_path: Path) -> None:
    seg = _segment(tmp_path, base=0)
    _append(seg, 0, 2)
    size = seg.size()
    seg.log.append(b"\x00" * 7 + b"garbage" * 20)
    assert seg.recover() == 147
    assert seg.size() == size and seg.read_next_offset() == 2
    seg.close()


def test_truncate_to(tmp_path: Path) -> None:
    seg = _segment(tmp_path, base=0)
    a = _append(seg, 0, 2)
    _append(seg, 2, 2)
    _append(seg, 4, 2)
    assert seg.truncate_to(2) > 0
    assert seg.size() == len(a) and seg.read_next_offset() == 2
    assert seg.read(2, 100) is None
    _append(seg, 2, 1)
    assert seg.read_next_offset() == 3
    assert seg.truncate_to(0) == seg.size() + 0 or seg.size() == 0
    assert seg.size() == 0 and seg.read_next_offset() == 0
    seg.close()


def test_offset_overflow_rejected(tmp_path: Path) -> None:
    seg = _segment(tmp_path, base=0)
    with pytest.raises(LogSegmentOffsetOverflowError):
        _append(seg, 2**31, 1)
    assert seg.size() == 0
    seg.close()


def test_roll_conditions(tmp_path: Path) -> None:
    seg = _segment(tmp_path, base=0, segment_index_bytes=8 * 3)
    now = BASE_TS

    def params(**kw) -> RollParams:
        base = dict(max_segment_ms=1000, max_segment_bytes=10_000, max_timestamp_in_messages=BASE_TS,
                    max_offset_in_messages=10, messages_size=100, now=now)
        base.update(kw)
        return RollParams(**base)

    assert not seg.should_roll(params())
    assert not seg.should_roll(params(max_timestamp_in_messages=BASE_TS + 5000))  # empty: no time roll
    _append(seg, 0, 1)
    assert seg.should_roll(params(messages_size=10_000))  # size
    assert seg.should_roll(params(max_timestamp_in_messages=BASE_TS + 1001))  # segment.ms
    assert not seg.should_roll(params(max_timestamp_in_messages=BASE_TS + 999))
    assert seg.should_roll(params(max_offset_in_messages=2**31))  # offset overflow
    _append(seg, 1, 1)  # first index entries; the 24-byte time index now has only its reserved slot
    assert seg.time_index.is_full() and seg.should_roll(params())  # index full
    seg.close()


def test_roll_jitter_subtracts_from_segment_ms(tmp_path: Path) -> None:
    seg = _segment(tmp_path, base=0)
    seg.roll_jitter_ms = 300
    _append(seg, 0, 1)
    p = RollParams(1000, 10_000, BASE_TS + 800, 1, 10, BASE_TS)
    assert seg.should_roll(p)
    seg.close()


def test_find_offset_by_timestamp_and_largest_timestamp(tmp_path: Path) -> None:
    seg = _segment(tmp_path, base=0, index_interval_bytes=100)
    for i in range(20):
        _append(seg, i * 5, 5, ts=BASE_TS + i * 100)  # records at ts, ts+1, ...
    found = seg.find_offset_by_timestamp(BASE_TS + 702)
    assert (found.offset, found.timestamp) == (37, BASE_TS + 702)
    found = seg.find_offset_by_timestamp(BASE_TS + 705)  # between batches -> next batch's first record
    assert (found.offset, found.timestamp) == (40, BASE_TS + 800)
    assert seg.find_offset_by_timestamp(BASE_TS + 10_000) is None
    assert seg.largest_timestamp() == BASE_TS + 1904
    seg.close()


def test_become_inactive_writes_final_time_entry_and_trims(tmp_path: Path) -> None:
    seg = _segment(tmp_path, base=0, index_interval_bytes=10_000)
    _append(seg, 0, 3, ts=BASE_TS + 50)
    assert seg.time_index.entries == 0
    seg.on_become_inactive_segment()
    assert seg.time_index.last_entry().timestamp == BASE_TS + 52
    assert seg.offset_index.path.stat().st_size == 0
    assert seg.time_index.path.stat().st_size == 12
    seg.close()


def test_batch_position_bookkeeping(tmp_path: Path) -> None:
    seg = _segment(tmp_path, base=0)
    data = _append(seg, 0, 4)
    assert seg.size() == len(data)
    assert seg.log.read(0, LOG_OVERHEAD)[:8] == (0).to_bytes(8, "big")
    seg.close()
