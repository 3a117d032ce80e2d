"""RecordBatch v2: round trips, offsets patching, control records, bad input."""

from __future__ import annotations

import os
import random
import struct
import tracemalloc

import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wire.compression import CompressionType
from wire.errors import (
    CorruptRecordError,
    InvalidRecordError,
    KafkaError,
    UnsupportedForMessageFormatError,
)
from wire.records import (
    batch_spans,
    BATCH_HEADER_SIZE,
    LOG_OVERHEAD,
    ControlRecordType,
    Record,
    TimestampType,
    all_records_have_keys,
    assign_offsets,
    build_batch,
    build_control_batch,
    decode_records,
    iter_batch_headers,
    iter_records,
    parse_control_record,
    read_batch_header,
    record_keys_and_offsets,
    record_layouts,
    validate_batch,
    walk_batch_lengths,
    whole_batches_end,
)

CODECS = list(CompressionType)
# kafka-python (used for legacy message sets) warns about importlib.resources.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

headers_st = st.lists(
    st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=16)),
    max_size=3,
)


@st.composite
def record_lists(draw: st.DrawFn, max_records: int = 20) -> tuple[int, list[Record]]:
    base_offset = draw(st.integers(0, 2**40))
    n = draw(st.integers(1, max_records))
    gaps = draw(st.lists(st.integers(1, 3), min_size=n, max_size=n))
    base_ts = draw(st.integers(1_000_000, 2**41))  # record timestamps stay >= 0
    records = []
    offset = base_offset - 1
    for i in range(n):
        offset += gaps[i] if i else 1
        records.append(
            Record(
                offset=offset,
                # deltas may be negative: timestamps need not be monotonic
                timestamp=base_ts + draw(st.integers(-1_000_000, 1_000_000)),
                key=draw(st.none() | st.binary(max_size=24)),
                value=draw(st.none() | st.binary(max_size=64)),
                headers=draw(headers_st),
            )
        )
    return base_offset, records


def _patch_crc(buf: bytearray, pos: int = 0) -> None:
    (length,) = struct.unpack_from(">i", buf, pos + 8)
    struct.pack_into(">I", buf, pos + 17, crc32c(bytes(buf[pos + 21 : pos + 12 + length])))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=record_lists(),
    codec=st.sampled_from(CODECS),
    producer=st.tuples(st.integers(-1, 2**40), st.integers(-1, 300), st.integers(-1, 2**30)),
    transactional=st.booleans(),
    control=st.booleans(),
    leader_epoch=st.integers(-1, 1000),
)
def test_batch_round_trip(
    data: tuple[int, list[Record]],
    codec: CompressionType,
    producer: tuple[int, int, int],
    transactional: bool,
    control: bool,
    leader_epoch: int,
) -> None:
    base_offset, records = data
    pid, epoch, seq = producer
    batch = build_batch(
        records,
        base_offset=base_offset,
        compression=codec,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=transactional,
        is_control=control,
        partition_leader_epoch=leader_epoch,
    )
    header = validate_batch(batch, 0)
    assert header.size_in_bytes == len(batch)
    assert header.compression is codec
    assert header.base_offset == base_offset
    assert header.last_offset == records[-1].offset
    assert header.records_count == len(records)
    assert header.base_timestamp == records[0].timestamp
    assert header.max_timestamp == max(r.timestamp for r in records)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (pid, epoch, seq)
    assert header.is_transactional is transactional
    assert header.timestamp_type is TimestampType.CREATE_TIME
    assert header.is_control is control and not header.has_delete_horizon
    assert header.partition_leader_epoch == leader_epoch
    assert decode_records(batch) == records
    assert list(iter_records(batch)) == records
    assert all_records_have_keys(batch) == all(r.key is not None for r in records)


