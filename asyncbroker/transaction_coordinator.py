"""TransactionCoordinator: Kafka's transaction protocol for one node.

Requests for a transactional id (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
EndTxn, DescribeTransactions, ListTransactions) are decided here against the id's
TransactionMetadata; every decision is first written to `__transaction_state`
(TransactionStateManager) and only then answered. EndTxn answers once its PrepareCommit or
PrepareAbort is durable; the COMMIT/ABORT markers are then written to every partition of
the transaction (TransactionMarkerChannelManager) and CompleteCommit/CompleteAbort logged.

Two timers run on the broker's scheduler (so tests move the clock and run them):
- "transaction-abort" fences and aborts transactions open past their timeout;
- "transactionalId-expiration" removes ids idle for transactional.id.expiration.ms.

The rules, including transactions v2's retries and epoch bumps, are Kafka 4.4's
TransactionCoordinator; its errors are raised as the typed Kafka errors clients get.
"""
from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Iterable

import msgspec

from asyncbroker.scheduler import Scheduler
from asyncbroker.transaction_marker_channel_manager import TransactionMarkerChannelManager, TxnMarkerWriter
from asyncbroker.transaction_metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    SHORT_MAX,
    TransactionMetadata,
    TxnTransitMetadata,
    is_epoch_exhausted,
    supports_epoch_bump,
)
from asyncbroker.transaction_state import TransactionState
from asyncbroker.transaction_state_manager import (
    TRANSACTION_STATE_TOPIC_NAME,
    TransactionConfig,
    TransactionStateManager,
    TransactionTopic,
)
from storage.clock import Clock
from storage.topic_partition import TopicPartition
from wire.errors import (
    ConcurrentTransactionsError,
    CoordinatorNotAvailableError,
    ErrorCode,
    InvalidPidMappingError,
    InvalidRegularExpressionError,
    InvalidRequestError,
    InvalidTransactionTimeoutError,
    InvalidTxnStateError,
    KafkaError,
    ProducerFencedError,
    TransactionalIdNotFoundError,
)
from wire.records import ControlRecordType

__all__ = ["DescribedTransaction", "ListedTransaction", "ProducerIdAndEpoch", "TransactionCoordinator"]

log = logging.getLogger("kafka.coordinator.transaction.TransactionCoordinator")

ABORT_JOB = "transaction-abort"
EXPIRATION_JOB = "transactionalId-expiration"


class ProducerIdAndEpoch(msgspec.Struct, frozen=True):
    producer_id: int
    producer_epoch: int


NO_PRODUCER = ProducerIdAndEpoch(NO_PRODUCER_ID, NO_PRODUCER_EPOCH)


class DescribedTransaction(msgspec.Struct, frozen=True):
    transactional_id: str
    state: str
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_start_time_ms: int
    partitions: tuple[TopicPartition, ...]


class ListedTransaction(msgspec.Struct, frozen=True):
    transactional_id: str
    producer_id: int
    state: str


