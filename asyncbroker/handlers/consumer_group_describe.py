"""ConsumerGroupDescribe (key 69): a consumer-protocol group's epochs, assignor and members,
with each member's current and target assignment (topic ids and names)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AUTHORIZED_OPERATIONS_OMITTED, AclOperation, ResourceType
from asyncbroker.handlers import error_code_for, error_message_for
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

if TYPE_CHECKING:
    from asyncbroker.group_coordinator import GroupCoordinator

API_KEY = ApiKey.CONSUMER_GROUP_DESCRIBE

_CLASSIC_MEMBER, _CONSUMER_MEMBER = 0, 1  # member_type (v1): the protocol the member joined with


def _error(b: ResponseBuilder, group_id: str, exc: BaseException | None, code: int = ErrorCode.NONE) -> Any:
    return b.entity("DescribedGroup", error_code=code if exc is None else error_code_for(exc),
                    error_message=None if exc is None else error_message_for(exc), group_id=group_id,
                    group_state="", group_epoch=0, assignment_epoch=0, assignor_name="", members=(),
                    authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)


async def describe_groups(ctx: RequestContext, b: ResponseBuilder, request: Any, response: str,
                          describe: Callable[[GroupCoordinator, str], Any],
                          member: Callable[[Any, Callable[[Any], Any]], Any]) -> Any:
    """The answer of ConsumerGroupDescribe or ShareGroupDescribe (the same shape): each group
    DESCRIBE allows, described by `describe`, its members built by `member(m, assignment)`;
    refused groups last, as Kafka lists them."""
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
        return b.entity(response, throttle_time=0, groups=tuple(_error(b, g, exc) for g in request.group_ids))
    for group_id in request.group_ids:
        if not ctx.authorize_group(AclOperation.DESCRIBE, group_id):
            refused.append(_error(b, group_id, None, ErrorCode.GROUP_AUTHORIZATION_FAILED))
            continue
        try:
            d = describe(coordinator, group_id)
        except Exception as exc:  # noqa: BLE001 - mapped at the boundary
            out.append(_error(b, group_id, exc))
            continue
        operations = (ctx.authorized_operations(ResourceType.GROUP, group_id)
                      if request.include_authorized_operations else AUTHORIZED_OPERATIONS_OMITTED)
        out.append(b.entity("DescribedGroup", error_code=ErrorCode.NONE, error_message=None, group_id=group_id,
                            group_state=d.state, group_epoch=d.group_epoch, assignment_epoch=d.assignment_epoch,
                            assignor_name=d.assignor_name, members=tuple(member(m, assignment) for m in d.members),
                            authorized_operations=operations))
    return b.entity(response, throttle_time=0, groups=(*out, *refused))


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)

    def member(m: Any, assignment: Callable[[Any], Any]) -> Any:
        return b.entity("Member", member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
                        member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
                        subscribed_topic_names=m.subscribed_topic_names,
                        subscribed_topic_regex=m.subscribed_topic_regex or "", assignment=assignment(m.assignment),
                        target_assignment=assignment(m.target_assignment),
                        member_type=_CLASSIC_MEMBER if m.classic else _CONSUMER_MEMBER)

    return await describe_groups(ctx, b, request, "ConsumerGroupDescribeResponse",
                                 lambda c, g: c.consumer_group_describe(g), member)
