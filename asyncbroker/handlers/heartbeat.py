"""Heartbeat (key 12): a member is alive; REBALANCE_IN_PROGRESS tells it to rejoin."""

from __future__ import annotations

from wire.errors import ErrorCode
from wire.errors import GroupAuthorizationFailedError
from wire.headers import RequestHeader
from wire.heartbeat import HeartbeatRequest, HeartbeatResponse, encode_heartbeat_response
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.encoded_response import EncodedResponse
from asyncbroker.handlers import error_code_for
from asyncbroker.request_context import RequestContext

API_KEY = ApiKey.HEARTBEAT


async def handle(ctx: RequestContext, header: RequestHeader, request: HeartbeatRequest) -> EncodedResponse:
    error: int = ErrorCode.NONE
    try:
        if not ctx.authorize_group(AclOperation.READ, request.group_id):
            raise GroupAuthorizationFailedError()
        coordinator = await ctx.broker.loaded_group_coordinator()
        await coordinator.heartbeat(
            group_id=request.group_id,
            generation_id=request.generation_id,
            member_id=request.member_id,
            group_instance_id=request.group_instance_id,
        )
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        error = error_code_for(exc)
    body = encode_heartbeat_response(header.api_version, HeartbeatResponse(error_code=error))
    return EncodedResponse([body], len(body))
