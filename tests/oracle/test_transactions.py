"""Differential scenarios for transactions (issue 14): the coordinator APIs, what a
transaction leaves in a partition, and what read_committed consumers see, each compared
with Kafka 4.4 step by step."""

from __future__ import annotations

import pytest

import group_steps as gs
import txn_steps as ts
from data_steps import delete_records
from differential import BASE_TIMESTAMP, ScenarioRun
from steps import create_topic, list_offsets
from wire.records import ControlRecordType, build_control_batch

pytestmark = pytest.mark.timeout(240)

ROWS = [(b"k1", b"v1"), (b"k2", b"v2")]


def v2_commit(run: ScenarioRun) -> None:
    """Transactions v2: Produce v12 adds the partition itself, EndTxn v5 bumps the epoch."""
    create_topic(run, "t", 2, record=False)
    ts.wait_for_coordinator(run)
    p = ts.init(run, "tx")
    ts.send(run, "t", 0, "tx", ts.txn_batch(p.producer_id, 0, 0, ROWS), version=12)
    ts.read(run, "t", 0, committed=True)  # the open transaction holds read_committed at its start
    ts.lso(run, "t", 0)
    ts.add_partitions(run, "tx", p.producer_id, 0, {"t": [0, 1]}, version=5, verify_only=True)
    ts.describe(run, ["tx"])
    ts.end_txn(run, "tx", p.producer_id, 0, True)
    ts.wait_for_state(run, "tx", "CompleteCommit")
    ts.describe(run, ["tx", "nope", ""])
    ts.end_txn(run, "tx", p.producer_id, 0, True, label="retry of the commit")
    ts.read(run, "t", 0, committed=True)
    ts.read(run, "t", 0, committed=False)
    ts.lso(run, "t", 0)
    ts.list_transactions(run)
    ts.list_transactions(run, states=("CompleteCommit", "Bogus"))


def v1_abort(run: ScenarioRun) -> None:
    """Transactions v1: AddPartitionsToTxn v3, Produce v11, EndTxn v4 (the epoch stays)."""
    create_topic(run, "t", 2, record=False)
    ts.wait_for_coordinator(run)
    p = ts.init(run, "tx", version=4)
    ts.add_partitions(run, "tx", p.producer_id, 0, {"t": [0, 1]})
    ts.add_partitions(run, "tx", p.producer_id, 0, {"t": [0]}, label="already added")
    ts.send(run, "t", 0, None, ts.txn_batch(p.producer_id, 0, 0, ROWS), label="no transactional id")
    ts.send(run, "t", 0, "tx", ts.txn_batch(p.producer_id, 0, 0, ROWS))
    ts.send(run, "t", 1, "tx", ts.txn_batch(p.producer_id, 0, 0, ROWS[:1]))
    ts.describe(run, ["tx"])
    ts.end_txn(run, "tx", p.producer_id, 0, False, version=4)
    ts.wait_for_state(run, "tx", "CompleteAbort")
    for partition in (0, 1):
        ts.read(run, "t", partition, committed=True)
        ts.read(run, "t", partition, committed=False)
    # The next transaction of the same producer, committed after the aborted one.
    ts.add_partitions(run, "tx", p.producer_id, 0, {"t": [0]})
    ts.send(run, "t", 0, "tx", ts.txn_batch(p.producer_id, 0, 2, [(b"k3", b"v3")]))
    ts.end_txn(run, "tx", p.producer_id, 0, True, version=4)
    ts.wait_for_state(run, "tx", "CompleteCommit")
    ts.read(run, "t", 0, committed=True)
    ts.read(run, "t", 0, committed=True, offset=3, label="read_committed from inside the aborted transaction")
    ts.lso(run, "t", 0)


def open_transactions_and_the_lso(run: ScenarioRun) -> None:
    """Two producers' transactions interleaved: the LSO stops at the first open one."""
    create_topic(run, "t", 1, record=False)
    ts.wait_for_coordinator(run)
    a = ts.init(run, "a")
    b = ts.init(run, "b")
    ts.send(run, "t", 0, None, _plain(), label="plain before")
    ts.send(run, "t", 0, "a", ts.txn_batch(a.producer_id, 0, 0, ROWS), version=12)
    ts.send(run, "t", 0, "b", ts.txn_batch(b.producer_id, 0, 0, ROWS), version=12)
    ts.send(run, "t", 0, None, _plain(), label="plain inside")
    ts.lso(run, "t", 0)
    ts.end_txn(run, "b", b.producer_id, 0, False)
    ts.wait_for_state(run, "b", "CompleteAbort")
    ts.read(run, "t", 0, committed=True)
    ts.lso(run, "t", 0)
    ts.end_txn(run, "a", a.producer_id, 0, True)
    ts.wait_for_state(run, "a", "CompleteCommit")
    ts.read(run, "t", 0, committed=True)
    ts.lso(run, "t", 0)
    list_offsets(run, "t", [(0, -1), (0, -2)])


def _plain() -> bytes:
    return ts.batch([(b"plain", b"x")])


def fencing(run: ScenarioRun) -> None:
    """A second producer with the same id aborts the first one's transaction and fences it."""
    create_topic(run, "t", 1, record=False)
    ts.wait_for_coordinator(run)
    zombie = ts.init(run, "tx")
    ts.send(run, "t", 0, "tx", ts.txn_batch(zombie.producer_id, 0, 0, ROWS), version=12)
    ts.init(run, "tx", label="the new producer while the old one's transaction is open")
    ts.wait_for_state(run, "tx", "CompleteAbort")
    ts.describe(run, ["tx"])
    ts.init(run, "tx", label="the new producer retries")
    ts.send(run, "t", 0, "tx", ts.txn_batch(zombie.producer_id, 0, 2, ROWS), version=12, label="the zombie produces")
    ts.end_txn(run, "tx", zombie.producer_id, 0, True, label="the zombie commits")
    ts.end_txn(run, "tx", zombie.producer_id, 0, True, version=1, label="the zombie commits (v1)")
    ts.add_partitions(run, "tx", zombie.producer_id, 0, {"t": [0]}, version=1, label="the zombie adds (v1)")
    ts.init(run, "tx", producer_id=zombie.producer_id, producer_epoch=0, label="the zombie recovers (KIP-360)")
    ts.read(run, "t", 0, committed=False)


