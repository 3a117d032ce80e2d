"""TransactionState: where one transactional id stands in Kafka's coordinator state machine.

The ids are the `TransactionStatus` byte of `__transaction_state` values and the names
are what DescribeTransactions and ListTransactions report, so both are Kafka's.
"""
from __future__ import annotations

import enum

__all__ = ["FINALIZED_TRANSACTION_VERSION", "TransactionState"]

# The transaction.version this coordinator runs (KIP-890 transactions v2), as ApiVersions finalizes it.
FINALIZED_TRANSACTION_VERSION = 2


class TransactionState(enum.IntEnum):
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def state_name(self) -> str:
        """The name clients see ("Ongoing", "PrepareEpochFence", ...)."""
        return _NAMES[self]

    @property
    def expiration_allowed(self) -> bool:
        """Only a transactional id with no transaction in flight may expire."""
        return self in (TransactionState.EMPTY, TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT)

    @property
    def valid_previous_states(self) -> frozenset["TransactionState"]:
        return _PREVIOUS[self]

    def can_follow(self, previous: "TransactionState") -> bool:
        return previous in _PREVIOUS[self]

    @classmethod
    def from_name(cls, name: str) -> "TransactionState | None":
        """The state a ListTransactions filter names; None for a name Kafka does not know."""
        return _BY_NAME.get(name)


_NAMES: dict[TransactionState, str] = {
    TransactionState.EMPTY: "Empty",
    TransactionState.ONGOING: "Ongoing",
    TransactionState.PREPARE_COMMIT: "PrepareCommit",
    TransactionState.PREPARE_ABORT: "PrepareAbort",
    TransactionState.COMPLETE_COMMIT: "CompleteCommit",
    TransactionState.COMPLETE_ABORT: "CompleteAbort",
    TransactionState.DEAD: "Dead",
    TransactionState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
_BY_NAME = {name: state for state, name in _NAMES.items()}

_S = TransactionState
_COMPLETE_OR_EMPTY = frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT})
_PREVIOUS: dict[TransactionState, frozenset[TransactionState]] = {
    _S.EMPTY: _COMPLETE_OR_EMPTY,
    _S.ONGOING: _COMPLETE_OR_EMPTY | {_S.ONGOING},
    _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
    # Transactions v2 lets a client that is unsure of the outcome abort from a finished state.
    _S.PREPARE_ABORT: _COMPLETE_OR_EMPTY | {_S.ONGOING, _S.PREPARE_EPOCH_FENCE},
    _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
    _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
    _S.DEAD: _COMPLETE_OR_EMPTY,
    _S.PREPARE_EPOCH_FENCE: frozenset({_S.ONGOING}),
}
