"""DeleteAcls (key 31): remove the ACLs each filter matches, and list them per filter.

Needs ALTER on the cluster; SECURITY_DISABLED for every filter without an authorizer (see
describe_acls). The change is written to the log directories before the answer.
"""
from __future__ import annotations

from typing import Any

from wire.errors import ErrorCode, SecurityDisabledError
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import UNKNOWN, AclBinding, AclOperation, filter_of
from asyncbroker.connection import CloseConnection
from asyncbroker.handlers import error_code_for
from asyncbroker.handlers.create_acls import NO_AUTHORIZER
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.DELETE_ACLS


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)

    def result(code: int, message: str | None, matching: list[AclBinding]) -> Any:
        return b.entity("DeleteAclsFilterResult", error_code=code, error_message=message, matching_acls=tuple(
            b.entity("DeleteAclsMatchingAcl", error_code=0, error_message=None, resource_type=int(a.resource_type),
                     resource_name=a.resource_name, pattern_type=int(a.pattern_type), principal=a.principal,
                     host=a.host, operation=int(a.operation), permission_type=int(a.permission_type))
            for a in matching))

    def response(results: list[Any]) -> Any:
        return b.entity("DeleteAclsResponse", throttle_time=0, filter_results=tuple(results))

    if any(UNKNOWN in (f.resource_type_filter, f.pattern_type_filter, f.operation, f.permission_type)
           for f in request.filters):
        raise CloseConnection("DeleteAcls: filters contain UNKNOWN elements")  # Kafka cannot parse it
    if not ctx.authorize_cluster(AclOperation.ALTER):
        message = ctx.not_authorized_message(AclOperation.ALTER)
        return response([result(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, message, []) for _ in request.filters])
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        error = SecurityDisabledError(NO_AUTHORIZER)
        return response([result(error_code_for(error), error.wire_message, []) for _ in request.filters])
    filters = [filter_of(f.resource_type_filter, f.resource_name_filter, f.pattern_type_filter, f.principal_filter,
                         f.host_filter, f.operation, f.permission_type) for f in request.filters]
    usable = [f for f in filters if f.unknown_part() is None]
    removed = iter(authorizer.delete(usable))
    if usable:
        await authorizer.persist(ctx.broker.run_blocking)
    results = []
    for f in filters:
        problem = f.unknown_part()
        results.append(result(ErrorCode.INVALID_REQUEST, problem, []) if problem is not None
                       else result(ErrorCode.NONE, None, next(removed)))
    return response(results)
