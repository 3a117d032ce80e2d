"""DeleteGroups (key 42): remove empty groups and their offsets (tombstones in __consumer_offsets)."""

from __future__ import annotations

from typing import Any

from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.handlers import error_code_for
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.DELETE_GROUPS


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)
    requested = list(dict.fromkeys(request.groups_names))
    # Groups the principal may not DELETE are answered after the others, as Kafka does.
    allowed = [g for g in requested if ctx.authorize_group(AclOperation.DELETE, g)]
    names = allowed + [g for g in requested if g not in allowed]
    results = {g: int(ErrorCode.GROUP_AUTHORIZATION_FAILED) for g in names if g not in allowed}
    try:
        coordinator = await ctx.broker.loaded_group_coordinator()
        results.update(await coordinator.delete_groups(allowed) if allowed else {})
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        code = error_code_for(exc)
        results.update({g: code for g in allowed})
    return b.entity("DeleteGroupsResponse", throttle_time=0, results=tuple(
        b.entity("DeletableGroupResult", group_id=g, error_code=results[g]) for g in names
    ))
