"""OffsetDelete (key 47): drop a group's committed offsets for topics it no longer consumes."""

from __future__ import annotations

from typing import Any

from wire.errors import ErrorCode
from wire.messages import ApiKey

from asyncbroker.group_coordinator import group_coordinator_for
from asyncbroker.handlers import error_code_for
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.OFFSET_DELETE
MIN_VERSION = 0
MAX_VERSION = 0


async def handle(broker: Any, header: Any, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)
    top: int = ErrorCode.NONE
    results: dict[tuple[str, int], int] = {}
    wanted: list[tuple[str, int]] = []
    for t in request.topics:
        meta = broker.topics.get(t.name)
        for p in t.partitions:
            if meta is None or not 0 <= p.partition_index < meta.partitions:
                results[(t.name, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                wanted.append((t.name, p.partition_index))
    try:
        coordinator = await group_coordinator_for(broker)
        results.update(await coordinator.delete_offsets(request.group_id, wanted))
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        top = error_code_for(exc)
    topics: tuple[Any, ...] = ()
    if top == ErrorCode.NONE:
        topics = tuple(
            b.entity("OffsetDeleteResponseTopic", name=t.name, partitions=tuple(
                b.entity("OffsetDeleteResponsePartition", partition_index=p.partition_index,
                         error_code=results.get((t.name, p.partition_index), ErrorCode.NONE))
                for p in t.partitions))
            for t in request.topics
        )
    return b.entity("OffsetDeleteResponse", error_code=top, throttle_time=0, topics=topics)
