"""ConsumerGroupHeartbeat (key 68): the whole consumer rebalance protocol (KIP-848) in one
request; see asyncbroker/consumer_group_manager.py.

v0 lets the coordinator pick a joining member's id; from v1 the member brings its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from wire.errors import ErrorCode, GroupAuthorizationFailedError, TopicAuthorizationFailedError
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.handlers import error_code_for, error_message_for, millis
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.CONSUMER_GROUP_HEARTBEAT


def _describable(ctx: RequestContext) -> Callable[[Iterable[str]], list[str]]:
    """The topics of a regex's matches this member may describe (denials are not logged: a
    regex is not a request for each topic it could match)."""
    return lambda names: [n for n in names if ctx.authorize_topic(AclOperation.DESCRIBE, n, log_denial=False)]


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)
    try:
        if not ctx.authorize_group(AclOperation.READ, request.group_id):
            raise GroupAuthorizationFailedError()
        names = request.subscribed_topic_names
        if names:
            refused = sorted(n for n in set(names) if not ctx.authorize_topic(AclOperation.DESCRIBE, n))
            if refused:
                raise TopicAuthorizationFailedError(  # Kafka 4.4 answers it without a message
                    f"The client is not authorized to describe topics: {', '.join(refused)}.", wire_message=None)
        coordinator = await ctx.broker.loaded_group_coordinator()
        owned = request.topic_partitions
        result = await coordinator.consumer_group_heartbeat(
            api_version=header.api_version,
            group_id=request.group_id,
            member_id=request.member_id,
            member_epoch=request.member_epoch,
            instance_id=request.instance_id,
            rack_id=request.rack_id,
            rebalance_timeout_ms=millis(request.rebalance_timeout),
            subscribed_topic_names=None if names is None else tuple(names),
            subscribed_topic_regex=getattr(request, "subscribed_topic_regex", None),
            server_assignor=request.server_assignor,
            owned=None if owned is None else tuple((tp.topic_id, tuple(tp.partitions)) for tp in owned),
            client_id=header.client_id or "",
            client_host=ctx.client_host,
            authorized_topics=None if ctx.broker.authorizer is None else _describable(ctx),
        )
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        return heartbeat_response(b, "ConsumerGroupHeartbeatResponse", exc)
    return heartbeat_response(b, "ConsumerGroupHeartbeatResponse", result)


def heartbeat_response(b: ResponseBuilder, response: str, result: Any) -> Any:
    """A ConsumerGroupHeartbeat or ShareGroupHeartbeat answer (the same shape), from the
    heartbeat's result or the error it raised."""
    if isinstance(result, Exception):
        return b.entity(response, throttle_time=0, error_code=error_code_for(result),
                        error_message=error_message_for(result), member_id=None, member_epoch=0,
                        heartbeat_interval=0, assignment=None)
    assignment = None
    if result.assignment is not None:
        assignment = b.entity("Assignment", topic_partitions=tuple(
            b.entity("TopicPartitions", topic_id=topic_id, partitions=tuple(sorted(parts)))
            for topic_id, parts in result.assignment.items()))
    return b.entity(response, throttle_time=0, error_code=ErrorCode.NONE,
                    error_message=None, member_id=result.member_id, member_epoch=result.member_epoch,
                    heartbeat_interval=result.heartbeat_interval_ms, assignment=assignment)