def bad_requests(run: ScenarioRun) -> None:
    create_topic(run, "t", 1, record=False)
    ts.wait_for_coordinator(run)
    p = ts.init(run, "tx")
    ts.init(run, "big", timeout_ms=900_001, label="a timeout above transaction.max.timeout.ms")
    ts.init(run, "neg", timeout_ms=0, label="a zero timeout")
    ts.end_txn(run, "tx", p.producer_id, 0, True, label="commit with nothing to commit")
    ts.end_txn(run, "tx", p.producer_id, 0, True, version=4, label="commit with nothing to commit (v4)")
    ts.end_txn(run, "tx", p.producer_id + 1000, 0, True, label="another producer id")
    ts.end_txn(run, "unknown", p.producer_id, 0, True, label="an unknown transactional id")
    ts.add_partitions(run, "tx", p.producer_id, 0, {"t": [0, 5], "missing": [0]}, label="unknown partitions")
    ts.add_partitions(run, "unknown", p.producer_id, 0, {"t": [0]}, label="unknown transactional id")
    ts.send(run, "t", 0, "tx", ts.txn_batch(p.producer_id, 0, 0, ROWS), version=11, label="not added (v11)")
    ts.send(run, "t", 0, "tx", ts.txn_batch(p.producer_id, 0, 0, ROWS), version=10, label="not added (v10)")
    ts.send(run, "t", 0, "tx", ts.txn_batch(p.producer_id, 7, 0, ROWS), version=12, label="wrong epoch (v12)")
    ts.add_partitions(run, "tx", p.producer_id, 0, {"t": [0]}, version=5, verify_only=True, label="verify unknown")
    marker = build_control_batch(ControlRecordType.COMMIT, producer_id=p.producer_id, producer_epoch=0,
                                 timestamp=BASE_TIMESTAMP)
    ts.send(run, "t", 0, "tx", marker, version=12, label="a client sends a transaction marker")
    ts.read(run, "t", 0, committed=False)
    ts.list_transactions(run, producer_ids=(p.producer_id,))
    ts.list_transactions(run, version=2, pattern=run.group("t") + ".*")
    ts.list_transactions(run, version=2, pattern="*")


def delete_records_inside_a_transaction(run: ScenarioRun) -> None:
    """DeleteRecords into an open transaction: how far it may go, and the LSO after it."""
    create_topic(run, "t", 1, record=False)
    ts.wait_for_coordinator(run)
    p = ts.init(run, "tx")
    ts.send(run, "t", 0, None, _plain(), label="plain")
    ts.send(run, "t", 0, "tx", ts.txn_batch(p.producer_id, 0, 0, ROWS), version=12)
    ts.send(run, "t", 0, None, _plain(), label="plain after")
    delete_records(run, {"t": {0: 2}})
    ts.lso(run, "t", 0)
    ts.read(run, "t", 0, committed=True, offset=2)
    delete_records(run, {"t": {0: 5}})
    ts.end_txn(run, "tx", p.producer_id, 0, False)
    ts.wait_for_state(run, "tx", "CompleteAbort")
    ts.lso(run, "t", 0)
    ts.read(run, "t", 0, committed=True, offset=2)


def transactional_offsets(run: ScenarioRun) -> None:
    """TxnOffsetCommit: invisible (UNSTABLE_OFFSET_COMMIT to require_stable readers) until
    the commit, gone with an abort."""
    create_topic(run, "t", 1, record=False)
    gs.wait_for_coordinator(run)
    ts.wait_for_coordinator(run)
    p = ts.init(run, "tx", version=4)
    ts.add_offsets(run, "tx", p.producer_id, 0, "g")
    ts.txn_offset_commit(run, "tx", p.producer_id, 0, "g", {"t": {0: 5}})
    gs.fetch_offsets(run, [("g", {"t": [0]})], version=7, require_stable=True, label="require_stable, pending")
    gs.fetch_offsets(run, [("g", {"t": [0]})], version=7, label="pending, not required stable")
    ts.end_txn(run, "tx", p.producer_id, 0, True, version=4)
    ts.wait_for_state(run, "tx", "CompleteCommit")
    gs.fetch_offsets(run, [("g", {"t": [0]})], version=7, require_stable=True, label="after the commit")
    ts.add_offsets(run, "tx", p.producer_id, 0, "g")
    ts.txn_offset_commit(run, "tx", p.producer_id, 0, "g", {"t": {0: 9}})
    ts.end_txn(run, "tx", p.producer_id, 0, False, version=4)
    ts.wait_for_state(run, "tx", "CompleteAbort")
    gs.fetch_offsets(run, [("g", {"t": [0]})], version=7, require_stable=True, label="after the abort")
    # Without AddOffsetsToTxn first (v3 verifies that the offsets partition is in the transaction).
    ts.txn_offset_commit(run, "tx", p.producer_id, 0, "g", {"t": {0: 11}, "missing": {0: 1}})


@pytest.mark.parametrize("scenario", [v2_commit, v1_abort, open_transactions_and_the_lso, fencing, bad_requests,
                                      delete_records_inside_a_transaction, transactional_offsets],
                         ids=lambda f: f.__name__)
def test_transactions(brokers, scenario) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(scenario)
