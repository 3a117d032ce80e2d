"""AlterShareGroupOffsets (key 91, KIP-932): set the start offsets of an empty share group's
share partitions; the group's next fetch of them starts there.

As Kafka's KafkaApis and group coordinator answer it: GROUP READ is needed (else the whole
request fails); topics the caller may not READ, and unknown topics, answer each partition with
their error first; then the coordinator's answers, topic by topic in request order: partitions
past the topic's last are UNKNOWN_TOPIC_OR_PARTITION (a negative one fails the whole request
with UNKNOWN_SERVER_ERROR: Kafka's share-state persister refuses it). A group with members (NON_EMPTY_GROUP), another kind of group
(GROUP_ID_NOT_FOUND) or an empty group id (INVALID_GROUP_ID) fail the whole request, with no
topics. An unknown group id is created, empty, with the offsets.
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

API_KEY = ApiKey.ALTER_SHARE_GROUP_OFFSETS

ZERO_UUID = uuid.UUID(int=0)
_MESSAGES = {
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
}


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)
    group_id = request.group_id

    def failed(code: int, message: str | None) -> Any:
        return b.entity("AlterShareGroupOffsetsResponse", throttle_time=0, error_code=code, error_message=message,
                        responses=())

    if not ctx.authorize_group(AclOperation.READ, group_id):
        code = ErrorCode.GROUP_AUTHORIZATION_FAILED
        return failed(code, _MESSAGES[code])
    topics = ctx.broker.topics
    # topic name -> (topic id, [(partition, error code, message)]), in the order Kafka answers.
    answered: dict[str, tuple[uuid.UUID, list[tuple[int, int, str | None]]]] = {}
    wanted: dict[uuid.UUID, tuple[str, dict[int, int]]] = {}
    for t in request.topics:
        meta = topics.get(t.topic_name)
        if not ctx.authorize_topic(AclOperation.READ, t.topic_name):
            code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif meta is None:
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        else:
            continue
        entry = answered.setdefault(t.topic_name, (meta.topic_id if meta is not None else ZERO_UUID, []))
        entry[1].extend((p.partition_index, code, _MESSAGES[code]) for p in t.partitions)
    checked: list[tuple[str, uuid.UUID, list[tuple[int, int, str | None]]]] = []
    for t in request.topics:
        meta = topics.get(t.topic_name)
        if meta is None or not ctx.authorize_topic(AclOperation.READ, t.topic_name, log_denial=False):
            continue
        rows: list[tuple[int, int, str | None]] = []
        wanted.setdefault(meta.topic_id, (meta.name, {}))  # recorded even with no partition to set, as Kafka does
        for p in t.partitions:
            if p.partition_index >= meta.partitions:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                rows.append((p.partition_index, code, _MESSAGES[code]))
            else:
                rows.append((p.partition_index, ErrorCode.NONE, None))
                wanted.setdefault(meta.topic_id, (meta.name, {}))[1][p.partition_index] = p.start_offset
        checked.append((t.topic_name, meta.topic_id, rows))
    try:
        if not group_id:
            raise InvalidGroupIdError("The group id is invalid.")
        coordinator = await ctx.broker.loaded_group_coordinator()
        await coordinator.alter_share_group_offsets(group_id, wanted)
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        return failed(error_code_for(exc), error_message_for(exc))
    for name, topic_id, rows in checked:
        answered.setdefault(name, (topic_id, []))[1].extend(rows)
    return b.entity("AlterShareGroupOffsetsResponse", throttle_time=0, error_code=ErrorCode.NONE, error_message=None,
                    responses=tuple(
                        b.entity("AlterShareGroupOffsetsResponseTopic", topic_name=name, topic_id=topic_id,
                                 partitions=tuple(
                                     b.entity("AlterShareGroupOffsetsResponsePartition", partition_index=index,
                                              error_code=code, error_message=message)
                                     for index, code, message in rows))
                        for name, (topic_id, rows) in answered.items()))
