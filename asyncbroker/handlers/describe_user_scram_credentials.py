"""DescribeUserScramCredentials (key 50): each user's SCRAM mechanisms and iterations
(never a salt or key), all users when none is named."""
from __future__ import annotations

from typing import Any

from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)
    if not ctx.authorize_cluster(AclOperation.DESCRIBE):
        # Kafka's error answer: the error at the top and once per user asked for, each with no name.
        refused = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return b.entity("DescribeUserScramCredentialsResponse", throttle_time=0, error_code=refused,
                        error_message=None, results=tuple(
                            b.entity("DescribeUserScramCredentialsResult", user="", error_code=refused,
                                     error_message=None, credential_infos=()) for _ in request.users or ()))
    from asyncbroker.scram_credentials import MECHANISMS  # SCRAM loads when first used

    ids = {name: mid for mid, (name, _) in MECHANISMS.items()}
    users = ctx.broker.scram_credentials.users()
    # user -> named more than once (each user is answered once)
    named: dict[str, bool] = {}
    for name in ([u.name for u in request.users] if request.users else users):
        named[name] = name in named
    results = []
    for name in named:
        if named[name]:
            code, message, infos = (ErrorCode.DUPLICATE_RESOURCE,
                                    f"Cannot describe SCRAM credentials for the same user twice in a single request: {name}", ())
        elif name not in users:
            code, message, infos = ErrorCode.RESOURCE_NOT_FOUND, f"Attempt to describe a user credential that does not exist: {name}", ()
        else:
            code, message = ErrorCode.NONE, ""
            infos = tuple(b.entity("CredentialInfo", mechanism=ids[m], iterations=c.iterations)
                          for m, c in sorted(users[name].items(), key=lambda mc: ids[mc[0]]))
        results.append(b.entity("DescribeUserScramCredentialsResult", user=name, error_code=code,
                                error_message=message, credential_infos=infos))
    return b.entity("DescribeUserScramCredentialsResponse", throttle_time=0, error_code=ErrorCode.NONE,
                    error_message="", results=tuple(results))
