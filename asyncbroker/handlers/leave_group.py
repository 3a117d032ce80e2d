"""LeaveGroup (key 13): members leave (v3+: several at once, by member or instance id)."""

from __future__ import annotations

from typing import Any

from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.handlers import error_code_for
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.LEAVE_GROUP


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    version = header.api_version
    b = ResponseBuilder(API_KEY, version)
    if version >= 3:
        leaving = [(m.member_id, m.group_instance_id, getattr(m, "reason", None)) for m in request.members]
    else:
        leaving = [(request.member_id, None, None)]
    top: int = ErrorCode.NONE
    results: list[int] = []
    if not ctx.authorize_group(AclOperation.READ, request.group_id):
        # Kafka's error answer: the error alone, no member listed.
        return b.entity("LeaveGroupResponse", throttle_time=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
                        members=())
    try:
        coordinator = await ctx.broker.loaded_group_coordinator()
        results = await coordinator.leave_group(request.group_id, leaving)
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        top = error_code_for(exc)
    if version < 3:
        if top == ErrorCode.NONE and results:
            top = results[0]
        return b.entity("LeaveGroupResponse", throttle_time=0, error_code=top, members=())
    members = tuple(
        b.entity("MemberResponse", member_id=mid, group_instance_id=iid, error_code=code)
        for (mid, iid, _), code in zip(leaving, results)
    )
    return b.entity("LeaveGroupResponse", throttle_time=0, error_code=top, members=members)
