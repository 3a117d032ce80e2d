"""OffsetForLeaderEpoch (API 23): where a leader epoch ends, for consumers' log-truncation checks.

This node leads every partition in epoch 0 (Metadata reports leader_epoch 0),
so epoch 0 ends at the log end offset; a client's current_leader_epoch above
it is UNKNOWN_LEADER_EPOCH, below it (other than -1, "none") FENCED_LEADER_EPOCH.
Kafka 4 serves v2-v4 to clients.
"""
from __future__ import annotations

from typing import Any

from storage.topic_partition import TopicPartition
from wire.errors import ErrorCode, FencedLeaderEpochError, KafkaError, UnknownLeaderEpochError
from wire.messages import ApiKey

from asyncbroker.handlers import error_code_for
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.OFFSET_FOR_LEADER_EPOCH
MIN_VERSION = 2
MAX_VERSION = 4

UNDEFINED = -1
# The epoch Metadata reports for every partition (see metadata.py); fencing
# and the answer must agree with it or clients would loop on FENCED_LEADER_EPOCH.
LEADER_EPOCH = 0


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


async def handle(broker: Any, header: Any, request: Any) -> Any:
    rb = ResponseBuilder(API_KEY, header.api_version)
    topics = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            log = broker.get_log(TopicPartition(t.topic, p.partition))
            epoch, offset, code = UNDEFINED, UNDEFINED, ErrorCode.NONE
            if log is None:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                try:
                    check_current_leader_epoch(p.current_leader_epoch)
                except KafkaError as exc:
                    code = error_code_for(exc)
                else:
                    epoch, offset = end_offset_for(log, p.leader_epoch)
            parts.append(rb.entity("EpochEndOffset", error_code=code, partition=p.partition,
                                   leader_epoch=epoch, end_offset=offset))
        topics.append(rb.entity("OffsetForLeaderTopicResult", topic=t.topic, partitions=tuple(parts)))
    return rb.entity("OffsetForLeaderEpochResponse", throttle_time=0, topics=tuple(topics))
