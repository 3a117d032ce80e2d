"""TransactionMetadata's prepare/complete steps, with Kafka 4.4's epoch rules."""
from __future__ import annotations

import pytest

from asyncbroker.transaction_metadata import (
    NO_PRODUCER_EPOCH,
    SHORT_MAX,
    TransactionMetadata,
    TransactionStateTransitionError,
)
from asyncbroker.transaction_state import TransactionState as S
from storage.topic_partition import TopicPartition
from wire.errors import ProducerFencedError

TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)


def fresh(tv: int = 2) -> TransactionMetadata:
    m = TransactionMetadata("tx", 1000, txn_timeout_ms=60_000, txn_last_update_timestamp=0,
                            client_transaction_version=tv)
    m.complete_transition_to(m.prepare_increment_producer_epoch(60_000, None, 1))
    return m


def test_new_id_starts_at_epoch_zero_with_no_last_epoch() -> None:
    m = fresh()
    assert (m.state, m.producer_id, m.producer_epoch, m.last_producer_epoch) == (S.EMPTY, 1000, 0, NO_PRODUCER_EPOCH)


def test_v2_commit_bumps_the_epoch_at_prepare_and_keeps_it_at_complete() -> None:
    m = fresh()
    m.complete_transition_to(m.prepare_add_partitions({TP0}, 5, 2))
    m.complete_transition_to(m.prepare_add_partitions({TP1}, 6, 2))
    assert (m.state, m.partitions, m.txn_start_timestamp) == (S.ONGOING, {TP0, TP1}, 5)
    prepared = m.prepare_abort_or_commit(S.PREPARE_COMMIT, 2, -1, 7, no_partition_added=False)
    assert (prepared.producer_epoch, prepared.last_producer_epoch, prepared.txn_start_timestamp) == (1, 0, 5)
    m.complete_transition_to(prepared)
    m.remove_partition(TP0)
    complete = m.prepare_complete(8)
    assert (complete.state, complete.producer_epoch, complete.partitions) == (S.COMPLETE_COMMIT, 1, frozenset())
    m.complete_transition_to(complete)
    assert (m.state, m.producer_epoch, m.txn_last_update_timestamp) == (S.COMPLETE_COMMIT, 1, 8)


def test_v1_end_txn_keeps_the_epoch() -> None:
    m = fresh(tv=0)
    m.complete_transition_to(m.prepare_add_partitions({TP0}, 5, 0))
    prepared = m.prepare_abort_or_commit(S.PREPARE_ABORT, 0, -1, 7, no_partition_added=False)
    assert prepared.producer_epoch == 0
    m.complete_transition_to(prepared)
    m.complete_transition_to(m.prepare_complete(8))
    assert (m.state, m.producer_epoch) == (S.COMPLETE_ABORT, 0)


def test_v2_may_abort_from_a_finished_state_with_its_own_start_time() -> None:
    m = fresh()
    prepared = m.prepare_abort_or_commit(S.PREPARE_ABORT, 2, -1, 9, no_partition_added=True)
    m.complete_transition_to(prepared)
    assert (m.state, m.txn_start_timestamp, m.producer_epoch) == (S.PREPARE_ABORT, 9, 1)


def test_commit_needs_an_ongoing_transaction() -> None:
    m = fresh()
    with pytest.raises(TransactionStateTransitionError, match="not a valid previous state"):
        m.prepare_abort_or_commit(S.PREPARE_COMMIT, 2, -1, 9, no_partition_added=True)
    assert m.pending_state is None


def test_a_pending_transition_blocks_the_next_until_completed_or_dropped() -> None:
    m = fresh()
    m.prepare_add_partitions({TP0}, 5, 2)
    with pytest.raises(TransactionStateTransitionError, match="pending state"):
        m.prepare_add_partitions({TP1}, 6, 2)
    m.abort_pending()
    assert m.state == S.EMPTY and not m.partitions
    m.complete_transition_to(m.prepare_add_partitions({TP1}, 6, 2))
    assert m.partitions == {TP1}


