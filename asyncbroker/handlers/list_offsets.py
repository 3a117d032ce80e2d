"""ListOffsets (key 2): earliest (-2), latest (-1), max timestamp (-3), or by timestamp.

Timestamp lookups go through each segment's time index, so they run in the
executor. A timestamp later than every record answers offset -1 and
timestamp -1, as Kafka does. read_committed (v2+) bounds "latest" by the LSO.
"""

from __future__ import annotations

from typing import Any

from storage.topic_partition import TopicPartition
from wire.errors import ErrorCode, UnknownTopicOrPartitionError
from wire.messages import ApiKey

from asyncbroker.handlers import error_code_for
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.LIST_OFFSETS
MIN_VERSION = 1
MAX_VERSION = 9

READ_COMMITTED = 1


def _lookup_all(queries: list[list[Any]], isolation: str) -> None:
    """Executor side: fill [log, timestamp, error, offset, ts] entries in place."""
    for q in queries:
        log, timestamp = q[0], q[1]
        if log is None:
            continue
        try:
            found = log.fetch_offset_by_timestamp(timestamp, isolation=isolation)
        except Exception as exc:  # noqa: BLE001 - mapped per partition
            q[2] = error_code_for(exc)
            continue
        if found is not None:
            q[3], q[4] = found


async def handle(broker: Any, header: Any, request: Any) -> Any:
    version = header.api_version
    isolation = "read_committed" if getattr(request, "isolation_level", 0) == READ_COMMITTED else "read_uncommitted"
    plan: list[tuple[str, list[tuple[int, list[Any]]]]] = []
    queries: list[list[Any]] = []
    for t in request.topics:
        parts: list[tuple[int, list[Any]]] = []
        plan.append((t.name, parts))
        for p in t.partitions:
            log = broker.get_log(TopicPartition(t.name, p.partition_index)) if broker.topics.get(t.name) else None
            # [log, requested timestamp, error, offset, timestamp]
            q = [log, p.timestamp, ErrorCode.NONE, -1, -1]
            if log is None:
                q[2] = UnknownTopicOrPartitionError.error_code
            parts.append((p.partition_index, q))
            queries.append(q)
    await broker.run_blocking(_lookup_all, queries, isolation)

    b = ResponseBuilder(API_KEY, version)
    topics = tuple(
        b.entity(
            "ListOffsetsTopicResponse",
            name=name,
            partitions=tuple(
                b.entity(
                    "ListOffsetsPartitionResponse",
                    partition_index=index,
                    error_code=q[2],
                    timestamp=q[4],
                    offset=q[3],
                    leader_epoch=0 if q[2] == ErrorCode.NONE and q[3] >= 0 else -1,
                )
                for index, q in parts
            ),
        )
        for name, parts in plan
    )
    return b.entity("ListOffsetsResponse", throttle_time=0, topics=topics)
