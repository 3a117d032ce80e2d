"""DeleteShareGroupOffsets (key 92, KIP-932): forget the share state of topics of an empty
share group; its next fetch of them starts again where share.auto.offset.reset says.

As Kafka's KafkaApis and group coordinator answer it: GROUP DELETE is needed (else the whole
request fails); topics the caller may not READ answer TOPIC_AUTHORIZATION_FAILED first; then
the topics deleted, then those refused (UNKNOWN_TOPIC_OR_PARTITION: an unknown topic, or one
with no share state). An unknown group, another kind of group (GROUP_ID_NOT_FOUND), one with
members (NON_EMPTY_GROUP) or an empty group id (INVALID_GROUP_ID) fail the whole request, with
no topics.
"""

from __future__ import annotations

import uuid
from typing import Any

from wire.errors import ErrorCode, InvalidGroupIdError
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.handlers import error_code_for, error_message_for
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.DELETE_SHARE_GROUP_OFFSETS

ZERO_UUID = uuid.UUID(int=0)


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)
    group_id = request.group_id

    def answer(code: int, message: str | None, rows: list[tuple[str, uuid.UUID | None, int, str | None]]) -> Any:
        return b.entity("DeleteShareGroupOffsetsResponse", throttle_time=0, error_code=code, error_message=message,
                        responses=tuple(
                            b.entity("DeleteShareGroupOffsetsResponseTopic", topic_name=name,
                                     topic_id=topic_id or ZERO_UUID, error_code=c, error_message=m)
                            for name, topic_id, c, m in rows))

    if not ctx.authorize_group(AclOperation.DELETE, group_id):
        return answer(ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.", [])
    refused: list[tuple[str, uuid.UUID | None, int, str | None]] = []
    wanted: list[tuple[str, uuid.UUID | None, int]] = []
    for t in request.topics:
        if not ctx.authorize_topic(AclOperation.READ, t.topic_name):
            refused.append((t.topic_name, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."))
            continue
        meta = ctx.broker.topics.get(t.topic_name)
        wanted.append((t.topic_name, None, 0) if meta is None else (t.topic_name, meta.topic_id, meta.partitions))
    try:
        if not group_id:
            raise InvalidGroupIdError("The group id is invalid.")
        coordinator = await ctx.broker.loaded_group_coordinator()
        rows = await coordinator.delete_share_group_offsets(group_id, wanted)
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        return answer(error_code_for(exc), error_message_for(exc), [])
    return answer(ErrorCode.NONE, None, [*refused, *rows])
