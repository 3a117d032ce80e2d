"""Producer state on a real Log in a tmp dir: the five-batch window, sequence
wrap-around, the `.snapshot` byte layout, corrupt snapshots, rebuild from the
log, and producer.id.expiration.ms."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from crc32c import crc32c

from storage.clock import MockClock
from storage.log import Log
from storage.log_config import LogConfig
from storage.producer_state_manager import INT_MAX, ProducerStateManager, read_snapshot
from wire.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from wire.records import Record, build_batch

BASE_TS = 1_700_000_000_000


def batch(pid: int, epoch: int, seq: int, n: int = 2, ts: int = BASE_TS) -> bytes:
    return build_batch([Record(offset=i, timestamp=ts, value=b"v") for i in range(n)],
                       producer_id=pid, producer_epoch=epoch, base_sequence=seq)


@pytest.fixture
def clock() -> MockClock:
    return MockClock(BASE_TS)


def open_log(path: Path, clock: MockClock, **kwargs: object) -> Log:
    return Log.open(path, LogConfig(), clock=clock, **kwargs)  # type: ignore[arg-type]


def test_only_the_last_five_batches_are_recognised_as_duplicates(tmp_path: Path, clock: MockClock) -> None:
    log = open_log(tmp_path / "t-0", clock)
    firsts = [log.append_as_leader(batch(7, 0, seq)).first_offset for seq in range(0, 14, 2)]  # 7 batches
    assert firsts == list(range(0, 14, 2))
    for seq in range(4, 14, 2):  # the last five
        info = log.append_as_leader(batch(7, 0, seq))
        assert (info.first_offset, info.last_offset, info.valid_bytes) == (seq, seq + 1, 0)
    assert log.log_end_offset == 14
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(batch(7, 0, 2))  # too old to be recognised: a sequence gap
    log.close()


def test_sequence_wraps_after_int_max(tmp_path: Path, clock: MockClock) -> None:
    log = open_log(tmp_path / "t-0", clock)
    log.append_as_leader(batch(9, 0, INT_MAX - 1, n=2))  # sequences MAX-1, MAX
    assert log.append_as_leader(batch(9, 0, 0)).first_offset == 2
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(batch(9, 0, 5))
    log.close()


def test_epochs(tmp_path: Path, clock: MockClock) -> None:
    log = open_log(tmp_path / "t-0", clock)
    log.append_as_leader(batch(3, 1, 0))
    with pytest.raises(InvalidProducerEpochError):
        log.append_as_leader(batch(3, 0, 2))
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(batch(3, 2, 1))  # a new epoch must start at sequence 0
    assert log.append_as_leader(batch(3, 2, 0)).first_offset == 2
    log.close()


def test_snapshot_layout_on_roll_and_close(tmp_path: Path, clock: MockClock) -> None:
    log = open_log(tmp_path / "t-0", clock)
    log.append_as_leader(batch(11, 4, 0, n=3, ts=BASE_TS + 5))
    log.roll()
    assert sorted(p.name for p in log.dir.glob("*.snapshot")) == ["00000000000000000003.snapshot"]
    data = (log.dir / "00000000000000000003.snapshot").read_bytes()
    entry = struct.pack(">qhiqiqiq", 11, 4, 2, 2, 2, BASE_TS + 5, -1, -1)
    body = struct.pack(">i", 1) + entry
    assert len(entry) == 46
    assert data == struct.pack(">hI", 1, crc32c(body)) + body
    log.append_as_leader(batch(11, 4, 3))
    log.close()
    assert sorted(p.name for p in log.dir.glob("*.snapshot")) == [
        "00000000000000000003.snapshot", "00000000000000000005.snapshot"]
    entries = read_snapshot(log.dir / "00000000000000000005.snapshot")
    assert [(e.producer_id, e.producer_epoch, e.last_seq, e.last_data_offset) for e in entries] == [(11, 4, 4, 4)]


def test_corrupt_latest_snapshot_falls_back_and_replays(tmp_path: Path, clock: MockClock) -> None:
    log = open_log(tmp_path / "t-0", clock)
    log.append_as_leader(batch(5, 0, 0))
    log.roll()  # snapshot at 2
    log.append_as_leader(batch(5, 0, 2))
    log.close()  # snapshot at 4
    latest = log.dir / "00000000000000000004.snapshot"
    raw = bytearray(latest.read_bytes())
    raw[-1] ^= 0xFF
    latest.write_bytes(bytes(raw))
    log = open_log(tmp_path / "t-0", clock)  # not a clean shutdown: replays after snapshot 2
    assert not latest.exists()
    assert log.append_as_leader(batch(5, 0, 2)).first_offset == 2  # still a duplicate
    assert log.append_as_leader(batch(5, 0, 4)).first_offset == 4
    log.close()


def test_state_rebuilt_from_the_log_without_any_snapshot(tmp_path: Path, clock: MockClock) -> None:
    log = open_log(tmp_path / "t-0", clock)
    for seq in (0, 2, 4):
        log.append_as_leader(batch(8, 1, seq))
    log.flush()
    log.segments.close()  # a crash: no close, no snapshot
    assert not list((tmp_path / "t-0").glob("*.snapshot"))
    psm = ProducerStateManager(tmp_path / "t-0")
    assert psm.latest_snapshot_offset() is None
    log = open_log(tmp_path / "t-0", clock)
    assert log.append_as_leader(batch(8, 1, 2)).first_offset == 2
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(batch(8, 1, 7))
    log.close()


def test_idle_producers_expire(tmp_path: Path, clock: MockClock) -> None:
    log = open_log(tmp_path / "t-0", clock)
    log.append_as_leader(batch(1, 0, 0, ts=BASE_TS))
    log.append_as_leader(batch(3, 0, 0, ts=BASE_TS))
    log.append_as_leader(batch(2, 0, 0, ts=BASE_TS + 50_000))
    assert log.remove_expired_producers(BASE_TS + 60_000, 60_000) == 2
    assert sorted(log.producer_state_manager.producers) == [2]
    # Expired producers are unknown now: a retry is appended again, any sequence is accepted.
    assert log.append_as_leader(batch(1, 0, 0)).first_offset == 6
    assert log.append_as_leader(batch(3, 0, 40)).first_offset == 8
    log.close()
