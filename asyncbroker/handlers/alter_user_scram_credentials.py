"""AlterUserScramCredentials (key 51): add, replace or delete users' SCRAM credentials.

The client sends the salt and the salted password (never the password); the broker keeps
what RFC 5802 derives from them (asyncbroker.scram_credentials), durably. Each user gets
its own result: an unknown mechanism, too few or too many iterations, an empty name, a
user named twice in the request (whatever the mechanisms), or a deletion of a credential
that does not exist fail that user only.
"""
from __future__ import annotations

from typing import Any

from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.ALTER_USER_SCRAM_CREDENTIALS


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    # SCRAM (and hashlib with it) loads when credentials are first used.
    from asyncbroker.scram_credentials import MAX_ITERATIONS, MECHANISMS, MIN_ITERATIONS, ScramCredential

    b = ResponseBuilder(API_KEY, header.api_version)
    if not ctx.authorize_cluster(AclOperation.ALTER):
        message = ctx.not_authorized_message(AclOperation.ALTER)
        return b.entity("AlterUserScramCredentialsResponse", throttle_time=0, results=tuple(
            b.entity("AlterUserScramCredentialsResult", user=item.name,
                     error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=message)
            for item in (*request.deletions, *request.upsertions)))
    store = ctx.broker.scram_credentials
    # As Kafka's controller: one change per user and request, deletions read first. A user
    # named again fails as a whole (DUPLICATE_RESOURCE); a user's first failure sticks.
    failed: dict[str, tuple[ErrorCode, str]] = {}
    deletions: dict[str, Any] = {}
    upsertions: dict[str, Any] = {}
    # A mechanism Kafka does not know fails its user before anything else is checked.
    unknown: dict[str, tuple[ErrorCode, str]] = {
        item.name: (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
        for item in (*request.deletions, *request.upsertions) if int(item.mechanism) not in MECHANISMS}
    for d in request.deletions:
        if d.name in unknown:
            continue
        if d.name in failed:
            continue
        if deletions.pop(d.name, None) is not None:
            failed[d.name] = _TWICE
            continue
        problem = _check(d.name, int(d.mechanism))
        if problem is None and store.get(d.name, MECHANISMS[int(d.mechanism)][0]) is None:
            problem = (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
        if problem is not None:
            failed[d.name] = problem
        else:
            deletions[d.name] = d
    for u in request.upsertions:
        if u.name in failed or u.name in unknown:
            continue
        if deletions.pop(u.name, None) is not None or upsertions.pop(u.name, None) is not None:
            failed[u.name] = _TWICE
            continue
        problem = _check(u.name, int(u.mechanism))
        if problem is None and int(u.iterations) < MIN_ITERATIONS:
            problem = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        if problem is None and int(u.iterations) > MAX_ITERATIONS:
            problem = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
        if problem is not None:
            failed[u.name] = problem
        else:
            upsertions[u.name] = u
    removed = {(name, MECHANISMS[int(d.mechanism)][0]) for name, d in deletions.items()}
    added = {(name, MECHANISMS[int(u.mechanism)][0]): ScramCredential.from_salted_password(
        MECHANISMS[int(u.mechanism)][1], bytes(u.salt), bytes(u.salted_password), int(u.iterations))
        for name, u in upsertions.items()}
    if removed or added:
        await ctx.broker.run_blocking(store.apply, added, removed)
    # The deletions, the upsertions, then the failures (Kafka's groups; within them Kafka's
    # order is its hash maps', which clients do not rely on: they key results by user).
    rows: list[tuple[str, ErrorCode, str | None]] = [(name, ErrorCode.NONE, None) for name in deletions]
    rows += [(name, ErrorCode.NONE, None) for name in upsertions]
    rows += [(name, *error) for name, error in (failed | unknown).items()]
    return b.entity("AlterUserScramCredentialsResponse", throttle_time=0, results=tuple(
        b.entity("AlterUserScramCredentialsResult", user=name, error_code=code, error_message=message)
        for name, code, message in rows))


_TWICE = (ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")


def _check(name: str, mechanism: int) -> tuple[ErrorCode, str] | None:
    from asyncbroker.scram_credentials import MECHANISMS

    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism not in MECHANISMS:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None
