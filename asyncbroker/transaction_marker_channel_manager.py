"""TransactionMarkerChannelManager: writes a decided transaction's COMMIT or ABORT markers,
then logs its completion.

On a Kafka cluster the markers travel as WriteTxnMarkers requests to each partition's
leader; on one node every partition is local, so a marker is an append of a control batch
(TxnMarkerWriter, the ReplicaManager). The semantics stay Kafka's: the transaction is
pending CompleteCommit/CompleteAbort while markers are out (other requests for the id get
CONCURRENT_TRANSACTIONS), a partition is crossed off once its marker is durable, a partition
that no longer exists needs none, a failed write is retried until it lands, and only then is
the completion appended to `__transaction_state`. A crash anywhere in between leaves the
PrepareCommit/PrepareAbort record as the last word, and the load at the next start sends the
markers again (appending one twice is harmless: the second completes nothing).
"""
from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from asyncbroker.transaction_metadata import TransactionMetadata, TxnTransitMetadata
from asyncbroker.transaction_state_manager import TransactionStateManager
from storage.clock import Clock
from storage.fault_injection import fault_point
from storage.topic_partition import TopicPartition
from wire.errors import ErrorCode, KafkaError
from wire.records import ControlRecordType

__all__ = ["TransactionMarkerChannelManager", "TxnMarkerWriter"]

log = logging.getLogger("kafka.coordinator.transaction.TransactionMarkerChannelManager")

RETRY_BACKOFF_S = 0.1


class TxnMarkerWriter(Protocol):
    async def write_txn_markers(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                                result: ControlRecordType, partitions: frozenset[TopicPartition]
                                ) -> dict[TopicPartition, ErrorCode]:
        """Append one marker per partition; each partition's outcome (UNKNOWN_TOPIC_OR_PARTITION: gone)."""
        ...


class TransactionMarkerChannelManager:
    def __init__(self, txn_manager: TransactionStateManager, writer: TxnMarkerWriter, clock: Clock) -> None:
        self.txn_manager = txn_manager
        self.writer = writer
        self.clock = clock
        self._tasks: set[asyncio.Task[None]] = set()
        self._closing = False

    def add_txn_markers_to_send(self, result: ControlRecordType, metadata: TransactionMetadata,
                                complete: TxnTransitMetadata) -> None:
        """Start writing the markers of `metadata` (pending `complete`) in the background."""
        task = asyncio.get_running_loop().create_task(self._send(result, metadata, complete),
                                                      name=f"txn-markers-{metadata.transactional_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self) -> None:
        """Wait for every marker write started so far (tests, and a clean shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def shutdown(self) -> None:
        self._closing = True
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def _send(self, result: ControlRecordType, metadata: TransactionMetadata,
                    complete: TxnTransitMetadata) -> None:
        txn_id = metadata.transactional_id
        fault_point("txn.markers")  # the decision is logged, no marker written yet
        # Markers carry the epoch of the decision; under transactions v2 that is the bumped one.
        producer_id, producer_epoch = metadata.producer_id, metadata.producer_epoch
        while metadata.partitions and not self._closing:
            outcomes = await self.writer.write_txn_markers(producer_id, producer_epoch,
                                                           self.txn_manager.coordinator_epoch, result,
                                                           frozenset(metadata.partitions))
            retry = False
            for tp, code in outcomes.items():
                if code in (ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                    metadata.remove_partition(tp)
                else:
                    log.info("Sending %s's transaction marker for partition %s has failed with error %s, "
                             "retrying", txn_id, tp, code.name)
                    retry = True
            if retry:
                await asyncio.sleep(RETRY_BACKOFF_S)
        if self._closing:
            return
        fault_point("txn.complete")  # every marker written, the completion not yet logged
        while not self._closing:
            try:
                await self.txn_manager.append_transaction_to_log(metadata, complete)
                log.debug("Completed transaction for %s with producer id %d, epoch %d", txn_id,
                          complete.producer_id, complete.producer_epoch)
                return
            except KafkaError as exc:
                # Kafka retries the completion until it lands; the prepared transition is re-made each time.
                log.warning("Failed to append %s's completion %r: %s; retrying", txn_id, complete,
                            exc.error_code.name)
                await asyncio.sleep(RETRY_BACKOFF_S)
                complete = metadata.prepare_complete(self.clock.milliseconds())