@settings(max_examples=20, deadline=None)
@given(data=record_lists(max_records=5), codec=st.sampled_from(CODECS))
def test_consecutive_batches_walk_and_decode_at_positions(data: tuple[int, list[Record]], codec: CompressionType) -> None:
    base_offset, records = data
    first = build_batch(records, base_offset=base_offset, compression=codec)
    shifted = [Record(r.offset + 1000, r.timestamp, r.key, r.value, r.headers) for r in records]
    second = build_batch(shifted, base_offset=base_offset + 1000, compression=codec)
    buf = first + second
    found = list(iter_batch_headers(buf, strict=True))
    assert [p.position for p in found] == [0, len(first)]
    header, pos = found[1]
    assert header.base_offset == base_offset + 1000
    assert decode_records(buf, pos) == shifted


@pytest.mark.parametrize("codec", CODECS)
def test_one_mebibyte_batch(codec: CompressionType) -> None:
    rnd = os.urandom(64)
    records = [
        Record(i, 1_700_000_000_000 + i, b"key-%d" % i, rnd + b"%08d" % i + b"v" * 40, [("h", b"%d" % i)])
        for i in range(10_000)
    ]
    batch = build_batch(records, compression=codec)
    if codec is CompressionType.NONE:
        assert len(batch) > 1 << 20
    validate_batch(batch, from_client=True)
    assert decode_records(batch) == records


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32),
    value_size=st.integers(50, 5000),
    codec=st.sampled_from(CODECS),
    null_every=st.integers(2, 7),
)
def test_large_batch_round_trip_property(seed: int, value_size: int, codec: CompressionType, null_every: int) -> None:
    """Batches over 1 MiB: sizes, nulls and contents drawn; bytes from a seeded PRNG."""
    rng = random.Random(seed)
    records = []
    total = 0
    i = 0
    while total <= (1 << 20) + 1024:
        value = None if i % null_every == 0 else rng.randbytes(rng.randint(value_size // 2, value_size))
        key = None if i % (null_every + 1) == 0 else rng.randbytes(rng.randint(0, 40))
        headers = [("n%d" % i, rng.randbytes(3))] if i % 3 == 0 else []
        records.append(Record(i, 1_700_000_000_000 + rng.randint(-5000, 5000), key, value, headers))
        total += len(value or b"") + len(key or b"") + 10
        i += 1
    batch = build_batch(records, compression=codec)
    header = validate_batch(batch, from_client=True)
    assert header.records_count == len(records)
    assert decode_records(batch) == records


def test_delete_horizon_batch() -> None:
    records = [Record(5, 1000, b"k", None), Record(9, 900, b"j", b"v")]
    batch = build_batch(records, base_offset=5, delete_horizon_ms=5000)
    header = validate_batch(batch)
    assert header.has_delete_horizon and header.delete_horizon_ms == 5000
    assert header.base_timestamp == 5000
    assert decode_records(batch) == records


def test_empty_batch_keeps_offset_range() -> None:
    batch = build_batch([], base_offset=10, last_offset_delta=4, producer_id=7, producer_epoch=0, base_sequence=3)
    header = validate_batch(batch)
    assert (header.records_count, header.last_offset, header.next_offset) == (0, 14, 15)
    assert header.last_sequence == 7
    assert decode_records(batch) == []
    with pytest.raises(InvalidRecordError):
        validate_batch(batch, from_client=True)


def test_client_rules() -> None:
    ok = build_batch([Record(0, 1, b"k", b"v"), Record(1, 1, b"k", b"v")])
    validate_batch(ok, from_client=True)
    gap = build_batch([Record(0, 1, b"k", b"v"), Record(2, 1, b"k", b"v")])
    validate_batch(gap)  # fine in a log (compaction leaves gaps)
    with pytest.raises(InvalidRecordError):
        validate_batch(gap, from_client=True)
    with pytest.raises(InvalidRecordError):
        validate_batch(build_batch([]), from_client=True)


# -- offsets assignment -------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_assign_offsets_patches_in_place_and_keeps_crc(codec: CompressionType) -> None:
    records = [Record(i, 1000 + i, b"k", b"v%d" % i) for i in range(5)]
    batch = bytearray(build_batch(records, compression=codec))
    crc_before = read_batch_header(batch).crc
    assign_offsets(batch, 0, 12345, 7)
    header = validate_batch(batch)
    assert (header.base_offset, header.partition_leader_epoch, header.crc) == (12345, 7, crc_before)
    assert [r.offset for r in decode_records(batch)] == list(range(12345, 12350))
    assert [r.timestamp for r in decode_records(batch)] == [1000 + i for i in range(5)]


def test_assign_offsets_log_append_time_rewrites_crc() -> None:
    records = [Record(i, 1000 + i, b"k", b"v") for i in range(3)]
    first = build_batch(records)
    buf = bytearray(first + first)
    assign_offsets(buf, len(first), 100, 2, log_append_time_ms=99_999)
    header = validate_batch(buf, len(first))
    assert header.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert header.max_timestamp == 99_999
    assert header.base_timestamp == 1000  # untouched, like Kafka
    assert [r.timestamp for r in decode_records(buf, len(first))] == [99_999] * 3
    assert validate_batch(buf, 0).base_offset == 0  # the neighbour is untouched


def test_assign_offsets_on_memoryview_of_larger_buffer() -> None:
    batch = build_batch([Record(0, 1, None, b"x")])
    big = bytearray(b"\0" * 10) + bytearray(batch)
    assign_offsets(memoryview(big), 10, 77, 1)
    assert validate_batch(big, 10).base_offset == 77


# -- control records ----------------------------------------------------------


@pytest.mark.parametrize("ctype", [ControlRecordType.COMMIT, ControlRecordType.ABORT])
def test_control_batch(ctype: ControlRecordType) -> None:
    batch = build_control_batch(
        ctype, producer_id=42, producer_epoch=3, timestamp=123, coordinator_epoch=9, base_offset=50
    )
    header = validate_batch(batch, from_client=True)
    assert header.is_control and header.is_transactional
    assert (header.producer_id, header.producer_epoch, header.base_offset) == (42, 3, 50)
    [rec] = decode_records(batch)
    marker = parse_control_record(rec.key, rec.value)
    assert (marker.type, marker.coordinator_epoch, marker.version) == (ctype, 9, 0)


def test_control_record_unknown_type_and_bad_key() -> None:
    assert parse_control_record(struct.pack(">hh", 0, 77), None).type is ControlRecordType.UNKNOWN
    assert parse_control_record(struct.pack(">hh", 0, 2), b"\0\0").type is ControlRecordType.LEADER_CHANGE
    with pytest.raises(CorruptRecordError):
        parse_control_record(b"\0", None)
    with pytest.raises(CorruptRecordError):
        parse_control_record(struct.pack(">hh", 0, 1), b"\0")


# -- bad input ----------------------------------------------------------------


def _simple_batch(codec: CompressionType = CompressionType.NONE, n: int = 10) -> bytes:
    return build_batch([Record(i, 1000, b"key%d" % i, b"value%d" % i, [("h", b"x")]) for i in range(n)], compression=codec)


@pytest.mark.parametrize("codec", CODECS)
def test_every_flipped_byte_after_the_crc_field_is_detected(codec: CompressionType) -> None:
    batch = _simple_batch(codec)
    for i in range(17, len(batch)):  # crc field itself and everything it covers
        bad = bytearray(batch)
        bad[i] ^= 0x01
        with pytest.raises(CorruptRecordError):
            validate_batch(bad)


def test_truncated_batches_are_typed_errors() -> None:
    batch = _simple_batch()
    for cut in range(len(batch)):
        piece = batch[:cut]
        with pytest.raises(CorruptRecordError):
            validate_batch(piece)
        with pytest.raises(CorruptRecordError):
            decode_records(piece)
        with pytest.raises(CorruptRecordError):
            list(iter_batch_headers(piece, strict=True)) if cut else (_ for _ in ()).throw(CorruptRecordError())
        # tolerant walk stops cleanly at the partial batch
        assert list(iter_batch_headers(piece)) == []
    two = batch + batch[:30]
    assert [p.position for p in iter_batch_headers(two)] == [0]


def test_batch_length_past_the_buffer() -> None:
    bad = bytearray(_simple_batch())
    struct.pack_into(">i", bad, 8, 2**31 - 1)
    with pytest.raises(CorruptRecordError):
        validate_batch(bad)
    with pytest.raises(CorruptRecordError):
        decode_records(bad)
    with pytest.raises(CorruptRecordError):
        list(iter_batch_headers(bad, strict=True))
    assert list(iter_batch_headers(bad)) == []


@pytest.mark.parametrize("length", [-1, 0, 48])
def test_impossible_batch_length(length: int) -> None:
    bad = bytearray(_simple_batch())
    struct.pack_into(">i", bad, 8, length)
    with pytest.raises(CorruptRecordError):
        read_batch_header(bad)
    with pytest.raises(CorruptRecordError):
        list(iter_batch_headers(bad))


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("count", [2**31 - 1, 11, -5])
def test_absurd_record_counts_fail_fast_with_bounded_memory(codec: CompressionType, count: int) -> None:
    bad = bytearray(_simple_batch(codec))
    struct.pack_into(">i", bad, 57, count)
    _patch_crc(bad)
    tracemalloc.start()
    try:
        with pytest.raises(CorruptRecordError):
            decode_records(bad)
        if (codec is CompressionType.NONE and count > 11) or count < 0:
            with pytest.raises(CorruptRecordError):
                validate_batch(bad)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def _raw_record(body: bytes) -> bytes:
    """Encode a record whose body is given raw (length prefix computed)."""
    out = bytearray()
    n = len(body)
    z = (n << 1) ^ (n >> 31)
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out) + body


def _batch_with_raw_records(raw: bytes, count: int = 1) -> bytes:
    template = bytearray(build_batch([Record(0, 0, None, None)]))
    buf = template[:BATCH_HEADER_SIZE] + raw
    struct.pack_into(">i", buf, 8, len(buf) - LOG_OVERHEAD)
    struct.pack_into(">i", buf, 57, count)
    _patch_crc(buf)
    return bytes(buf)


def test_well_formed_raw_record_parses() -> None:
    # attributes, ts delta 0, offset delta 0, key null, value "a", no headers
    batch = _batch_with_raw_records(_raw_record(b"\x00\x00\x00\x01\x02a\x00"))
    assert decode_records(batch) == [Record(0, 0, None, b"a")]


@pytest.mark.parametrize(
    "body",
    [
        b"\x00" + b"\x80" * 10 + b"\x00" + b"\x00\x01\x01\x00",  # 11-byte timestamp varlong
        b"\x00\x00" + b"\xff" * 5 + b"\x01" + b"\x01\x01\x00",  # 6-byte offset varint
        b"\x00\x00\x00" + b"\x81" * 12 + b"\x00\x01\x00",  # 13-byte key length varint
    ],
)
def test_overlong_varints_are_corrupt(body: bytes) -> None:
    with pytest.raises(CorruptRecordError):
        decode_records(_batch_with_raw_records(_raw_record(body)))


def test_overlong_record_length_varint() -> None:
    raw = b"\x80" * 11 + b"\x00" * 8
    with pytest.raises(CorruptRecordError):
        decode_records(_batch_with_raw_records(raw))


@pytest.mark.parametrize(
    "body",
    [
        b"\x00\x00\x00\x03\x02a\x00",  # key length -2
        b"\x00\x00\x00\x40\x02a\x00",  # key length 32 past the record
        b"\x00\x00\x00\x01\x02a\x02",  # one header announced, none present
        b"\x00\x00\x00\x01\x02a\x00\x00",  # trailing byte inside the record
        b"\x00\x00\x00\x01\x02a\x02\x02\xff\xfe\x01",  # header key not UTF-8
    ],
)
def test_malformed_record_fields(body: bytes) -> None:
    with pytest.raises(CorruptRecordError):
        decode_records(_batch_with_raw_records(_raw_record(body)))


def test_leftover_bytes_after_declared_records() -> None:
    rec = _raw_record(b"\x00\x00\x00\x01\x02a\x00")
    with pytest.raises(CorruptRecordError):
        decode_records(_batch_with_raw_records(rec + rec, count=1))
    with pytest.raises(CorruptRecordError):
        decode_records(_batch_with_raw_records(rec, count=2))


def test_unknown_codec_and_magic() -> None:
    bad = bytearray(_simple_batch())
    struct.pack_into(">h", bad, 21, 6)
    _patch_crc(bad)
    with pytest.raises(CorruptRecordError):
        validate_batch(bad)
    bad = bytearray(_simple_batch())
    bad[16] = 3
    with pytest.raises(CorruptRecordError):
        read_batch_header(bad)


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_message_sets_are_rejected_not_crashed(magic: int) -> None:
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=1 << 20)
    for i in range(3):
        builder.append(i, timestamp=1000 if magic else None, key=b"k", value=b"v")
    legacy = bytes(builder.build())
    for call in (read_batch_header, validate_batch, decode_records):
        with pytest.raises(UnsupportedForMessageFormatError):
            call(legacy)
    with pytest.raises(UnsupportedForMessageFormatError):
        list(iter_batch_headers(legacy, strict=True))
    with pytest.raises(UnsupportedForMessageFormatError):
        list(iter_batch_headers(_simple_batch() + legacy))
    with pytest.raises(UnsupportedForMessageFormatError):
        read_batch_header(legacy[:17])


