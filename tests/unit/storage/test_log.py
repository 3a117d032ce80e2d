"""Log: offsets, append validation, reads, timestamps, flush, truncation, log start offset."""
from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatch

from storage_testlib import BASE_TS, batch, nonblocking_read_would_block
from storage.clock import MockClock
from storage.errors import AppendWouldBlock
from storage.log import Log
from storage.log_config import LogConfig
from wire.compression import CompressionType
from wire.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
)
from wire.records import (
    ControlRecordType,
    Record,
    build_batch,
    decode_records,
    encode_control_key,
    encode_control_value,
    iter_batch_headers,
    validate_batch,
)

SMALL = LogConfig(segment_bytes=2000, index_interval_bytes=100)


def _offsets(data: bytes) -> list[int]:
    return [r.offset for bp in iter_batch_headers(data) for r in decode_records(data, bp.position)]


def test_append_assigns_offsets_and_advances_hw(make_log) -> None:
    log = make_log()
    assert (log.log_start_offset, log.high_watermark, log.log_end_offset) == (0, 0, 0)
    info = log.append_as_leader(batch(3), leader_epoch=5)
    assert (info.first_offset, info.last_offset, info.num_messages) == (0, 2, 3)
    info = log.append_as_leader(batch(2))
    assert (info.first_offset, info.last_offset) == (3, 4)
    assert log.log_end_offset == log.high_watermark == 5
    assert log.last_stable_offset == 5
    data = log.read_bytes(0, 10_000)
    assert _offsets(data) == [0, 1, 2, 3, 4]
    first = next(iter_batch_headers(data)).header
    assert first.partition_leader_epoch == 5
    assert log.leader_epoch_cache.entries() == [(5, 0)]


def test_log_files_parse_with_kafka_python(make_log, log_dir: Path) -> None:
    log = make_log(SMALL)
    for i in range(30):
        log.append_as_leader(batch(3, ts=BASE_TS + i))
    log.roll()
    offsets = []
    names = sorted(p.name for p in log_dir.glob("*.log"))
    assert len(names) > 1 and all(len(n) == len("00000000000000000000.log") for n in names)
    for name in names:
        data = (log_dir / name).read_bytes()
        pos = 0
        while pos < len(data):
            size = int.from_bytes(data[pos + 8 : pos + 12], "big") + 12
            b = DefaultRecordBatch(data[pos : pos + size])  # kafka-python checks the CRC to the buffer's end
            assert b.validate_crc()
            offsets += [r.offset for r in b]
            pos += size
    assert offsets == list(range(90))


def test_read_bounds(make_log) -> None:
    log = make_log(SMALL)
    for _ in range(20):
        log.append_as_leader(batch(5))
    assert log.num_segments > 1
    with pytest.raises(OffsetOutOfRangeError):
        log.read(101, 100)
    empty = log.read(100, 100)  # at the LEO: nothing, but not an error
    assert empty.size == 0 and empty.read_bytes() == b""
    for offset in (0, 7, 33, 64, 99):
        data = log.read_bytes(offset, 10_000)
        got = _offsets(data)
        assert got[0] <= offset < got[0] + 5
    log.maybe_increment_log_start_offset(50)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(49, 100)
    assert _offsets(log.read_bytes(50, 100_000))[0] == 50


def test_read_returns_file_positions(make_log) -> None:
    log = make_log()
    log.append_as_leader(batch(2))
    info = log.read(0, 10_000)
    assert info.path is not None and os.path.basename(info.path) == "00000000000000000000.log"
    assert os.pread(info.file.fileno(), info.size, info.position) == info.read_bytes()
    assert info.fetch_offset_metadata.segment_base_offset == 0


def test_nonblocking_reads_come_from_the_page_cache_or_not_at_all(make_log) -> None:
    """The event loop's read: the same answer as a blocking one while the bytes are cached,
    ReadWouldBlock once they are not (or the same bytes, when the readahead the miss started
    has already finished: nonblocking_read_would_block)."""
    log = make_log(LogConfig(index_interval_bytes=1))
    for _ in range(20):
        log.append_as_leader(batch(5, value_size=200))
    blocking = log.read(37, 4_000)
    cached = log.read(37, 4_000, nonblocking=True)
    assert (cached.position, cached.size) == (blocking.position, blocking.size)
    assert cached.read_bytes(nonblocking=True) == blocking.read_bytes()
    assert blocking.path is not None
    nonblocking_read_would_block(blocking.path, lambda: log.read(37, 4_000, nonblocking=True).read_bytes(nonblocking=True),
                                 cached.read_bytes())
    assert log.read(37, 4_000).read_bytes() == cached.read_bytes()  # the IO thread's read, which caches
    assert log.read(37, 4_000, nonblocking=True).read_bytes(nonblocking=True) == cached.read_bytes()


def test_max_bytes_and_min_one_message(make_log) -> None:
    log = make_log()
    log.append_as_leader(batch(1, value_size=500))
    log.append_as_leader(batch(1, value_size=500))
    assert log.read(0, 10, min_one_message=True).size > 500
    assert log.read(0, 10, min_one_message=False).size == 10
    assert log.read(0, 0, min_one_message=False).size == 0


