"""DescribeAcls (key 29): the ACLs a filter matches, grouped by resource pattern.

Needs DESCRIBE on the cluster. Without an authorizer (`authorizer.class.name` empty, Kafka's
default) the API is still listed in ApiVersions but answers SECURITY_DISABLED: tools rely on
that answer (MirrorMaker 2's topic ACL sync, for one, stops quietly on it, and fails every
interval on an API that is not listed).
"""
from __future__ import annotations

from typing import Any

from wire.errors import ErrorCode, SecurityDisabledError
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import UNKNOWN, AclOperation, filter_of
from asyncbroker.connection import CloseConnection
from asyncbroker.handlers import error_code_for
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.DESCRIBE_ACLS

NO_AUTHORIZER = "No Authorizer is configured on the broker"


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)

    def failed(code: int, message: str | None) -> Any:
        return b.entity("DescribeAclsResponse", throttle_time=0, error_code=code, error_message=message, resources=())

    if UNKNOWN in (request.resource_type_filter, request.pattern_type_filter, request.operation,
                   request.permission_type):
        raise CloseConnection("DescribeAcls: the filter contains UNKNOWN elements")  # Kafka cannot parse it
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        return failed(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ctx.not_authorized_message(AclOperation.DESCRIBE))
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        error = SecurityDisabledError(NO_AUTHORIZER)
        return failed(error_code_for(error), error.wire_message)
    acl_filter = filter_of(request.resource_type_filter, request.resource_name_filter, request.pattern_type_filter,
                           request.principal_filter, request.host_filter, request.operation, request.permission_type)
    grouped: dict[tuple[int, str, int], list[Any]] = {}
    for acl in authorizer.acls(acl_filter):
        grouped.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(
            b.entity("AclDescription", principal=acl.principal, host=acl.host, operation=int(acl.operation),
                     permission_type=int(acl.permission_type)))
    return b.entity("DescribeAclsResponse", throttle_time=0, error_code=ErrorCode.NONE, error_message="", resources=tuple(
        b.entity("DescribeAclsResource", resource_type=int(rt), resource_name=name, pattern_type=int(pt),
                 acls=tuple(acls))
        for (rt, name, pt), acls in grouped.items()))
