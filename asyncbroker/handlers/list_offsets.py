"""ListOffsets (key 2): earliest (-2), latest (-1), max timestamp (-3), or by timestamp.

Timestamp lookups go through each segment's time index, so they run in the
executor. A timestamp later than every record answers offset -1 and
timestamp -1, as Kafka does. read_committed (v2+) bounds "latest" by the LSO.
Special timestamps newer than the request's version, a partition named twice,
and a current_leader_epoch other than this node's (0) are refused per
partition with Kafka's errors; -5 (latest tiered) finds nothing, as on a
Kafka without tiered storage.
"""

from __future__ import annotations

from storage.topic_partition import TopicPartition
from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.list_offsets import (
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
    encode_list_offsets_response,
)
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.encoded_response import EncodedResponse
from asyncbroker.replica_manager import FoundOffset, OffsetQuery
from asyncbroker.request_context import RequestContext

API_KEY = ApiKey.LIST_OFFSETS

READ_COMMITTED = 1


async def handle(ctx: RequestContext, header: RequestHeader, request: ListOffsetsRequest) -> EncodedResponse:
    """Kafka keys the answer by partition: a partition named twice in one request answers
    once, INVALID_REQUEST; every error answers offset, timestamp and epoch -1. Topics the
    principal may not DESCRIBE answer TOPIC_AUTHORIZATION_FAILED, after the others."""
    version = header.api_version
    may_describe = {t.name: ctx.authorize_topic(AclOperation.DESCRIBE, t.name) for t in request.topics}
    unauthorized = [t for t in request.topics if not may_describe[t.name]]
    request_topics = [t for t in request.topics if may_describe[t.name]]
    seen: set[TopicPartition] = set()
    duplicates: set[TopicPartition] = set()
    for t in request_topics:
        for p in t.partitions:
            tp = TopicPartition(t.name, p.partition_index)
            (duplicates if tp in seen else seen).add(tp)
    queries = {TopicPartition(t.name, p.partition_index): OffsetQuery(p.timestamp, p.current_leader_epoch)
               for t in request_topics for p in t.partitions
               if TopicPartition(t.name, p.partition_index) not in duplicates}
    found = await ctx.broker.replica_manager.fetch_offsets(
        queries, version=version, read_committed=request.isolation_level == READ_COMMITTED)
    by_topic: dict[str, dict[int, FoundOffset]] = {}
    for t in request_topics:
        for p in t.partitions:
            tp = TopicPartition(t.name, p.partition_index)
            result = FoundOffset(ErrorCode.INVALID_REQUEST) if tp in duplicates else found[tp]
            by_topic.setdefault(t.name, {})[p.partition_index] = result
    refused: list[tuple[str, dict[int, FoundOffset]]] = [
        (t.name, {p.partition_index: FoundOffset(ErrorCode.TOPIC_AUTHORIZATION_FAILED) for p in t.partitions})
        for t in unauthorized]

    topics = tuple(
        ListOffsetsTopicResponse(name, tuple(
            ListOffsetsPartitionResponse(index, r.error, r.timestamp, r.offset, r.leader_epoch)
            for index, r in parts.items()))
        for name, parts in [*by_topic.items(), *refused]
    )
    body = encode_list_offsets_response(version, ListOffsetsResponse(topics=topics))
    return EncodedResponse([body], len(body))
