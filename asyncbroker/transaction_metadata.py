"""TransactionMetadata: one transactional id's producer, epoch and transaction, and the
two-step way it changes.

Every change is first *prepared* (a TxnTransitMetadata, the record the coordinator
appends to `__transaction_state`), and only *completed* once that append is durable. While
a change is pending no other may start: that is what turns concurrent requests for one
transactional id into CONCURRENT_TRANSACTIONS instead of interleaved state. The rules
(which state may follow which, how epochs move under transactions v1 and v2, the checks a
completion makes) are Kafka 4.4's TransactionMetadata.
"""
from __future__ import annotations

import logging

import msgspec

from asyncbroker.transaction_log import TransactionLogValue
from asyncbroker.transaction_state import TransactionState
from storage.topic_partition import TopicPartition
from wire.errors import ProducerFencedError

__all__ = [
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "TransactionMetadata",
    "TransactionStateTransitionError",
    "TxnTransitMetadata",
    "supports_epoch_bump",
]

log = logging.getLogger("kafka.coordinator.transaction.TransactionMetadata")

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
SHORT_MAX = 32767


def supports_epoch_bump(transaction_version: int) -> bool:
    """Transactions v2 (KIP-890): every EndTxn bumps the epoch."""
    return transaction_version >= 2


def is_epoch_exhausted(producer_epoch: int) -> bool:
    """One epoch is kept back so the coordinator can always fence the current producer."""
    return producer_epoch >= SHORT_MAX - 1


class TransactionStateTransitionError(RuntimeError):
    """A transition the state machine forbids: a coordinator bug, never a client error."""


class TxnTransitMetadata(msgspec.Struct, frozen=True):
    """The state a prepared transition leads to (what is written to `__transaction_state`)."""

    producer_id: int
    prev_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    partitions: frozenset[TopicPartition]
    txn_start_timestamp: int
    txn_last_update_timestamp: int
    client_transaction_version: int

    def log_value(self) -> TransactionLogValue:
        # Kafka stores the partitions in no particular order; sorted keeps our files reproducible.
        return TransactionLogValue(
            self.producer_id, self.producer_epoch, self.txn_timeout_ms, self.state,
            tuple(sorted(self.partitions)) if self.state != TransactionState.EMPTY else (),
            self.txn_last_update_timestamp, self.txn_start_timestamp,
            previous_producer_id=self.prev_producer_id, next_producer_id=self.next_producer_id,
            client_transaction_version=self.client_transaction_version)


