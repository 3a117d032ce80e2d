"""SyncGroup (key 14): the leader hands in the assignment; every member gets its part."""

from __future__ import annotations

from wire.errors import ErrorCode
from wire.errors import GroupAuthorizationFailedError
from wire.headers import RequestHeader
from wire.messages import ApiKey
from wire.sync_group import SyncGroupRequest, SyncGroupResponse, encode_sync_group_response

from asyncbroker.acl_binding import AclOperation
from asyncbroker.encoded_response import EncodedResponse
from asyncbroker.handlers import error_code_for
from asyncbroker.request_context import RequestContext

API_KEY = ApiKey.SYNC_GROUP


async def handle(ctx: RequestContext, header: RequestHeader, request: SyncGroupRequest) -> EncodedResponse:
    from asyncbroker.group_metadata_manager import SyncGroupResult  # with the coordinator, on first use

    version = header.api_version
    if version >= 5 and (request.protocol_type is None or request.protocol_name is None):
        # From v5 the protocol type and name are mandatory: Kafka refuses the request before
        # looking at the group.
        return _encoded(version, SyncGroupResponse(error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
    try:
        if not ctx.authorize_group(AclOperation.READ, request.group_id):
            raise GroupAuthorizationFailedError()
        coordinator = await ctx.broker.loaded_group_coordinator()
        result = await coordinator.sync_group(
            group_id=request.group_id,
            generation_id=request.generation_id,
            member_id=request.member_id,
            group_instance_id=request.group_instance_id,
            protocol_type=request.protocol_type,
            protocol_name=request.protocol_name,
            assignments={a.member_id: a.assignment for a in request.assignments},
        )
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        result = SyncGroupResult(error=error_code_for(exc))
    return _encoded(version, SyncGroupResponse(error_code=result.error, protocol_type=result.protocol_type,
                                               protocol_name=result.protocol_name, assignment=result.assignment))


def _encoded(version: int, response: SyncGroupResponse) -> EncodedResponse:
    body = encode_sync_group_response(version, response)
    return EncodedResponse([body], len(body))
