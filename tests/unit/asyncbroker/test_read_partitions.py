"""read_partitions' answer for a partition the fetch has caught up with (at its log end): the
same as a read there (Log.read), without one; and which fetches are read on the loop."""
from __future__ import annotations

from pathlib import Path

import pytest

from asyncbroker.replica_manager import INLINE_READ_MAX_PARTITIONS, PartitionRead, _few_behind, read_partitions
from storage.clock import MockClock
from storage.log import Log
from storage.log_config import LogConfig
from wire.errors import ErrorCode
from wire.records import Record, build_batch

TS = 1_700_000_000_000


def _batch(n: int, **kwargs: object) -> bytes:
    return build_batch([Record(offset=i, timestamp=TS + i, key=b"k", value=b"v") for i in range(n)], **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def log(tmp_path: Path) -> Log:
    opened = Log.open(tmp_path / "t-0", LogConfig(), clock=MockClock(TS))
    yield opened  # type: ignore[misc]
    if not opened.is_closed:
        opened.close()


def _read(log: Log, offset: int, read_committed: bool) -> PartitionRead:
    r = PartitionRead("t", None, 0, offset, 1 << 20)
    r.log = log
    read_partitions([r], 1 << 20, read_committed, use_file_regions=False)
    return r


def _answer(r: PartitionRead) -> tuple[object, ...]:
    return r.error, r.high_watermark, r.last_stable_offset, r.log_start_offset, r.records, r.size, r.aborted


def test_fetch_offsets_are_the_properties(log: Log) -> None:
    def properties() -> tuple[int, int, int, int]:
        return log.high_watermark, log.last_stable_offset, log.log_start_offset, log.log_end_offset

    assert log.fetch_offsets() == properties() == (0, 0, 0, 0)
    log.append_as_leader(_batch(3))
    assert log.fetch_offsets() == properties() == (3, 3, 0, 3)
    log.append_as_leader(_batch(2, producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True))
    assert log.fetch_offsets() == properties() == (5, 3, 0, 5)  # the open transaction holds the LSO


@pytest.mark.parametrize("read_committed", [False, True])
def test_at_the_log_end_the_answer_is_a_reads(log: Log, read_committed: bool) -> None:
    log.append_as_leader(_batch(3))
    got = _read(log, 3, read_committed)
    info = log.read(3, 1 << 20, isolation="read_committed" if read_committed else "read_uncommitted")
    assert info.size == 0
    # aborted transactions: an empty list under read_committed (Kafka's, not null), else none
    assert _answer(got) == (ErrorCode.NONE, 3, 3, 0, b"", 0,
                            [] if read_committed else None)
    assert [(a.producer_id, a.first_offset) for a in (info.aborted_transactions or ())] == []


def test_at_the_last_stable_offset_below_the_end_it_reads(log: Log) -> None:
    """An open transaction: read_committed stops at the LSO, short of the log end: a real read,
    with the same empty answer."""
    log.append_as_leader(_batch(3))
    log.append_as_leader(_batch(2, producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True))
    assert _answer(_read(log, 3, True)) == (ErrorCode.NONE, 5, 3, 0, b"", 0, [])
    uncommitted = _read(log, 3, False)
    assert uncommitted.size > 0 and uncommitted.last_stable_offset == 3


def test_an_offline_log_at_its_end_is_a_storage_error(log: Log) -> None:
    log.append_as_leader(_batch(3))
    log.close()
    assert _answer(_read(log, 3, False))[:4] == (ErrorCode.KAFKA_STORAGE_ERROR, -1, -1, -1)


def test_past_the_end_is_out_of_range(log: Log) -> None:
    log.append_as_leader(_batch(3))
    assert _read(log, 4, False).error == ErrorCode.OFFSET_OUT_OF_RANGE


def test_a_fetch_of_many_caught_up_partitions_is_read_on_the_loop(log: Log) -> None:
    log.append_as_leader(_batch(3))

    def reads(behind: int, caught_up: int) -> list[PartitionRead]:
        out = []
        for i in range(behind + caught_up):
            r = PartitionRead("t", None, 0, 0 if i < behind else 3, 1 << 20)
            r.log = log
            out.append(r)
        return out

    assert _few_behind(reads(INLINE_READ_MAX_PARTITIONS, 1000))
    assert not _few_behind(reads(INLINE_READ_MAX_PARTITIONS + 1, 1000))