def _walked_end(buf: bytes, start: int) -> int | type[KafkaError]:
    """Where iter_batch_headers' last batch ends (or the error type it raises): the walk
    whole_batches_end must agree with."""
    end = start
    try:
        for header, position in iter_batch_headers(buf, start=start):
            end = position + LOG_OVERHEAD + header.batch_length
    except KafkaError as exc:
        return type(exc)
    return end


def _length_walk(buf: bytes, start: int) -> int | type[KafkaError]:
    try:
        return whole_batches_end(buf, start)
    except KafkaError as exc:
        return type(exc)


def test_whole_batches_end_at_every_cut() -> None:
    """Batches of three sizes: every cut of them ends at the last batch wholly before it."""
    batches = [_simple_batch(n=n) for n in (1, 7, 30, 2, 12)]
    log = b"".join(batches)
    ends = [sum(len(b) for b in batches[: i + 1]) for i in range(len(batches))]
    for cut in range(len(log) + 1):
        expected = max([0, *(end for end in ends if end <= cut)])
        assert whole_batches_end(log[:cut]) == expected
        assert whole_batches_end(memoryview(log)[:cut]) == expected
    # From a later batch's start, as the fetch's walk starts at an index entry.
    assert whole_batches_end(log, ends[1]) == len(log)
    assert whole_batches_end(log[: ends[3] - 1], ends[1]) == ends[2]
    # A larger limit than the buffer: a batch whose header is in it may end past it, unread.
    headers_only = log[: ends[1] + BATCH_HEADER_SIZE]
    assert whole_batches_end(headers_only, limit=len(log)) == ends[2]
    assert whole_batches_end(headers_only, limit=ends[2] - 1) == ends[1]
    assert whole_batches_end(log[: ends[1] + BATCH_HEADER_SIZE - 1], limit=len(log)) == ends[1]


