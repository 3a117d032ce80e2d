"""The C record walkers (wire/_record_walker.c) through wire.records' public functions:
columns agree with Record objects, rebuilt records keep every field but the timestamp
encoding, and no input makes them read outside the buffer or raise anything untyped."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wire.compression import CompressionType
from wire.errors import CorruptRecordError
from wire.records import (
    BATCH_HEADER_SIZE,
    Record,
    build_batch,
    decode_columns,
    decode_records,
    read_batch_header,
    rebuild_records,
    record_keys_and_offsets,
    record_layouts,
    records_section,
)

from test_wire_records import record_lists  # the strategy of the records tests (same directory)


@given(drawn=record_lists(), codec=st.sampled_from(list(CompressionType)), cut=st.tuples(st.integers(0, 25),
                                                                                        st.integers(0, 25)))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_columns_are_the_records_in_the_offset_range(drawn: tuple[int, list[Record]], codec: CompressionType,
                                                     cut: tuple[int, int]) -> None:
    base_offset, records = drawn
    batch = build_batch(records, base_offset=base_offset, compression=codec)
    start, end = base_offset + min(cut), base_offset + max(cut)
    offsets, timestamps, keys, values, headers = decode_columns(batch, 0, start, end)
    want = [r for r in decode_records(batch) if start <= r.offset < end]
    assert offsets == [r.offset for r in want]
    assert timestamps == [r.timestamp for r in want]
    assert keys == [r.key for r in want]
    assert values == [r.value for r in want]
    lengths = decode_columns(batch, 0, start, end, value_lengths=True)[3]
    assert lengths == [-1 if r.value is None else len(r.value) for r in want]
    if any(r.headers for r in want):
        assert headers == [r.headers or None for r in want]
    else:
        assert headers is None  # the common case costs no per-record list


def test_columns_of_a_log_append_time_batch_carry_the_batch_timestamp() -> None:
    batch = bytearray(build_batch([Record(0, 5, b"a", b"1"), Record(1, 9, b"b", b"2")]))
    struct.pack_into(">h", batch, 21, 0x08)  # LogAppendTime
    struct.pack_into(">q", batch, 35, 777)  # maxTimestamp
    assert decode_columns(batch, 0, 0, 2)[1] == [777, 777]
    assert [r.timestamp for r in decode_records(batch)] == [777, 777]


@given(drawn=record_lists(), keep=st.lists(st.booleans(), min_size=20, max_size=20),
       new_base=st.integers(0, 2**42), log_append=st.booleans())
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_rebuilt_records_keep_every_field(drawn: tuple[int, list[Record]], keep: list[bool], new_base: int,
                                          log_append: bool) -> None:
    base_offset, records = drawn
    batch = bytearray(build_batch(records, base_offset=base_offset))
    h = read_batch_header(batch)
    if log_append:
        struct.pack_into(">h", batch, 21, 0x08)
        h = read_batch_header(batch)
    data = records_section(batch, 0, h)
    layouts = record_layouts(data, len(records))
    kept = [i for i, k in enumerate(keep[:len(records)]) if k] or [0]
    body, max_ts = rebuild_records(data, [layouts[i][:2] for i in kept], h.base_timestamp, new_base,
                                   h.max_timestamp, log_append)
    old = decode_records(batch)
    want = [old[i] for i in kept]
    # Decode the rebuilt section as a batch based at new_base.
    rebuilt = bytearray(batch[:BATCH_HEADER_SIZE]) + body
    struct.pack_into(">i", rebuilt, 8, len(rebuilt) - 12)
    struct.pack_into(">q", rebuilt, 27, new_base)
    struct.pack_into(">i", rebuilt, 57, len(kept))
    got = decode_records(rebuilt)
    assert [(r.offset, r.key, r.value, r.headers) for r in got] == [(r.offset, r.key, r.value, r.headers)
                                                                     for r in want]
    if log_append:
        assert max_ts == h.max_timestamp
    else:
        assert [r.timestamp for r in got] == [r.timestamp for r in want]
        assert max_ts == max(r.timestamp for r in want)


def test_rebuild_refuses_spans_outside_the_section() -> None:
    data = build_batch([Record(0, 1, b"k", b"v")])[BATCH_HEADER_SIZE:]
    with pytest.raises(ValueError):
        rebuild_records(data, [(0, len(data) + 1)], 1, 1, 1, False)
    with pytest.raises(CorruptRecordError):
        rebuild_records(data, [(1, len(data))], 1, 1, 1, False)  # not a record boundary


@given(data=st.binary(max_size=300), count=st.integers(-2, 60))
@settings(max_examples=400, deadline=None)
def test_any_section_bytes_raise_only_corrupt_record(data: bytes, count: int) -> None:
    for walk in (lambda: record_layouts(data, count), lambda: record_keys_and_offsets(data, count, 0, 0)):
        try:
            walk()
        except CorruptRecordError:
            pass


@given(drawn=record_lists(max_records=6), flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(1, 255)),
                                                          min_size=1, max_size=3))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_damaged_sections_are_refused_by_every_walker_or_read_within_bounds(
        drawn: tuple[int, list[Record]], flips: list[tuple[int, int]]) -> None:
    base_offset, records = drawn
    batch = bytearray(build_batch(records, base_offset=base_offset))
    for where, mask in flips:
        batch[BATCH_HEADER_SIZE + where % (len(batch) - BATCH_HEADER_SIZE)] ^= mask
    data = bytes(batch[BATCH_HEADER_SIZE:])
    n = len(records)
    for walk in (lambda: decode_records(batch), lambda: decode_columns(batch, 0, 0, 2**62),
                 lambda: record_keys_and_offsets(data, n, base_offset, 0)):
        try:
            walk()
        except CorruptRecordError:
            pass
    try:
        layouts = record_layouts(data, n)
    except CorruptRecordError:
        return
    # Whatever parsed as records stays inside the section, in order, and can be rebuilt.
    assert all(0 <= s < b < e <= len(data) for s, e, b, *_ in layouts)
    assert [s for s, *_ in layouts[1:]] == [e for _, e, *_ in layouts[:-1]]
    try:
        rebuild_records(data, [lay[:2] for lay in layouts], 0, 0, 0, False)
    except CorruptRecordError:
        pass


def test_a_batch_of_many_records_decodes_in_order() -> None:
    records = [Record(i, 1_000 + i, b"key-%d" % (i % 97), b"v" * (i % 300), [("h", b"%d" % i)] if i % 7 == 0 else [])
               for i in range(20_000)]
    batch = build_batch(records)
    assert decode_records(batch) == records
    offsets, _, keys, _, headers = decode_columns(batch, 0, 5_000, 15_000)
    assert offsets == list(range(5_000, 15_000))
    assert keys == [r.key for r in records[5_000:15_000]]
    assert headers is not None and headers[5] == [("h", b"5005")] and headers[0] is None
