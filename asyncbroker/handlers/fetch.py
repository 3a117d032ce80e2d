"""Fetch (key 1): read record batches, long-polling until min_bytes or max_wait.

Reads happen in one executor hop for all partitions (segment reads may hit
the disk). `max_bytes` bounds the whole response and `partition_max_bytes`
each partition, except that the first partition with data returns at least
one whole batch even when that batch is larger (KIP-74), so a consumer can
always make progress.

When fewer than min_bytes are available the fetch parks on the fetch
waiters (registered before the first read, so no append is missed) until
appends bring enough bytes, max_wait passes, or the broker shuts down; then
it reads once more and answers. Fetch sessions (KIP-227) are not kept: a
client asking for one gets session id 0, which tells it to keep sending full
fetches; a request naming a session id gets FETCH_SESSION_ID_NOT_FOUND.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from typing import Any

from storage.topic_partition import TopicPartition
from wire.errors import (
    ErrorCode,
    KafkaError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)
from wire.messages import ApiKey
from wire.response_encoders import FetchPartitionData, FetchTopicData, encode_fetch_response

from asyncbroker.encoded_response import EncodedResponse, FileRegion
from asyncbroker.handlers import error_code_for

API_KEY = ApiKey.FETCH
MIN_VERSION = 4
MAX_VERSION = 17

READ_COMMITTED = 1
# Record slices at least this large are left in the file and sent with sendfile.
FILE_REGION_MIN_BYTES = 64 * 1024


class PartitionRead:
    """One requested partition: its request fields, then what the read found."""

    __slots__ = (
        "topic", "topic_id", "index", "fetch_offset", "max_bytes", "log", "error",
        "high_watermark", "last_stable_offset", "log_start_offset", "records", "size", "aborted",
    )

    def __init__(self, topic: str | None, topic_id: uuid.UUID | None, index: int, fetch_offset: int, max_bytes: int) -> None:
        self.topic = topic
        self.topic_id = topic_id
        self.index = index
        self.fetch_offset = fetch_offset
        self.max_bytes = max_bytes
        self.log: Any = None
        self.error: int = ErrorCode.NONE
        self.high_watermark = -1
        self.last_stable_offset = -1
        self.log_start_offset = -1
        self.records: Any = b""  # bytes, or a FileRegion (a dup'd fd the connection closes)
        self.size = 0
        self.aborted: list[tuple[int, int]] | None = None


def read_partitions(reads: list[PartitionRead], max_bytes: int, isolation: int, use_file_regions: bool) -> int:
    """Executor side: read every partition within the byte budgets; return the bytes read."""
    remaining = max(0, max_bytes)
    min_one = True
    total = 0
    isolation_name = "read_committed" if isolation == READ_COMMITTED else "read_uncommitted"
    for r in reads:
        log = r.log
        if log is None:
            continue
        # Release an earlier read's region before re-reading (long-poll completion).
        _release(r)
        limit = min(r.max_bytes, remaining)
        try:
            info = log.read(r.fetch_offset, limit, isolation=isolation_name, min_one_message=min_one)
        except Exception as exc:  # noqa: BLE001 - mapped per partition at the boundary
            r.error = error_code_for(exc)
            # As Kafka's failed LogReadResult: no offsets beside an error (OFFSET_OUT_OF_RANGE too).
            r.high_watermark = r.last_stable_offset = r.log_start_offset = -1
            continue
        r.error = ErrorCode.NONE
        r.high_watermark = log.high_watermark
        r.last_stable_offset = log.last_stable_offset
        r.log_start_offset = log.log_start_offset
        size = info.size
        if isolation == READ_COMMITTED:
            r.aborted = [(a.producer_id, a.first_offset) for a in (info.aborted_transactions or ())]
        if size <= 0:
            continue
        if use_file_regions and size >= FILE_REGION_MIN_BYTES and info.file is not None:
            # A dup of the segment's fd: the slice stays readable even if the
            # segment is closed or deleted before the connection sends it.
            r.records = FileRegion(os.dup(info.file.fileno()), info.position, size)
        else:
            r.records = info.read_bytes()
        r.size = size
        total += size
        remaining = max(0, remaining - size)
        min_one = False
    return total


def _release(r: PartitionRead) -> None:
    if isinstance(r.records, FileRegion):
        r.records.close()
    r.records = b""
    r.size = 0


async def _read(broker: Any, reads: list[PartitionRead], max_bytes: int, isolation: int, use_regions: bool) -> int:
    """read_partitions in the executor; if we are cancelled meanwhile (the client
    went away), the regions it still creates are closed when it finishes."""
    fut = asyncio.get_running_loop().run_in_executor(
        broker.io_executor, read_partitions, reads, max_bytes, isolation, use_regions
    )
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        fut.add_done_callback(lambda _f: [_release(r) for r in reads])
        raise


async def handle(broker: Any, header: Any, request: Any) -> Any:
    version = header.api_version
    session_id = getattr(request, "session_id", 0)
    if session_id != 0:
        return _response(broker, version, [], error=ErrorCode.FETCH_SESSION_ID_NOT_FOUND)

    reads: list[PartitionRead] = []
    for t in request.topics:
        if version >= 13:
            meta = broker.topics.by_id(t.topic_id) if t.topic_id is not None else None
            name = meta.name if meta is not None else None
            topic_id = t.topic_id
            missing: KafkaError = UnknownTopicIdError(f"unknown topic id {t.topic_id}")
        else:
            name = t.topic
            meta = broker.topics.get(name)
            topic_id = meta.topic_id if meta is not None else None
            missing = UnknownTopicOrPartitionError(f"unknown topic {name}")
        for p in t.partitions:
            r = PartitionRead(name, topic_id, p.partition, p.fetch_offset, p.partition_max_bytes)
            reads.append(r)
            log = broker.get_log(TopicPartition(name, p.partition)) if meta is not None else None
            if log is None:
                r.error = missing.error_code if meta is None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                # Kafka answers a partition it does not host with an empty (not null) list here.
                r.aborted = []
            else:
                r.log = log

    max_wait_ms = int(request.max_wait.total_seconds() * 1000)
    min_bytes = request.min_bytes
    # fetch.max.bytes caps what one response may carry, whatever the client asks.
    max_bytes = min(request.max_bytes, broker.config.fetch_max_bytes)
    isolation = request.isolation_level
    use_regions = broker.use_sendfile

    waiter = None
    if max_wait_ms > 0 and min_bytes > 0:
        # Registered before reading: an append racing with the read still wakes us.
        waiter = broker.fetch_waiters.watch(
            [TopicPartition(r.topic, r.index) for r in reads if r.log is not None], min_bytes
        )
    try:
        deadline = time.monotonic() + max_wait_ms / 1000
        total = await _read(broker, reads, max_bytes, isolation, use_regions)
        if waiter is not None and total < min_bytes and not any(r.error for r in reads):
            waiter.needed = max(1, min_bytes - total)
            if waiter.accumulated < waiter.needed:
                await waiter.wait(deadline - time.monotonic())
            total = await _read(broker, reads, max_bytes, isolation, use_regions)
    except BaseException:
        for r in reads:
            _release(r)
        raise
    finally:
        if waiter is not None:
            broker.fetch_waiters.unwatch(waiter)
    return _response(broker, version, reads)


def _response(broker: Any, version: int, reads: list[PartitionRead], error: int = ErrorCode.NONE) -> EncodedResponse:
    return EncodedResponse.of(encode_fetch_response(version, fetch_topics(reads), error_code=error))


def fetch_topics(reads: list[PartitionRead]) -> list[FetchTopicData]:
    """Group reads into response topics (consecutive reads of one topic share an entry, as in Kafka).

    Record data goes in untouched (bytes, or a FileRegion the connection
    sendfiles). No tagged fields: this node is the leader, so there is no
    diverging epoch, leader change or snapshot to report.
    """
    topics: list[FetchTopicData] = []
    last_key: object = None
    partitions: list[FetchPartitionData] = []
    for r in reads:
        key = (r.topic, r.topic_id)
        if key != last_key:
            partitions = []
            topics.append(FetchTopicData(r.topic or "", partitions, r.topic_id))
            last_key = key
        partitions.append(FetchPartitionData(
            r.index, r.error, r.high_watermark, r.last_stable_offset, r.log_start_offset, r.aborted,
            records=(r.records,) if r.size else (),
        ))
    return topics
