"""OffsetFetch (key 9): a group's committed offsets (all of them when topics is null).

v8+ asks for several groups at once. Offsets never committed read -1 with
no error, as in Kafka; there are no transactional offsets here, so
require_stable never finds a pending commit.
"""

from __future__ import annotations

from typing import Any

from wire.errors import ErrorCode
from wire.messages import ApiKey

from asyncbroker.group_coordinator import FetchedOffset, group_coordinator_for
from asyncbroker.handlers import error_code_for
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.OFFSET_FETCH
MIN_VERSION = 1
MAX_VERSION = 9


def _fetch(coordinator: Any, group_id: str, topics: Any) -> tuple[int, list[FetchedOffset]]:
    wanted = None if topics is None else [(t.name, p) for t in topics for p in t.partition_indexes]
    try:
        return ErrorCode.NONE, coordinator.fetch_offsets(group_id, wanted)
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        return error_code_for(exc), []


def _by_topic(rows: list[FetchedOffset]) -> dict[str, list[FetchedOffset]]:
    out: dict[str, list[FetchedOffset]] = {}
    for row in rows:
        out.setdefault(row.topic, []).append(row)
    return out


async def handle(broker: Any, header: Any, request: Any) -> Any:
    version = header.api_version
    b = ResponseBuilder(API_KEY, version)
    coordinator = None
    load_error: int = ErrorCode.NONE
    try:
        coordinator = await group_coordinator_for(broker)
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        load_error = error_code_for(exc)

    def result(group_id: str, topics: Any) -> tuple[int, list[FetchedOffset]]:
        if coordinator is None:
            return load_error, []
        return _fetch(coordinator, group_id, topics)

    if version >= 8:
        groups = []
        for g in request.groups:
            error, rows = result(g.group_id, g.topics)
            topics = tuple(
                b.entity("OffsetFetchResponseTopics", name=name, partitions=tuple(
                    b.entity("OffsetFetchResponsePartitions", partition_index=r.partition,
                             committed_offset=r.offset, committed_leader_epoch=r.leader_epoch,
                             metadata=r.metadata, error_code=r.error)
                    for r in parts))
                for name, parts in _by_topic(rows).items()
            )
            groups.append(b.entity("OffsetFetchResponseGroup", group_id=g.group_id, topics=topics, error_code=error))
        return b.entity("OffsetFetchResponse", throttle_time=0, groups=tuple(groups))
    error, rows = result(request.group_id, request.topics)
    if error != ErrorCode.NONE and version < 2:
        # v0/v1 have no top-level error: report it on every requested partition.
        rows = [FetchedOffset(t.name, p, -1, -1, "", error) for t in (request.topics or ()) for p in t.partition_indexes]
    topics = tuple(
        b.entity("OffsetFetchResponseTopic", name=name, partitions=tuple(
            b.entity("OffsetFetchResponsePartition", partition_index=r.partition, committed_offset=r.offset,
                     committed_leader_epoch=r.leader_epoch, metadata=r.metadata, error_code=r.error)
            for r in parts))
        for name, parts in _by_topic(rows).items()
    )
    return b.entity("OffsetFetchResponse", throttle_time=0, topics=topics, error_code=error)
