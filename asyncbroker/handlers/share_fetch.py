"""ShareFetch (key 78): records handed out to a member of a share group (KIP-932), with the
acknowledgements of records it received before; see asyncbroker/share_partition_manager.py."""

from __future__ import annotations

from typing import Any

from wire.errors import ErrorCode, GroupAuthorizationFailedError, InvalidRequestError
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.handlers import error_code_for, error_message_for, millis
from asyncbroker.request_context import RequestContext
from asyncbroker.share_partition_manager import AckBatch, TopicIdPartition
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.SHARE_FETCH
MIN_VERSION = 1
MAX_VERSION = 1


def node_endpoints(b: ResponseBuilder, ctx: RequestContext) -> tuple[Any, ...]:
    host, port = ctx.broker.advertised_for(ctx.listener_name)
    return (b.entity("NodeEndpoint", node_id=ctx.broker.node_id, host=host, port=port, rack=None),)


def partition_data(b: ResponseBuilder, ctx: RequestContext, answer: Any, *, fetch: bool) -> Any:
    leader = b.entity("LeaderIdAndEpoch", leader_id=ctx.broker.node_id, leader_epoch=0)
    if not fetch:  # ShareAcknowledge: the partition's error is its acknowledgement's
        return b.entity("PartitionData", partition_index=answer.index, error_code=answer.acknowledge_error,
                        error_message=answer.acknowledge_message, current_leader=leader)
    common = dict(partition_index=answer.index, error_code=answer.error, error_message=None, current_leader=leader)
    return b.entity("PartitionData", **common, acknowledge_error_code=answer.acknowledge_error,
                    acknowledge_error_message=answer.acknowledge_message, records=answer.records,
                    acquired_records=tuple(b.entity("AcquiredRecords", first_offset=a.first, last_offset=a.last,
                                                    delivery_count=a.delivery_count) for a in answer.acquired))


def by_topic(b: ResponseBuilder, ctx: RequestContext, answers: list[Any], entity: str, *, fetch: bool) -> tuple[Any, ...]:
    topics: dict[Any, list[Any]] = {}
    for a in answers:
        topics.setdefault(a.topic_id, []).append(partition_data(b, ctx, a, fetch=fetch))
    return tuple(b.entity(entity, topic_id=t, partitions=tuple(p)) for t, p in topics.items())


def acknowledgements(topics: Any) -> dict[TopicIdPartition, list[AckBatch]]:
    return {(t.topic_id, p.partition_index): [(a.first_offset, a.last_offset, tuple(a.acknowledge_types))
                                              for a in p.acknowledgement_batches]
            for t in topics for p in t.partitions if p.acknowledgement_batches}


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)
    lock_ms = 0
    try:
        if not request.group_id or not request.member_id:
            raise InvalidRequestError("ShareFetch needs a group id and a member id")
        if not ctx.authorize_group(AclOperation.READ, request.group_id):
            raise GroupAuthorizationFailedError()
        lock_ms = ctx.broker.group_coordinator.group_configs.value(request.group_id, "share.record.lock.duration.ms")
        answers = await ctx.broker.share_partitions.fetch(
            group_id=request.group_id, member_id=request.member_id, epoch=request.share_session_epoch,
            wanted=[(t.topic_id, p.partition_index) for t in request.topics for p in t.partitions],
            forgotten=[(t.topic_id, p) for t in request.forgotten_topics_data for p in t.partitions],
            acks=acknowledgements(request.topics), max_wait_ms=millis(request.max_wait), min_bytes=request.min_bytes,
            max_bytes=request.max_bytes, max_records=request.max_records)
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        return b.entity("ShareFetchResponse", throttle_time=0, error_code=error_code_for(exc),
                        error_message=error_message_for(exc), acquisition_lock_timeout=lock_ms, responses=(),
                        node_endpoints=())
    return b.entity("ShareFetchResponse", throttle_time=0, error_code=ErrorCode.NONE, error_message=None,
                    acquisition_lock_timeout=lock_ms,
                    responses=by_topic(b, ctx, answers, "ShareFetchableTopicResponse", fetch=True),
                    node_endpoints=node_endpoints(b, ctx))
