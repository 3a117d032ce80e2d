"""ListOffsets (key 2): earliest (-2), latest (-1), max timestamp (-3), or by timestamp.

Timestamp lookups go through each segment's time index, so they run in the
executor. A timestamp later than every record answers offset -1 and
timestamp -1, as Kafka does. read_committed (v2+) bounds "latest" by the LSO.
Special timestamps newer than the request's version, a partition named twice,
and a current_leader_epoch other than this node's (0) are refused per
partition with Kafka's errors; -5 (latest tiered) finds nothing, as on a
Kafka without tiered storage.
"""

from __future__ import annotations

from typing import Any

from storage.topic_partition import TopicPartition
from wire.errors import ErrorCode, KafkaError, UnknownTopicOrPartitionError, UnsupportedVersionError
from wire.messages import ApiKey

from asyncbroker.handlers import error_code_for
from asyncbroker.leader_epoch import LEADER_EPOCH, check_current_leader_epoch
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


# The version that introduced each special timestamp (Kafka's ListOffsetsRequest): an older
# request naming it is UNSUPPORTED_VERSION; negative values not listed are never valid here.
_SPECIAL_SINCE = {-1: 0, -2: 0, -3: 7, -4: 8, -5: 9}
# "No current leader epoch" in a ListOffsets request (any other value is checked).
NO_EPOCH = -1


def _check(log: Any, version: int, timestamp: int, current_leader_epoch: int) -> None:
    """Kafka's per-partition checks before the lookup, in its order."""
    if timestamp < 0 and version < _SPECIAL_SINCE.get(timestamp, version + 1):
        raise UnsupportedVersionError(f"ListOffsets v{version} does not support timestamp {timestamp}")
    if log is None:
        raise UnknownTopicOrPartitionError("This server does not host this topic-partition.")
    check_current_leader_epoch(current_leader_epoch)


async def handle(broker: Any, header: Any, request: Any) -> Any:
    """Kafka keys the answer by partition: a partition named twice in one request answers
    once, INVALID_REQUEST; every error answers offset, timestamp and epoch -1."""
    version = header.api_version
    isolation = "read_committed" if getattr(request, "isolation_level", 0) == READ_COMMITTED else "read_uncommitted"
    seen: set[tuple[str, int]] = set()
    duplicates: set[tuple[str, int]] = set()
    for t in request.topics:
        for p in t.partitions:
            key = (t.name, p.partition_index)
            (duplicates if key in seen else seen).add(key)
    plan: dict[str, dict[int, list[Any]]] = {}
    queries: list[list[Any]] = []
    for t in request.topics:
        parts = plan.setdefault(t.name, {})
        for p in t.partitions:
            index = p.partition_index
            # [log, requested timestamp, error, offset, timestamp]
            q = [None, p.timestamp, ErrorCode.NONE, -1, -1]
            parts[index] = q
            if (t.name, index) in duplicates:
                q[2] = ErrorCode.INVALID_REQUEST
                continue
            log = broker.get_log(TopicPartition(t.name, index)) if broker.topics.get(t.name) else None
            try:
                _check(log, version, p.timestamp, getattr(p, "current_leader_epoch", NO_EPOCH))
            except KafkaError as exc:
                q[2] = error_code_for(exc)
                continue
            q[0] = log
            queries.append(q)
    if queries:
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
                    timestamp=q[4] if q[2] == ErrorCode.NONE else -1,
                    offset=q[3] if q[2] == ErrorCode.NONE else -1,
                    leader_epoch=LEADER_EPOCH if q[2] == ErrorCode.NONE and q[3] >= 0 else -1,
                )
                for index, q in parts.items()
            ),
        )
        for name, parts in plan.items()
    )
    return b.entity("ListOffsetsResponse", throttle_time=0, topics=topics)