def test_read_across_offset_gaps(log_dir: Path, clock: MockClock) -> None:
    """Compacted logs have gaps; a fetch inside a gap returns the next batch."""
    log_dir.mkdir(parents=True)
    data = b"".join(
        build_batch([Record(offset=base + i, timestamp=BASE_TS, key=b"k", value=b"v") for i in range(2)],
                    base_offset=base)
        for base in (0, 10, 20)
    )
    (log_dir / "00000000000000000000.log").write_bytes(data)
    log = Log.open(log_dir, LogConfig(), clock=clock)
    assert log.log_end_offset == 22
    assert _offsets(log.read_bytes(5, 10_000))[0] == 10
    assert _offsets(log.read_bytes(11, 10_000))[:2] == [10, 11]
    assert _offsets(log.read_bytes(15, 10_000)) == [20, 21]
    log.close()


def test_roll_by_size(make_log) -> None:
    log = make_log(LogConfig(segment_bytes=1000))
    for _ in range(30):
        log.append_as_leader(batch(1, value_size=100))
    assert log.num_segments >= 4
    assert all(s.size() <= 1000 for s in log.segments.values())
    bases = log.segments.base_offsets()
    assert bases == sorted(bases) and bases[0] == 0


def test_roll_by_time_uses_record_timestamps_and_clock(make_log, clock: MockClock) -> None:
    log = make_log(LogConfig(segment_ms=1000))
    log.append_as_leader(batch(1, ts=clock.milliseconds()))
    log.append_as_leader(batch(1, ts=clock.milliseconds() + 999))
    assert log.num_segments == 1
    clock.advance(1001)
    log.append_as_leader(batch(1, ts=clock.milliseconds()))
    assert log.num_segments == 2 and log.active_segment.base_offset == 2


def test_roll_by_time_with_log_append_time(make_log, clock: MockClock) -> None:
    log = make_log(LogConfig(segment_ms=5000, message_timestamp_type="LogAppendTime"))
    info = log.append_as_leader(batch(1, ts=123))
    assert info.log_append_time == clock.milliseconds() == info.max_timestamp
    clock.advance(5001)
    log.append_as_leader(batch(1, ts=123))
    assert log.num_segments == 2
    header = next(iter_batch_headers(log.read_bytes(1, 1000))).header
    assert header.max_timestamp == clock.milliseconds() and header.attributes & 0x08


def test_roll_when_index_full(make_log) -> None:
    log = make_log(LogConfig(segment_index_bytes=8 * 4, index_interval_bytes=1))
    for _ in range(12):
        log.append_as_leader(batch(1))
    assert log.num_segments >= 3
    assert _offsets(log.read_bytes(0, 100_000)) == list(range(12))[: len(_offsets(log.read_bytes(0, 100_000)))]


def test_empty_active_segment_with_full_index_is_recreated(make_log) -> None:
    """KAFKA-6388: an index too small for any entry must not make roll fail."""
    log = make_log(LogConfig(segment_index_bytes=12))  # time index: only the reserved slot
    log.append_as_leader(batch(1))
    log.append_as_leader(batch(1))
    assert log.log_end_offset == 2


def test_offset_overflow_forces_roll(log_dir: Path, clock: MockClock) -> None:
    """The next offset must fit in 4 bytes relative to the active segment's base: roll otherwise."""
    log_dir.mkdir(parents=True)
    edge = 2**31 - 1  # the largest offset relative to base 0
    (log_dir / "00000000000000000000.log").write_bytes(
        build_batch([Record(offset=edge, timestamp=BASE_TS, value=b"x")], base_offset=edge))
    log = Log.open(log_dir, LogConfig(), clock=clock)
    assert log.log_end_offset == 2**31 and log.num_segments == 1
    info = log.append_as_leader(batch(2))
    assert info.first_offset == 2**31
    assert log.segments.base_offsets() == [0, 2**31]
    assert _offsets(log.read_bytes(2**31, 1000)) == [2**31, 2**31 + 1]
    log.close()


def test_message_too_large_and_batch_too_large(make_log) -> None:
    log = make_log(LogConfig(max_message_bytes=500))
    with pytest.raises(RecordTooLargeError):
        log.append_as_leader(batch(1, value_size=600))
    log = make_log(LogConfig(segment_bytes=300, max_message_bytes=10_000))
    with pytest.raises(RecordBatchTooLargeError):
        log.append_as_leader(batch(1, value_size=400))
    assert log.log_end_offset == 0


