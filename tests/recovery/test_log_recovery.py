"""LogLoader: clean vs unclean restarts, torn tails, corrupt batches, index rebuilds, temp files."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from recovery_testlib import BASE_TS, batch

from storage.clock import MockClock
from storage.log import Log
from storage.log_config import LogConfig
from storage.offset_index import OffsetIndex
from wire.records import decode_records, iter_batch_headers

SMALL = LogConfig(segment_bytes=1200, index_interval_bytes=200)


def _fill(log: Log, batches: int = 40, n: int = 3) -> None:
    for i in range(batches):
        log.append_as_leader(batch(n, ts=BASE_TS + i * 10))


def _all_offsets(log: Log) -> list[int]:
    """Every offset, reading segment after segment as a consumer would."""
    offsets: list[int] = []
    position = log.log_start_offset
    while position < log.log_end_offset:
        data = log.read_bytes(position, 10_000_000)
        batch_offsets = [r.offset for bp in iter_batch_headers(data) for r in decode_records(data, bp.position)]
        assert batch_offsets, f"no progress at {position}"
        offsets += [o for o in batch_offsets if o >= position]
        position = batch_offsets[-1] + 1
    return offsets


def _reopen(log_dir: Path, clock: MockClock, *, clean: bool, recovery_point: int = 0,
            config: LogConfig = SMALL, log_start: int = 0) -> Log:
    return Log.open(log_dir, config, clock=clock, had_clean_shutdown=clean, recovery_point=recovery_point,
                    log_start_offset=log_start)


def _loader_recovered(log_dir: Path, clock: MockClock, **kw) -> tuple[Log, list[int]]:
    """Open while recording which segments LogLoader recovered."""
    from storage import log_loader

    recovered: list[int] = []
    original = log_loader.LogLoader._recover_segment

    def spy(self, segment):  # noqa: ANN001
        recovered.append(segment.base_offset)
        return original(self, segment)

    log_loader.LogLoader._recover_segment = spy
    try:
        return _reopen(log_dir, clock, **kw), recovered
    finally:
        log_loader.LogLoader._recover_segment = original


@pytest.mark.parametrize("clean", [True, False])
def test_reopen_gives_same_log_end_offset(log_dir: Path, clock: MockClock, clean: bool) -> None:
    log = _reopen(log_dir, clock, clean=False)
    _fill(log)
    leo, segments = log.log_end_offset, log.segments.base_offsets()
    expected = _all_offsets(log)
    log.close()
    again = _reopen(log_dir, clock, clean=clean)
    assert again.log_end_offset == leo and again.segments.base_offsets() == segments
    assert _all_offsets(again) == expected
    assert again.fetch_offset_by_timestamp(BASE_TS + 200) == (60, BASE_TS + 200)
    assert again.append_as_leader(batch(1)).first_offset == leo
    again.close()


def test_clean_shutdown_skips_recovery(log_dir: Path, clock: MockClock) -> None:
    log = _reopen(log_dir, clock, clean=False)
    _fill(log)
    log.close()
    again, recovered = _loader_recovered(log_dir, clock, clean=True)
    assert recovered == []
    assert again.recovery_point == again.log_end_offset
    again.close()


def test_unclean_recovers_only_from_recovery_point(log_dir: Path, clock: MockClock) -> None:
    log = _reopen(log_dir, clock, clean=False)
    _fill(log)
    bases = log.segments.base_offsets()
    assert len(bases) >= 3
    recovery_point = bases[-2] + 1
    log.close()
    again, recovered = _loader_recovered(log_dir, clock, clean=False, recovery_point=recovery_point)
    assert recovered == bases[-2:]
    assert again.recovery_point == recovery_point
    again.close()


def test_unflushed_tail_recovered_after_crash(log_dir: Path, clock: MockClock) -> None:
    """No close(): indexes stay preallocated with zeros, as after a power cut."""
    log = _reopen(log_dir, clock, clean=False)
    _fill(log)
    leo = log.log_end_offset
    expected = _all_offsets(log)
    log.flush()
    # Simulate the crash: drop the in-memory log without trimming indexes.
    for seg in log.segments.values():
        seg.close_handlers()
    again = _reopen(log_dir, clock, clean=False, recovery_point=log.segments.base_offsets()[-1])
    assert again.log_end_offset == leo and _all_offsets(again) == expected
    again.close()


def test_torn_tail_truncated_at_every_byte(tmp_path: Path, clock: MockClock, torture: bool) -> None:
    """Cut the active segment at every byte position of its last batch."""
    src = tmp_path / "src-0"
    log = _reopen(src, clock, clean=False, config=LogConfig())
    for i in range(5):
        log.append_as_leader(batch(3, ts=BASE_TS + i))
    last_start = log.active_segment.size()
    log.append_as_leader(batch(4, value_size=40 if not torture else 400, ts=BASE_TS + 10))
    log.close()
    original = (src / "00000000000000000000.log").read_bytes()
    assert last_start < len(original)
    for cut in range(last_start, len(original)):
        d = tmp_path / f"cut{cut}-0"
        d.mkdir()
        (d / "00000000000000000000.log").write_bytes(original[:cut])
        again = _reopen(d, clock, clean=False, config=LogConfig())
        assert again.log_end_offset == 15
        assert again.active_segment.size() == last_start
        assert (d / "00000000000000000000.log").stat().st_size == last_start
        again.close()


@pytest.mark.parametrize("cut", [7, 1, "header"])
def test_torn_active_segment_recovered_even_after_clean_shutdown(log_dir: Path, clock: MockClock,
                                                                  cut: int | str) -> None:
    """Stricter than Kafka (which trusts the marker): a clean shutdown whose active segment does
    not end on a whole batch recovers that segment, so the next append never lands behind torn
    bytes and no offset is served twice."""
    log = _reopen(log_dir, clock, clean=False)
    _fill(log)
    active_base = log.segments.base_offsets()[-1]
    expected = _all_offsets(log)
    log.close()
    path = log_dir / f"{active_base:020d}.log"
    data = path.read_bytes()
    last_start = max(bp.position for bp in iter_batch_headers(data))
    keep = last_start + 20 if cut == "header" else len(data) - int(cut)  # a partial header or batch
    path.write_bytes(data[:keep])
    again, recovered = _loader_recovered(log_dir, clock, clean=True)
    assert recovered == [active_base]
    assert path.stat().st_size == last_start
    survivors = _all_offsets(again)
    assert survivors == expected[: len(survivors)] and len(survivors) == len(expected) - 3  # a prefix
    appended = again.append_as_leader(batch(2, ts=BASE_TS + 999))
    assert appended.first_offset == len(survivors)
    assert _all_offsets(again) == list(range(len(survivors) + 2))  # each offset once, in order
    again.close()


def test_torn_tail_after_clean_shutdown_drops_the_stale_producer_snapshot(log_dir: Path, clock: MockClock) -> None:
    """The snapshot written at shutdown covers the torn batch: the producer state is rebuilt from
    the surviving batches, so the producer may send the lost batch's sequence again."""
    from wire.records import Record, build_batch

    def idempotent(sequence: int, n: int = 3) -> bytes:
        return build_batch([Record(offset=i, timestamp=BASE_TS + sequence + i, key=b"k", value=b"v")
                            for i in range(n)], producer_id=11, producer_epoch=0, base_sequence=sequence)

    log = _reopen(log_dir, clock, clean=False)
    for sequence in (0, 3, 6):
        log.append_as_leader(idempotent(sequence))
    log.close()
    assert any(log_dir.glob("*.snapshot"))
    path = log_dir / "00000000000000000000.log"
    path.write_bytes(path.read_bytes()[:-7])
    again = _reopen(log_dir, clock, clean=True)
    assert again.log_end_offset == 6
    # Sequence 6 is neither a duplicate nor out of order: it is appended at the lost offsets.
    assert again.append_as_leader(idempotent(6)).first_offset == 6
    assert _all_offsets(again) == list(range(9))
    again.close()


