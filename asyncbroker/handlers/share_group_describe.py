"""ShareGroupDescribe (key 77): a share group's epochs, assignor and members, with each
member's assignment (topic ids and names)."""

from __future__ import annotations

from typing import Any

from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AUTHORIZED_OPERATIONS_OMITTED, AclOperation, ResourceType
from asyncbroker.handlers import error_code_for, error_message_for
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.SHARE_GROUP_DESCRIBE
MIN_VERSION = 1
MAX_VERSION = 1


def _error(b: ResponseBuilder, group_id: str, exc: BaseException | None, code: int = ErrorCode.NONE) -> Any:
    return b.entity("DescribedGroup", error_code=code if exc is None else error_code_for(exc),
                    error_message=None if exc is None else error_message_for(exc), group_id=group_id,
                    group_state="", group_epoch=0, assignment_epoch=0, assignor_name="", members=(),
                    authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)
    topics = ctx.broker.topics

    def assignment(parts: Any) -> Any:
        return b.entity("Assignment", topic_partitions=tuple(
            b.entity("TopicPartitions", topic_id=topic_id, topic_name=meta.name, partitions=tuple(sorted(p)))
            for topic_id, p in parts.items() if (meta := topics.by_id(topic_id)) is not None))

    out = []
    refused = []
    try:
        coordinator = await ctx.broker.loaded_group_coordinator()
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        return b.entity("ShareGroupDescribeResponse", throttle_time=0,
                        groups=tuple(_error(b, g, exc) for g in request.group_ids))
    for group_id in request.group_ids:
        if not ctx.authorize_group(AclOperation.DESCRIBE, group_id):
            refused.append(_error(b, group_id, None, ErrorCode.GROUP_AUTHORIZATION_FAILED))
            continue
        try:
            d = coordinator.share_group_describe(group_id)
        except Exception as exc:  # noqa: BLE001 - mapped at the boundary
            out.append(_error(b, group_id, exc))
            continue
        members = tuple(
            b.entity("Member", member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
                     client_id=m.client_id, client_host=m.client_host, subscribed_topic_names=m.subscribed_topic_names,
                     assignment=assignment(m.assignment))
            for m in d.members)
        operations = (ctx.authorized_operations(ResourceType.GROUP, group_id)
                      if request.include_authorized_operations else AUTHORIZED_OPERATIONS_OMITTED)
        out.append(b.entity("DescribedGroup", error_code=ErrorCode.NONE, error_message=None, group_id=group_id,
                            group_state=d.state, group_epoch=d.group_epoch, assignment_epoch=d.assignment_epoch,
                            assignor_name=d.assignor_name, members=members, authorized_operations=operations))
    return b.entity("ShareGroupDescribeResponse", throttle_time=0, groups=(*out, *refused))
