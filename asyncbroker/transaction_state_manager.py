"""TransactionStateManager: the transaction coordinator's cache of transactional ids and
its `__transaction_state` log.

The cache is rebuilt at startup by replaying the topic (the last record of an id wins, a
tombstone removes it). A change reaches the cache only after its record is appended: the
coordinator prepares a transition, this manager appends it, and completes it on success or
drops it on failure, so a crash at any point leaves the log as the truth. Transactions found
half-finished by the load (PrepareCommit or PrepareAbort: the decision was logged, some
markers may not be) are handed back to the coordinator to finish.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import msgspec

from asyncbroker.transaction_log import (
    TransactionLogFormatError,
    TxnRecord,
    TxnTombstone,
    encode_key,
    encode_value,
    read,
    value_version_for,
)
from asyncbroker.transaction_metadata import TransactionMetadata, TxnTransitMetadata
from asyncbroker.transaction_state import FINALIZED_TRANSACTION_VERSION, TransactionState
from asyncbroker.offsets_topic import StoredRecord
from asyncbroker.offsets_topic import partition_for as coordinator_partition_for
from storage.topic_name import TRANSACTION_STATE_TOPIC
from wire.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    KafkaError,
    NotCoordinatorError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
)

__all__ = [
    "TRANSACTION_STATE_TOPIC_NAME",
    "TransactionConfig",
    "TransactionStateManager",
    "TransactionTopic",
    "TransactionalIdAndProducerIdEpoch",
]

log = logging.getLogger("kafka.coordinator.transaction.TransactionStateManager")

TRANSACTION_STATE_TOPIC_NAME = TRANSACTION_STATE_TOPIC
"""transaction.version as ApiVersions advertises it: transactions v2 (KIP-890) are served."""


class TransactionConfig(msgspec.Struct, frozen=True):
    """The transaction coordinator's settings: a typed view of the broker config."""

    transactional_id_expiration_ms: int
    transaction_max_timeout_ms: int
    transaction_topic_partitions: int
    transaction_topic_segment_bytes: int
    abort_timed_out_transactions_interval_ms: int
    remove_expired_transactional_ids_interval_ms: int
    transaction_version: int
    """The finalized transaction.version feature level (2: epoch bump on every EndTxn)."""

    @classmethod
    def from_broker_config(cls, config: Any) -> "TransactionConfig":
        return cls(
            transactional_id_expiration_ms=config.transactional_id_expiration_ms,
            transaction_max_timeout_ms=config.transaction_max_timeout_ms,
            transaction_topic_partitions=config.transaction_state_log_num_partitions,
            transaction_topic_segment_bytes=config.transaction_state_log_segment_bytes,
            abort_timed_out_transactions_interval_ms=config.transaction_abort_timed_out_transaction_cleanup_interval_ms,
            remove_expired_transactional_ids_interval_ms=config.transaction_remove_expired_transaction_cleanup_interval_ms,
            transaction_version=FINALIZED_TRANSACTION_VERSION,
        )


class TransactionalIdAndProducerIdEpoch(msgspec.Struct, frozen=True):
    transactional_id: str
    producer_id: int
    producer_epoch: int


class TransactionTopic(Protocol):
    """Where the records go: `__transaction_state`, created on first use like Kafka's."""

    @property
    def num_partitions(self) -> int: ...

    async def append(self, partition: int, records: Sequence[tuple[bytes, bytes | None]]) -> int: ...

    async def ensure_created(self) -> None:
        """Create the topic if it does not exist yet (the first FindCoordinator does, as in Kafka)."""
        ...

    async def read_all(self) -> list[StoredRecord]:
        """Every record, in log order per partition."""
        ...


def partition_for(transactional_id: str, num_partitions: int) -> int:
    """Kafka's Utils.abs(transactionalId.hashCode) % partitions, so a log directory moves as is."""
    return coordinator_partition_for(transactional_id, num_partitions)


