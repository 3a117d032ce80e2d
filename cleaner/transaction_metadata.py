"""CleanedTransactionMetadata: which batches belong to aborted transactions, and which
transaction markers may go, while the cleaner walks a log in offset order.

The cleaner never passes the last stable offset, so every transaction it sees is
decided; the aborted ones are listed up front from the segments' `.txnindex` files.
"""
from __future__ import annotations

import heapq
from typing import Callable

from storage.transaction_index import AbortedTxn
from wire.records import ControlRecordType

__all__ = ["CleanedTransactionMetadata"]


class _AbortedTransactionMetadata:
    __slots__ = ("aborted_txn", "last_observed_batch_offset")

    def __init__(self, aborted_txn: AbortedTxn) -> None:
        self.aborted_txn = aborted_txn
        self.last_observed_batch_offset: int | None = None


class CleanedTransactionMetadata:
    def __init__(self) -> None:
        self._aborted: list[tuple[int, int, AbortedTxn]] = []  # heap by first offset
        self._seq = 0
        self._ongoing_committed: set[int] = set()
        self._ongoing_aborted: dict[int, _AbortedTransactionMetadata] = {}
        self.cleaned_index_append: Callable[[AbortedTxn], None] | None = None
        """Where a retained ABORT marker re-records its transaction (the new segment's txn index)."""

    def add_aborted_transactions(self, txns: list[AbortedTxn]) -> None:
        for txn in txns:
            self._seq += 1
            heapq.heappush(self._aborted, (txn.first_offset, self._seq, txn))

    def _consume_aborted_up_to(self, offset: int) -> None:
        heap = self._aborted
        while heap and heap[0][0] <= offset:
            txn = heapq.heappop(heap)[2]
            if txn.producer_id not in self._ongoing_aborted:
                self._ongoing_aborted[txn.producer_id] = _AbortedTransactionMetadata(txn)

    def on_control_batch_read(self, last_offset: int, producer_id: int, control_key: bytes | None) -> bool:
        """A marker was read; True when it may be discarded (its transaction left no batches)."""
        self._consume_aborted_up_to(last_offset)
        if control_key is None:
            return True
        if len(control_key) < 4:
            return False
        control_type = int.from_bytes(control_key[2:4], "big", signed=True)
        if control_type == ControlRecordType.ABORT:
            meta = self._ongoing_aborted.pop(producer_id, None)
            # Keep the marker while any batch of its transaction is still in the log.
            if meta is not None and meta.last_observed_batch_offset is not None:
                if self.cleaned_index_append is not None:
                    self.cleaned_index_append(meta.aborted_txn)
                return False
            return True
        if control_type == ControlRecordType.COMMIT:
            # Discardable when no batch of the transaction was traversed.
            if producer_id in self._ongoing_committed:
                self._ongoing_committed.discard(producer_id)
                return False
            return True
        return False

    def on_batch_read(self, last_offset: int, producer_id: int, is_transactional: bool) -> bool:
        """A data batch was read; True when it belongs to an aborted transaction."""
        self._consume_aborted_up_to(last_offset)
        if is_transactional:
            meta = self._ongoing_aborted.get(producer_id)
            if meta is not None:
                meta.last_observed_batch_offset = last_offset
                return True
            self._ongoing_committed.add(producer_id)
        return False
