"""DeleteRecords (key 21): raise partitions' log start offsets.

Offset -1 means "up to the high watermark". An offset past the HW is
OFFSET_OUT_OF_RANGE (storage raises it). The answer carries the new low
watermark (the log start offset after the call). Segments wholly below the
new start are removed by the retention job, as in Kafka. The ReplicaManager
does the work (cleaner pause, checkpoint, waking parked fetches).
"""

from __future__ import annotations

from typing import Any

from storage.topic_partition import TopicPartition
from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.replica_manager import DeleteRecordsResult
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.DELETE_RECORDS

async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    # Kafka keys the request by partition: a partition named twice is deleted up to the
    # offset of its later entry, and answered once.
    requested: dict[TopicPartition, int] = {}
    refused: dict[TopicPartition, int] = {}
    may_delete = {t.name: ctx.authorize_topic(AclOperation.DELETE, t.name) for t in request.topics}
    for t in request.topics:
        for p in t.partitions:
            (requested if may_delete[t.name] else refused)[TopicPartition(t.name, p.partition_index)] = p.offset
    results = await ctx.broker.replica_manager.delete_records(requested)
    by_topic: dict[str, list[Any]] = {}
    b = ResponseBuilder(API_KEY, header.api_version)
    answers = [*results.items(), *((tp, DeleteRecordsResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED)) for tp in refused)]
    for tp, result in answers:
        by_topic.setdefault(tp.topic, []).append(b.entity(
            "DeleteRecordsPartitionResult", partition_index=tp.partition, low_watermark=result.low_watermark,
            error_code=result.error))
    topics = tuple(b.entity("DeleteRecordsTopicResult", name=name, partitions=tuple(parts))
                   for name, parts in by_topic.items())
    return b.entity("DeleteRecordsResponse", throttle_time=0, topics=topics)
