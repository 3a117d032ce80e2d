"""OffsetCommit (key 8): store a group's consumed positions in `__consumer_offsets`.

Partitions of topics this broker does not have are UNKNOWN_TOPIC_OR_PARTITION
(as Kafka checks against its metadata); group/member problems apply to every
partition of the request.
"""

from __future__ import annotations

from typing import Any

from wire.errors import ErrorCode
from wire.messages import ApiKey

from asyncbroker.group_coordinator import group_coordinator_for, millis
from asyncbroker.handlers import error_code_for
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.OFFSET_COMMIT
MIN_VERSION = 2
MAX_VERSION = 9


async def handle(broker: Any, header: Any, request: Any) -> Any:
    version = header.api_version
    errors: dict[tuple[str, int], int] = {}
    items: list[tuple[str, int, int, int, str | None]] = []
    for t in request.topics:
        meta = broker.topics.get(t.name)
        for p in t.partitions:
            if meta is None or not 0 <= p.partition_index < meta.partitions:
                errors[(t.name, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                items.append((t.name, p.partition_index, p.committed_offset,
                              getattr(p, "committed_leader_epoch", -1), p.committed_metadata))
    if items:
        retention = getattr(request, "retention_time", None)
        try:
            coordinator = await group_coordinator_for(broker)
            errors.update(await coordinator.commit_offsets(
                group_id=request.group_id,
                member_id=request.member_id,
                group_instance_id=getattr(request, "group_instance_id", None),
                generation_id=request.generation_id_or_member_epoch,
                retention_time_ms=millis(retention) if retention is not None else -1,
                offsets=items,
                api_version=version,
            ))
        except Exception as exc:  # noqa: BLE001 - mapped at the boundary
            code = error_code_for(exc)
            for topic, partition, *_ in items:
                errors[(topic, partition)] = code
    b = ResponseBuilder(API_KEY, version)
    topics = tuple(
        b.entity("OffsetCommitResponseTopic", name=t.name, partitions=tuple(
            b.entity("OffsetCommitResponsePartition", partition_index=p.partition_index,
                     error_code=errors.get((t.name, p.partition_index), ErrorCode.NONE))
            for p in t.partitions
        ))
        for t in request.topics
    )
    return b.entity("OffsetCommitResponse", throttle_time=0, topics=topics)
