"""DescribeAcls (key 29), as a Kafka broker without an authorizer answers it.

`authorizer.class.name` is empty by default in Kafka, and then the ACL APIs are listed in
ApiVersions but answer SECURITY_DISABLED. Tools rely on that answer: MirrorMaker 2's topic
ACL sync, for one, stops quietly on it, and fails every interval on an API that is not
listed. asyncbroker has no authorizer (security is issue 20), so it answers the same.
"""
from __future__ import annotations

from typing import Any

from wire.errors import SecurityDisabledError
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.handlers import error_code_for
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.DESCRIBE_ACLS
MIN_VERSION = 1
MAX_VERSION = 3

NO_AUTHORIZER = "No Authorizer is configured on the broker"


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    error = SecurityDisabledError(NO_AUTHORIZER)
    return ResponseBuilder(API_KEY, header.api_version).entity(
        "DescribeAclsResponse", throttle_time=0, error_code=error_code_for(error), error_message=error.wire_message,
        resources=())
