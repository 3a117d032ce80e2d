"""LeaveGroup (key 13): members leave (v3+: several at once, by member or instance id)."""

from __future__ import annotations

from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.leave_group import LeaveGroupRequest, LeaveGroupResponse, MemberResponse, encode_leave_group_response
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.encoded_response import EncodedResponse
from asyncbroker.handlers import error_code_for
from asyncbroker.request_context import RequestContext

API_KEY = ApiKey.LEAVE_GROUP


async def handle(ctx: RequestContext, header: RequestHeader, request: LeaveGroupRequest) -> EncodedResponse:
    version = header.api_version
    if version >= 3:
        leaving = [(m.member_id, m.group_instance_id, m.reason) for m in request.members]
    else:
        leaving = [(request.member_id, None, None)]
    top: int = ErrorCode.NONE
    results: list[int] = []
    if not ctx.authorize_group(AclOperation.READ, request.group_id):
        # Kafka's error answer: the error alone, no member listed.
        return _encoded(version, LeaveGroupResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED))
    try:
        coordinator = await ctx.broker.loaded_group_coordinator()
        results = await coordinator.leave_group(request.group_id, leaving)
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        top = error_code_for(exc)
    if version < 3:
        if top == ErrorCode.NONE and results:
            top = results[0]
        return _encoded(version, LeaveGroupResponse(error_code=top))
    members = tuple(MemberResponse(mid, iid, code) for (mid, iid, _), code in zip(leaving, results))
    return _encoded(version, LeaveGroupResponse(error_code=top, members=members))


def _encoded(version: int, response: LeaveGroupResponse) -> EncodedResponse:
    body = encode_leave_group_response(version, response)
    return EncodedResponse([body], len(body))
