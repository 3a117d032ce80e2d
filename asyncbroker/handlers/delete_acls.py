"""DeleteAcls (key 31), as a Kafka broker without an authorizer answers it: every filter
fails with SECURITY_DISABLED and matches nothing (see describe_acls)."""
from __future__ import annotations

from typing import Any

from wire.errors import SecurityDisabledError
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.handlers import error_code_for
from asyncbroker.handlers.create_acls import NO_AUTHORIZER
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.DELETE_ACLS
MIN_VERSION = 1
MAX_VERSION = 3


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)
    error = SecurityDisabledError(NO_AUTHORIZER)
    return b.entity("DeleteAclsResponse", throttle_time=0, filter_results=tuple(
        b.entity("DeleteAclsFilterResult", error_code=error_code_for(error), error_message=error.wire_message,
                 matching_acls=()) for _ in request.filters))
