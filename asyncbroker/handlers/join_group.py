"""JoinGroup (key 11): join a classic group and take part in its rebalance.

The request parks until the join phase completes (see group_coordinator.py);
v4+ dynamic members first get MEMBER_ID_REQUIRED with their new member id.
"""

from __future__ import annotations

from wire.errors import ErrorCode
from wire.errors import GroupAuthorizationFailedError
from wire.headers import RequestHeader
from wire.join_group import JoinGroupRequest, JoinGroupResponse, JoinGroupResponseMember, encode_join_group_response
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.encoded_response import EncodedResponse
from asyncbroker.handlers import error_code_for
from asyncbroker.request_context import RequestContext

API_KEY = ApiKey.JOIN_GROUP


async def handle(ctx: RequestContext, header: RequestHeader, request: JoinGroupRequest) -> EncodedResponse:
    from asyncbroker.group_metadata_manager import JoinGroupResult  # with the coordinator, on first use

    version = header.api_version
    session_timeout = request.session_timeout
    # v0 has no rebalance timeout: the session timeout stands in for it (from v1 the value is
    # taken as sent, as Kafka does).
    rebalance_timeout = request.rebalance_timeout if version >= 1 else session_timeout
    instance_id = request.group_instance_id
    try:
        if not ctx.authorize_group(AclOperation.READ, request.group_id):
            raise GroupAuthorizationFailedError()
        coordinator = await ctx.broker.loaded_group_coordinator()
        result = await coordinator.join_group(
            group_id=request.group_id,
            member_id=request.member_id,
            group_instance_id=instance_id,
            client_id=header.client_id or "",
            client_host=ctx.client_host,
            session_timeout_ms=session_timeout,
            rebalance_timeout_ms=rebalance_timeout,
            protocol_type=request.protocol_type,
            protocols=[(p.name, p.metadata) for p in request.protocols],
            require_known_member_id=version >= 4 and instance_id is None,
            reason=request.reason,
            api_version=version,
        )
    except GroupAuthorizationFailedError as exc:
        result = JoinGroupResult(error=error_code_for(exc))  # Kafka's error answer: no member id
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        result = JoinGroupResult(error=error_code_for(exc), member_id=request.member_id)
    # Before v7 the protocol name is not nullable: "" stands for none.
    protocol_name = result.protocol_name if version >= 7 else (result.protocol_name or "")
    members = tuple(JoinGroupResponseMember(m.member_id, m.group_instance_id, m.metadata) for m in result.members)
    body = encode_join_group_response(version, JoinGroupResponse(
        error_code=result.error,
        generation_id=result.generation_id,
        protocol_type=result.protocol_type if result.error == ErrorCode.NONE else None,
        protocol_name=protocol_name,
        leader=result.leader,
        skip_assignment=result.skip_assignment,
        member_id=result.member_id,
        members=members,
    ))
    return EncodedResponse([body], len(body))
