"""TransactionCoordinator over real logs: `__transaction_state` and data partitions are
storage Logs in a temp dir, markers are control batches appended to them, time is a MockClock
and the timers are run through the scheduler's run_now lever."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from asyncbroker.offsets_topic import StoredRecord
from asyncbroker.scheduler import Scheduler
from asyncbroker.transaction_coordinator import (
    ABORT_JOB,
    EXPIRATION_JOB,
    ProducerIdAndEpoch,
    TransactionCoordinator,
)
from asyncbroker.transaction_log import TxnRecord, TxnTombstone, read
from asyncbroker.transaction_state import TransactionState as S
from asyncbroker.transaction_state_manager import TRANSACTION_STATE_TOPIC_NAME, TransactionConfig
from storage.clock import MockClock
from storage.log import Log
from storage.log_config import LogConfig
from storage.topic_partition import TopicPartition
from wire.errors import (
    ConcurrentTransactionsError,
    ErrorCode,
    InvalidPidMappingError,
    InvalidRequestError,
    InvalidTransactionTimeoutError,
    InvalidTxnStateError,
    ProducerFencedError,
    TransactionalIdNotFoundError,
)
from wire.records import (
    ControlRecordType,
    Record,
    build_batch,
    build_control_batch,
    decode_records,
    iter_batch_headers,
    parse_control_record,
)

TXN_PARTITIONS = 3
T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
TIMEOUT_MS = 60_000
DEADLINE = 10.0


class Logs:
    """Real storage Logs standing in for the ReplicaManager's partitions."""

    def __init__(self, root: Path, clock: MockClock) -> None:
        self.root = root
        self.clock = clock
        self.logs: dict[TopicPartition, Log] = {}
        self.hold_markers: asyncio.Event | None = None
        self.marker_calls = 0

    def log(self, tp: TopicPartition) -> Log:
        if tp not in self.logs:
            self.logs[tp] = Log.open(self.root / tp.dir_name, LogConfig(), clock=self.clock)
        return self.logs[tp]

    def close(self) -> None:
        for log in self.logs.values():
            log.close()
        self.logs.clear()

    # TransactionTopic
    @property
    def num_partitions(self) -> int:
        return TXN_PARTITIONS

    async def append(self, partition: int, records: Sequence[tuple[bytes, bytes | None]]) -> int:
        log = self.log(TopicPartition(TRANSACTION_STATE_TOPIC_NAME, partition))
        batch = build_batch([Record(i, self.clock.milliseconds(), k, v) for i, (k, v) in enumerate(records)])
        return log.append_as_leader(batch).first_offset

    async def ensure_created(self) -> None:
        return None

    async def read_all(self) -> list[StoredRecord]:
        rows = []
        for partition in range(TXN_PARTITIONS):
            for record in self.records(TopicPartition(TRANSACTION_STATE_TOPIC_NAME, partition)):
                rows.append(StoredRecord(partition, record.offset, record.key, record.value))
        return rows

    def records(self, tp: TopicPartition) -> list[Record]:
        log = self.log(tp)
        data = log.read(log.log_start_offset, 1 << 24).read_bytes()
        return [r for pos in iter_batch_headers(data) for r in decode_records(data, pos.position)]

    # TxnMarkerWriter
    async def write_txn_markers(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                                result: ControlRecordType, partitions: frozenset[TopicPartition]
                                ) -> dict[TopicPartition, ErrorCode]:
        self.marker_calls += 1
        if self.hold_markers is not None:
            await self.hold_markers.wait()
        outcome = {}
        for tp in partitions:
            if tp.topic == "gone":
                outcome[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            self.log(tp).append_as_leader(build_control_batch(
                result, producer_id=producer_id, producer_epoch=producer_epoch,
                timestamp=self.clock.milliseconds(), coordinator_epoch=coordinator_epoch), origin="coordinator")
            outcome[tp] = ErrorCode.NONE
        return outcome

    def markers(self, tp: TopicPartition) -> list[tuple[ControlRecordType, int]]:
        log = self.log(tp)
        data = log.read(0, 1 << 24).read_bytes()
        found = []
        for pos in iter_batch_headers(data):
            if pos.header.is_control:
                rec = decode_records(data, pos.position)[0]
                found.append((ControlRecordType(parse_control_record(rec.key, rec.value).type),
                              pos.header.producer_epoch))
        return found

    def txn_states(self, txn_id: str) -> list[S | None]:
        states: list[S | None] = []
        for partition in range(TXN_PARTITIONS):
            for record in self.records(TopicPartition(TRANSACTION_STATE_TOPIC_NAME, partition)):
                assert record.key is not None
                got = read(record.key, record.value)
                if isinstance(got, TxnRecord) and got.transactional_id == txn_id:
                    states.append(got.value.state)
                elif isinstance(got, TxnTombstone) and got.transactional_id == txn_id:
                    states.append(None)
        return states


def config(tv: int = 2) -> TransactionConfig:
    return TransactionConfig(transactional_id_expiration_ms=604_800_000, transaction_max_timeout_ms=900_000,
                             transaction_topic_partitions=TXN_PARTITIONS, transaction_topic_segment_bytes=1 << 20,
                             abort_timed_out_transactions_interval_ms=10_000,
                             remove_expired_transactional_ids_interval_ms=3_600_000, transaction_version=tv)


class Harness:
    def __init__(self, tmp_path: Path) -> None:
        self.clock = MockClock()
        self.logs = Logs(tmp_path, self.clock)
        self.next_pid = 1000
        self.scheduler = Scheduler(threads=1)
        self.coordinator = self.new_coordinator()

    def new_coordinator(self, tv: int = 2) -> TransactionCoordinator:
        return TransactionCoordinator(config(tv), self.logs, self.logs, self.generate, self.clock, self.scheduler)

    def generate(self) -> int:
        self.next_pid += 1
        return self.next_pid

    async def restart(self, tv: int = 2) -> TransactionCoordinator:
        await self.coordinator.shutdown()
        await self.scheduler.shutdown()
        self.scheduler = Scheduler(threads=1)
        self.coordinator = self.new_coordinator(tv)
        self.coordinator.startup()
        await self.coordinator.wait_loaded()
        return self.coordinator

    def produce(self, tp: TopicPartition, pid: int, epoch: int, sequence: int = 0) -> None:
        self.logs.log(tp).append_as_leader(build_batch(
            [Record(0, self.clock.milliseconds(), b"k", b"v")], producer_id=pid, producer_epoch=epoch,
            base_sequence=sequence, is_transactional=True))


@pytest.fixture
async def h(tmp_path: Path) -> AsyncIterator[Harness]:
    harness = Harness(tmp_path)
    harness.coordinator.startup()
    await harness.coordinator.wait_loaded()
    yield harness
    await harness.coordinator.shutdown()
    await harness.scheduler.shutdown()
    harness.logs.close()


async def settle(h: Harness) -> None:
    await asyncio.wait_for(h.coordinator.marker_channel.drain(), DEADLINE)


async def begin(h: Harness, txn_id: str = "tx", tv: int = 2) -> ProducerIdAndEpoch:
    pid = await h.coordinator.handle_init_producer_id(txn_id, TIMEOUT_MS, None)
    await h.coordinator.handle_add_partitions_to_transaction(txn_id, pid.producer_id, pid.producer_epoch,
                                                             {T0, T1}, tv)
    h.produce(T0, pid.producer_id, pid.producer_epoch)
    return pid


async def test_init_producer_id_logs_an_empty_transaction(h: Harness) -> None:
    assert await h.coordinator.handle_init_producer_id("tx", TIMEOUT_MS, None) == ProducerIdAndEpoch(1001, 0)
    assert h.logs.txn_states("tx") == [S.EMPTY]


async def test_v2_commit_writes_markers_bumps_the_epoch_and_frees_the_lso(h: Harness) -> None:
    pid = await begin(h)
    assert h.logs.log(T0).last_stable_offset == 0  # the open transaction holds consumers back
    answer = await h.coordinator.handle_end_transaction("tx", pid.producer_id, 0, ControlRecordType.COMMIT, 2)
    assert answer == ProducerIdAndEpoch(pid.producer_id, 1)
    await settle(h)
    assert h.logs.markers(T0) == h.logs.markers(T1) == [(ControlRecordType.COMMIT, 1)]
    assert h.logs.log(T0).last_stable_offset == h.logs.log(T0).log_end_offset == 2
    assert h.logs.txn_states("tx") == [S.EMPTY, S.ONGOING, S.PREPARE_COMMIT, S.COMPLETE_COMMIT]
    described = h.coordinator.handle_describe_transactions("tx")
    assert (described.state, described.producer_epoch, described.partitions) == ("CompleteCommit", 1, ())


async def test_v2_abort_indexes_the_aborted_transaction(h: Harness) -> None:
    pid = await begin(h)
    await h.coordinator.handle_end_transaction("tx", pid.producer_id, 0, ControlRecordType.ABORT, 2)
    await settle(h)
    assert h.logs.markers(T0) == [(ControlRecordType.ABORT, 1)]
    aborted = h.logs.log(T0).read(0, 1 << 20, isolation="read_committed").aborted_transactions
    assert [(a.producer_id, a.first_offset) for a in aborted or []] == [(pid.producer_id, 0)]


async def test_v1_end_txn_keeps_the_epoch_and_answers_a_retry(h: Harness) -> None:
    pid = await begin(h, tv=0)
    answer = await h.coordinator.handle_end_transaction("tx", pid.producer_id, 0, ControlRecordType.COMMIT, 0)
    assert answer == ProducerIdAndEpoch(-1, -1)
    await settle(h)
    assert h.logs.markers(T0) == [(ControlRecordType.COMMIT, 0)]
    # The same EndTxn again (a retry after a lost answer) is accepted without a new marker.
    await h.coordinator.handle_end_transaction("tx", pid.producer_id, 0, ControlRecordType.COMMIT, 0)
    with pytest.raises(InvalidTxnStateError):
        await h.coordinator.handle_end_transaction("tx", pid.producer_id, 0, ControlRecordType.ABORT, 0)
    await settle(h)
    assert h.logs.markers(T0) == [(ControlRecordType.COMMIT, 0)]


async def test_v2_retries_of_end_txn(h: Harness) -> None:
    pid = await begin(h)
    h.logs.hold_markers = asyncio.Event()
    await h.coordinator.handle_end_transaction("tx", pid.producer_id, 0, ControlRecordType.COMMIT, 2)
    with pytest.raises(ConcurrentTransactionsError):  # its markers are still being written
        await h.coordinator.handle_end_transaction("tx", pid.producer_id, 0, ControlRecordType.COMMIT, 2)
    with pytest.raises(ConcurrentTransactionsError):
        await h.coordinator.handle_add_partitions_to_transaction("tx", pid.producer_id, 1, {T0}, 2)
    h.logs.hold_markers.set()
    await settle(h)
    # The lost answer's retry carries the old epoch: the completed commit is answered again.
    assert (await h.coordinator.handle_end_transaction("tx", pid.producer_id, 0, ControlRecordType.COMMIT, 2)
            == ProducerIdAndEpoch(pid.producer_id, 1))
    with pytest.raises(InvalidTxnStateError):  # a retry can't switch to abort
        await h.coordinator.handle_end_transaction("tx", pid.producer_id, 0, ControlRecordType.ABORT, 2)
    with pytest.raises(ProducerFencedError):  # an epoch from the future
        await h.coordinator.handle_end_transaction("tx", pid.producer_id, 5, ControlRecordType.ABORT, 2)
    # At the current epoch, v2 lets a client unsure of the outcome abort with nothing added.
    assert (await h.coordinator.handle_end_transaction("tx", pid.producer_id, 1, ControlRecordType.ABORT, 2)
            == ProducerIdAndEpoch(pid.producer_id, 2))
    await settle(h)
    assert h.coordinator.handle_describe_transactions("tx").state == "CompleteAbort"


async def test_end_txn_from_empty(h: Harness) -> None:
    pid = await h.coordinator.handle_init_producer_id("tx", TIMEOUT_MS, None)
    with pytest.raises(InvalidTxnStateError):
        await h.coordinator.handle_end_transaction("tx", pid.producer_id, 0, ControlRecordType.COMMIT, 2)
    with pytest.raises(InvalidTxnStateError):
        await h.coordinator.handle_end_transaction("tx", pid.producer_id, 0, ControlRecordType.ABORT, 0)
    assert (await h.coordinator.handle_end_transaction("tx", pid.producer_id, 0, ControlRecordType.ABORT, 2)
            == ProducerIdAndEpoch(pid.producer_id, 1))


async def test_a_second_producer_fences_the_first(h: Harness) -> None:
    zombie = await begin(h)
    with pytest.raises(ConcurrentTransactionsError):  # the open transaction is aborted first
        await h.coordinator.handle_init_producer_id("tx", TIMEOUT_MS, None)
    await settle(h)
    # The fence is the abort's only bump (as Kafka 4.4 answers); the retry bumps once more.
    assert h.logs.markers(T0) == [(ControlRecordType.ABORT, 1)]
    assert h.coordinator.handle_describe_transactions("tx").producer_epoch == 1
    fresh = await h.coordinator.handle_init_producer_id("tx", TIMEOUT_MS, None)
    assert fresh == ProducerIdAndEpoch(zombie.producer_id, 2)
    with pytest.raises(ProducerFencedError):
        await h.coordinator.handle_add_partitions_to_transaction("tx", zombie.producer_id, 0, {T0}, 2)
    with pytest.raises(ProducerFencedError):
        await h.coordinator.handle_end_transaction("tx", zombie.producer_id, 0, ControlRecordType.COMMIT, 2)
    with pytest.raises(ProducerFencedError):  # KIP-360: the zombie can't recover either
        await h.coordinator.handle_init_producer_id("tx", TIMEOUT_MS, ProducerIdAndEpoch(zombie.producer_id, 0))


async def test_init_producer_id_recovery_and_retry(h: Harness) -> None:
    pid = await h.coordinator.handle_init_producer_id("tx", TIMEOUT_MS, None)
    bumped = await h.coordinator.handle_init_producer_id("tx", TIMEOUT_MS, pid)
    assert bumped == ProducerIdAndEpoch(pid.producer_id, 1)
    assert await h.coordinator.handle_init_producer_id("tx", TIMEOUT_MS, pid) == bumped  # a retry
    with pytest.raises(ProducerFencedError):
        await h.coordinator.handle_init_producer_id("tx", TIMEOUT_MS, ProducerIdAndEpoch(999, 0))


async def test_request_checks(h: Harness) -> None:
    with pytest.raises(InvalidRequestError):
        await h.coordinator.handle_init_producer_id("", TIMEOUT_MS, None)
    with pytest.raises(InvalidTransactionTimeoutError):
        await h.coordinator.handle_init_producer_id("tx", 900_001, None)
    with pytest.raises(InvalidTransactionTimeoutError):
        await h.coordinator.handle_init_producer_id("tx", 0, None)
    with pytest.raises(InvalidPidMappingError):
        await h.coordinator.handle_add_partitions_to_transaction("nobody", 1, 0, {T0}, 2)
    with pytest.raises(InvalidPidMappingError):
        await h.coordinator.handle_end_transaction("nobody", 1, 0, ControlRecordType.COMMIT, 2)
    with pytest.raises(TransactionalIdNotFoundError):
        h.coordinator.handle_describe_transactions("nobody")
    with pytest.raises(InvalidRequestError):
        h.coordinator.handle_describe_transactions("")
    assert h.logs.txn_states("tx") == []


async def test_verify_only_add_partitions(h: Harness) -> None:
    pid = await begin(h)
    got = h.coordinator.handle_verify_partitions_in_transaction("tx", pid.producer_id, 0, [T0, TopicPartition("t", 7)])
    assert got == {T0: ErrorCode.NONE, TopicPartition("t", 7): ErrorCode.TRANSACTION_ABORTABLE}
    assert h.coordinator.handle_verify_partitions_in_transaction("tx", pid.producer_id, 3, [T0]) == {
        T0: ErrorCode.PRODUCER_FENCED}
    assert h.coordinator.handle_verify_partitions_in_transaction("nobody", 1, 0, [T0]) == {
        T0: ErrorCode.INVALID_PRODUCER_ID_MAPPING}


async def test_timed_out_transaction_is_aborted_by_the_broker(h: Harness) -> None:
    pid = await begin(h)
    await h.scheduler.run_now(ABORT_JOB)
    assert h.coordinator.handle_describe_transactions("tx").state == "Ongoing"
    h.clock.advance(TIMEOUT_MS + 1)
    await h.scheduler.run_now(ABORT_JOB)
    await settle(h)
    described = h.coordinator.handle_describe_transactions("tx")
    assert (described.state, described.producer_epoch) == ("CompleteAbort", 1)
    assert h.logs.markers(T0) == [(ControlRecordType.ABORT, 1)]
    # What the producer then hears, as Kafka 4.4 answers it (transactions v2):
    with pytest.raises(InvalidTxnStateError):  # its commit looks like a retry of the abort
        await h.coordinator.handle_end_transaction("tx", pid.producer_id, 0, ControlRecordType.COMMIT, 2)
    assert (await h.coordinator.handle_end_transaction("tx", pid.producer_id, 0, ControlRecordType.ABORT, 2)
            == ProducerIdAndEpoch(pid.producer_id, 1))
    assert (await h.coordinator.handle_end_transaction("tx", pid.producer_id, 1, ControlRecordType.ABORT, 2)
            == ProducerIdAndEpoch(pid.producer_id, 2))
    await settle(h)
    with pytest.raises(ProducerFencedError):
        await h.coordinator.handle_init_producer_id("tx", TIMEOUT_MS, ProducerIdAndEpoch(pid.producer_id, 0))


async def test_timed_out_v1_transaction(h: Harness) -> None:
    pid = await begin(h, tv=0)
    h.clock.advance(TIMEOUT_MS + 1)
    await h.scheduler.run_now(ABORT_JOB)
    await settle(h)
    assert h.coordinator.handle_describe_transactions("tx").producer_epoch == 1
    for result in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
        with pytest.raises(ProducerFencedError):
            await h.coordinator.handle_end_transaction("tx", pid.producer_id, 0, result, 0)
    assert (await h.coordinator.handle_end_transaction("tx", pid.producer_id, 1, ControlRecordType.ABORT, 0)
            == ProducerIdAndEpoch(-1, -1))
    # KIP-360 recovery from the epoch it had: the fence's epoch, handed over without another bump.
    assert (await h.coordinator.handle_init_producer_id("tx", TIMEOUT_MS, ProducerIdAndEpoch(pid.producer_id, 0))
            == ProducerIdAndEpoch(pid.producer_id, 1))


async def test_idle_transactional_ids_expire(h: Harness) -> None:
    pid = await begin(h)
    await h.coordinator.handle_end_transaction("tx", pid.producer_id, 0, ControlRecordType.COMMIT, 2)
    await settle(h)
    h.clock.advance(604_800_000)
    await h.scheduler.run_now(EXPIRATION_JOB)
    with pytest.raises(TransactionalIdNotFoundError):
        h.coordinator.handle_describe_transactions("tx")
    assert h.logs.txn_states("tx")[-1] is None  # a tombstone, so compaction forgets the id
    await h.restart()
    with pytest.raises(TransactionalIdNotFoundError):
        h.coordinator.handle_describe_transactions("tx")


async def test_a_crash_between_decision_and_markers_is_finished_at_restart(h: Harness) -> None:
    pid = await begin(h)
    h.logs.hold_markers = asyncio.Event()  # the markers never land before the "crash"
    await h.coordinator.handle_end_transaction("tx", pid.producer_id, 0, ControlRecordType.COMMIT, 2)
    assert h.logs.markers(T0) == []
    h.logs.hold_markers = None
    coordinator = await h.restart()
    await settle(h)
    assert h.logs.markers(T0) == h.logs.markers(T1) == [(ControlRecordType.COMMIT, 1)]
    assert coordinator.handle_describe_transactions("tx").state == "CompleteCommit"
    assert h.logs.txn_states("tx") == [S.EMPTY, S.ONGOING, S.PREPARE_COMMIT, S.COMPLETE_COMMIT]


async def test_an_ongoing_transaction_survives_a_restart_and_times_out(h: Harness) -> None:
    await begin(h)
    coordinator = await h.restart()
    assert coordinator.handle_describe_transactions("tx").state == "Ongoing"
    h.clock.advance(TIMEOUT_MS + 1)
    await h.scheduler.run_now(ABORT_JOB)
    await settle(h)
    assert coordinator.handle_describe_transactions("tx").state == "CompleteAbort"


async def test_a_deleted_partition_needs_no_marker(h: Harness) -> None:
    pid = await h.coordinator.handle_init_producer_id("tx", TIMEOUT_MS, None)
    gone = TopicPartition("gone", 0)
    await h.coordinator.handle_add_partitions_to_transaction("tx", pid.producer_id, 0, {T0, gone}, 2)
    await h.coordinator.handle_end_transaction("tx", pid.producer_id, 0, ControlRecordType.COMMIT, 2)
    await settle(h)
    assert h.coordinator.handle_describe_transactions("tx").state == "CompleteCommit"


async def test_list_transactions_filters(h: Harness) -> None:
    a = await begin(h, "a")
    b = await h.coordinator.handle_init_producer_id("b", TIMEOUT_MS, None)
    listed, unknown = h.coordinator.handle_list_transactions(set(), set())
    assert sorted((t.transactional_id, t.state) for t in listed) == [("a", "Ongoing"), ("b", "Empty")]
    listed, unknown = h.coordinator.handle_list_transactions({b.producer_id}, {"Empty", "Bogus"})
    assert [t.transactional_id for t in listed] == ["b"] and unknown == ["Bogus"]
    h.clock.advance(5_000)
    assert [t.transactional_id for t in h.coordinator.handle_list_transactions(set(), set(), 5_000)[0]] == ["a"]
    assert h.coordinator.handle_list_transactions(set(), set(), 5_001)[0] == []
    assert a.producer_id != b.producer_id
