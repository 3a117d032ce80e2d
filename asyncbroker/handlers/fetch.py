"""Fetch (key 1): read record batches, long-polling until min_bytes or max_wait.

Reads happen in one executor hop for all partitions (segment reads may hit
the disk). `max_bytes` bounds the whole response and `partition_max_bytes`
each partition, except that the first partition with data returns at least
one whole batch even when that batch is larger (KIP-74), so a consumer can
always make progress; a later partition whose first batch does not fit its
share returns nothing rather than part of a batch, as Kafka does for v3+.

When fewer than min_bytes are available the fetch parks on the fetch
waiters (registered before the first read, so no append is missed) until
appends bring enough bytes, max_wait passes, or the broker shuts down; then
it reads once more and answers.

Fetch sessions (KIP-227) are not kept. A full fetch (session epoch 0 or -1)
is answered sessionless with session id 0, which tells a client asking for a
session (epoch 0) to keep sending full fetches; an incremental fetch (any
other epoch) names a session this broker cannot have: FETCH_SESSION_ID_NOT_FOUND.

Every partition is led here in leader epoch 0 (Metadata says so): a client's
current_leader_epoch above it is UNKNOWN_LEADER_EPOCH, last_fetched_epoch is
checked the way Kafka's leader checks a follower's (diverging epoch, or
OFFSET_OUT_OF_RANGE when that epoch's end is unknown), and a fetch from a
replica id is refused, as no other broker replicates from this one.
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
    FencedLeaderEpochError,
    KafkaError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
    UnknownLeaderEpochError,
)
from wire.messages import ApiKey
from wire.response_encoders import FetchPartitionData, FetchTopicData, encode_fetch_response

from asyncbroker.encoded_response import EncodedResponse, FileRegion
from asyncbroker.handlers import error_code_for
from asyncbroker.leader_epoch import LEADER_EPOCH, UNDEFINED, end_offset_for

API_KEY = ApiKey.FETCH
MIN_VERSION = 4
MAX_VERSION = 17

READ_COMMITTED = 1
# Fetch session epochs of a full fetch (KIP-227): open a session, or fetch without one.
INITIAL_EPOCH, FINAL_EPOCH = 0, -1
# Record slices at least this large are left in the file and sent with sendfile.
FILE_REGION_MIN_BYTES = 64 * 1024


class PartitionRead:
    """One requested partition: its request fields, then what the read found."""

    __slots__ = (
        "topic", "topic_id", "index", "fetch_offset", "max_bytes", "log", "error",
        "high_watermark", "last_stable_offset", "log_start_offset", "records", "size", "aborted",
        "diverging_epoch",
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
        self.diverging_epoch: tuple[int, int] | None = None


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
        # Offsets as they were before the read, as Kafka reports them.
        high_watermark, last_stable, log_start = log.high_watermark, log.last_stable_offset, log.log_start_offset
        if r.diverging_epoch is not None:
            r.high_watermark, r.last_stable_offset, r.log_start_offset = high_watermark, last_stable, log_start
            continue
        limit = min(r.max_bytes, remaining)
        try:
            info = log.read(r.fetch_offset, limit, isolation=isolation_name, min_one_message=min_one)
        except Exception as exc:  # noqa: BLE001 - mapped per partition at the boundary
            # A failed partition reports no offsets (-1), as Kafka's error answers do.
            r.error = error_code_for(exc)
            r.high_watermark = r.last_stable_offset = r.log_start_offset = -1
            continue
        r.error = ErrorCode.NONE
        r.high_watermark, r.last_stable_offset, r.log_start_offset = high_watermark, last_stable, log_start
        size = 0 if info.first_entry_incomplete else info.size  # v3+: never part of a first batch
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


def _check_epochs(log: Any, replica_id: int, p: Any, version: int) -> tuple[int, int] | None:
    """Kafka's Partition.fetchRecords checks before the read, in its order: the client's
    current leader epoch, a follower's replica id, then last_fetched_epoch. Returns the
    diverging epoch (epoch, end offset) to report instead of records, if any."""
    current = getattr(p, "current_leader_epoch", -1)  # v9+; a negative epoch is "none" in a Fetch
    if current > LEADER_EPOCH:
        raise UnknownLeaderEpochError(f"Current leader epoch {current} is newer than this leader's {LEADER_EPOCH}")
    if 0 <= current < LEADER_EPOCH:
        raise FencedLeaderEpochError(f"Current leader epoch {current} is older than this leader's {LEADER_EPOCH}")
    if replica_id >= 0:
        # Not one of this partition's replicas (it has no other): Kafka's followerReplicaOrThrow.
        message = f"Replica {replica_id} is not recognized as a valid replica in leader epoch {LEADER_EPOCH}"
        if current >= 0:
            raise UnknownLeaderEpochError(message)
        raise NotLeaderOrFollowerError(message)
    last_fetched = getattr(p, "last_fetched_epoch", -1) if version >= 12 else -1
    if last_fetched < 0:
        return None
    epoch, end_offset = end_offset_for(log, last_fetched)
    if epoch == UNDEFINED or end_offset == UNDEFINED:
        raise OffsetOutOfRangeError(f"Could not determine the end offset of the last fetched epoch {last_fetched}")
    if p.fetch_offset < log.log_start_offset:
        raise OffsetOutOfRangeError(f"Received request for offset {p.fetch_offset}, below the log start offset "
                                    f"{log.log_start_offset}")
    if epoch < last_fetched or end_offset < p.fetch_offset:
        return (epoch, end_offset)
    return None


async def handle(broker: Any, header: Any, request: Any) -> Any:
    version = header.api_version
    session_epoch = getattr(request, "session_epoch", FINAL_EPOCH)
    if session_epoch not in (INITIAL_EPOCH, FINAL_EPOCH):
        # An incremental fetch: it names a session, and this broker keeps none.
        return _response(broker, version, [], error=ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
    replica_state = getattr(request, "replica_state", None)
    replica_id = replica_state.replica_id if replica_state is not None else getattr(request, "replica_id", -1)

    reads: list[PartitionRead] = []
    erroneous: list[PartitionRead] = []
    # Kafka keys the request by partition (insertion-ordered): a partition named twice is
    # read once, where it first appeared, with the fields of its later entry.
    requested: dict[tuple[Any, int], tuple[Any, Any]] = {}
    for t in request.topics:
        for p in t.partitions:
            requested[(t.topic_id if version >= 13 else t.topic, p.partition)] = (t, p)
    for (_key, _index), (t, p) in requested.items():
        if version >= 13:
            meta = broker.topics.by_id(t.topic_id) if t.topic_id is not None else None
            name = meta.name if meta is not None else None
            topic_id = t.topic_id
            missing = ErrorCode.UNKNOWN_TOPIC_ID
        else:
            name = t.topic
            meta = broker.topics.get(name)
            topic_id = meta.topic_id if meta is not None else None
            missing = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        r = PartitionRead(name, topic_id, p.partition, p.fetch_offset, p.partition_max_bytes)
        log = broker.get_log(TopicPartition(name, p.partition)) if meta is not None else None
        if log is None:
            # Kafka answers these before reading (aborted transactions: an empty list, not
            # null) and lists them after the partitions it read.
            r.error = missing if meta is None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            r.aborted = []
            erroneous.append(r)
            continue
        try:
            r.diverging_epoch = _check_epochs(log, replica_id, p, version)
        except KafkaError as exc:
            r.error = error_code_for(exc)
        else:
            r.log = log
        reads.append(r)
    # Kafka answers at once when nothing can be read, or a read failed or diverged.
    answer_now = not reads or any(r.error or r.diverging_epoch for r in reads)
    reads += erroneous

    max_wait_ms = int(request.max_wait.total_seconds() * 1000)
    min_bytes = request.min_bytes
    # fetch.max.bytes caps what one response may carry, whatever the client asks.
    max_bytes = min(request.max_bytes, broker.config.fetch_max_bytes)
    isolation = request.isolation_level
    use_regions = broker.use_sendfile

    waiter = None
    if max_wait_ms > 0 and min_bytes > 0 and not answer_now:
        # Registered before reading: an append racing with the read still wakes us.
        waiter = broker.fetch_waiters.watch(
            [TopicPartition(r.topic, r.index) for r in reads if r.log is not None], min_bytes
        )
    try:
        deadline = time.monotonic() + max_wait_ms / 1000
        total = await _read(broker, reads, max_bytes, isolation, use_regions)
        if waiter is not None and total < min_bytes and not any(r.error for r in reads if r.log is not None):
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
    sendfiles). Tagged fields: only a diverging epoch (last_fetched_epoch checks); this
    node is the leader, so there is no leader change or snapshot to report.
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
            records=(r.records,) if r.size else (), diverging_epoch=r.diverging_epoch,
        ))
    return topics
