"""CreatePartitions (API 37): grow a topic's partition count (never shrink)."""
from __future__ import annotations

from collections import Counter
from typing import Any

from wire.errors import ErrorCode, InvalidReplicaAssignmentError, InvalidRequestError, KafkaError
from wire.messages import ApiKey

from asyncbroker.handlers import error_code_for, error_message_for
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.CREATE_PARTITIONS
MIN_VERSION = 0
MAX_VERSION = 3


def _check_assignments(broker: Any, topic: Any) -> None:
    """Manual placement of the new partitions: one replica each, on this node."""
    if topic.assignments is None:
        return
    current = broker.topics.get(topic.name)
    if current is not None and len(topic.assignments) != topic.count - current.partitions:
        raise InvalidReplicaAssignmentError(
            f"Attempted to add {topic.count - current.partitions} additional partition(s), "
            f"but only {len(topic.assignments)} assignment(s) were specified."
        )
    for a in topic.assignments:
        if list(a.broker_ids) != [broker.node_id]:
            raise InvalidReplicaAssignmentError(
                f"The manual partition assignment includes broker(s) {list(a.broker_ids)}, "
                f"but only broker {broker.node_id} is registered."
            )


async def handle(broker: Any, header: Any, request: Any) -> Any:
    rb = ResponseBuilder(API_KEY, header.api_version)
    counts = Counter(t.name for t in request.topics)
    results = []
    for topic in request.topics:
        try:
            if counts[topic.name] > 1:
                raise InvalidRequestError("Duplicate topic name.")
            _check_assignments(broker, topic)
            await broker.topics.create_partitions(topic.name, topic.count, request.validate_only)
            code, message = ErrorCode.NONE, None
        except KafkaError as exc:
            code, message = error_code_for(exc), error_message_for(exc)
        results.append(rb.entity("CreatePartitionsTopicResult", name=topic.name, error_code=code, error_message=message))
    return rb.entity("CreatePartitionsResponse", throttle_time=0, results=tuple(results))
