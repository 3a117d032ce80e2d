"""read_partitions' answer for a partition the fetch has caught up with (at its log end): the
same as a read there (Log.read), without one; and which fetches are read on the loop."""
from __future__ import annotations

from pathlib import Path

import pytest

from asyncbroker.replica_manager import INLINE_READ_MAX_PARTITIONS, PartitionRead, read_partitions
from storage.errors import ReadWouldBlock
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


def _reads(log: Log, offsets: list[int]) -> list[PartitionRead]:
    out = []
    for offset in offsets:
        r = PartitionRead("t", None, 0, offset, 1 << 20)
        r.log = log
        out.append(r)
    return out


def test_a_fetch_of_many_caught_up_partitions_is_read_on_the_loop(log: Log) -> None:
    """On the loop (nonblocking) at most INLINE_READ_MAX_PARTITIONS partitions may need a read;
    caught-up ones do not count. One more, and nothing is read there (the caller reads it all
    on an IO thread)."""
    log.append_as_leader(_batch(3))
    few = _reads(log, [0] * INLINE_READ_MAX_PARTITIONS + [3] * 1000)
    assert read_partitions(few, 1 << 30, False, False, nonblocking=True) > 0
    assert all(r.error == ErrorCode.NONE and r.high_watermark == 3 for r in few)
    assert all(r.size > 0 for r in few[:INLINE_READ_MAX_PARTITIONS])
    many = _reads(log, [0] * (INLINE_READ_MAX_PARTITIONS + 1) + [3] * 1000)
    with pytest.raises(ReadWouldBlock):
        read_partitions(many, 1 << 30, False, False, nonblocking=True)
    assert not any(r.size for r in many)
    assert read_partitions(many, 1 << 30, False, False) > 0  # off the loop: no bound


def test_caught_up_partitions_leave_the_byte_budget_in_request_order(log: Log) -> None:
    """The budget goes to the partitions with data in request order, whichever caught-up
    partitions stand between them: the first gets a whole batch even beyond max_bytes
    (KIP-74), the next none once the budget is spent."""
    log.append_as_leader(_batch(3))
    log.append_as_leader(_batch(3))
    first_batch = len(_batch(3))
    reads = _reads(log, [6, 0, 6, 3, 6])
    total = read_partitions(reads, first_batch - 1, False, False)
    assert [r.size for r in reads] == [0, first_batch, 0, 0, 0]
    assert total == first_batch
    assert [r.error for r in reads] == [ErrorCode.NONE] * 5
    assert [r.high_watermark for r in reads] == [6] * 5
    reads = _reads(log, [6, 3, 6, 0])
    read_partitions(reads, 2 * first_batch, False, False)
    assert [r.size for r in reads] == [0, first_batch, 0, first_batch]  # what the first left
    reads = _reads(log, [6, 0, 6, 3])
    read_partitions(reads, 2 * first_batch, False, False)
    assert [r.size for r in reads] == [0, 2 * first_batch, 0, 0]


def test_a_caught_up_read_is_idle_at_its_logs_generation(log: Log) -> None:
    """idle_generation (what lets a fetch session skip the partition while it stays): the
    log's generation for a read caught up at the end with no open transaction; -1 for a read
    that read, one below an open transaction, one taken while a change was under way (an odd
    generation), and for the same read once it is no longer caught up."""
    log.append_as_leader(_batch(3))
    r = _read(log, 3, False)
    assert r.idle_generation == log.offsets_generation.value >= 0
    assert _read(log, 0, False).idle_generation == -1  # it read records
    log.offsets_generation.value += 1  # as _begin_offsets_change does, during a change
    try:
        during = _read(log, 3, False)
        assert during.error == ErrorCode.NONE and during.size == 0 and during.idle_generation == -1
    finally:
        log.offsets_generation.value += 1
    log.append_as_leader(_batch(2, producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True))
    at_end = _read(log, 5, False)  # caught up under read_uncommitted, yet read_committed would wait at 3
    assert at_end.error == ErrorCode.NONE and at_end.size == 0 and at_end.idle_generation == -1
    r.fetch_offset = 0  # the same read again, now short of the end
    read_partitions([r], 1 << 20, False, use_file_regions=False)
    assert r.size > 0 and r.idle_generation == -1
