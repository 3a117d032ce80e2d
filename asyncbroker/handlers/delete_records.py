"""DeleteRecords (key 21): raise partitions' log start offsets.

Offset -1 means "up to the high watermark". An offset past the HW is
OFFSET_OUT_OF_RANGE (storage raises it). The answer carries the new low
watermark (the log start offset after the call). Segments wholly below the
new start are removed by the retention job, as in Kafka. Parked fetches on
the partition are woken so they can report the new log start.
"""

from __future__ import annotations

import logging
from typing import Any

from storage.topic_partition import TopicPartition
from wire.errors import ErrorCode, OffsetOutOfRangeError, UnknownTopicOrPartitionError
from wire.messages import ApiKey

from asyncbroker.handlers import error_code_for
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.DELETE_RECORDS
MIN_VERSION = 0
MAX_VERSION = 2

# "Delete everything up to the high watermark."
HIGH_WATERMARK = -1

log = logging.getLogger(__name__)


def _delete_all(items: list[list[Any]]) -> None:
    """Executor side: each item is [log, offset, error, low_watermark], filled in place."""
    for item in items:
        log_, offset = item[0], item[1]
        if log_ is None:
            continue
        try:
            target = log_.high_watermark if offset == HIGH_WATERMARK else offset
            if target < 0:
                raise OffsetOutOfRangeError(
                    f"Cannot delete records of partition {log_.topic_partition} before offset {offset}: "
                    "not a valid offset"
                )
            if log_.maybe_increment_log_start_offset(target, "client delete records"):
                log.info("Incremented log start offset of %s to %d due to client delete records request",
                         log_.topic_partition, target)
            item[3] = log_.log_start_offset
        except Exception as exc:  # noqa: BLE001 - mapped per partition
            item[2] = error_code_for(exc)


async def handle(broker: Any, header: Any, request: Any) -> Any:
    # Kafka keys the request by partition: a partition named twice is deleted up to the
    # offset of its later entry, and answered once.
    requested: dict[str, dict[int, int]] = {}
    for t in request.topics:
        for p in t.partitions:
            requested.setdefault(t.name, {})[p.partition_index] = p.offset
    plan: list[tuple[str, list[tuple[int, list[Any]]]]] = []
    items: list[list[Any]] = []
    for name, offsets in requested.items():
        parts: list[tuple[int, list[Any]]] = []
        plan.append((name, parts))
        for index, offset in offsets.items():
            tp = TopicPartition(name, index)
            log_ = broker.get_log(tp) if broker.topics.get(name) else None
            item = [log_, offset, ErrorCode.NONE, -1]
            if log_ is None:
                item[2] = UnknownTopicOrPartitionError.error_code
            parts.append((index, item))
            items.append(item)
    # The cleaner must not swap segments of a partition while its log start offset moves:
    # stop any clean of it (waiting for the worker) and keep it paused until this is done.
    cleaner = getattr(broker, "cleaner", None)
    paused: list[TopicPartition] = []
    try:
        if cleaner is not None:
            for name, parts in plan:
                for index, item in parts:
                    if item[0] is not None:
                        tp = TopicPartition(name, index)
                        await cleaner.abort_and_pause_cleaning(tp)
                        paused.append(tp)
        await broker.run_blocking(_delete_all, items)
        if broker.log_jobs is not None and any(item[2] == ErrorCode.NONE and item[0] is not None for item in items):
            # Durable before the answer: a crash right after must not bring the deleted records back.
            await broker.log_jobs.checkpoint_log_start_offsets_now()
    finally:
        if paused:
            cleaner.resume_cleaning(paused)
    for name, parts in plan:
        for index, item in parts:
            if item[2] == ErrorCode.NONE:
                broker.fetch_waiters.wake_partition(TopicPartition(name, index))

    b = ResponseBuilder(API_KEY, header.api_version)
    topics = tuple(
        b.entity(
            "DeleteRecordsTopicResult",
            name=name,
            partitions=tuple(
                b.entity("DeleteRecordsPartitionResult", partition_index=index, low_watermark=item[3], error_code=item[2])
                for index, item in parts
            ),
        )
        for name, parts in plan
    )
    return b.entity("DeleteRecordsResponse", throttle_time=0, topics=topics)
