"""DescribeShareGroupOffsets (key 90, KIP-932): per group, each share partition's start
offset, leader epoch and (v1) lag, for the topics named or (null topics) for every partition
with initialized share state.

As Kafka answers it: the group itself is not looked at (an unknown group, or another kind of
group, has no share state: -1 everywhere, no error); a topic that does not exist answers its
partitions with start offset -1 and no error, and a zero topic id; a partition without share
state (or outside the topic) answers start offset -1, leader epoch 0, lag -1. The lag is the
partition's high watermark less the start offset and the records past it already delivered
for good (acknowledged or archived). GROUP DESCRIBE is needed, and TOPIC DESCRIBE per topic
(topics not authorized answer TOPIC_AUTHORIZATION_FAILED when named, and are left out of "all").
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from storage.topic_partition import TopicPartition
from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.handlers import error_code_for, error_message_for
from asyncbroker.replica_manager import OffsetQuery
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

if TYPE_CHECKING:  # the share coordinator is built on first use
    from asyncbroker.share_coordinator import ShareStateSummary

API_KEY = ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS

ZERO_UUID = uuid.UUID(int=0)
LATEST = -1
_TOPIC_AUTHORIZATION_FAILED = "Topic authorization failed."


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)
    groups = [await _describe(ctx, b, g) for g in request.groups]
    return b.entity("DescribeShareGroupOffsetsResponse", throttle_time=0, groups=tuple(groups))


def _partition(b: ResponseBuilder, index: int, start: int = -1, leader_epoch: int = 0, lag: int = -1,
               code: int = ErrorCode.NONE, message: str | None = None) -> Any:
    return b.entity("DescribeShareGroupOffsetsResponsePartition", partition_index=index, start_offset=start,
                    leader_epoch=leader_epoch, lag=lag, error_code=code, error_message=message)


def _topic(b: ResponseBuilder, name: str, topic_id: uuid.UUID, partitions: list[Any]) -> Any:
    return b.entity("DescribeShareGroupOffsetsResponseTopic", topic_name=name, topic_id=topic_id,
                    partitions=tuple(partitions))


def _group(b: ResponseBuilder, group_id: str, topics: list[Any], code: int = ErrorCode.NONE,
           message: str | None = None) -> Any:
    return b.entity("DescribeShareGroupOffsetsResponseGroup", group_id=group_id, topics=tuple(topics),
                    error_code=code, error_message=message)


async def _describe(ctx: RequestContext, b: ResponseBuilder, group: Any) -> Any:
    group_id = group.group_id
    if not ctx.authorize_group(AclOperation.DESCRIBE, group_id):
        return _group(b, group_id, [], ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if group.topics is not None and not group.topics:
        return _group(b, group_id, [])
    topics = ctx.broker.topics
    known: list[tuple[uuid.UUID, str, list[int]]] = []
    unknown: list[Any] = []
    refused: list[Any] = []
    if group.topics is not None:
        for t in group.topics:
            if not ctx.authorize_topic(AclOperation.DESCRIBE, t.topic_name):
                refused.append(_topic(b, t.topic_name, ZERO_UUID, [
                    _partition(b, p, code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, message=_TOPIC_AUTHORIZATION_FAILED)
                    for p in t.partitions]))
                continue
            meta = topics.get(t.topic_name)
            if meta is None:
                unknown.append(_topic(b, t.topic_name, ZERO_UUID, [_partition(b, p) for p in t.partitions]))
            else:
                known.append((meta.topic_id, meta.name, list(t.partitions)))
    try:
        coordinator = await ctx.broker.loaded_group_coordinator()
        found = await coordinator.describe_share_group_offsets(group_id, None if group.topics is None else known)
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        return _group(b, group_id, [], error_code_for(exc), error_message_for(exc))
    described = []
    for topic_id, name, parts in found:
        if group.topics is None:
            meta = topics.by_id(topic_id)
            if meta is None or not ctx.authorize_topic(AclOperation.DESCRIBE, meta.name, log_denial=False):
                continue  # gone, or not to be shown: left out of "all"
            name = meta.name
        described.append(_topic(b, name, topic_id, await _with_lag(ctx, b, name, parts)))
    return _group(b, group_id, [*described, *unknown, *refused])


async def _with_lag(ctx: RequestContext, b: ResponseBuilder, topic: str,
                    parts: list[tuple[int, ShareStateSummary]]) -> list[Any]:
    """Kafka's computeShareGroupLagAndBuildResponse: a lag only where the start offset and the
    delivery-complete count are known."""
    lagging = {TopicPartition(topic, p): OffsetQuery(LATEST) for p, s in parts
               if s.start_offset != -1 and s.delivery_complete_count != -1}
    ends = await ctx.broker.replica_manager.fetch_offsets(lagging, version=9, read_committed=False) if lagging \
        else {}
    out = []
    for p, s in parts:
        end = ends.get(TopicPartition(topic, p))
        if end is None:
            out.append(_partition(b, p, s.start_offset, s.leader_epoch))
        elif end.error != ErrorCode.NONE:
            out.append(_partition(b, p, 0, 0, -1, end.error, None))
        else:
            out.append(_partition(b, p, s.start_offset, s.leader_epoch,
                                  end.offset - s.start_offset - s.delivery_complete_count))
    return out
