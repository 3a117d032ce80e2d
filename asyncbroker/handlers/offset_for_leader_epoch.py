"""OffsetForLeaderEpoch (API 23): where a leader epoch ends, for consumers' log-truncation checks.

This node leads every partition in epoch 0 (Metadata reports leader_epoch 0),
so epoch 0 ends at the log end offset; a client's current_leader_epoch above
it is UNKNOWN_LEADER_EPOCH, below it (other than -1, "none") FENCED_LEADER_EPOCH.
Kafka 4 serves v2-v4 to clients.
"""
from __future__ import annotations

from typing import Any

from storage.topic_partition import TopicPartition
from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.OFFSET_FOR_LEADER_EPOCH


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    rb = ResponseBuilder(API_KEY, header.api_version)
    topics = []
    refused = []
    for t in request.topics:
        if not ctx.authorize_topic(AclOperation.DESCRIBE, t.topic):
            # Answered after the others, as Kafka does.
            refused.append(rb.entity("OffsetForLeaderTopicResult", topic=t.topic, partitions=tuple(
                rb.entity("EpochEndOffset", error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, partition=p.partition,
                          leader_epoch=-1, end_offset=-1) for p in t.partitions)))
            continue
        parts = []
        for p in t.partitions:
            found = ctx.broker.replica_manager.offsets_for_leader_epoch(
                TopicPartition(t.topic, p.partition), p.current_leader_epoch, p.leader_epoch)
            parts.append(rb.entity("EpochEndOffset", error_code=found.error, partition=p.partition,
                                   leader_epoch=found.leader_epoch, end_offset=found.end_offset))
        topics.append(rb.entity("OffsetForLeaderTopicResult", topic=t.topic, partitions=tuple(parts)))
    return rb.entity("OffsetForLeaderEpochResponse", throttle_time=0, topics=(*topics, *refused))
