"""ShareGroupDescribe (key 77): a share group's epochs, assignor and members, with each
member's assignment (topic ids and names)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.handlers.consumer_group_describe import describe_groups
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.SHARE_GROUP_DESCRIBE


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)

    def member(m: Any, assignment: Callable[[Any], Any]) -> Any:
        return b.entity("Member", member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
                        client_id=m.client_id, client_host=m.client_host,
                        subscribed_topic_names=m.subscribed_topic_names, assignment=assignment(m.assignment))

    return await describe_groups(ctx, b, request, "ShareGroupDescribeResponse",
                                 lambda c, g: c.share_group_describe(g), member)
