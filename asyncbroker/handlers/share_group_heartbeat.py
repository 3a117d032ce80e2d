"""ShareGroupHeartbeat (key 76): a share group's membership (KIP-932) in one request; see
asyncbroker/share_group_manager.py. The member brings its own id."""

from __future__ import annotations

from typing import Any

from wire.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.handlers.consumer_group_heartbeat import heartbeat_response
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.SHARE_GROUP_HEARTBEAT


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)
    try:
        if not ctx.authorize_group(AclOperation.READ, request.group_id):
            raise GroupAuthorizationFailedError()
        names = request.subscribed_topic_names
        if names:
            refused = sorted(n for n in set(names) if not ctx.authorize_topic(AclOperation.DESCRIBE, n))
            if refused:
                raise TopicAuthorizationFailedError(
                    f"The client is not authorized to describe topics: {', '.join(refused)}.", wire_message=None)
        coordinator = await ctx.broker.loaded_group_coordinator()
        result = await coordinator.share_group_heartbeat(
            group_id=request.group_id,
            member_id=request.member_id,
            member_epoch=request.member_epoch,
            rack_id=request.rack_id,
            subscribed_topic_names=None if names is None else tuple(names),
            client_id=header.client_id or "",
            client_host=ctx.client_host,
        )
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        return heartbeat_response(b, "ShareGroupHeartbeatResponse", exc)
    return heartbeat_response(b, "ShareGroupHeartbeatResponse", result)
