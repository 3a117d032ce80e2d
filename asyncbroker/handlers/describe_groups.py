"""DescribeGroups (key 15): state, protocol and members of groups.

Member metadata is reported only for a Stable group (assignments always), as
Kafka does; an unknown group is described as Dead, with no error before v6
and with GROUP_ID_NOT_FOUND and a message from v6 (KIP-1043).
"""

from __future__ import annotations

from typing import Any

from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AUTHORIZED_OPERATIONS_OMITTED, AclOperation, ResourceType
from asyncbroker.handlers import error_code_for
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.DESCRIBE_GROUPS



async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)
    out = []
    try:
        coordinator = await ctx.broker.loaded_group_coordinator()
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        code = error_code_for(exc)
        out = [b.entity("DescribedGroup", error_code=code, group_id=g, group_state="", protocol_type="",
                        protocol_data="", members=(), authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)
               for g in request.groups]
        return b.entity("DescribeGroupsResponse", throttle_time=0, groups=tuple(out))
    refused = []
    for group_id in request.groups:
        if not ctx.authorize_group(AclOperation.DESCRIBE, group_id):
            # Answered after the groups described, as Kafka does.
            refused.append(b.entity("DescribedGroup", error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
                                    group_id=group_id, group_state="", protocol_type="", protocol_data="",
                                    members=(), authorized_operations=AUTHORIZED_OPERATIONS_OMITTED))
            continue
        d = coordinator.describe_group(group_id)
        members = tuple(
            b.entity("DescribedGroupMember", member_id=m.member_id, group_instance_id=m.group_instance_id,
                     client_id=m.client_id, client_host=m.client_host, member_metadata=m.metadata,
                     member_assignment=m.assignment)
            for m in d.members
        )
        error, message = ErrorCode.NONE, None
        if header.api_version >= 6 and d.state == "Dead":
            error, message = ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found."
        # Asked for (v3+), the operations are reported for every group answered without error.
        operations = (ctx.authorized_operations(ResourceType.GROUP, group_id)
                      if getattr(request, "include_authorized_operations", False) and error == ErrorCode.NONE
                      else AUTHORIZED_OPERATIONS_OMITTED)
        out.append(b.entity("DescribedGroup", error_code=error, error_message=message, group_id=d.group_id,
                            group_state=d.state, protocol_type=d.protocol_type, protocol_data=d.protocol_data,
                            members=members, authorized_operations=operations))
    return b.entity("DescribeGroupsResponse", throttle_time=0, groups=(*out, *refused))
