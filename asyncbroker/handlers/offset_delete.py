"""OffsetDelete (key 47): drop a group's committed offsets for topics it no longer consumes."""

from __future__ import annotations

from typing import Any

from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.handlers import error_code_for
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.OFFSET_DELETE


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)
    top: int = ErrorCode.NONE
    # Kafka's order: partitions of unknown topics (or unknown partitions) first, in request
    # order, then the coordinator's answers merged in (a topic seen before keeps its place).
    answered: dict[str, list[tuple[int, int]]] = {}
    wanted: list[tuple[str, int]] = []
    if not ctx.authorize_group(AclOperation.DELETE, request.group_id):
        return b.entity("OffsetDeleteResponse", error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, throttle_time=0,
                        topics=())
    for t in request.topics:
        meta = ctx.broker.topics.get(t.name)
        may_read = ctx.authorize_topic(AclOperation.READ, t.name)
        for p in t.partitions:
            if not may_read:
                answered.setdefault(t.name, []).append((p.partition_index, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            elif meta is None or not 0 <= p.partition_index < meta.partitions:
                answered.setdefault(t.name, []).append((p.partition_index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            else:
                wanted.append((t.name, p.partition_index))
    try:
        coordinator = await ctx.broker.loaded_group_coordinator()
        results = await coordinator.delete_offsets(request.group_id, wanted)
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        top = error_code_for(exc)
    topics: tuple[Any, ...] = ()
    if top == ErrorCode.NONE:
        for tp in wanted:
            answered.setdefault(tp[0], []).append((tp[1], results.get(tp, ErrorCode.NONE)))
        topics = tuple(
            b.entity("OffsetDeleteResponseTopic", name=name, partitions=tuple(
                b.entity("OffsetDeleteResponsePartition", partition_index=index, error_code=code)
                for index, code in partitions))
            for name, partitions in answered.items()
        )
    return b.entity("OffsetDeleteResponse", error_code=top, throttle_time=0, topics=topics)