class TransactionCoordinator:
    def __init__(self, config: TransactionConfig, topic: TransactionTopic, markers: TxnMarkerWriter,
                 generate_producer_id: Callable[[], int], clock: Clock, scheduler: Scheduler) -> None:
        self.config = config
        self.clock = clock
        self.scheduler = scheduler
        self.generate_producer_id = generate_producer_id
        self.txn_manager = TransactionStateManager(config, topic)
        self.marker_channel = TransactionMarkerChannelManager(self.txn_manager, markers, clock)
        self._active = False
        self._loading: asyncio.Task[None] | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    def startup(self) -> None:
        """Start the timers and load `__transaction_state` in the background."""
        log.info("Starting up.")
        self.scheduler.schedule(ABORT_JOB, self.abort_timed_out_transactions,
                                delay_ms=self.config.abort_timed_out_transactions_interval_ms,
                                period_ms=self.config.abort_timed_out_transactions_interval_ms)
        self.scheduler.schedule(EXPIRATION_JOB, self.remove_expired_transactional_ids,
                                delay_ms=self.config.remove_expired_transactional_ids_interval_ms,
                                period_ms=self.config.remove_expired_transactional_ids_interval_ms)
        self._active = True
        self._loading = asyncio.get_running_loop().create_task(self._load(), name="transaction-state-load")
        log.info("Startup complete.")

    async def _load(self) -> None:
        # Finish what a crash left between decision and markers.
        for metadata in await self.txn_manager.load():
            result = (ControlRecordType.COMMIT if metadata.state == TransactionState.PREPARE_COMMIT
                      else ControlRecordType.ABORT)
            self.marker_channel.add_txn_markers_to_send(result, metadata,
                                                        metadata.prepare_complete(self.clock.milliseconds()))

    async def wait_loaded(self) -> None:
        """Until `__transaction_state` is loaded (raising what failed the load)."""
        if self._loading is not None:
            await asyncio.shield(self._loading)

    async def shutdown(self) -> None:
        log.info("Shutting down.")
        self._active = False
        if self._loading is not None and not self._loading.done():
            self._loading.cancel()
        await self.marker_channel.shutdown()
        log.info("Shutdown complete.")

    def partition_for(self, transactional_id: str) -> int:
        return self.txn_manager.partition_for(transactional_id)

    # -- InitProducerId ------------------------------------------------------------------------
    async def handle_init_producer_id(self, transactional_id: str, transaction_timeout_ms: int,
                                      expected: ProducerIdAndEpoch | None) -> ProducerIdAndEpoch:
        """A transactional producer's id and epoch (an idempotent one's, without a transactional
        id, the handler hands out: asyncbroker.handlers.init_producer_id)."""
        if transactional_id == "":
            raise InvalidRequestError()
        if not self.txn_manager.validate_transaction_timeout_ms(transaction_timeout_ms):
            raise InvalidTransactionTimeoutError()
        metadata = self.txn_manager.get(transactional_id)
        if metadata is None:
            metadata = self.txn_manager.put_if_absent(TransactionMetadata(
                transactional_id, self.generate_producer_id(), txn_timeout_ms=transaction_timeout_ms,
                txn_last_update_timestamp=self.clock.milliseconds()))
        transit = self._prepare_init_producer_id_transit(metadata, transaction_timeout_ms, expected)
        if transit.state == TransactionState.PREPARE_EPOCH_FENCE:
            # Abort the open transaction first; the client retries and then gets a bumped epoch.
            await self._end_transaction(transactional_id, transit.producer_id, transit.producer_epoch,
                                        ControlRecordType.ABORT, from_client=False,
                                        client_transaction_version=self.config.transaction_version)
            raise ConcurrentTransactionsError()
        await self.txn_manager.append_transaction_to_log(metadata, transit)
        log.info("Initialized transactionalId %s with producerId %d and producer epoch %d on partition %s-%d",
                 transactional_id, transit.producer_id, transit.producer_epoch, TRANSACTION_STATE_TOPIC_NAME,
                 self.partition_for(transactional_id))
        return ProducerIdAndEpoch(transit.producer_id, transit.producer_epoch)

    def _prepare_init_producer_id_transit(self, m: TransactionMetadata, timeout_ms: int,
                                          expected: ProducerIdAndEpoch | None) -> TxnTransitMetadata:
        def valid_producer_id(e: ProducerIdAndEpoch) -> bool:
            # A just-created id, the current id, or a retry after a rotation the producer never heard of.
            return (m.producer_epoch == NO_PRODUCER_EPOCH or e.producer_id == m.producer_id
                    or (e.producer_id == m.prev_producer_id and is_epoch_exhausted(e.producer_epoch)))

        if m.pending_transition_in_progress:
            raise ConcurrentTransactionsError()
        if expected is not None and not valid_producer_id(expected):
            raise ProducerFencedError()
        if m.state in (TransactionState.PREPARE_ABORT, TransactionState.PREPARE_COMMIT):
            raise ConcurrentTransactionsError()
        if m.state in (TransactionState.COMPLETE_ABORT, TransactionState.COMPLETE_COMMIT, TransactionState.EMPTY):
            if m.is_producer_epoch_exhausted and (expected is None or expected.producer_epoch == m.producer_epoch):
                return m.prepare_producer_id_rotation(self.generate_producer_id(), timeout_ms,
                                                      self.clock.milliseconds(), expected is not None)
            return m.prepare_increment_producer_epoch(timeout_ms, None if expected is None else expected.producer_epoch,
                                                      self.clock.milliseconds())
        if m.state == TransactionState.ONGOING:
            # This epoch is never returned: the fence aborts, the client's retry bumps once more.
            return m.prepare_fence_producer_epoch()
        raise _illegal_state(m)

    # -- AddPartitionsToTxn / AddOffsetsToTxn --------------------------------------------------
    async def handle_add_partitions_to_transaction(self, transactional_id: str, producer_id: int,
                                                   producer_epoch: int, partitions: Iterable[TopicPartition],
                                                   client_transaction_version: int) -> None:
        if not transactional_id:
            raise InvalidRequestError()
        wanted = frozenset(partitions)
        m = self.txn_manager.get(transactional_id)
        if m is None or m.producer_id != producer_id:
            raise InvalidPidMappingError()
        if m.producer_epoch != producer_epoch:
            raise ProducerFencedError()
        if m.pending_transition_in_progress or m.state in (TransactionState.PREPARE_COMMIT,
                                                           TransactionState.PREPARE_ABORT):
            raise ConcurrentTransactionsError()
        if m.state == TransactionState.ONGOING and wanted <= m.partitions:
            return  # already part of the transaction: nothing to log
        transit = m.prepare_add_partitions(wanted, self.clock.milliseconds(), client_transaction_version)
        await self.txn_manager.append_transaction_to_log(m, transit)

    def handle_verify_partitions_in_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                                partitions: Iterable[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
        """AddPartitionsToTxn's verify-only form (KIP-890): are these partitions in the transaction?"""
        wanted = list(partitions)
        if not transactional_id:
            return dict.fromkeys(wanted, ErrorCode.INVALID_REQUEST)
        try:
            m = self.txn_manager.get(transactional_id)
        except KafkaError as exc:
            return dict.fromkeys(wanted, exc.error_code)
        if m is None or m.producer_id != producer_id:
            return dict.fromkeys(wanted, ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if m.producer_epoch != producer_epoch:
            return dict.fromkeys(wanted, ErrorCode.PRODUCER_FENCED)
        if m.state in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT):
            return dict.fromkeys(wanted, ErrorCode.CONCURRENT_TRANSACTIONS)
        return {tp: ErrorCode.NONE if tp in m.partitions else ErrorCode.TRANSACTION_ABORTABLE for tp in wanted}

    # -- EndTxn --------------------------------------------------------------------------------
    async def handle_end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                                     result: ControlRecordType, client_transaction_version: int) -> ProducerIdAndEpoch:
        """Commit or abort; returns the producer id and epoch the client continues with (v2)."""
        return await self._end_transaction(transactional_id, producer_id, producer_epoch, result,
                                           from_client=True, client_transaction_version=client_transaction_version)

    async def _end_transaction(self, transactional_id: str, producer_id: int, producer_epoch: int,
                               result: ControlRecordType, *, from_client: bool,
                               client_transaction_version: int) -> ProducerIdAndEpoch:
        if not transactional_id:
            raise InvalidRequestError()
        m = self.txn_manager.get(transactional_id)
        if m is None:
            raise InvalidPidMappingError()
        v2 = supports_epoch_bump(client_transaction_version)
        decided = (self._decide_end_v2(m, producer_id, producer_epoch, result, from_client, client_transaction_version)
                   if v2 else self._decide_end_v1(m, producer_id, producer_epoch, result, from_client))
        if isinstance(decided, ProducerIdAndEpoch):
            return decided  # a retry of an EndTxn that already completed
        transit, is_epoch_fence = decided
        try:
            await self.txn_manager.append_transaction_to_log(m, transit)
        except KafkaError as exc:
            if is_epoch_fence:
                # The bumped epoch never reached the client; a later fence must not bump it again.
                m.has_failed_epoch_fence = True
                log.warning("The coordinator failed to write an epoch fence transition for producer %s to the "
                            "transaction log with error %s. The epoch was increased to %d but not returned to "
                            "the client", transactional_id, exc.error_code.name, transit.producer_epoch)
            raise
        # The decision is durable: check nothing moved meanwhile, then write the markers.
        expected_epochs = (producer_epoch, producer_epoch + 1) if v2 else (producer_epoch,)
        if m.producer_id != producer_id:
            raise InvalidPidMappingError()
        if m.producer_epoch not in expected_epochs:
            raise ProducerFencedError()
        if m.pending_transition_in_progress:
            raise ConcurrentTransactionsError()
        expected_state = (TransactionState.PREPARE_COMMIT if result == ControlRecordType.COMMIT
                          else TransactionState.PREPARE_ABORT)
        if m.state != expected_state:
            raise self._invalid_state(transactional_id, m.state, result)
        answer = ProducerIdAndEpoch(m.producer_id, m.producer_epoch) if v2 else NO_PRODUCER
        self.marker_channel.add_txn_markers_to_send(result, m, m.prepare_complete(self.clock.milliseconds()))
        return answer

    def _decide_end_v1(self, m: TransactionMetadata, producer_id: int, producer_epoch: int,
                       result: ControlRecordType, from_client: bool
                       ) -> tuple[TxnTransitMetadata, bool] | ProducerIdAndEpoch:
        if m.producer_id != producer_id:
            raise InvalidPidMappingError()
        # A client never bumps the epoch itself: strict equality for its requests.
        if (from_client and producer_epoch != m.producer_epoch) or producer_epoch < m.producer_epoch:
            raise ProducerFencedError()
        if m.pending_transition_in_progress and m.pending_state != TransactionState.PREPARE_EPOCH_FENCE:
            raise ConcurrentTransactionsError()
        return self._decide_by_state(m, producer_epoch, result, is_retry=True, v2=False, client_transaction_version=0)

    def _decide_end_v2(self, m: TransactionMetadata, producer_id: int, producer_epoch: int,
                       result: ControlRecordType, from_client: bool, client_transaction_version: int
                       ) -> tuple[TxnTransitMetadata, bool] | ProducerIdAndEpoch:
        is_epoch_fence = m.pending_state == TransactionState.PREPARE_EPOCH_FENCE
        # The client retries an EndTxn whose epoch bump (or producer id rotation) it never heard of.
        retry_on_overflow = (not is_epoch_fence and m.prev_producer_id == producer_id
                             and producer_epoch == SHORT_MAX - 1 and m.producer_epoch == 0)
        retry_on_epoch_bump = not is_epoch_fence and m.producer_epoch == producer_epoch + 1
        if is_epoch_fence:
            valid_epoch = (not from_client or producer_epoch == m.producer_epoch) and producer_epoch >= m.producer_epoch
        elif m.state in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT):
            valid_epoch = retry_on_epoch_bump
        elif m.state in (TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT):
            valid_epoch = retry_on_epoch_bump or retry_on_overflow or producer_epoch == m.producer_epoch
        else:
            valid_epoch = producer_epoch == m.producer_epoch
        if m.producer_id != producer_id and not retry_on_overflow:
            raise InvalidPidMappingError()
        if not valid_epoch:
            raise ProducerFencedError()
        if m.pending_transition_in_progress and not is_epoch_fence:
            raise ConcurrentTransactionsError()
        return self._decide_by_state(m, producer_epoch, result, is_retry=retry_on_epoch_bump or retry_on_overflow,
                                     v2=True, client_transaction_version=client_transaction_version)

    def _decide_by_state(self, m: TransactionMetadata, producer_epoch: int, result: ControlRecordType, *,
                         is_retry: bool, v2: bool, client_transaction_version: int
                         ) -> tuple[TxnTransitMetadata, bool] | ProducerIdAndEpoch:
        S = TransactionState
        commit = result == ControlRecordType.COMMIT
        done = ProducerIdAndEpoch(m.producer_id, m.producer_epoch) if v2 else NO_PRODUCER

        def complete(target: TransactionState, no_partition_added: bool) -> tuple[TxnTransitMetadata, bool]:
            is_epoch_fence = m.pending_state == S.PREPARE_EPOCH_FENCE
            next_producer_id = NO_PRODUCER_ID
            if v2 and not is_epoch_fence and m.is_producer_epoch_exhausted:
                next_producer_id = self.generate_producer_id()
            if target == S.PREPARE_ABORT and is_epoch_fence:
                # Make way for the abort. Under v1 it carries the fenced epoch; under v2 the abort's
                # own bump is the fence (Kafka 4.4 aborts a fenced or timed-out v2 transaction at
                # the next epoch, once, and keeps the fenced epoch as the last one).
                m.pending_state = None
                if not v2:
                    m.producer_epoch = producer_epoch
                    m.last_producer_epoch = NO_PRODUCER_EPOCH
            return (m.prepare_abort_or_commit(target, client_transaction_version, next_producer_id,
                                              self.clock.milliseconds(), no_partition_added), is_epoch_fence)

        if m.state == S.ONGOING:
            return complete(S.PREPARE_COMMIT if commit else S.PREPARE_ABORT, False)
        if m.state == S.COMPLETE_COMMIT:
            if commit:
                if is_retry:
                    return done
                raise self._invalid_state(m.transactional_id, m.state, result)
            if v2 and not is_retry:
                return complete(S.PREPARE_ABORT, True)
            raise self._invalid_state(m.transactional_id, m.state, result)
        if m.state == S.COMPLETE_ABORT:
            if not commit:
                if is_retry:
                    return done
                if v2:
                    return complete(S.PREPARE_ABORT, True)
            raise self._invalid_state(m.transactional_id, m.state, result)
        if m.state == S.PREPARE_COMMIT:
            if commit:
                raise ConcurrentTransactionsError()
            raise self._invalid_state(m.transactional_id, m.state, result)
        if m.state == S.PREPARE_ABORT:
            if not commit:
                raise ConcurrentTransactionsError()
            raise self._invalid_state(m.transactional_id, m.state, result)
        if m.state == S.EMPTY:
            if v2 and not commit:
                return complete(S.PREPARE_ABORT, True)
            raise self._invalid_state(m.transactional_id, m.state, result)
        raise _illegal_state(m)

    @staticmethod
    def _invalid_state(transactional_id: str, state: TransactionState, result: ControlRecordType) -> KafkaError:
        log.warning("TransactionalId: %s's state is %s, but received transaction marker result to send: %s",
                    transactional_id, state.state_name, result.name)
        return InvalidTxnStateError()

    # -- DescribeTransactions / ListTransactions ------------------------------------------------
    def handle_describe_transactions(self, transactional_id: str) -> DescribedTransaction:
        if not self._active:
            raise CoordinatorNotAvailableError()
        if transactional_id == "":
            raise InvalidRequestError()
        m = self.txn_manager.get(transactional_id)
        if m is None or m.state == TransactionState.DEAD:
            raise TransactionalIdNotFoundError()
        return DescribedTransaction(transactional_id, m.state.state_name, m.producer_id, m.producer_epoch,
                                    m.txn_timeout_ms, m.txn_start_timestamp, tuple(sorted(m.partitions)))

    def handle_list_transactions(self, producer_ids: set[int], states: set[str], duration_filter_ms: int = -1,
                                 id_pattern: str | None = None) -> tuple[list[ListedTransaction], list[str]]:
        """The matching transactions, and the state filters Kafka does not know (answered back)."""
        if not self._active:
            raise CoordinatorNotAvailableError()
        try:
            pattern = re.compile(id_pattern) if id_pattern else None
        except re.error as exc:
            raise InvalidRegularExpressionError(f"Invalid transactional id pattern {id_pattern!r}: {exc}") from None
        unknown = sorted(s for s in states if TransactionState.from_name(s) is None)
        now = self.clock.milliseconds()
        listed = []
        for m in self.txn_manager.all():
            if m.state == TransactionState.DEAD:
                continue
            if producer_ids and m.producer_id not in producer_ids:
                continue
            if states and m.state.state_name not in states:
                continue
            if pattern is not None and pattern.fullmatch(m.transactional_id) is None:
                continue
            # Only open transactions have a duration; the filter keeps those running at least that long.
            if duration_filter_ms >= 0 and not (m.state == TransactionState.ONGOING
                                                and now - m.txn_start_timestamp >= duration_filter_ms):
                continue
            listed.append(ListedTransaction(m.transactional_id, m.producer_id, m.state.state_name))
        return listed, unknown

    # -- timers --------------------------------------------------------------------------------
    async def abort_timed_out_transactions(self) -> None:
        for candidate in self.txn_manager.timed_out_transactions(self.clock.milliseconds()):
            m = self.txn_manager.get(candidate.transactional_id)
            if m is None or m.producer_id != candidate.producer_id or m.pending_transition_in_progress:
                continue
            fence = m.prepare_fence_producer_epoch()
            try:
                await self._end_transaction(m.transactional_id, fence.producer_id, fence.producer_epoch,
                                            ControlRecordType.ABORT, from_client=False,
                                            client_transaction_version=self.config.transaction_version)
                log.info("Completed rollback of ongoing transaction for transactionalId %s due to timeout",
                         m.transactional_id)
            except (InvalidPidMappingError, ProducerFencedError, ConcurrentTransactionsError) as exc:
                log.debug("Rollback of ongoing transaction for transactionalId %s has been cancelled due to "
                          "error %s", m.transactional_id, exc.error_code.name)
            except KafkaError as exc:
                log.warning("Rollback of ongoing transaction for transactionalId %s failed due to error %s",
                            m.transactional_id, exc.error_code.name)

    async def remove_expired_transactional_ids(self) -> None:
        for m in self.txn_manager.expirable_transactional_ids(self.clock.milliseconds()):
            if m.pending_transition_in_progress:
                continue
            try:
                await self.txn_manager.append_transaction_to_log(m, m.prepare_dead())
                log.info("Removed expired transactional id %s", m.transactional_id)
            except KafkaError as exc:
                log.warning("Failed to remove expired transactional id %s: %s", m.transactional_id,
                            exc.error_code.name)


def _illegal_state(m: TransactionMetadata) -> RuntimeError:
    message = (f"Found transactionalId {m.transactional_id} with state {m.state.state_name}. "
               "This is illegal as we should never have transitioned to this state.")
    log.error(message)
    return RuntimeError(message)