@pytest.mark.parametrize("magic", [0, 1])
def test_whole_batches_end_raises_for_legacy_and_bad_headers(magic: int) -> None:
    """Where the length walk stops at a header it cannot vouch for, the header walk's error."""
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=1 << 20)
    builder.append(0, timestamp=1000 if magic else None, key=b"k", value=b"v")
    batch = _simple_batch()
    with pytest.raises(UnsupportedForMessageFormatError):
        whole_batches_end(batch + bytes(builder.build()))
    bad = bytearray(batch)
    struct.pack_into(">i", bad, 8, 48)  # below the smallest batch
    with pytest.raises(CorruptRecordError):
        whole_batches_end(batch + bytes(bad))
    bad[16] = 7  # an unknown magic
    with pytest.raises(CorruptRecordError):
        whole_batches_end(batch + bytes(bad))


def _first_batch_reaching(buf: bytes, target: int) -> tuple[int, int, int] | type[KafkaError] | None:
    """The header walk's answer: (position, last offset, size) of the first batch whose last
    offset reaches `target`, None when no whole batch does, or the error type it raises."""
    try:
        for header, position in iter_batch_headers(buf):
            last = header.base_offset + header.last_offset_delta
            if last >= target:
                return position, last, LOG_OVERHEAD + header.batch_length
    except KafkaError as exc:
        return type(exc)
    return None


