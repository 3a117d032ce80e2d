"""The leader epoch of every partition here, and Kafka's rules for the epochs clients send.

A single node leads every partition in epoch 0 from its creation on, as Kafka's
single-node cluster does: Metadata reports it, batches are stamped with it, and
ListOffsets, OffsetForLeaderEpoch and Fetch check the epochs clients send against
it with Kafka's errors.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wire.errors import FencedLeaderEpochError, UnknownLeaderEpochError

if TYPE_CHECKING:
    from storage.log import Log

UNDEFINED = -1
# The epoch Metadata reports for every partition (see metadata.py); fencing
# and the answer must agree with it or clients would loop on FENCED_LEADER_EPOCH.
LEADER_EPOCH = 0


def become_leader(log: Log) -> None:
    """This node leads `log` in LEADER_EPOCH from its end on (when a partition is created, and
    for every log found at startup): Kafka writes that to the leader-epoch checkpoint at once
    (`0 0` for a new partition). Blocking: it may write and fsync the checkpoint."""
    log.maybe_assign_epoch_start_offset(LEADER_EPOCH, log.log_end_offset)


def end_offset_for(log: Any, epoch: int) -> tuple[int, int]:
    """(epoch, end offset) as Kafka's LeaderEpochFileCache.endOffsetFor answers with one
    epoch, 0, starting at the log start offset: the current epoch ends at the log end
    offset; an epoch below every known one (other than -1, "undefined") gets the start
    of the first known epoch; -1 and epochs above the current one are unknown
    (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)."""
    if epoch == LEADER_EPOCH:
        return (LEADER_EPOCH, int(log.log_end_offset))
    if epoch < UNDEFINED:
        return (epoch, int(log.log_start_offset))
    return (UNDEFINED, UNDEFINED)


def check_current_leader_epoch(current: int) -> None:
    """Kafka's checkCurrentLeaderEpoch as ListOffsets and OffsetForLeaderEpoch apply it: -1
    means the client gave none; any other epoch must be this node's."""
    if current == UNDEFINED:
        return
    if current > LEADER_EPOCH:
        raise UnknownLeaderEpochError(f"Current leader epoch {current} is newer than this leader's {LEADER_EPOCH}")
    if current < LEADER_EPOCH:
        raise FencedLeaderEpochError(f"Current leader epoch {current} is older than this leader's {LEADER_EPOCH}")