def test_corrupt_batch_rejected(make_log) -> None:
    log = make_log()
    data = bytearray(batch(2))
    data[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        log.append_as_leader(data)
    with pytest.raises(CorruptRecordError):
        log.append_as_leader(batch(2)[:-3])  # truncated
    assert log.log_end_offset == 0 and log.size_in_bytes == 0


def test_timestamp_bounds(make_log, clock: MockClock) -> None:
    log = make_log(LogConfig(message_timestamp_after_max_ms=1000, message_timestamp_before_max_ms=5000))
    with pytest.raises(InvalidTimestampError) as exc:
        log.append_as_leader(batch(1, ts=clock.milliseconds() + 2000))
    assert exc.value.record_errors
    with pytest.raises(InvalidTimestampError):
        log.append_as_leader(batch(1, ts=clock.milliseconds() - 6000))
    log.append_as_leader(batch(1, ts=clock.milliseconds() + 500))
    assert log.log_end_offset == 1


def test_compacted_topic_requires_keys(make_log) -> None:
    log = make_log(LogConfig(cleanup_policy=("compact",)))
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(batch(2, key=None))
    log.append_as_leader(batch(2, key=b"k"))
    assert log.log_end_offset == 2


def test_rejected_records_are_listed_by_index(make_log, clock: MockClock) -> None:
    """Kafka's RecordValidationException: every rejected record of the batch, by its index,
    with the partition in each message; a timestamp error makes the whole INVALID_TIMESTAMP."""
    log = make_log(LogConfig(cleanup_policy=("compact",), message_timestamp_before_max_ms=5000))
    now = clock.milliseconds()
    records = [Record(offset=0, timestamp=now, key=b"k", value=b"v"),
               Record(offset=1, timestamp=now, key=None, value=b"v"),
               Record(offset=2, timestamp=now - 9000, key=b"k", value=b"v")]
    with pytest.raises(InvalidTimestampError) as exc:
        log.append_as_leader(build_batch(records, compression=CompressionType.GZIP))
    tp = log.topic_partition
    assert exc.value.record_errors == [
        (1, f"Compacted topic cannot accept message without key in topic partition {tp}"),
        (2, f"Timestamp {now - 9000} of message with offset 2 is out of range. "
            f"The timestamp should be within [{now - 5000}, {now + 3_600_000}]"),
    ]
    assert exc.value.message == "One or more records have been rejected due to invalid timestamp"
    with pytest.raises(InvalidRecordError) as keyless:
        log.append_as_leader(build_batch(records[:2]))
    assert keyless.value.record_errors == [(1, f"Compacted topic cannot accept message without key in topic "
                                               f"partition {tp}")]
    assert keyless.value.message.startswith("One or more records have been rejected due to 1 record errors")
    assert log.log_end_offset == 0


def test_batch_rules_are_plain_errors(make_log) -> None:
    """Batch-level problems carry no record list (Kafka sends no message for them)."""
    log = make_log()
    offset_five = bytearray(batch(2))
    offset_five[7] = 5  # baseOffset 5: outside the CRC
    with pytest.raises(InvalidRecordError) as exc:
        log.append_as_leader(bytes(offset_five))
    assert not getattr(exc.value, "record_errors", None)
    assert "should be 0, but it is 5" in exc.value.message
    with pytest.raises(InvalidRecordError, match="Invalid sequence number -1"):
        log.append_as_leader(batch(2, producer_id=7, producer_epoch=0))
    assert log.log_end_offset == 0


def test_stored_batches_carry_the_topic_timestamp_type(make_log) -> None:
    """A producer's LogAppendTime flag on a CreateTime topic is cleared, the CRC redone."""
    log = make_log()
    log.append_as_leader(build_batch([Record(offset=0, timestamp=BASE_TS, key=b"k", value=b"v")],
                                     timestamp_type=1))
    data = log.read_bytes(0, 10_000)
    header = next(iter_batch_headers(data)).header
    assert header.attributes & 0x08 == 0
    validate_batch(data, 0)  # the CRC covers the attributes


def test_recompression_to_topic_codec(make_log) -> None:
    log = make_log(LogConfig(compression_type="gzip"))
    log.append_as_leader(batch(3, compression=CompressionType.NONE))
    data = log.read_bytes(0, 10_000)
    header = next(iter_batch_headers(data)).header
    assert header.compression == CompressionType.GZIP
    assert [r.offset for r in decode_records(data, 0)] == [0, 1, 2]


def test_control_batches_from_clients_rejected(make_log) -> None:
    log = make_log()
    marker = build_batch([Record(offset=0, timestamp=BASE_TS, key=encode_control_key(ControlRecordType.COMMIT),
                                 value=encode_control_value(0))], is_control=True, is_transactional=True,
                         producer_id=7, producer_epoch=0, base_sequence=-1)
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(marker)


def test_fetch_offset_by_timestamp(make_log) -> None:
    log = make_log(SMALL)
    for i in range(30):
        log.append_as_leader(batch(2, ts=BASE_TS + i * 10))  # records ts, ts+1
    assert log.num_segments > 1
    assert log.fetch_offset_by_timestamp(BASE_TS + 101) == (21, BASE_TS + 101)
    assert log.fetch_offset_by_timestamp(BASE_TS + 102) == (22, BASE_TS + 110)
    assert log.fetch_offset_by_timestamp(0) == (0, BASE_TS)
    assert log.fetch_offset_by_timestamp(BASE_TS + 10_000) is None
    assert log.fetch_offset_by_timestamp(-2) == (0, -1)
    assert log.fetch_offset_by_timestamp(-1) == (60, -1)
    assert log.fetch_offset_by_timestamp(-3) == (59, BASE_TS + 291)
    log.maybe_increment_log_start_offset(25)
    assert log.fetch_offset_by_timestamp(0) == (25, BASE_TS + 121)
    assert log.fetch_offset_by_timestamp(-2) == (25, -1)


def test_max_timestamp_not_last(make_log) -> None:
    log = make_log()
    log.append_as_leader(build_batch([Record(offset=0, timestamp=BASE_TS + 50, value=b"a"),
                                      Record(offset=1, timestamp=BASE_TS + 900, value=b"b"),
                                      Record(offset=2, timestamp=BASE_TS + 10, value=b"c")]))
    log.append_as_leader(batch(1, ts=BASE_TS + 100))
    assert log.fetch_offset_by_timestamp(-3) == (1, BASE_TS + 900)


def test_log_start_offset_never_past_hw(make_log) -> None:
    log = make_log()
    log.append_as_leader(batch(10))
    with pytest.raises(OffsetOutOfRangeError):
        log.maybe_increment_log_start_offset(11)
    assert log.maybe_increment_log_start_offset(10)
    assert log.log_start_offset == log.high_watermark == log.log_end_offset == 10
    assert not log.maybe_increment_log_start_offset(5)  # never moves back
    assert log.log_start_offset == 10


def test_offsets_generation_moves_after_every_change_a_fetch_reports(make_log, clock: MockClock,
                                                                     tmp_path: Path) -> None:
    """A fetch session skips a partition it found idle while the generation it read stays
    (asyncbroker.fetch_session): every change of fetch_offsets() or of is_closed moves it."""
    log = make_log(LogConfig(segment_bytes=1000, retention_ms=10_000))

    def moves(change) -> bool:  # type: ignore[no-untyped-def]
        before = log.offsets_generation.value
        change()
        return log.offsets_generation.value > before

    assert moves(lambda: log.append_as_leader(batch(2, value_size=100)))
    assert moves(lambda: log.append_as_leader(batch(2, value_size=100, ts=clock.milliseconds()), nonblocking=True))
    assert not moves(lambda: log.read(0, 10_000))
    assert not moves(log.fetch_offsets)
    assert moves(log.roll)
    for _ in range(8):
        log.append_as_leader(batch(2, value_size=100))
    assert moves(lambda: log.maybe_increment_log_start_offset(1))
    assert not moves(lambda: log.maybe_increment_log_start_offset(1))  # nothing changed
    clock.advance(20_000)  # retention: the oldest segments go, and the log start with them
    assert moves(log.delete_old_segments) and log.log_start_offset > 1
    assert moves(lambda: log.truncate_to(log.log_end_offset - 1))
    assert moves(lambda: log.truncate_fully_and_start_at(100))
    assert moves(log.close_handlers)
    closed = Log.open(tmp_path / "closed-0", LogConfig(), clock=clock)
    before = closed.offsets_generation.value
    closed.close()
    assert closed.offsets_generation.value > before and closed.is_closed


def test_fetch_offsets_kept_between_changes_are_never_stale(make_log, clock: MockClock,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """fetch_offsets() keeps its answer while the offsets generation stays: after every change,
    an open transaction and its marker, and an append that fails part-way, it answers what the
    log holds now."""
    log = make_log(LogConfig(segment_bytes=1000, retention_ms=10_000))

    def check(change) -> None:  # type: ignore[no-untyped-def]
        log.fetch_offsets()  # kept
        change()
        assert log.fetch_offsets() == _offsets_now(log)

    check(lambda: log.append_as_leader(batch(2, value_size=100)))
    txn = build_batch([Record(offset=i, timestamp=BASE_TS, value=b"t") for i in range(2)],
                      is_transactional=True, producer_id=9, producer_epoch=0, base_sequence=0)
    check(lambda: log.append_as_leader(txn))
    assert log.fetch_offsets()[:2] == (4, 2)  # the open transaction holds the last stable offset
    marker = build_batch([Record(offset=0, timestamp=BASE_TS, key=encode_control_key(ControlRecordType.COMMIT),
                                 value=encode_control_value(0))], is_control=True, is_transactional=True,
                         producer_id=9, producer_epoch=0, base_sequence=-1)
    check(lambda: log.append_as_leader(marker, origin="coordinator"))
    assert log.fetch_offsets()[:2] == (5, 5)
    for _ in range(6):
        log.append_as_leader(batch(2, value_size=100))
    check(lambda: log.maybe_increment_log_start_offset(6))
    clock.advance(20_000)
    check(log.delete_old_segments)
    check(lambda: log.truncate_to(log.log_end_offset - 1))
    check(lambda: log.truncate_fully_and_start_at(100))

    def fails_after_the_write(*args: object) -> None:
        raise RuntimeError("producer state")

    monkeypatch.setattr(log.producer_state_manager, "complete_append", fails_after_the_write)
    log.fetch_offsets()
    with pytest.raises(RuntimeError):
        log.append_as_leader(batch(2, producer_id=7, producer_epoch=0, base_sequence=0))
    assert log.fetch_offsets() == _offsets_now(log) and _offsets_now(log)[3] == 102  # written, then failed: the end moved


def _offsets_now(log: Log) -> tuple[int, int, int, int]:
    """What fetch_offsets() must answer, read from the log's fields."""
    hw = log.high_watermark
    first_unstable = log.producer_state_manager.first_unstable_offset()
    lso = hw if first_unstable is None or first_unstable > hw else first_unstable
    return hw, lso, log.log_start_offset, log.log_end_offset


def test_fetch_offsets_during_a_change_answer_what_the_log_shows(make_log, clock: MockClock,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Changes run on other threads than fetches, and take time: retention writes the
    leader-epoch checkpoint between moving the log start offset and finishing. A fetch in the
    middle must answer what the log shows then, never an answer kept from before the change
    (after a clean restart, ListOffsets answered the new log start and the Fetch after it the
    old one, whose segments were gone: the crash torture counted their records as lost). Each
    hook below runs inside a change, as the other thread's fetch would."""
    log = make_log(LogConfig(segment_bytes=1000, retention_ms=10_000))
    psm = log.producer_state_manager
    seen: list[tuple[str, tuple[int, int, int, int], tuple[int, int, int, int]]] = []

    def read_during(name: str) -> None:
        original = getattr(psm, name)

        def hook(*args: object, **kwargs: object) -> object:
            seen.append((name, log.fetch_offsets(), _offsets_now(log)))
            return original(*args, **kwargs)

        monkeypatch.setattr(psm, name, hook)

    hooks = ("update_map_end_offset", "take_snapshot", "on_log_start_offset_incremented", "rebuild",
             "truncate_fully_and_start_at")
    for name in hooks:
        read_during(name)
    for _ in range(12):  # appends, and rolls among them
        log.fetch_offsets()
        log.append_as_leader(batch(2, value_size=100))
    log.fetch_offsets()
    log.maybe_increment_log_start_offset(3)
    clock.advance(20_000)
    log.fetch_offsets()
    assert log.delete_old_segments() > 0  # every segment: a roll, then the new log start
    log.append_as_leader(batch(2, value_size=100, ts=clock.milliseconds()))
    log.fetch_offsets()
    log.truncate_to(log.log_end_offset - 1)
    log.fetch_offsets()
    log.truncate_fully_and_start_at(100)
    assert {name for name, _, _ in seen} == set(hooks)
    stale = [(name, answered, shown) for name, answered, shown in seen if answered != shown]
    assert not stale


def test_retention_moves_the_log_start_before_its_segments_leave(make_log, clock: MockClock,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """As Kafka orders it: a fetch on another thread, between the two, finds an offset of a
    deleted segment out of range rather than finding no segment; and one that passed the log
    start check before it moved, then finds no segment, is out of range too."""
    log = make_log(LogConfig(segment_bytes=1000, retention_ms=10_000))
    for _ in range(10):
        log.append_as_leader(batch(2, value_size=100))
    clock.advance(5_000)
    for _ in range(10):
        log.append_as_leader(batch(2, value_size=100, ts=clock.milliseconds()))
    clock.advance(6_000)
    removed: list[tuple[int, int]] = []
    remove = log.segments.remove

    def remove_seen(base_offset: int) -> None:
        removed.append((base_offset, log.log_start_offset))
        with pytest.raises(OffsetOutOfRangeError):
            log.read(base_offset, 10_000)
        remove(base_offset)

    monkeypatch.setattr(log.segments, "remove", remove_seen)
    assert log.delete_old_segments() > 0
    assert removed and all(start == log.log_start_offset > base for base, start in removed)
    monkeypatch.setattr(log.segments, "floor_segment", lambda offset: None)
    with pytest.raises(OffsetOutOfRangeError, match="log segments starting from offset"):
        log.read(log.log_start_offset, 10_000)


def test_truncate_to(make_log) -> None:
    log = make_log(SMALL)
    for _ in range(30):
        log.append_as_leader(batch(2))
    segments_before = log.num_segments
    assert not log.truncate_to(60)
    assert log.truncate_to(20)
    assert log.log_end_offset == log.high_watermark == 20
    assert log.num_segments < segments_before
    assert _offsets(log.read_bytes(0, 100_000))[-1] == 19
    info = log.append_as_leader(batch(1))
    assert info.first_offset == 20
    assert log.truncate_to(0)
    assert log.log_end_offset == 0 and log.num_segments == 1


def test_truncate_fully_and_start_at(make_log, log_dir: Path) -> None:
    log = make_log()
    log.append_as_leader(batch(5))
    log.truncate_fully_and_start_at(100)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (100, 100, 100)
    assert sorted(p.name for p in log_dir.glob("*.log")) == ["00000000000000000100.log"]
    assert log.append_as_leader(batch(1)).first_offset == 100


def test_flush_messages_advances_recovery_point(make_log) -> None:
    log = make_log(LogConfig(flush_messages=3))
    log.append_as_leader(batch(1))
    log.append_as_leader(batch(1))
    assert log.recovery_point == 0
    log.append_as_leader(batch(1))
    assert log.recovery_point == 3
    log.append_as_leader(batch(1))
    assert log.recovery_point == 3
    log.flush()
    assert log.recovery_point == 4


def test_flush_ms(make_log, clock: MockClock) -> None:
    log = make_log(LogConfig(flush_ms=1000))
    log.append_as_leader(batch(1))
    assert not log.flush_if_due()
    clock.advance(1000)
    assert log.flush_if_due() and log.recovery_point == 1
    clock.advance(1000)
    assert not log.flush_if_due()  # nothing unflushed


def test_read_committed_stops_at_open_transaction(make_log) -> None:
    log = make_log()
    log.append_as_leader(batch(2))
    txn = build_batch([Record(offset=i, timestamp=BASE_TS, value=b"t") for i in range(2)],
                      is_transactional=True, producer_id=9, producer_epoch=0, base_sequence=0)
    log.append_as_leader(txn)
    assert log.high_watermark == 4 and log.last_stable_offset == 2
    committed = log.read(0, 10_000, isolation="read_committed")
    assert _offsets(committed.read_bytes()) == [0, 1]
    assert log.fetch_offset_by_timestamp(-1, isolation="read_committed") == (2, -1)
    assert log.read(2, 10_000, isolation="read_committed").size == 0
    assert _offsets(log.read_bytes(0, 10_000)) == [0, 1, 2, 3]


def test_isolation_log_end(make_log) -> None:
    log = make_log()
    log.append_as_leader(batch(2))
    assert log.read(0, 1000, isolation="log_end").size == log.read(0, 1000).size


def test_empty_append(make_log) -> None:
    log = make_log()
    info = log.append_as_leader(b"")
    assert info.num_messages == 0 and log.log_end_offset == 0


def test_partition_metadata_written(make_log, log_dir: Path) -> None:
    import uuid

    tid = uuid.UUID("f3d7a8b2-1c4e-4a5f-9b6d-0e1f2a3b4c5d")
    log = make_log(topic_id=tid)
    text = (log_dir / "partition.metadata").read_text()
    assert text == "version: 0\ntopic_id: 89eoshxOSl-bbQ4fKjtMXQ"
    assert log.topic_id == tid


def test_time_index_stays_monotone_when_timestamps_go_back(make_log) -> None:
    log = make_log(LogConfig(index_interval_bytes=1))
    for ts in (BASE_TS + 500, BASE_TS + 100, BASE_TS + 900, BASE_TS + 50, BASE_TS + 1000):
        log.append_as_leader(batch(1, ts=ts))
    entries = log.active_segment.time_index.entries_list()
    assert [e.timestamp for e in entries] == sorted(e.timestamp for e in entries)
    assert [e.offset for e in entries] == sorted(e.offset for e in entries)
    assert log.fetch_offset_by_timestamp(BASE_TS + 600) == (2, BASE_TS + 900)
    assert log.fetch_offset_by_timestamp(BASE_TS + 60) == (0, BASE_TS + 500)


def test_preallocate(make_log, log_dir: Path, clock: MockClock) -> None:
    config = LogConfig(preallocate=True, segment_bytes=1 << 20)
    log = make_log(config)
    log.append_as_leader(batch(3))
    path = log_dir / "00000000000000000000.log"
    assert path.stat().st_size == 1 << 20  # preallocated
    size = log.active_segment.size()
    log.roll()  # the finished segment is trimmed
    assert path.stat().st_size == size
    assert log.append_as_leader(batch(1)).first_offset == 3
    log.close()
    again = Log.open(log_dir, config, clock=clock, had_clean_shutdown=False)
    assert again.log_end_offset == 4
    again.close()


def test_flush_after_truncation_does_not_advance_past_leo(make_log) -> None:
    log = make_log()
    log.append_as_leader(batch(2))
    log.append_as_leader(batch(3))
    log.truncate_to(2)
    log.flush(10)
    assert log.recovery_point == 2 == log.log_end_offset


def test_index_files_decode_to_batch_positions(make_log, log_dir: Path) -> None:
    """The .index/.timeindex bytes written for a log point at real batches (Kafka's layout)."""
    import struct

    log = make_log(LogConfig(index_interval_bytes=150))
    for i in range(40):
        log.append_as_leader(batch(2, ts=BASE_TS + i * 3))
    log.close()
    data = (log_dir / "00000000000000000000.log").read_bytes()
    batches = {bp.position: bp.header for bp in iter_batch_headers(data)}
    raw = (log_dir / "00000000000000000000.index").read_bytes()
    entries = [struct.unpack_from(">ii", raw, i) for i in range(0, len(raw), 8)]
    assert len(entries) > 5
    for rel, pos in entries:
        header = batches[pos]
        assert header.base_offset + header.last_offset_delta == rel
    raw = (log_dir / "00000000000000000000.timeindex").read_bytes()
    times = [struct.unpack_from(">qi", raw, i) for i in range(0, len(raw), 12)]
    by_last = {h.base_offset + h.last_offset_delta: h for h in batches.values()}
    for ts, rel in times:
        assert by_last[rel].max_timestamp == ts
    assert times[-1] == (BASE_TS + 39 * 3 + 1, 79)  # the final entry written on close


def test_roll_schedules_flush_of_finished_segment(log_dir: Path, clock: MockClock) -> None:
    tasks: list = []
    log = Log.open(log_dir, LogConfig(), clock=clock, background=tasks.append)
    log.append_as_leader(batch(3))
    log.roll()
    assert log.recovery_point == 0 and len(tasks) == 1
    tasks.pop()()  # the scheduler runs it later, off the append path
    assert log.recovery_point == 3
    log.close()


def _marker(producer_id: int, kind: ControlRecordType) -> bytes:
    return build_batch([Record(offset=0, timestamp=BASE_TS, key=encode_control_key(kind), value=encode_control_value(0))],
                       is_control=True, is_transactional=True, producer_id=producer_id, producer_epoch=0)


def test_aborted_transactions_reported_to_read_committed(make_log, log_dir: Path) -> None:
    log = make_log()
    txn = build_batch([Record(offset=i, timestamp=BASE_TS, value=b"t") for i in range(3)],
                      is_transactional=True, producer_id=42, producer_epoch=0, base_sequence=0)
    log.append_as_leader(txn)  # offsets 0..2
    assert log.last_stable_offset == 0
    log.append_as_leader(_marker(42, ControlRecordType.ABORT), origin="coordinator")  # offset 3
    assert log.last_stable_offset == log.high_watermark == 4
    info = log.read(0, 10_000, isolation="read_committed")
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in info.aborted_transactions] == [(42, 0, 3)]
    assert (log_dir / "00000000000000000000.txnindex").stat().st_size == 34
    # The producer's next transaction continues its sequence: resending sequence 0
    # would be a duplicate the producer state answers without appending.
    next_txn = build_batch([Record(offset=i, timestamp=BASE_TS, value=b"t") for i in range(3)],
                           is_transactional=True, producer_id=42, producer_epoch=0, base_sequence=3)
    log.append_as_leader(next_txn)
    log.append_as_leader(_marker(42, ControlRecordType.COMMIT), origin="coordinator")
    assert log.last_stable_offset == 8
    assert len(log.read(4, 10_000, isolation="read_committed").aborted_transactions) == 0


def test_nonblocking_read_committed_reads_the_transaction_index_from_the_page_cache(make_log, log_dir: Path) -> None:
    log = make_log()
    log.append_as_leader(build_batch([Record(offset=i, timestamp=BASE_TS, value=b"t") for i in range(3)],
                                     is_transactional=True, producer_id=42, producer_epoch=0, base_sequence=0))
    log.append_as_leader(_marker(42, ControlRecordType.ABORT), origin="coordinator")
    cached = log.read(0, 10_000, isolation="read_committed", nonblocking=True)
    assert cached.aborted_transactions == log.read(0, 10_000, isolation="read_committed").aborted_transactions
    assert [(a.producer_id, a.first_offset, a.last_offset) for a in cached.aborted_transactions or ()] == [(42, 0, 3)]
    nonblocking_read_would_block(
        log_dir / "00000000000000000000.txnindex",
        lambda: log.read(0, 10_000, isolation="read_committed", nonblocking=True).aborted_transactions,
        cached.aborted_transactions)


# -- the nonblocking append (the event loop's fast path) ----------------------------------------


def _state(log: Log) -> tuple:
    return (log.log_end_offset, log.high_watermark, len(log.segments), log.size_in_bytes,
            log.leader_epoch_cache.entries())


def test_nonblocking_append_is_the_same_append(make_log) -> None:
    log = make_log()
    log.append_as_leader(batch(2))  # the first append checkpoints epoch 0: done blocking
    info = log.append_as_leader(batch(3), nonblocking=True)
    assert (info.first_offset, info.last_offset) == (2, 4)
    assert _offsets(log.read_bytes(0, 10_000)) == [0, 1, 2, 3, 4]


def test_a_blocking_append_assigns_offsets_in_writable_records(make_log) -> None:
    """A writable buffer is handed over: the blocking append writes offsets into it rather than
    into a copy. Read-only records are copied, and stay as the producer sent them."""
    log = make_log()
    log.append_as_leader(batch(2))
    sent = batch(3)
    owned = bytearray(sent)
    log.append_as_leader(memoryview(owned))
    assert owned != sent and [bp.header.base_offset for bp in iter_batch_headers(owned)] == [2]
    assert log.read_bytes(2, 10_000) == bytes(owned)
    read_only = memoryview(bytearray(sent)).toreadonly()
    log.append_as_leader(read_only)
    assert read_only == sent
    assert _offsets(log.read_bytes(0, 10_000)) == list(range(8))


@pytest.mark.parametrize("timestamp_type", ["CreateTime", "LogAppendTime"])
def test_a_refused_nonblocking_append_leaves_writable_records_as_sent(make_log, timestamp_type: str) -> None:
    """After AppendWouldBlock the caller appends the same records from a thread: the fast path
    patched the batch's header in place and put it back, so they still carry base offset 0
    (and, on a LogAppendTime topic, the producer's timestamps and CRC) and the retry is
    accepted. Both refusals that come after the patch: an fsync, and a roll."""
    log = make_log(LogConfig(flush_messages=3, message_timestamp_type=timestamp_type))
    log.append_as_leader(batch(2))
    sent = batch(1)
    owned = bytearray(sent)
    with pytest.raises(AppendWouldBlock):
        log.append_as_leader(memoryview(owned), nonblocking=True)  # the third message: an fsync
    assert owned == sent
    info = log.append_as_leader(memoryview(owned))
    assert (info.first_offset, info.last_offset) == (2, 2)
    assert _offsets(log.read_bytes(0, 10_000)) == [0, 1, 2]

    log = make_log(LogConfig(segment_bytes=2000, message_timestamp_type=timestamp_type))
    while True:
        sent = batch(3, value_size=200)
        owned = bytearray(sent)
        try:
            log.append_as_leader(memoryview(owned), nonblocking=True)
        except AppendWouldBlock:
            break
    assert owned == sent and len(log.segments) == 1
    end = log.log_end_offset
    info = log.append_as_leader(memoryview(owned))  # the blocking path rolls
    assert (info.first_offset, len(log.segments)) == (end, 2)


def test_a_nonblocking_append_assigns_offsets_in_one_writable_batch(make_log) -> None:
    """On the loop too, a writable buffer of one batch (a producer's batch per partition) is
    patched in place rather than copied first. Several batches, or read-only records, are
    validated in a copy and stay as sent."""
    log = make_log()
    log.append_as_leader(batch(2))
    owned = bytearray(batch(3))
    info = log.append_as_leader(memoryview(owned), nonblocking=True)
    assert [bp.header.base_offset for bp in iter_batch_headers(owned)] == [info.first_offset] == [2]
    assert log.read_bytes(2, 10_000) == bytes(owned)
    two = batch(1) + batch(1)
    owned = bytearray(two)
    info = log.append_as_leader(memoryview(owned), nonblocking=True, origin="coordinator")
    assert owned == two and (info.first_offset, info.last_offset) == (5, 6)
    read_only = memoryview(bytearray(batch(1))).toreadonly()
    log.append_as_leader(read_only, nonblocking=True)
    assert read_only == batch(1)
    assert _offsets(log.read_bytes(0, 10_000)) == list(range(8))


def test_nonblocking_append_refuses_a_new_leader_epoch_checkpoint(make_log) -> None:
    log = make_log()
    before = _state(log)
    with pytest.raises(AppendWouldBlock):
        log.append_as_leader(batch(1), nonblocking=True)
    assert _state(log) == before
    log.append_as_leader(batch(1))
    with pytest.raises(AppendWouldBlock):
        log.append_as_leader(batch(1), leader_epoch=3, nonblocking=True)
    assert log.leader_epoch_cache.entries() == [(0, 0)]


def test_nonblocking_append_refuses_a_roll(make_log) -> None:
    log = make_log(SMALL)
    log.append_as_leader(batch(1))
    while True:
        before = _state(log)
        try:
            log.append_as_leader(batch(3, value_size=200), nonblocking=True)
        except AppendWouldBlock:
            break
        assert len(log.segments) == 1  # never rolled on the fast path
    assert _state(log) == before
    log.append_as_leader(batch(3, value_size=200))  # the blocking path rolls
    assert len(log.segments) == 2


def test_nonblocking_append_refuses_an_fsync(make_log) -> None:
    log = make_log(LogConfig(flush_messages=3))
    log.append_as_leader(batch(1))
    log.append_as_leader(batch(1))  # two unflushed messages
    before = _state(log)
    with pytest.raises(AppendWouldBlock):
        log.append_as_leader(batch(1), nonblocking=True)  # the third message reaches flush.messages
    assert _state(log) == before


def test_nonblocking_append_does_not_wait_for_the_lock(make_log) -> None:
    log = make_log()
    log.append_as_leader(batch(1))
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with log._lock:
            held.set()
            release.wait(10)

    t = threading.Thread(target=holder)
    t.start()
    try:
        assert held.wait(10)
        before = _state(log)
        with pytest.raises(AppendWouldBlock):
            log.append_as_leader(batch(1), nonblocking=True)
        assert _state(log) == before
    finally:
        release.set()
        t.join(10)
    assert log.append_as_leader(batch(1), nonblocking=True).first_offset == 1


def test_recovery_rebuilds_the_transaction_index(make_log, log_dir: Path, clock: MockClock) -> None:
    """An unclean shutdown recovers every segment, which empties its `.txnindex`; the aborted
    transactions must come back as the appends wrote them, including one that began in an
    earlier segment and one still open across the roll."""
    from wire.records import ControlRecordType, build_control_batch

    log = make_log(LogConfig())
    sequences: dict[int, int] = {}

    def txn(pid: int, n: int = 2) -> None:
        seq = sequences.get(pid, 0)
        log.append_as_leader(batch(n, producer_id=pid, producer_epoch=0, base_sequence=seq, is_transactional=True))
        sequences[pid] = seq + n

    def marker(pid: int, kind: ControlRecordType) -> None:
        log.append_as_leader(build_control_batch(kind, producer_id=pid, producer_epoch=0, timestamp=BASE_TS),
                             origin="coordinator")

    txn(1), txn(2), marker(1, ControlRecordType.ABORT), txn(3)
    log.roll()
    txn(2), marker(2, ControlRecordType.COMMIT), txn(5), marker(3, ControlRecordType.ABORT)
    txn(4), marker(4, ControlRecordType.ABORT), marker(5, ControlRecordType.ABORT)

    def aborted(l: Log) -> list[list[tuple[int, int, int, int]]]:
        return [[(t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset)
                 for t in s.txn_index.all_aborted_txns()] for s in l.segments.values()]

    written = aborted(log)
    assert written[0] == [(1, 0, 4, 2)] and len(written[1]) == 3  # every segment has some
    log.close_handlers()  # a crash: no clean-shutdown state, every segment is recovered
    again = Log.open(log_dir, LogConfig(), clock=clock, had_clean_shutdown=False)
    try:
        assert again.segments.values()[0].base_offset == 0
        assert aborted(again) == written
        assert again.last_stable_offset == again.log_end_offset
    finally:
        again.close()
