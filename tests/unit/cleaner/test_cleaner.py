"""The Cleaner's two passes on real segment files (Kafka's LogCleanerTest scenarios, in our words)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from cleaner.cleaner import INT_MAX, group_segments_by_size, should_retain_record
from cleaner.cleaner_stats import CleanerStats
from cleaner.clean_request import SegmentDescriptor
from cleaner.errors import LogCleaningAbortedError
from cleaner.log_to_clean import clean_request_for, cleanable_offsets
from cleaner.offset_map import SkimpyOffsetMap
from cleaner_testlib import (
    batches, clean, compact_config, latest_values, leftover_files, new_cleaner, put, put_many, read_all,
)
from storage.log_config import LogConfig
from wire.compression import CompressionType
from wire.errors import CorruptRecordError
from wire.records import (
    ControlRecordType, Record, build_batch, build_control_batch, decode_records, iter_batch_headers,
)


def _fill(log, n: int, keys: int, prefix: bytes = b"v") -> dict[bytes, tuple[int, bytes]]:
    expected: dict[bytes, tuple[int, bytes]] = {}
    for i in range(n):
        key = b"k%d" % (i % keys)
        value = prefix + b"%d" % i
        expected[key] = (put(log, key, value), value)
    return expected


def test_latest_value_of_every_key_survives_at_its_original_offset(make_log):
    log = make_log(compact_config())
    expected = _fill(log, 300, 13)
    log.roll()
    result = clean(log)
    records = read_all(log)
    assert {r.key: (r.offset, r.value) for r in records} == expected
    assert len(records) == 13
    assert [r.offset for r in records] == sorted(r.offset for r in records)
    assert result.end_offset == 300
    assert result.stats.messages_read == 300 and result.stats.messages_written == 13
    assert leftover_files(log.dir) == []


def test_a_fetch_at_a_removed_offset_returns_the_next_batch(make_log):
    log = make_log(compact_config())
    _fill(log, 50, 5)
    log.roll()
    clean(log)
    survivors = [r.offset for r in read_all(log)]
    assert 0 not in survivors
    data = log.read(0, 100_000).read_bytes()
    first = next(iter_batch_headers(data)).header
    assert first.base_offset <= survivors[0] <= first.last_offset
    assert decode_records(data, 0)[0].offset == survivors[0]


def test_tombstone_kept_until_delete_retention_after_its_first_clean(make_log, clock):
    config = compact_config(delete_retention_ms=10_000)
    log = make_log(config)
    put(log, b"a", b"1")
    put(log, b"b", b"1")
    put(log, b"a", None)  # tombstone
    put(log, b"c", b"1")
    log.roll()
    first_clean = clock.milliseconds()
    clean(log)
    assert latest_values(log) == {b"a": None, b"b": b"1", b"c": b"1"}
    stamped = [h for h in batches(log) if h.has_delete_horizon]
    assert [h.delete_horizon_ms for h in stamped] == [first_clean + 10_000]
    # Before the horizon a later clean keeps it, and does not move the horizon.
    clock.advance(9_999)
    clean(log)
    assert b"a" in latest_values(log)
    assert [h.delete_horizon_ms for h in batches(log) if h.has_delete_horizon] == [first_clean + 10_000]
    clock.advance(1)
    clean(log)
    assert latest_values(log) == {b"b": b"1", b"c": b"1"}


def test_the_active_segment_is_never_cleaned(make_log):
    log = make_log(compact_config(segment_bytes=100_000))
    _fill(log, 40, 4)  # everything stays in the active segment
    offsets = cleanable_offsets(log, None, log.clock.milliseconds())
    assert offsets.first_uncleanable_dirty_offset == 0
    log.roll()
    _fill(log, 40, 4)
    clean(log)
    records = read_all(log)
    assert len([r for r in records if r.offset < 40]) == 4
    assert len([r for r in records if r.offset >= 40]) == 40


def test_segments_younger_than_min_compaction_lag_are_not_cleaned(make_log, clock):
    log = make_log(compact_config(segment_bytes=100_000, min_compaction_lag_ms=60_000))
    _fill(log, 20, 2)
    log.roll()
    clock.advance(120_000)
    _fill(log, 20, 2)
    log.roll()
    put(log, b"x", b"active")
    offsets = cleanable_offsets(log, None, clock.milliseconds())
    assert offsets.first_uncleanable_dirty_offset == 20
    clean(log)
    records = read_all(log)
    assert [r.offset for r in records if r.offset < 20] == [18, 19]
    assert len([r for r in records if r.offset >= 20]) == 21


def test_a_full_offset_map_cleans_a_prefix_and_the_next_clean_continues(make_log):
    log = make_log(compact_config(segment_bytes=1_000_000))
    for i in range(100):
        put(log, b"k%d" % i, b"old")
    for i in range(100):
        put(log, b"k%d" % i, b"new")
    log.roll()
    cleaner = new_cleaner(map_slots=100, load_factor=0.5)  # room for 50 keys
    result = clean(log, cleaner)
    # Pass 1 stopped at the 51st distinct key: offsets 0..49 mapped.
    assert result.end_offset == 50
    assert result.stats.buffer_utilization == pytest.approx(0.5)
    records = read_all(log)
    assert len(records) == 200  # nothing below 50 had a later value inside the mapped range
    # The next clean starts at the checkpoint and eventually dedupes everything.
    end = result.end_offset
    for _ in range(10):
        if end >= 200:
            break
        end = clean(log, cleaner, first_dirty=end).end_offset
    clean(log, cleaner, first_dirty=0)
    assert latest_values(log) == {b"k%d" % i: b"new" for i in range(100)}
    assert len(read_all(log)) == 100


def _desc(base: int, size: int, idx: int = 0, tidx: int = 0) -> SegmentDescriptor:
    return SegmentDescriptor(base, size, idx, tidx)


def test_grouping_respects_log_size_index_size_and_offset_span():
    segs = [_desc(0, 400), _desc(10, 400), _desc(20, 400), _desc(30, 100), _desc(40, 900)]
    groups = group_segments_by_size(segs, 1000, 10_000, 50)
    assert [[s.base_offset for s in g] for g in groups] == [[0, 10], [20, 30], [40]]
    assert all(sum(s.size for s in g) <= 1000 for g in groups)
    by_index = group_segments_by_size([_desc(0, 1, 80, 0), _desc(1, 1, 80, 0), _desc(2, 1, 80, 0)], 10**9, 160, 3)
    assert [[s.base_offset for s in g] for g in by_index] == [[0, 1], [2]]
    by_time_index = group_segments_by_size([_desc(0, 1, 0, 100), _desc(1, 1, 0, 100)], 10**9, 150, 2)
    assert len(by_time_index) == 2
    far = [_desc(0, 10), _desc(INT_MAX, 10), _desc(INT_MAX + 5, 10)]
    span = group_segments_by_size(far, 10**9, 10**9, INT_MAX + 10)
    assert [[s.base_offset for s in g] for g in span] == [[0], [INT_MAX, INT_MAX + 5]]
    # An empty segment never breaks a group on the offset range.
    empty = group_segments_by_size([_desc(0, 10), _desc(INT_MAX + 100, 0)], 10**9, 10**9, INT_MAX + 200)
    assert len(empty) == 1


def test_cleaning_merges_small_segments_up_to_segment_bytes(make_log):
    log = make_log(compact_config(segment_bytes=1024))
    _fill(log, 200, 5)
    log.roll()
    before = len(log.segments)
    clean(log)  # groups are formed on the input sizes: full segments stay apart...
    clean(log)  # ...and the now small cleaned segments merge on the next clean
    assert len(log.segments) < before
    for segment in log.segments.values()[:-1]:
        assert segment.size() <= 1024


def test_should_retain_record_follows_the_seed():
    m = SkimpyOffsetMap(24 * 16)
    m.put(b"k", 10)
    m.update_latest_offset(20)
    stats = CleanerStats()
    assert should_retain_record(m, None, 25, b"k", True, stats, 0)  # beyond the map
    assert not should_retain_record(m, None, 5, b"k", True, stats, 0)  # superseded
    assert should_retain_record(m, None, 10, b"k", True, stats, 0)  # latest
    assert should_retain_record(m, None, 12, b"other", True, stats, 0)  # not in the map
    assert should_retain_record(m, None, 10, b"k", False, stats, 0)  # tombstone, no horizon yet
    assert should_retain_record(m, 100, 10, b"k", False, stats, 99)  # before its horizon
    assert not should_retain_record(m, 100, 10, b"k", False, stats, 100)  # horizon passed
    assert not should_retain_record(m, None, 3, None, True, stats, 0)  # keyless
    assert stats.invalid_messages_read == 1


def test_keyless_records_are_dropped_and_counted(make_log):
    log = make_log(LogConfig(segment_bytes=2048, file_delete_delay_ms=0))
    put(log, b"a", b"1")
    put(log, None, b"no key")
    put(log, b"a", b"2")
    log.roll()
    log.update_config(compact_config())
    result = clean(log)
    assert result.stats.invalid_messages_read == 1
    assert [(r.key, r.value) for r in read_all(log)] == [(b"a", b"2")]


def test_a_batch_larger_than_the_io_buffer_grows_it(make_log):
    log = make_log(compact_config(segment_bytes=1_000_000))
    put(log, b"big", b"x" * 50_000)
    put(log, b"big", b"y" * 50_000)
    put(log, b"small", b"1")
    log.roll()
    cleaner = new_cleaner(io_buffer=1024, max_io=1 << 20)
    clean(log, cleaner)
    assert latest_values(log) == {b"big": b"y" * 50_000, b"small": b"1"}
    assert cleaner._read_size == 1024  # restored after the segment


def test_a_batch_beyond_the_largest_allowed_buffer_fails(make_log):
    log = make_log(compact_config(segment_bytes=1_000_000))
    put(log, b"big", b"x" * 50_000)
    put(log, b"big", b"y")
    log.roll()
    log.update_config(compact_config(segment_bytes=1_000_000, max_message_bytes=10_000))
    cleaner = new_cleaner(io_buffer=1024, max_io=4096)
    with pytest.raises(CorruptRecordError, match="buffer size"):
        clean(log, cleaner)
    assert leftover_files(log.dir) == []


def test_a_corrupt_record_fails_the_clean_and_leaves_no_output(make_log):
    log = make_log(compact_config(segment_bytes=1_000_000))
    _fill(log, 20, 3)
    log.roll()
    path = log.segments.values()[0].log.path
    with open(path, "r+b") as f:
        f.seek(70)
        byte = f.read(1)
        f.seek(70)
        f.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(CorruptRecordError):
        clean(log)
    assert leftover_files(log.dir) == []


@pytest.mark.parametrize("codec", list(CompressionType))
def test_every_codec_is_kept_by_the_rewritten_batches(make_log, codec):
    log = make_log(compact_config(segment_bytes=1_000_000))
    for round_ in range(5):
        put_many(log, [(b"k%d" % i, b"r%d-%d" % (round_, i)) for i in range(6)], compression=codec)
    put_many(log, [(b"k0", None), (b"z", b"1")], compression=codec)
    log.roll()
    clean(log)
    assert latest_values(log) == {**{b"k%d" % i: b"r4-%d" % i for i in range(1, 6)}, b"k0": None, b"z": b"1"}
    assert {h.compression for h in batches(log)} == {codec}


def test_rebuilt_batches_keep_base_offset_last_offset_delta_and_producer_fields(make_log):
    log = make_log(compact_config(segment_bytes=1_000_000))
    recs = [Record(i, 1000 + i, b"k%d" % (i % 3), b"v%d" % i) for i in range(9)]
    log.append_as_leader(build_batch(recs, producer_id=7, producer_epoch=2, base_sequence=0))
    log.roll()
    clean(log)
    [h] = batches(log)
    assert (h.base_offset, h.last_offset_delta, h.producer_id, h.producer_epoch, h.base_sequence) == (0, 8, 7, 2, 0)
    assert h.records_count == 3
    assert [r.offset for r in read_all(log)] == [6, 7, 8]
    assert [r.timestamp for r in read_all(log)] == [1006, 1007, 1008]
    assert h.base_timestamp == 1006 and h.max_timestamp == 1008


def _txn_batch(pid: int, pairs, ts: int) -> bytes:
    return build_batch([Record(i, ts, k, v) for i, (k, v) in enumerate(pairs)], producer_id=pid, producer_epoch=0,
                       base_sequence=0, is_transactional=True)


def test_transactions_aborted_records_go_markers_stay_until_their_horizon(make_log, clock):
    log = make_log(compact_config(segment_bytes=1_000_000, delete_retention_ms=1_000))
    ts = clock.milliseconds()
    put(log, b"a", b"committed-0")
    log.append_as_leader(_txn_batch(1, [(b"a", b"aborted"), (b"b", b"aborted")], ts))
    log.append_as_leader(build_control_batch(ControlRecordType.ABORT, producer_id=1, producer_epoch=0, timestamp=ts),
                         origin="coordinator")
    log.append_as_leader(_txn_batch(2, [(b"c", b"committed")], ts))
    log.append_as_leader(build_control_batch(ControlRecordType.COMMIT, producer_id=2, producer_epoch=0, timestamp=ts),
                         origin="coordinator")
    put(log, b"d", b"tail")
    log.roll()
    assert log.last_stable_offset == log.log_end_offset
    clean(log)
    values = latest_values(log)
    assert values[b"a"] == b"committed-0" and b"b" not in values and values[b"c"] == b"committed"
    controls = [h for h in batches(log) if h.is_control]
    assert len(controls) == 2  # both markers kept: their transactions' batches were still seen
    # Producer 1 is still active: its last data batch stays, emptied, for its sequence state.
    aborted_batch = [h for h in batches(log) if h.producer_id == 1 and not h.is_control]
    assert [(h.base_offset, h.records_count, h.last_offset_delta) for h in aborted_batch] == [(1, 0, 1)]
    # Once the producers expire, the empty batch goes; then the abort marker gets its horizon...
    log.producer_state_manager.remove_expired_producers(clock.milliseconds() + 10**9, 1)
    clean(log)
    clean(log)
    marker = [h for h in batches(log) if h.is_control and h.producer_id == 1]
    assert marker and marker[0].has_delete_horizon
    # ...and goes once the horizon has passed.
    clock.advance(1_000)
    clean(log)
    clean(log)
    assert not [h for h in batches(log) if h.is_control and h.producer_id == 1]
    assert latest_values(log)[b"c"] == b"committed"


def test_the_last_batch_of_an_active_producer_is_kept_even_when_empty(make_log):
    log = make_log(compact_config(segment_bytes=1_000_000))
    log.append_as_leader(build_batch([Record(0, 1, b"k", b"old")], producer_id=5, producer_epoch=0, base_sequence=0))
    put(log, b"k", b"new")
    log.roll()
    now = log.clock.milliseconds()
    offsets = cleanable_offsets(log, None, now)
    request = clean_request_for(log, offsets.first_dirty_offset, offsets.first_uncleanable_dirty_offset, now)
    request = type(request)(**{**{f: getattr(request, f) for f in request.__struct_fields__},
                               "last_records_of_active_producers": {5: (0, 0)}})
    from cleaner.segment_swap import swap_cleaned_segments

    swap_cleaned_segments(log, new_cleaner().clean(request))
    hs = batches(log)
    assert [(h.producer_id, h.records_count, h.base_offset) for h in hs] == [(5, 0, 0), (-1, 1, 1)]


def test_an_abort_stops_the_clean_and_removes_partial_output(make_log):
    log = make_log(compact_config(segment_bytes=1024))
    _fill(log, 300, 7)
    log.roll()
    calls = {"n": 0}

    def check_done() -> None:
        calls["n"] += 1
        if calls["n"] > 25:
            raise LogCleaningAbortedError("abort")

    files_before = sorted(os.listdir(log.dir))
    with pytest.raises(LogCleaningAbortedError):
        clean(log, new_cleaner(io_buffer=512, check_done=check_done))
    assert sorted(os.listdir(log.dir)) == files_before
    assert len(read_all(log)) == 300


def test_cleaned_segments_have_valid_indexes_and_survive_a_restart(make_log, tmp_path: Path, clock):
    log = make_log(compact_config(segment_bytes=4096))
    _fill(log, 400, 50)
    log.roll()
    clean(log)
    values = latest_values(log)
    for segment in log.segments.values()[:-1]:
        segment.offset_index.sanity_check()
        segment.time_index.sanity_check()
    log.close()
    from storage.log import Log

    reopened = Log.open(log.dir, log.config, clock=clock)
    try:
        assert latest_values(reopened) == values
        first = read_all(reopened)[0].offset
        assert reopened.read(first, 1000).size > 0
    finally:
        reopened.close()
