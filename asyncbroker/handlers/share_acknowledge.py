"""ShareAcknowledge (key 79): a share group member's acknowledgements (ACCEPT, RELEASE,
REJECT, and from v2 RENEW in a request marked is_renew_ack) of records it acquired, outside a
fetch; see asyncbroker/share_partition_manager.py. v2 answers the group's record lock duration
(acquisition_lock_timeout), which a renewed lock runs for. Errors of the whole request carry
no message and no lock timeout (Kafka's getErrorResponse)."""

from __future__ import annotations

from typing import Any

from wire.errors import ErrorCode, GroupAuthorizationFailedError, InvalidRequestError
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.handlers import error_code_for
from asyncbroker.handlers.share_fetch import acknowledgements, by_topic
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.SHARE_ACKNOWLEDGE


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)
    try:
        if not request.group_id or not request.member_id:
            raise InvalidRequestError("ShareAcknowledge needs a group id and a member id")
        if not ctx.authorize_group(AclOperation.READ, request.group_id):
            raise GroupAuthorizationFailedError()
        answers = await ctx.broker.share_partitions.acknowledge(
            group_id=request.group_id, member_id=request.member_id, epoch=request.share_session_epoch,
            acks=acknowledgements(request.topics), renew=bool(getattr(request, "is_renew_ack", False)),
            renew_types=header.api_version >= 2)
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        # Kafka's whole-request errors carry no message.
        return b.entity("ShareAcknowledgeResponse", throttle_time=0, error_code=error_code_for(exc),
                        error_message=None, acquisition_lock_timeout=0, responses=(), node_endpoints=())
    lock_ms = ctx.broker.group_coordinator.group_configs.value(request.group_id, "share.record.lock.duration.ms")
    return b.entity("ShareAcknowledgeResponse", throttle_time=0, error_code=ErrorCode.NONE, error_message=None,
                    acquisition_lock_timeout=lock_ms,
                    responses=by_topic(b, answers, "ShareAcknowledgeTopicResponse", fetch=False), node_endpoints=())