class TransactionStateManager:
    def __init__(self, config: TransactionConfig, topic: TransactionTopic) -> None:
        self.config = config
        self.topic = topic
        self._cache: dict[str, TransactionMetadata] = {}
        self._loading = True
        self.coordinator_epoch = 0
        """The epoch markers carry (one node: the `__transaction_state` leader epoch never moves)."""

    # -- loading -------------------------------------------------------------------------------
    async def load(self) -> list[TransactionMetadata]:
        """Replay `__transaction_state`; returns the transactions whose markers must be (re)written."""
        rows = await self.topic.read_all()
        cache: dict[str, TransactionMetadata] = {}
        for partition, offset, key, value, _producer_id, _control in rows:
            if key is None:
                continue
            try:
                got = read(key, value)
            except TransactionLogFormatError as exc:
                # Kafka's loader fails the partition on a record it cannot read; one bad record
                # must not lose every other id, so it is skipped with its place named.
                log.error("Skipping unreadable record at offset %d of %s-%d: %s", offset,
                          TRANSACTION_STATE_TOPIC_NAME, partition, exc)
                continue
            if isinstance(got, TxnTombstone):
                cache.pop(got.transactional_id, None)
            elif isinstance(got, TxnRecord):
                cache[got.transactional_id] = TransactionMetadata.from_log(got.transactional_id, got.value)
        self._cache = cache
        self._loading = False
        pending = [m for m in cache.values() if m.state in (TransactionState.PREPARE_COMMIT,
                                                             TransactionState.PREPARE_ABORT)]
        log.info("Finished loading %d transaction metadata from %s (%d to complete)", len(cache),
                 TRANSACTION_STATE_TOPIC_NAME, len(pending))
        return pending

    # -- the cache -----------------------------------------------------------------------------
    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.topic.num_partitions)

    def get(self, transactional_id: str) -> TransactionMetadata | None:
        """The id's metadata; COORDINATOR_LOAD_IN_PROGRESS until the load finished, as Kafka answers."""
        if self._loading:
            raise CoordinatorLoadInProgressError()
        return self._cache.get(transactional_id)

    def put_if_absent(self, metadata: TransactionMetadata) -> TransactionMetadata:
        if self._loading:
            raise CoordinatorLoadInProgressError()
        return self._cache.setdefault(metadata.transactional_id, metadata)

    def all(self) -> Iterable[TransactionMetadata]:
        return self._cache.values()

    def validate_transaction_timeout_ms(self, timeout_ms: int) -> bool:
        return 0 < timeout_ms <= self.config.transaction_max_timeout_ms

    # -- writing -------------------------------------------------------------------------------
    async def append_transaction_to_log(self, metadata: TransactionMetadata, transit: TxnTransitMetadata) -> None:
        """Make a prepared transition durable, then apply it; on failure the transition is dropped.

        Raises the error the client is told (Kafka's mapping of append errors for coordinators).
        """
        txn_id = metadata.transactional_id
        value = None if transit.state == TransactionState.DEAD else encode_value(
            transit.log_value(), value_version_for(self.config.transaction_version))
        try:
            await self.topic.append(self.partition_for(txn_id), [(encode_key(txn_id), value)])
        except BaseException as exc:
            metadata.abort_pending()
            error = _coordinator_error(exc)
            log.info("Appending %s's new metadata %r failed due to %s", txn_id, transit, type(error).__name__)
            raise error from exc
        if transit.state == TransactionState.DEAD:
            metadata.abort_pending()
            self._cache.pop(txn_id, None)
            return
        metadata.complete_transition_to(transit)

    # -- timers --------------------------------------------------------------------------------
    def timed_out_transactions(self, now_ms: int) -> list[TransactionalIdAndProducerIdEpoch]:
        """Ongoing transactions past their timeout and not already changing."""
        return [TransactionalIdAndProducerIdEpoch(m.transactional_id, m.producer_id, m.producer_epoch)
                for m in self._cache.values()
                if m.state == TransactionState.ONGOING and not m.pending_transition_in_progress
                and m.txn_start_timestamp + m.txn_timeout_ms < now_ms]

    def expirable_transactional_ids(self, now_ms: int) -> list[TransactionMetadata]:
        """Ids idle for transactional.id.expiration.ms with nothing in flight."""
        horizon = now_ms - self.config.transactional_id_expiration_ms
        return [m for m in self._cache.values()
                if m.state.expiration_allowed and not m.pending_transition_in_progress
                and m.txn_last_update_timestamp <= horizon]


def _coordinator_error(exc: BaseException) -> KafkaError:
    """What a failed `__transaction_state` append tells the client (Kafka's TransactionStateManager)."""
    if isinstance(exc, (UnknownTopicOrPartitionError, NotEnoughReplicasError, CoordinatorNotAvailableError)):
        return CoordinatorNotAvailableError()
    if isinstance(exc, (NotLeaderOrFollowerError, NotCoordinatorError)):
        return NotCoordinatorError()
    if isinstance(exc, (RecordTooLargeError, RecordBatchTooLargeError)):
        return UnknownServerError()
    if isinstance(exc, KafkaError):
        return exc
    return UnknownServerError(str(exc))