def _walk_reaching(buf: bytes, target: int) -> tuple[int, int, int] | type[KafkaError] | None:
    try:
        stop = walk_batch_lengths(buf, until_offset=target)
    except KafkaError as exc:
        return type(exc)
    return (stop.position, stop.last_offset, stop.size) if stop.found else None


@settings(max_examples=200, deadline=None)
@given(
    counts=st.lists(st.integers(1, 9), min_size=1, max_size=5),
    gaps=st.lists(st.integers(0, 3), min_size=5, max_size=5),
    cut=st.integers(0, 3_000),
    flips=st.lists(st.tuples(st.integers(0, 3_000), st.integers(1, 255)), max_size=1),
)
def test_walk_until_an_offset_agrees_with_the_header_walk(counts: list[int], gaps: list[int], cut: int,
                                                           flips: list[tuple[int, int]]) -> None:
    """The batch holding each offset (the first whose last offset reaches it), found by lengths
    and two header fields, is the header walk's, in whole and cut logs, with a flipped byte."""
    parts, offset = [], 5
    for n, gap in zip(counts, gaps):
        data = bytearray(_simple_batch(n=n))
        assign_offsets(data, 0, offset, 0)
        parts.append(bytes(data))
        offset += n + gap
    buf = bytearray(b"".join(parts))
    for at, flip in flips:
        if at < len(buf):
            buf[at] ^= flip
    data = bytes(buf[:cut])
    for target in (-(2**62), *range(0, offset + 2)):  # (a flipped base offset may be negative)
        assert _walk_reaching(data, target) == _first_batch_reaching(data, target), target


