"""OffsetForLeaderEpoch (API 23): where a leader epoch ends, for consumers' log-truncation checks.

This node leads every partition in epoch 0 (Metadata reports leader_epoch 0),
so epoch 0 ends at the log end offset and a client that claims a newer epoch
gets UNKNOWN_LEADER_EPOCH. Kafka 4 serves v2-v4 to clients.
"""
from __future__ import annotations

from typing import Any

from storage.topic_partition import TopicPartition
from wire.errors import ErrorCode
from wire.messages import ApiKey

from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.OFFSET_FOR_LEADER_EPOCH
MIN_VERSION = 2
MAX_VERSION = 4

UNDEFINED = -1
# The epoch Metadata reports for every partition (see metadata.py); fencing
# and the answer must agree with it or clients would loop on FENCED_LEADER_EPOCH.
LEADER_EPOCH = 0


def end_offset_for(log: Any, epoch: int) -> tuple[int, int]:
    """(epoch, end offset): the current epoch ends at the log end offset; any other
    epoch is unknown here (Kafka's UNDEFINED_EPOCH / UNDEFINED_EPOCH_OFFSET)."""
    if epoch == LEADER_EPOCH:
        return (LEADER_EPOCH, int(log.log_end_offset))
    return (UNDEFINED, UNDEFINED)


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
                if p.current_leader_epoch > LEADER_EPOCH:
                    code = ErrorCode.UNKNOWN_LEADER_EPOCH
                else:
                    epoch, offset = end_offset_for(log, p.leader_epoch)
            parts.append(rb.entity("EpochEndOffset", error_code=code, partition=p.partition,
                                   leader_epoch=epoch, end_offset=offset))
        topics.append(rb.entity("OffsetForLeaderTopicResult", topic=t.topic, partitions=tuple(parts)))
    return rb.entity("OffsetForLeaderEpochResponse", throttle_time=0, topics=tuple(topics))