class TransactionMetadata:
    __slots__ = ("transactional_id", "producer_id", "prev_producer_id", "next_producer_id", "producer_epoch",
                 "last_producer_epoch", "txn_timeout_ms", "state", "partitions", "txn_start_timestamp",
                 "txn_last_update_timestamp", "client_transaction_version", "pending_state",
                 "has_failed_epoch_fence")

    def __init__(self, transactional_id: str, producer_id: int, *, prev_producer_id: int = NO_PRODUCER_ID,
                 next_producer_id: int = NO_PRODUCER_ID, producer_epoch: int = NO_PRODUCER_EPOCH,
                 last_producer_epoch: int = NO_PRODUCER_EPOCH, txn_timeout_ms: int,
                 state: TransactionState = TransactionState.EMPTY,
                 partitions: frozenset[TopicPartition] = frozenset(), txn_start_timestamp: int = -1,
                 txn_last_update_timestamp: int, client_transaction_version: int = 0) -> None:
        self.transactional_id = transactional_id
        self.producer_id = producer_id
        self.prev_producer_id = prev_producer_id
        self.next_producer_id = next_producer_id
        self.producer_epoch = producer_epoch
        self.last_producer_epoch = last_producer_epoch
        self.txn_timeout_ms = txn_timeout_ms
        self.state = state
        self.partitions: set[TopicPartition] = set(partitions)
        self.txn_start_timestamp = txn_start_timestamp
        self.txn_last_update_timestamp = txn_last_update_timestamp
        self.client_transaction_version = client_transaction_version
        self.pending_state: TransactionState | None = None
        # A fence whose log write failed: the epoch was already bumped once, do not bump again.
        self.has_failed_epoch_fence = False

    @classmethod
    def from_log(cls, transactional_id: str, value: TransactionLogValue) -> "TransactionMetadata":
        """The state a `__transaction_state` record describes (the loader's view of it)."""
        return cls(transactional_id, value.producer_id, prev_producer_id=value.previous_producer_id,
                   next_producer_id=value.next_producer_id, producer_epoch=value.producer_epoch,
                   last_producer_epoch=NO_PRODUCER_EPOCH, txn_timeout_ms=value.transaction_timeout_ms,
                   state=value.state, partitions=frozenset(value.partitions),
                   txn_start_timestamp=value.start_timestamp_ms,
                   txn_last_update_timestamp=value.last_update_timestamp_ms,
                   client_transaction_version=value.client_transaction_version)

    def __repr__(self) -> str:
        return (f"TransactionMetadata(transactionalId={self.transactional_id}, producerId={self.producer_id}, "
                f"prevProducerId={self.prev_producer_id}, nextProducerId={self.next_producer_id}, "
                f"producerEpoch={self.producer_epoch}, lastProducerEpoch={self.last_producer_epoch}, "
                f"txnTimeoutMs={self.txn_timeout_ms}, state={self.state.state_name}, "
                f"pendingState={self.pending_state.state_name if self.pending_state else None}, "
                f"topicPartitions={sorted(map(str, self.partitions))}, txnStartTimestamp={self.txn_start_timestamp}, "
                f"txnLastUpdateTimestamp={self.txn_last_update_timestamp}, "
                f"clientTransactionVersion={self.client_transaction_version})")

    # -- queries -----------------------------------------------------------------------------
    @property
    def pending_transition_in_progress(self) -> bool:
        return self.pending_state is not None

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    @property
    def has_pending_transaction(self) -> bool:
        return self.state in (TransactionState.ONGOING, TransactionState.PREPARE_ABORT,
                              TransactionState.PREPARE_COMMIT)

    def snapshot(self) -> TxnTransitMetadata:
        """The current state as a transition that changes nothing (no pending state is set)."""
        return self._transit(self.state)

    # -- preparing transitions ---------------------------------------------------------------
    def prepare_fence_producer_epoch(self) -> TxnTransitMetadata:
        """Bump the epoch to fence the current producer before aborting its transaction."""
        if self.producer_epoch == SHORT_MAX:
            log.error("Fencing producer %s %d with epoch equal to Short.MaxValue, this must not happen unless "
                      "there is a bug", self.transactional_id, self.producer_id)
        bump = not (self.has_failed_epoch_fence or self.producer_epoch == SHORT_MAX)
        return self._prepare(self._transit(TransactionState.PREPARE_EPOCH_FENCE,
                                           producer_epoch=self.producer_epoch + 1 if bump else self.producer_epoch))

    def prepare_increment_producer_epoch(self, new_txn_timeout_ms: int, expected_producer_epoch: int | None,
                                         now_ms: int) -> TxnTransitMetadata:
        """InitProducerId for a known id: bump the epoch (new producer), or answer a retry."""
        if self.is_producer_epoch_exhausted:
            raise TransactionStateTransitionError(
                f"Cannot allocate any more producer epochs for producerId {self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_producer_epoch is None:
            epoch, last = bumped, NO_PRODUCER_EPOCH  # a new producer instance: no retry may match later
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_producer_epoch == self.producer_epoch:
            epoch, last = bumped, self.producer_epoch  # the producer recovering from an abortable error
        elif expected_producer_epoch == self.last_producer_epoch:
            epoch, last = self.producer_epoch, self.last_producer_epoch  # a retry of a call that succeeded
        else:
            log.info("Expected producer epoch %d does not match current producer epoch %d or previous producer "
                     "epoch %d", expected_producer_epoch, self.producer_epoch, self.last_producer_epoch)
            raise ProducerFencedError()
        return self._prepare(self._transit(
            TransactionState.EMPTY, producer_epoch=epoch, last_producer_epoch=last, txn_timeout_ms=new_txn_timeout_ms,
            partitions=frozenset(), txn_start_timestamp=-1, txn_last_update_timestamp=now_ms))

    def prepare_producer_id_rotation(self, new_producer_id: int, new_txn_timeout_ms: int, now_ms: int,
                                     record_last_epoch: bool) -> TxnTransitMetadata:
        """A fresh producer id at epoch 0, once the old id's epochs are used up."""
        if self.has_pending_transaction:
            raise TransactionStateTransitionError("Cannot rotate producer ids while a transaction is still pending")
        return self._prepare(self._transit(
            TransactionState.EMPTY, producer_id=new_producer_id, producer_epoch=0,
            last_producer_epoch=self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
            txn_timeout_ms=new_txn_timeout_ms, partitions=frozenset(), txn_start_timestamp=-1,
            txn_last_update_timestamp=now_ms))

    def prepare_add_partitions(self, added: set[TopicPartition] | frozenset[TopicPartition], now_ms: int,
                               client_transaction_version: int) -> TxnTransitMetadata:
        starting = self.state in (TransactionState.EMPTY, TransactionState.COMPLETE_ABORT,
                                  TransactionState.COMPLETE_COMMIT)
        return self._prepare(self._transit(
            TransactionState.ONGOING, partitions=frozenset(self.partitions | set(added)),
            txn_start_timestamp=now_ms if starting else self.txn_start_timestamp,
            txn_last_update_timestamp=now_ms, client_transaction_version=client_transaction_version))

    def prepare_abort_or_commit(self, new_state: TransactionState, client_transaction_version: int,
                                next_producer_id: int, now_ms: int, no_partition_added: bool) -> TxnTransitMetadata:
        """EndTxn: PrepareCommit or PrepareAbort; under transactions v2 the epoch moves on now."""
        if supports_epoch_bump(client_transaction_version):
            if self.producer_epoch == SHORT_MAX and new_state == TransactionState.PREPARE_ABORT:
                log.error("Aborting producer %s %d with epoch equal to Short.MaxValue, this must not happen unless "
                          "there is a bug", self.transactional_id, self.producer_id)
                epoch = self.producer_epoch  # let the abort through so the producer can recover
            else:
                epoch = self.producer_epoch + 1
            last = self.producer_epoch
        else:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        return self._prepare(self._transit(
            new_state, producer_epoch=epoch, last_producer_epoch=last, next_producer_id=next_producer_id,
            # v2 may abort with nothing added: the start time is then the abort's own.
            txn_start_timestamp=now_ms if no_partition_added else self.txn_start_timestamp,
            txn_last_update_timestamp=now_ms, client_transaction_version=client_transaction_version))

    def prepare_complete(self, now_ms: int) -> TxnTransitMetadata:
        """Markers written: CompleteCommit or CompleteAbort, moving to the next producer id if one was set."""
        self.has_failed_epoch_fence = False
        target = (TransactionState.COMPLETE_COMMIT if self.state == TransactionState.PREPARE_COMMIT
                  else TransactionState.COMPLETE_ABORT)
        rotate = supports_epoch_bump(self.client_transaction_version) and self.next_producer_id != NO_PRODUCER_ID
        return self._prepare(self._transit(
            target, producer_id=self.next_producer_id if rotate else self.producer_id,
            producer_epoch=0 if rotate else self.producer_epoch, next_producer_id=NO_PRODUCER_ID,
            partitions=frozenset(), txn_last_update_timestamp=now_ms))

    def prepare_dead(self) -> TxnTransitMetadata:
        """transactional.id.expiration.ms passed: the id goes (written as a tombstone)."""
        return self._prepare(self._transit(TransactionState.DEAD, partitions=frozenset()))

    def remove_partition(self, tp: TopicPartition) -> None:
        """A marker was written (or its partition is gone): nothing more to send there."""
        if self.state not in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT):
            raise TransactionStateTransitionError(
                f"Transaction metadata's current state is {self.state.state_name}, and its pending state is "
                f"{self.pending_state} while trying to remove partitions whose txn marker has been sent")
        self.partitions.discard(tp)

    def _transit(self, state: TransactionState, *, producer_id: int | None = None,
                 next_producer_id: int | None = None, producer_epoch: int | None = None,
                 last_producer_epoch: int | None = None, txn_timeout_ms: int | None = None,
                 partitions: frozenset[TopicPartition] | None = None, txn_start_timestamp: int | None = None,
                 txn_last_update_timestamp: int | None = None,
                 client_transaction_version: int | None = None) -> TxnTransitMetadata:
        def pick(new: int | None, current: int) -> int:
            return current if new is None else new
        return TxnTransitMetadata(
            producer_id=pick(producer_id, self.producer_id),
            prev_producer_id=self.producer_id,
            next_producer_id=pick(next_producer_id, self.next_producer_id),
            producer_epoch=pick(producer_epoch, self.producer_epoch),
            last_producer_epoch=pick(last_producer_epoch, self.last_producer_epoch),
            txn_timeout_ms=pick(txn_timeout_ms, self.txn_timeout_ms),
            state=state,
            partitions=frozenset(self.partitions) if partitions is None else partitions,
            txn_start_timestamp=pick(txn_start_timestamp, self.txn_start_timestamp),
            txn_last_update_timestamp=pick(txn_last_update_timestamp, self.txn_last_update_timestamp),
            client_transaction_version=pick(client_transaction_version, self.client_transaction_version))

    def _prepare(self, transit: TxnTransitMetadata) -> TxnTransitMetadata:
        if self.pending_state is not None:
            raise TransactionStateTransitionError(
                f"Preparing transaction state transition to {transit.state.state_name} while it already has a "
                f"pending state {self.pending_state.state_name}")
        if transit.producer_id < 0:
            raise TransactionStateTransitionError(f"Illegal new producer id {transit.producer_id}")
        # A new id stays at NO_PRODUCER_EPOCH until its first InitProducerId; only Dead may keep it.
        if transit.state != TransactionState.DEAD and transit.producer_epoch < 0:
            raise TransactionStateTransitionError(f"Illegal new producer epoch {transit.producer_epoch}")
        if not transit.state.can_follow(self.state):
            raise TransactionStateTransitionError(
                f"Preparing transaction state transition to {transit.state.state_name} failed since the target "
                f"state {transit.state.state_name} is not a valid previous state of the current state "
                f"{self.state.state_name}")
        self.pending_state = transit.state
        return transit

    # -- completing --------------------------------------------------------------------------
    def abort_pending(self) -> None:
        """The append of a prepared transition failed: forget it, the state stays as it was."""
        self.pending_state = None

    def complete_transition_to(self, transit: TxnTransitMetadata) -> None:
        """Apply a prepared transition once its record is durable, checking it is the one prepared."""
        target = self.pending_state
        if target is None:
            raise TransactionStateTransitionError(
                f"TransactionalId {self.transactional_id} completing transaction state transition while it does "
                "not have a pending state")
        if target != transit.state or not self._valid_completion(transit):
            log.error("%r's transition to %r failed: this should not happen", self, transit)
            raise TransactionStateTransitionError(
                f"TransactionalId {self.transactional_id} failed transition to state {transit} due to unexpected "
                "metadata")
        self.producer_id = transit.producer_id
        self.prev_producer_id = transit.prev_producer_id
        self.next_producer_id = transit.next_producer_id
        self.producer_epoch = transit.producer_epoch
        self.last_producer_epoch = transit.last_producer_epoch
        self.txn_timeout_ms = transit.txn_timeout_ms
        self.partitions = set(transit.partitions)
        self.txn_start_timestamp = transit.txn_start_timestamp
        self.txn_last_update_timestamp = transit.txn_last_update_timestamp
        self.client_transaction_version = transit.client_transaction_version
        self.pending_state = None
        self.state = target

    def _valid_completion(self, t: TxnTransitMetadata) -> bool:
        S = TransactionState
        if t.state == S.EMPTY:  # InitProducerId
            return ((self.producer_epoch == t.producer_epoch or self._valid_epoch_bump(t))
                    and not t.partitions and t.txn_start_timestamp == -1)
        if t.state == S.ONGOING:  # AddPartitionsToTxn / AddOffsetsToTxn
            return (self._valid_producer_epoch(t) and t.partitions >= self.partitions
                    and self.txn_timeout_ms == t.txn_timeout_ms)
        if t.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):  # EndTxn
            empty_abort = (t.state == S.PREPARE_ABORT and supports_epoch_bump(t.client_transaction_version)
                           and self.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT))
            return (self._valid_producer_epoch(t) and self.partitions == t.partitions
                    and self.txn_timeout_ms == t.txn_timeout_ms
                    and (self.txn_start_timestamp == t.txn_start_timestamp or empty_abort))
        if t.state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):  # markers written
            return (self._valid_producer_epoch(t) and self.txn_timeout_ms == t.txn_timeout_ms
                    and t.txn_start_timestamp != -1)
        # PrepareEpochFence is always followed by PrepareAbort before anything is written, and a
        # Dead id is removed from the cache rather than completed.
        return False

    def _valid_producer_epoch(self, t: TxnTransitMetadata) -> bool:
        S = TransactionState
        v2 = supports_epoch_bump(t.client_transaction_version)
        if v2 and t.state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT) and t.producer_epoch == 0:
            # An epoch overflow moved to the next producer id: the last epoch the client saw is kept.
            return t.last_producer_epoch == self.last_producer_epoch and t.prev_producer_id == self.producer_id
        if v2 and t.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return t.last_producer_epoch == self.producer_epoch and t.producer_id == self.producer_id
        return t.producer_epoch == self.producer_epoch and t.producer_id == self.producer_id

    def _valid_epoch_bump(self, t: TxnTransitMetadata) -> bool:
        return t.producer_epoch == self.producer_epoch + 1 or (t.producer_epoch == 0
                                                               and t.producer_id != self.producer_id)
