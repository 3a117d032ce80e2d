"""CreateAcls (key 30): add ACLs, each checked on its own and answered in request order.

Needs ALTER on the cluster; SECURITY_DISABLED for every creation without an authorizer
(see describe_acls). The new ACLs are written to the log directories before the answer.
"""
from __future__ import annotations

from typing import Any

from wire.errors import ErrorCode, SecurityDisabledError
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import UNKNOWN, AclOperation, InvalidAclError, binding_of
from asyncbroker.connection import CloseConnection
from asyncbroker.handlers import error_code_for
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.CREATE_ACLS

# Kafka forwards CreateAcls and DeleteAcls to its controller, whose message differs from the broker's
# DescribeAcls one (describe_acls.NO_AUTHORIZER).
NO_AUTHORIZER = "No Authorizer is configured."


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)
    if any(UNKNOWN in (c.resource_type, c.resource_pattern_type, c.operation, c.permission_type)
           for c in request.creations):
        raise CloseConnection("CreateAcls: creations contain UNKNOWN elements")  # Kafka cannot parse it

    def results(outcomes: list[tuple[int, str | None]]) -> Any:
        return b.entity("CreateAclsResponse", throttle_time=0, results=tuple(
            b.entity("AclCreationResult", error_code=code, error_message=message) for code, message in outcomes))

    if not ctx.authorize_cluster(AclOperation.ALTER):
        message = ctx.not_authorized_message(AclOperation.ALTER)
        return results([(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, message)] * len(request.creations))
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        error = SecurityDisabledError(NO_AUTHORIZER)
        return results([(error_code_for(error), error.wire_message)] * len(request.creations))
    bindings = [binding_of(c.resource_type, c.resource_name, c.resource_pattern_type, c.principal, c.host,
                           c.operation, c.permission_type) for c in request.creations]
    if any(b.is_unspecific() for b in bindings):
        return results([(ErrorCode.UNKNOWN_SERVER_ERROR, None)] * len(bindings))
    outcomes: list[tuple[int, str | None]] = []
    valid = []
    for binding in bindings:
        try:
            binding.validate()
        except InvalidAclError as exc:
            outcomes.append((ErrorCode.INVALID_REQUEST, str(exc)))
            continue
        valid.append(binding)
        outcomes.append((ErrorCode.NONE, ""))
    if valid:
        authorizer.create(valid)
        await authorizer.persist(ctx.broker.run_blocking)
    return results(outcomes)
