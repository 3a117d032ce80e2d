"""SyncGroup (key 14): the leader hands in the assignment; every member gets its part."""

from __future__ import annotations

from typing import Any

from wire.errors import ErrorCode
from wire.errors import GroupAuthorizationFailedError
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.handlers import error_code_for
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.SYNC_GROUP


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    from asyncbroker.group_metadata_manager import SyncGroupResult  # with the coordinator, on first use

    b = ResponseBuilder(API_KEY, header.api_version)
    if header.api_version >= 5 and (request.protocol_type is None or request.protocol_name is None):
        # From v5 the protocol type and name are mandatory: Kafka refuses the request before
        # looking at the group.
        return b.entity("SyncGroupResponse", throttle_time=0, error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                        protocol_type=None, protocol_name=None, assignment=b"")
    try:
        if not ctx.authorize_group(AclOperation.READ, request.group_id):
            raise GroupAuthorizationFailedError()
        coordinator = await ctx.broker.loaded_group_coordinator()
        result = await coordinator.sync_group(
            group_id=request.group_id,
            generation_id=request.generation_id,
            member_id=request.member_id,
            group_instance_id=getattr(request, "group_instance_id", None),
            protocol_type=getattr(request, "protocol_type", None),
            protocol_name=getattr(request, "protocol_name", None),
            assignments={a.member_id: bytes(a.assignment) for a in request.assignments},
        )
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        result = SyncGroupResult(error=error_code_for(exc))
    return b.entity("SyncGroupResponse", throttle_time=0, error_code=result.error,
                    protocol_type=result.protocol_type, protocol_name=result.protocol_name,
                    assignment=result.assignment)