def test_corrupt_batch_mid_log_truncates_there(log_dir: Path, clock: MockClock) -> None:
    log = _reopen(log_dir, clock, clean=False)
    _fill(log)
    bases = log.segments.base_offsets()
    victim = log.segments.get(bases[1])
    pos = victim.translate_offset(bases[1] + 7).position
    bad_offset = victim.translate_offset(bases[1] + 7).offset - 2  # batch of 3: its first offset
    log.close()
    path = log_dir / f"{bases[1]:020d}.log"
    data = bytearray(path.read_bytes())
    data[pos + 70] ^= 0xFF  # inside the records: CRC mismatch
    path.write_bytes(bytes(data))
    again = _reopen(log_dir, clock, clean=False)
    assert again.log_end_offset == bad_offset
    assert again.segments.base_offsets() == bases[:2]  # later segments are gone
    assert not (log_dir / f"{bases[2]:020d}.log").exists()
    assert _all_offsets(again) == list(range(bad_offset))
    again.close()


def test_corruption_below_recovery_point_not_scanned(log_dir: Path, clock: MockClock) -> None:
    log = _reopen(log_dir, clock, clean=False)
    _fill(log)
    bases = log.segments.base_offsets()
    leo = log.log_end_offset
    log.close()
    path = log_dir / f"{bases[0]:020d}.log"
    data = bytearray(path.read_bytes())
    data[100] ^= 0xFF
    path.write_bytes(bytes(data))
    again = _reopen(log_dir, clock, clean=False, recovery_point=bases[-1])
    assert again.log_end_offset == leo  # trusted: below the recovery point
    again.close()


