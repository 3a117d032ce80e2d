"""DeleteTopics (API 20): by name (v1-v5) or by name or topic id (v6).

The partitions are renamed `<topic>-<p>.<uuid>-delete` by storage and removed
later, so a topic of the same name can be created again at once.
"""
from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

from wire.errors import ErrorCode, InvalidRequestError, KafkaError
from wire.messages import ApiKey

from asyncbroker.handlers import error_code_for, error_message_for
from asyncbroker.response_builder import ResponseBuilder
from asyncbroker.topics import ZERO_UUID, TopicDeletionDisabledError

API_KEY = ApiKey.DELETE_TOPICS
MIN_VERSION = 1
MAX_VERSION = 6


async def handle(broker: Any, header: Any, request: Any) -> Any:
    rb = ResponseBuilder(API_KEY, header.api_version)
    if header.api_version >= 6:
        wanted: list[tuple[str | None, uuid.UUID | None]] = [(t.name, t.topic_id) for t in request.topics]
    else:
        wanted = [(name, None) for name in request.topic_names]
    names = Counter(n for n, i in wanted if n)
    ids = Counter(i for n, i in wanted if i is not None and i != ZERO_UUID)
    results = []
    for name, topic_id in wanted:
        by_id = topic_id is not None and topic_id != ZERO_UUID
        try:
            if name and by_id:
                raise InvalidRequestError("You may not specify both topic name and topic id.")
            if by_id and ids[topic_id] > 1:
                raise InvalidRequestError("Duplicate topic id.")
            if not by_id and names[name] > 1:
                raise InvalidRequestError("Duplicate topic name.")
            if by_id:
                meta = await broker.topics.delete_topic_by_id(topic_id)
            else:
                meta = await broker.topics.delete_topic(name or "")
            results.append(
                rb.entity(
                    "DeletableTopicResult",
                    name=meta.name,
                    topic_id=meta.topic_id,
                    error_code=ErrorCode.NONE,
                    error_message=None,
                )
            )
        except KafkaError as exc:
            code = error_code_for(exc)
            if isinstance(exc, TopicDeletionDisabledError) and header.api_version < 3:
                code = ErrorCode.INVALID_REQUEST  # TOPIC_DELETION_DISABLED is unknown to v0-v2 clients
            results.append(
                rb.entity(
                    "DeletableTopicResult",
                    name=name if name or not by_id else None,
                    topic_id=topic_id if topic_id is not None else ZERO_UUID,
                    error_code=code,
                    error_message=error_message_for(exc),
                )
            )
    return rb.entity("DeleteTopicsResponse", throttle_time=0, responses=tuple(results))
