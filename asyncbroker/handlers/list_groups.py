"""ListGroups (key 16): every group, optionally filtered by state (v4+) and type (v5+)."""

from __future__ import annotations

from typing import Any

from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.handlers import error_code_for
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.LIST_GROUPS


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)
    error: int = ErrorCode.NONE
    groups: tuple[Any, ...] = ()
    try:
        coordinator = await ctx.broker.loaded_group_coordinator()
        listed = coordinator.list_groups(getattr(request, "states_filter", ()) or (),
                                         getattr(request, "types_filter", ()) or ())
        # DESCRIBE on the cluster lists every group; else those the principal may DESCRIBE.
        if not ctx.authorize_cluster(AclOperation.DESCRIBE, log_denial=False):
            listed = [g for g in listed if ctx.authorize_group(AclOperation.DESCRIBE, g.group_id, log_denial=False)]
        groups = tuple(
            b.entity("ListedGroup", group_id=g.group_id, protocol_type=g.protocol_type, group_state=g.state,
                     group_type=g.group_type)
            for g in sorted(listed, key=lambda g: g.group_id)
        )
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        error = error_code_for(exc)
    return b.entity("ListGroupsResponse", throttle_time=0, error_code=error, groups=groups)