def test_init_producer_id_epochs_new_producer_recovery_retry_and_fencing() -> None:
    m = fresh()
    m.complete_transition_to(m.prepare_increment_producer_epoch(60_000, None, 2))
    assert (m.producer_epoch, m.last_producer_epoch) == (1, NO_PRODUCER_EPOCH)
    m.complete_transition_to(m.prepare_increment_producer_epoch(60_000, 1, 3))  # recovering producer
    assert (m.producer_epoch, m.last_producer_epoch) == (2, 1)
    m.complete_transition_to(m.prepare_increment_producer_epoch(60_000, 1, 4))  # retry of that call
    assert (m.producer_epoch, m.last_producer_epoch) == (2, 1)
    with pytest.raises(ProducerFencedError):
        m.prepare_increment_producer_epoch(60_000, 0, 5)
    assert m.pending_state is None


def test_fence_bumps_once_then_aborts() -> None:
    m = fresh()
    m.complete_transition_to(m.prepare_add_partitions({TP0}, 5, 2))
    fence = m.prepare_fence_producer_epoch()
    assert (fence.state, fence.producer_epoch) == (S.PREPARE_EPOCH_FENCE, 1)
    m.abort_pending()
    m.has_failed_epoch_fence = True
    assert m.prepare_fence_producer_epoch().producer_epoch == 0  # the failed bump is not repeated


def test_exhausted_epoch_rotates_the_producer_id() -> None:
    m = fresh()
    m.producer_epoch = SHORT_MAX - 1
    with pytest.raises(TransactionStateTransitionError, match="Cannot allocate"):
        m.prepare_increment_producer_epoch(60_000, None, 2)
    m.complete_transition_to(m.prepare_producer_id_rotation(2000, 60_000, 3, record_last_epoch=True))
    assert (m.producer_id, m.prev_producer_id, m.producer_epoch, m.last_producer_epoch) == (2000, 1000, 0,
                                                                                            SHORT_MAX - 1)


def test_v2_complete_moves_to_the_next_producer_id() -> None:
    m = fresh()
    m.complete_transition_to(m.prepare_add_partitions({TP0}, 5, 2))
    m.producer_epoch = SHORT_MAX - 1
    m.complete_transition_to(m.prepare_abort_or_commit(S.PREPARE_COMMIT, 2, 3000, 7, no_partition_added=False))
    assert (m.producer_epoch, m.next_producer_id) == (SHORT_MAX, 3000)
    m.complete_transition_to(m.prepare_complete(8))
    assert (m.producer_id, m.producer_epoch, m.prev_producer_id, m.next_producer_id) == (3000, 0, 1000, -1)


def test_completing_a_different_transition_than_prepared_is_refused() -> None:
    m = fresh()
    prepared = m.prepare_add_partitions({TP0}, 5, 2)
    other = m.snapshot()
    with pytest.raises(TransactionStateTransitionError, match="unexpected metadata"):
        m.complete_transition_to(other)
    m.complete_transition_to(prepared)


def test_dead_only_from_a_finished_state_and_never_completed() -> None:
    m = fresh()
    dead = m.prepare_dead()
    with pytest.raises(TransactionStateTransitionError):
        m.complete_transition_to(dead)
    m.abort_pending()
    m.complete_transition_to(m.prepare_add_partitions({TP0}, 5, 2))
    with pytest.raises(TransactionStateTransitionError):
        m.prepare_dead()


def test_log_value_and_from_log_round_trip() -> None:
    m = fresh()
    m.complete_transition_to(m.prepare_add_partitions({TP1, TP0}, 5, 2))
    value = m.snapshot().log_value()
    assert value.partitions == (TP0, TP1) and value.previous_producer_id == 1000
    loaded = TransactionMetadata.from_log("tx", value)
    assert (loaded.state, loaded.partitions, loaded.producer_epoch, loaded.last_producer_epoch,
            loaded.client_transaction_version) == (S.ONGOING, {TP0, TP1}, 0, NO_PRODUCER_EPOCH, 2)
