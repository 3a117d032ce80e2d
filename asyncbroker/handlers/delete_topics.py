"""DeleteTopics (API 20): by name (v1-v5) or by name or topic id (v6).

The partitions are renamed `<topic>-<p>.<uuid>-delete` by storage and removed
later, so a topic of the same name can be created again at once.
"""
from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

from wire.error_messages import default_message
from wire.errors import (
    ErrorCode,
    KafkaError,
    ThrottlingQuotaExceededError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.handlers import error_code_for, error_message_for
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder
from asyncbroker.topics import ZERO_UUID, TopicDeletionDisabledError

API_KEY = ApiKey.DELETE_TOPICS


# Kafka answers unknown names and ids with its errors' default texts.
_UNKNOWN_TOPIC = "This server does not host this topic-partition."
_UNKNOWN_TOPIC_ID = "This server does not host this topic ID."

_AUTHORIZATION_FAILED = default_message(ErrorCode.TOPIC_AUTHORIZATION_FAILED)

async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    rb = ResponseBuilder(API_KEY, header.api_version)
    if header.api_version >= 6:
        wanted: list[tuple[str | None, uuid.UUID | None]] = [(t.name, t.topic_id) for t in request.topics]
    else:
        wanted = [(name, None) for name in request.topic_names]
    names = Counter(n for n, i in wanted if n is not None and (i is None or i == ZERO_UUID))
    ids = Counter(i for n, i in wanted if n is None and i is not None and i != ZERO_UUID)
    results = []

    def result(name: str | None, topic_id: uuid.UUID | None, code: int, message: str | None) -> None:
        results.append(rb.entity("DeletableTopicResult", name=name, topic_id=topic_id or ZERO_UUID,
                                 error_code=code, error_message=message))

    cluster_delete = ctx.authorize_cluster(AclOperation.DELETE, log_denial=False)

    def may(operation: str, topic: str) -> bool:
        if cluster_delete:
            return True
        op = AclOperation.DELETE if operation == "delete" else AclOperation.DESCRIBE
        return ctx.authorize_topic(op, topic)

    # A name or id given twice is answered once, as Kafka's controller does.
    for twice in (n for n, c in names.items() if c > 1):
        result(twice, None, ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
    for twice_id in (i for i, c in ids.items() if c > 1):
        result(None, twice_id, ErrorCode.INVALID_REQUEST, "Duplicate topic id.")
    for name, topic_id in wanted:
        by_id = topic_id is not None and topic_id != ZERO_UUID
        if name is None and not by_id:
            result(None, None, ErrorCode.INVALID_REQUEST, "Neither topic name nor id were specified.")
            continue
        if name is not None and by_id:
            result(name, topic_id, ErrorCode.INVALID_REQUEST, "You may not specify both topic name and topic id.")
            continue
        target_id = topic_id if by_id else None
        if (ids[target_id] if target_id is not None else names[name or ""]) > 1:
            continue
        # DELETE on the topic (or the cluster). A name the principal may not DESCRIBE is
        # refused whether it exists or not; an id is refused without its name then.
        if target_id is not None:
            meta = ctx.broker.topics.by_id(target_id)
            if meta is not None and not may("delete", meta.name):
                result(meta.name if may("describe", meta.name) else None, target_id,
                       ErrorCode.TOPIC_AUTHORIZATION_FAILED, _AUTHORIZATION_FAILED)
                continue
        elif not may("describe", name or "") or (ctx.broker.topics.get(name or "") is not None
                                                  and not may("delete", name or "")):
            result(name, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED, _AUTHORIZATION_FAILED)
            continue
        try:
            found = ctx.broker.topics.by_id(target_id) if target_id is not None else ctx.broker.topics.get(name or "")
            if found is not None and ctx.mutations_limited(header.client_id or ""):
                try:
                    ctx.record_mutations(header.client_id or "", found.partitions, strict=header.api_version >= 5)
                except ThrottlingQuotaExceededError as exc:
                    # Refused by the controller, which knows the topic by name and id by then.
                    result(found.name, found.topic_id, error_code_for(exc), error_message_for(exc))
                    continue
            if target_id is not None:
                meta = await ctx.broker.topics.delete_topic_by_id(target_id)
            else:
                meta = await ctx.broker.topics.delete_topic(name or "")
            result(meta.name, meta.topic_id, ErrorCode.NONE, None)
        except KafkaError as exc:
            code = error_code_for(exc)
            message = error_message_for(exc)
            if isinstance(exc, TopicDeletionDisabledError) and header.api_version < 3:
                code = ErrorCode.INVALID_REQUEST  # TOPIC_DELETION_DISABLED is unknown to v0-v2 clients
            elif isinstance(exc, UnknownTopicIdError):
                message = _UNKNOWN_TOPIC_ID
            elif isinstance(exc, UnknownTopicOrPartitionError):
                message = _UNKNOWN_TOPIC
            result(None if by_id else name, topic_id, code, message)
    return rb.entity("DeleteTopicsResponse", throttle_time=0, responses=tuple(results))
