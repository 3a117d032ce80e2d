"""ShareAcknowledge (key 79): a share group member's acknowledgements (ACCEPT, RELEASE,
REJECT) of records it acquired, outside a fetch; see asyncbroker/share_partition_manager.py."""

from __future__ import annotations

from typing import Any

from wire.errors import ErrorCode, GroupAuthorizationFailedError, InvalidRequestError
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.handlers import error_code_for, error_message_for
from asyncbroker.handlers.share_fetch import acknowledgements, by_topic, node_endpoints
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.SHARE_ACKNOWLEDGE
MIN_VERSION = 1
MAX_VERSION = 1


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)
    try:
        if not request.group_id or not request.member_id:
            raise InvalidRequestError("ShareAcknowledge needs a group id and a member id")
        if not ctx.authorize_group(AclOperation.READ, request.group_id):
            raise GroupAuthorizationFailedError()
        answers = await ctx.broker.share_partitions.acknowledge(
            group_id=request.group_id, member_id=request.member_id, epoch=request.share_session_epoch,
            acks=acknowledgements(request.topics))
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        return b.entity("ShareAcknowledgeResponse", throttle_time=0, error_code=error_code_for(exc),
                        error_message=error_message_for(exc), responses=(), node_endpoints=())
    return b.entity("ShareAcknowledgeResponse", throttle_time=0, error_code=ErrorCode.NONE, error_message=None,
                    responses=by_topic(b, ctx, answers, "ShareAcknowledgeTopicResponse", fetch=False),
                    node_endpoints=node_endpoints(b, ctx))