@settings(max_examples=300, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 12), max_size=4),
    tail=st.binary(max_size=120),
    cut=st.integers(0, 2_000),
    flips=st.lists(st.tuples(st.integers(0, 2_000), st.integers(1, 255)), max_size=2),
)
def test_whole_batches_end_agrees_with_the_header_walk(sizes: list[int], tail: bytes, cut: int,
                                                       flips: list[tuple[int, int]]) -> None:
    """Whole batches, cut anywhere, with stray bytes and flipped bytes: the length walk ends
    where the header walk does, or raises its error."""
    buf = bytearray(b"".join(_simple_batch(n=n) for n in sizes) + tail)
    for at, flip in flips:
        if at < len(buf):
            buf[at] ^= flip
    data = bytes(buf[:cut])
    starts = [0] + [len(b"".join(_simple_batch(n=n) for n in sizes[: i + 1])) for i in range(len(sizes))]
    for start in starts:
        if start <= len(data):
            assert _length_walk(data, start) == _walked_end(data, start)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_only_raise_typed_errors(data: bytes) -> None:
    for call in (validate_batch, decode_records, lambda b: list(iter_batch_headers(b, strict=True))):
        try:
            call(data)
        except KafkaError:
            pass


@settings(max_examples=200, deadline=None)
@given(
    codec=st.sampled_from(CODECS),
    flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(1, 255)), min_size=1, max_size=4),
)
def test_mutated_batches_with_fixed_crc_only_raise_typed_errors(codec: CompressionType, flips: list) -> None:
    """Flip bytes and repair the CRC so the record parser sees the damage."""
    bad = bytearray(_simple_batch(codec, n=4))
    for where, mask in flips:
        bad[BATCH_HEADER_SIZE - 40 + where % (len(bad) - BATCH_HEADER_SIZE + 40)] ^= mask
    try:
        _patch_crc(bad)
    except struct.error:
        return
    try:
        decode_records(bad)
    except KafkaError:
        pass


@settings(max_examples=40, deadline=None)
@given(
    data=record_lists(max_records=8),
    codec=st.sampled_from(CODECS),
    new_base=st.integers(0, 2**50),
    epoch=st.integers(0, 2**31 - 1),
    log_append_time=st.none() | st.integers(0, 2**42),
)
def test_assign_offsets_property(
    data: tuple[int, list[Record]], codec: CompressionType, new_base: int, epoch: int, log_append_time: int | None
) -> None:
    base_offset, records = data
    buf = bytearray(build_batch(records, base_offset=base_offset, compression=codec))
    assign_offsets(buf, 0, new_base, epoch, log_append_time)
    header = validate_batch(buf)
    assert (header.base_offset, header.partition_leader_epoch) == (new_base, epoch)
    shift = new_base - base_offset
    expected = [
        Record(r.offset + shift, r.timestamp if log_append_time is None else log_append_time, r.key, r.value, r.headers)
        for r in records
    ]
    assert decode_records(buf) == expected


