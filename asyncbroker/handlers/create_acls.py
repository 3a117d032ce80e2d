"""CreateAcls (key 30), as a Kafka broker without an authorizer answers it: every creation
fails with SECURITY_DISABLED (see describe_acls)."""
from __future__ import annotations

from typing import Any

from wire.errors import SecurityDisabledError
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.handlers import error_code_for
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.CREATE_ACLS
MIN_VERSION = 1
MAX_VERSION = 3

# Kafka forwards CreateAcls and DeleteAcls to its controller, whose message differs from the broker's
# DescribeAcls one (describe_acls.NO_AUTHORIZER).
NO_AUTHORIZER = "No Authorizer is configured."


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)
    error = SecurityDisabledError(NO_AUTHORIZER)
    return b.entity("CreateAclsResponse", throttle_time=0, results=tuple(
        b.entity("AclCreationResult", error_code=error_code_for(error), error_message=error.wire_message)
        for _ in request.creations))