@pytest.mark.parametrize("damage", ["missing", "corrupt"])
def test_missing_or_corrupt_index_rebuilt(log_dir: Path, clock: MockClock, damage: str) -> None:
    log = _reopen(log_dir, clock, clean=False)
    _fill(log)
    base = log.segments.base_offsets()[0]
    entries = log.segments.get(base).offset_index.entries_list()
    times = log.segments.get(base).time_index.entries_list()
    assert entries
    log.close()
    index = log_dir / f"{base:020d}.index"
    if damage == "missing":
        index.unlink()
        (log_dir / f"{base:020d}.timeindex").unlink()
    else:
        index.write_bytes(index.read_bytes()[:-3])
    again = _reopen(log_dir, clock, clean=True)
    assert again.segments.get(base).offset_index.entries_list() == entries
    assert again.segments.get(base).time_index.entries_list() == times
    again.close()
    assert OffsetIndex(index, base, 1 << 20).entries_list() == entries


def test_orphan_deleted_and_cleaned_files_removed(log_dir: Path, clock: MockClock) -> None:
    log = _reopen(log_dir, clock, clean=False)
    _fill(log, batches=5)
    log.close()
    junk = [
        "00000000000000009999.index", "00000000000000009999.timeindex", "00000000000000009999.txnindex",
        "00000000000000000000.log.deleted", "00000000000000000000.index.deleted",
        "00000000000000000500.log.cleaned", "00000000000000000500.index.cleaned",
    ]
    for name in junk:
        (log_dir / name).write_bytes(b"\x00" * 8)
    again = _reopen(log_dir, clock, clean=True)
    for name in junk:
        assert not (log_dir / name).exists(), name
    assert again.log_end_offset == 15
    again.close()


def test_swap_file_completes_interrupted_replacement(log_dir: Path, clock: MockClock, tmp_path: Path) -> None:
    """A crash after `.cleaned -> .swap`: the swap replaces the segments it covers."""
    log = _reopen(log_dir, clock, clean=False)
    _fill(log)
    bases = log.segments.base_offsets()
    log.close()
    # Build the replacement for the first two segments elsewhere, keeping only offsets 0..5.
    other = tmp_path / "other-0"
    repl = _reopen(other, clock, clean=False, config=LogConfig())
    repl.append_as_leader(batch(3, ts=BASE_TS))
    repl.append_as_leader(batch(3, ts=BASE_TS + 10))
    repl.close()
    swap_data = (other / "00000000000000000000.log").read_bytes()
    # The replacement must cover [0, bases[2]): give its last batch offsets up to bases[2]-1.
    from wire.records import assign_offsets
    buf = bytearray(swap_data)
    second = next(b for b in iter_batch_headers(buf) if b.position > 0).position
    assign_offsets(buf, second, bases[2] - 3, 0)
    (log_dir / "00000000000000000000.log.swap").write_bytes(bytes(buf))
    again = _reopen(log_dir, clock, clean=False)
    assert not list(log_dir.glob("*.swap"))
    assert again.segments.base_offsets() == [0] + bases[2:]
    offsets = _all_offsets(again)
    assert offsets[:6] == [0, 1, 2, bases[2] - 3, bases[2] - 2, bases[2] - 1]
    assert offsets[-1] == again.log_end_offset - 1
    again.close()


def test_swap_above_cleaned_file_is_discarded(log_dir: Path, clock: MockClock) -> None:
    log = _reopen(log_dir, clock, clean=False)
    _fill(log)
    bases = log.segments.base_offsets()
    leo = log.log_end_offset
    log.close()
    (log_dir / f"{bases[1]:020d}.log.cleaned").write_bytes(b"")
    (log_dir / f"{bases[1]:020d}.log.swap").write_bytes(b"\x00" * 10)
    again = _reopen(log_dir, clock, clean=False)
    assert not list(log_dir.glob("*.swap")) and not list(log_dir.glob("*.cleaned"))
    assert again.log_end_offset == leo and again.segments.base_offsets() == bases
    again.close()


def test_log_start_beyond_log_end_restarts_empty(log_dir: Path, clock: MockClock) -> None:
    log = _reopen(log_dir, clock, clean=False)
    _fill(log, batches=5)
    log.close()
    again = _reopen(log_dir, clock, clean=True, log_start=500)
    assert (again.log_start_offset, again.log_end_offset) == (500, 500)
    assert sorted(p.name for p in log_dir.glob("*.log")) == ["00000000000000000500.log"]
    again.close()


def test_log_start_checkpoint_respected(log_dir: Path, clock: MockClock) -> None:
    log = _reopen(log_dir, clock, clean=False)
    _fill(log, batches=5)
    log.close()
    again = _reopen(log_dir, clock, clean=True, log_start=7)
    assert again.log_start_offset == 7 and again.log_end_offset == 15
    again.close()


def test_empty_directory_starts_at_zero(log_dir: Path, clock: MockClock) -> None:
    log = _reopen(log_dir, clock, clean=False)
    assert (log.log_start_offset, log.log_end_offset, log.num_segments) == (0, 0, 1)
    log.close()
    assert sorted(os.listdir(log_dir)) == ["00000000000000000000.index", "00000000000000000000.log",
                                            "00000000000000000000.timeindex"]
