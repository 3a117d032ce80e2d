"""FindCoordinator (key 10): this node coordinates every group, transaction and share
partition.

Like Kafka, the first lookup of a group coordinator creates
`__consumer_offsets` (offsets.topic.num.partitions partitions, compacted), the first lookup
of a transaction coordinator `__transaction_state`, and the first of a share coordinator
`__share_group_state`.
"""

from __future__ import annotations

from collections.abc import Awaitable

from wire.error_messages import default_message, message_or_name
from wire.errors import ErrorCode
from wire.find_coordinator import (
    Coordinator,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    encode_find_coordinator_response,
)
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.encoded_response import EncodedResponse
from asyncbroker.handlers import error_code_for
from asyncbroker.request_context import RequestContext

API_KEY = ApiKey.FIND_COORDINATOR

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
SHARE_KEY_TYPE = 2


async def handle(ctx: RequestContext, header: RequestHeader, request: FindCoordinatorRequest) -> EncodedResponse:
    version = header.api_version
    key_type = request.key_type
    keys = list(request.coordinator_keys) if version >= 4 else [request.key]
    # DESCRIBE on the group or transactional id, per key, before anything else (Kafka's getCoordinator).
    refusals = {k: _refusal(ctx, key_type, k) for k in keys}
    error: int = ErrorCode.NONE
    if all(refusals.values()):
        pass  # nothing to look up: the coordinator topic is not created for a refused key
    elif key_type == GROUP_KEY_TYPE:
        async def offsets_topic() -> None:
            await (await ctx.broker.loaded_group_coordinator()).offsets_topic.ensure_created()
        error = await _coordinator_topic_error(offsets_topic())
    elif key_type == TRANSACTION_KEY_TYPE:
        error = await _coordinator_topic_error(ctx.broker.transaction_coordinator.txn_manager.topic.ensure_created())
    elif key_type == SHARE_KEY_TYPE and version >= 6:
        # The share coordinator's lookups are brokers' business: CLUSTER_ACTION or the whole
        # request fails. A key that is not "group:topic id:partition" is INVALID_REQUEST.
        if not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
            error = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            return _encoded(version, FindCoordinatorResponse(coordinators=tuple(
                Coordinator(k, -1, "", -1, error, default_message(error)) for k in keys)))
        from asyncbroker.share_coordinator import parse_share_partition_key  # with share groups, on first use

        for k in keys:
            if parse_share_partition_key(k) is None:
                refusals[k] = ErrorCode.INVALID_REQUEST
        if not all(refusals.values()):
            error = await _coordinator_topic_error(ctx.broker.share_partitions.coordinator.topic.ensure_created())
    else:
        # A share key before v6 and a key type Kafka does not know both get INVALID_REQUEST;
        # only the latter fails the whole request, with the error's default message (see below).
        error = ErrorCode.INVALID_REQUEST

    host, port = ctx.broker.advertised_for(ctx.listener_name)

    def coordinator(key: str, message: str | None) -> Coordinator:
        code = refusals[key] or error
        ok = code == ErrorCode.NONE
        return Coordinator(key, ctx.broker.node_id if ok else -1, host if ok else "", port if ok else -1, code,
                           message if message is not None else message_or_name(code, ErrorCode(code).name))

    if version >= 4:
        # Per-key answers carry no message (""), except when the request failed as a whole.
        known = key_type in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE, SHARE_KEY_TYPE)
        message = "" if known else default_message(error)
        return _encoded(version, FindCoordinatorResponse(coordinators=tuple(coordinator(k, message) for k in keys)))
    # Before v4 the message is Kafka's Errors.message(): the default text, "NONE" on success.
    only = coordinator(keys[0], None)
    return _encoded(version, FindCoordinatorResponse(error_code=only.error_code, error_message=only.error_message,
                                                     node_id=only.node_id, host=only.host, port=only.port))


def _encoded(version: int, response: FindCoordinatorResponse) -> EncodedResponse:
    body = encode_find_coordinator_response(version, response)
    return EncodedResponse([body], len(body))


async def _coordinator_topic_error(created: Awaitable[None]) -> int:
    """The coordinator's internal topic made ready: NONE, or the error that says to retry."""
    try:
        await created
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        error = error_code_for(exc)
        return error if error in (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS) \
            else ErrorCode.COORDINATOR_NOT_AVAILABLE
    return ErrorCode.NONE


def _refusal(ctx: RequestContext, key_type: int, key: str) -> int:
    if key_type == GROUP_KEY_TYPE and not ctx.authorize_group(AclOperation.DESCRIBE, key):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    if key_type == TRANSACTION_KEY_TYPE and not ctx.authorize_transactional_id(AclOperation.DESCRIBE, key):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    return ErrorCode.NONE