@given(record_lists())
@settings(max_examples=50, suppress_health_check=[HealthCheck.too_slow])
def test_record_layouts_and_keys_agree_with_decode_records(drawn: tuple[int, list[Record]]) -> None:
    base_offset, records = drawn
    batch = build_batch(records, base_offset=base_offset)
    data = batch[BATCH_HEADER_SIZE:]
    decoded = decode_records(batch)
    layouts = record_layouts(data, len(records))
    assert [base_offset + od for _, _, _, od, _, _ in layouts] == [r.offset for r in decoded]
    assert [key for _, _, _, _, key, _ in layouts] == [r.key for r in decoded]
    assert [null for *_, null in layouts] == [r.value is None for r in decoded]
    assert b"".join(data[start:end] for start, end, *_ in layouts) == data
    assert all(data[body] == 0 for _, _, body, *_ in layouts)  # body starts at the attributes byte
    start = decoded[len(decoded) // 2].offset
    keyed = [r for r in decoded if r.key is not None and r.offset >= start]
    assert record_keys_and_offsets(data, len(records), base_offset, start) == (
        [r.key for r in keyed], [r.offset for r in keyed])


def test_record_layouts_reject_truncated_and_leftover_data() -> None:
    data = build_batch([Record(0, 1, b"k", b"v"), Record(1, 1, b"k2", None)])[BATCH_HEADER_SIZE:]
    for walk in (lambda d, c: record_layouts(d, c), lambda d, c: record_keys_and_offsets(d, c, 0, 0)):
        with pytest.raises(CorruptRecordError):
            walk(data[:-1], 2)
        with pytest.raises(CorruptRecordError):
            walk(data, 1)


def test_batch_spans_frame_like_kafka() -> None:
    """Kafka's ByteBufferLogInputStream: stray trailing bytes and a cut last batch end the
    records; a size below any message or an unknown magic is CorruptRecordError."""
    one = build_batch([Record(offset=0, timestamp=1, key=b"k", value=b"v")])
    assert [(s.position, s.size, s.magic) for s in batch_spans(one + one)] == [(0, len(one), 2), (len(one), len(one), 2)]
    assert len(list(batch_spans(one + b"\x00\x00"))) == 1
    assert len(list(batch_spans(one + one[:30]))) == 1
    assert list(batch_spans(b"\x00" * 11)) == []
    with pytest.raises(CorruptRecordError, match=r"Record size 0 is less than the minimum record overhead \(14\)"):
        list(batch_spans(b"\x00" * 20))
    bad = bytearray(one)
    bad[16] = 0xFF
    with pytest.raises(CorruptRecordError, match="Invalid magic found in record: -1"):
        list(batch_spans(bytes(bad)))
    bad[16] = 1
    assert [s.magic for s in batch_spans(bytes(bad))] == [1]  # legacy formats are the caller's call


def test_crc32c_is_the_packages_function_without_its_init() -> None:
    """wire.records loads crc32c's extension module alone: the same checksums as the package's
    function, without the package's __init__ and the importlib.metadata it imports."""
    import subprocess
    import sys

    script = (
        "import sys, os\n"
        "from wire.records import crc32c\n"
        "assert crc32c(b'123456789') == 0xE3069283, hex(crc32c(b'123456789'))\n"  # CRC-32C's check value
        "data = os.urandom(4096)\n"
        "ours = [crc32c(memoryview(data)[i:]) for i in range(0, 4096, 97)]\n"
        "assert 'crc32c' not in sys.modules and 'importlib.metadata' not in sys.modules, 'package imported'\n"
        "import crc32c as package\n"
        "assert ours == [package.crc32c(data[i:]) for i in range(0, 4096, 97)]\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
