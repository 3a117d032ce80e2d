"""The coordinators' compacted internal topics: `__consumer_offsets` (the group
coordinator's) and `__transaction_state` (the transaction coordinator's).

Kafka creates each on the first FindCoordinator for its key type (with
`offsets.topic.num.partitions` / `transaction.state.log.num.partitions` partitions,
cleanup.policy=compact and the matching segment.bytes) and maps a group or
transactional id to the partition `abs(javaHashCode(id)) % partitions`; the same
mapping is used here so a log directory moves between the two unchanged.

Writes go through one queue drained by one writer task,
because the coordinator applies a write to its in-memory state only after
the append returns: two writes of the same key must land in the log in the
order the coordinator issued them, or a reload would resurrect the older
value. Appends run on the broker's IO pool like every other storage call.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from storage.clock import Clock
from storage.errors import AppendWouldBlock
from storage.topic_name import OFFSETS_TOPIC
from storage.topic_partition import TopicPartition
from wire.errors import ErrorCode, InvalidCommitOffsetSizeError, KafkaError, TopicExistsError
from wire.records import (
    RECORD_BATCH_OVERHEAD,
    ControlRecordType,
    Record,
    build_batch,
    decode_records,
    iter_batch_headers,
    parse_control_record,
)

from asyncbroker.fetch_waiters import FetchWaiters
from asyncbroker.replica_manager import INLINE_APPEND_MAX_BYTES

if TYPE_CHECKING:
    from asyncbroker.config import KafkaConfig
    from asyncbroker.replica_manager import ReplicaManager
    from asyncbroker.topics import TopicManager

log = logging.getLogger(__name__)

GROUP_METADATA_TOPIC_NAME = OFFSETS_TOPIC
_READ_CHUNK = 4 * 1024 * 1024
# A record's one-byte fields and varints at their least: its length, attributes, timestamp and
# offset deltas, key length, value length and header count.
_LEAST_RECORD_OVERHEAD = 7


def _least_batch_bytes(writes: Sequence[tuple[Sequence[tuple[bytes | None, bytes | None]], Any]]) -> int:
    """A floor under the bytes build_batch makes of `writes` (a batch each), found without making
    them: a round on the event loop leaves writes above its bound unbuilt."""
    return sum(RECORD_BATCH_OVERHEAD + sum(len(key or b"") + len(value or b"") + _LEAST_RECORD_OVERHEAD
                                           for key, value in records)
               for records, _ in writes)


class StoredRecord(NamedTuple):
    """One record of a coordinator topic as a loader replays it. A transaction's records carry
    their producer id (else -1); its COMMIT/ABORT marker is a row of its own (`control`)."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    producer_id: int = -1
    control: ControlRecordType | None = None


Producer = tuple[int, int]
"""(producer id, epoch) of a transactional write (TxnOffsetCommit's offsets)."""


def java_string_hash(s: str) -> int:
    """Java's String.hashCode (UTF-16 code units, 32-bit wrap-around)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


@functools.lru_cache(maxsize=65536)
def partition_for(group_id: str, num_partitions: int) -> int:
    """Kafka's Utils.abs(groupId.hashCode()) % partitions (abs(MIN_VALUE) is 0 there)."""
    h = java_string_hash(group_id)
    return (0 if h == -(2**31) else abs(h)) % num_partitions


class CoordinatorTopic:
    """Creates, appends to and reads back one coordinator's internal topic."""

    def __init__(self, name: str, num_partitions: int, configs: dict[str, str], *, topics: TopicManager,
                 replica_manager: ReplicaManager, fetch_waiters: FetchWaiters,
                 run_blocking: Callable[..., Awaitable[Any]], clock: Clock) -> None:
        self.topics = topics
        self.replica_manager = replica_manager
        self.fetch_waiters = fetch_waiters
        self.run_blocking = run_blocking
        self.clock = clock
        self.name = name
        self._configured_partitions = num_partitions
        self._configs = configs
        self._creating: asyncio.Future[None] | None = None
        self._queue: list[tuple[int, Sequence[tuple[bytes | None, bytes | None]], Producer | None, asyncio.Future[int]]] = []
        self._writer: asyncio.Task[None] | None = None

    @property
    def num_partitions(self) -> int:
        meta = self.topics.get(self.name)
        return meta.partitions if meta is not None else self._configured_partitions

    def exists(self) -> bool:
        return self.topics.get(self.name) is not None

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    async def ensure_created(self) -> None:
        """Create the topic once (concurrent callers share the creation)."""
        if self.exists():
            return
        if self._creating is None:
            self._creating = asyncio.ensure_future(self._create())
        await asyncio.shield(self._creating)

    async def _create(self) -> None:
        try:
            await self.topics.create_topic(self.name, num_partitions=self._configured_partitions,
                                           configs=self._configs)
            log.info("Created internal topic %s with %d partitions", self.name, self._configured_partitions)
        except TopicExistsError:
            pass
        finally:
            self._creating = None

    async def append(self, partition: int, records: Sequence[tuple[bytes | None, bytes | None]],
                     producer: Producer | None = None) -> int:
        """Append (key, value-or-tombstone) records as one batch; returns its first offset.

        With `producer`, the batch belongs to that producer's open transaction: its records
        count only once a COMMIT marker follows. The write's place in the log is fixed when
        this is called, before its first await (see `enqueue`).
        """
        return await self.enqueue(partition, records, producer)

    def enqueue(self, partition: int, records: Sequence[tuple[bytes | None, bytes | None]],
                producer: Producer | None = None) -> asyncio.Future[int]:
        """Queue a write; writes to one partition reach the log in the order they were queued.

        One writer task drains the queue: everything queued meanwhile, for every partition, is
        appended on the event loop where that cannot block (storage's nonblocking append, as a
        Produce's: no roll, fsync or checkpoint, and at most INLINE_APPEND_MAX_BYTES in all), the
        rest in a single executor hop (one batch per write), so concurrent
        commits share the cost of leaving the loop. On this VM the hop was most of an
        OffsetCommit's round trip.
        """
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._queue.append((partition, records, producer, fut))
        if self._writer is None:
            self._writer = asyncio.ensure_future(self._drain())
        return fut

    async def _drain(self) -> None:
        queue = self._queue
        try:
            while queue:
                pending = queue[:]
                del queue[:]
                by_partition: dict[int, list[tuple[Sequence[tuple[bytes | None, bytes | None]], Producer | None,
                                                   asyncio.Future[int]]]] = {}
                for partition, records, producer, fut in pending:
                    by_partition.setdefault(partition, []).append((records, producer, fut))
                try:
                    await self.ensure_created()
                    work = {partition: [(records, producer) for records, producer, _ in writes]
                            for partition, writes in by_partition.items()}
                    outcomes = self._write_all(work, nonblocking=True)
                    left = {partition: w for partition, w in work.items() if partition not in outcomes}
                    if left:
                        outcomes.update(await self.run_blocking(self._write_all, left))
                except Exception as exc:  # noqa: BLE001 - every waiter gets the failure
                    outcomes = {partition: exc for partition in by_partition}
                waiters = self.fetch_waiters
                for partition, writes in by_partition.items():
                    outcome = outcomes[partition]
                    if isinstance(outcome, BaseException):
                        for _, _, fut in writes:
                            if not fut.done():
                                fut.set_exception(outcome)
                        continue
                    firsts, appended_bytes = outcome
                    waiters.on_append(TopicPartition(self.name, partition), appended_bytes)
                    for (_, _, fut), first in zip(writes, firsts):
                        if not fut.done():
                            fut.set_result(first)
        finally:
            self._writer = None

    def _write_all(self, writes: dict[int, list[tuple[Sequence[tuple[bytes | None, bytes | None]], Producer | None]]],
                   nonblocking: bool = False) -> dict[int, tuple[list[int], int] | BaseException]:
        """One append per partition; a failure stays with its partition. Executor side, or with
        `nonblocking` on the loop: a partition whose append would block, or whose batches would
        take the round past INLINE_APPEND_MAX_BYTES (as a Produce request's, _append_inline;
        judged from a floor under their size before they are made), is left out of the
        outcomes, its log unchanged."""
        now = self.clock.milliseconds()
        budget = INLINE_APPEND_MAX_BYTES  # (bytes this call may still append on the loop)
        outcomes: dict[int, tuple[list[int], int] | BaseException] = {}
        for partition, partition_writes in writes.items():
            tp = TopicPartition(self.name, partition)
            try:
                if nonblocking and _least_batch_bytes(partition_writes) > budget:
                    continue  # left for the IO pool unbuilt: making its batches grows with its records
                batches = []
                transactional = False
                for records, producer in partition_writes:
                    entries = [Record(i, now, key, value) for i, (key, value) in enumerate(records)]
                    if producer is None:
                        batches.append(build_batch(entries))
                    else:
                        transactional = True
                        batches.append(build_batch(entries, producer_id=producer[0], producer_epoch=producer[1],
                                                   is_transactional=True))
                data = b"".join(batches)
                if nonblocking and len(data) > budget:
                    continue  # left for the IO pool (which makes the batches again): the loop's share stays bounded
                info = self.replica_manager.append_to_internal_topic(tp, data, transactional=transactional,
                                                                     nonblocking=nonblocking)
            except AppendWouldBlock:
                continue  # left for the IO pool
            except Exception as exc:  # noqa: BLE001 - reported to this partition's writers
                outcomes[partition] = exc
                continue
            budget -= len(data)
            firsts = []
            offset = info.first_offset
            for records, _ in partition_writes:
                firsts.append(offset)
                offset += len(records)
            outcomes[partition] = (firsts, info.valid_bytes)
        return outcomes

    async def read_all(self) -> list[StoredRecord]:
        """Every record, read on the IO pool (see read_all_blocking)."""
        records: list[StoredRecord] = await self.run_blocking(lambda: list(self.read_all_blocking()))
        return records

    def read_all_blocking(self) -> Iterator[StoredRecord]:
        """Executor side: every record of every partition, and every transaction marker, in log order."""
        if not self.exists():
            return
        replicas = self.replica_manager
        for partition in range(self.num_partitions):
            tp = TopicPartition(self.name, partition)
            first = replicas.read_internal_topic(tp, 0, _READ_CHUNK)
            if first is None:
                continue
            data, offset, end = first
            while offset < end:
                if not data:
                    break
                progressed = False
                for header, pos in iter_batch_headers(data):
                    if header.next_offset <= offset:
                        continue
                    progressed = True
                    offset = header.next_offset
                    records = decode_records(data, pos)
                    if header.is_control:
                        if records:
                            control = parse_control_record(records[0].key, records[0].value)
                            yield StoredRecord(partition, records[0].offset, None, None, header.producer_id,
                                               ControlRecordType(control.type))
                        continue
                    producer_id = header.producer_id if header.is_transactional else -1
                    for rec in records:
                        yield StoredRecord(partition, rec.offset, rec.key, rec.value, producer_id)
                if not progressed:
                    break
                following = replicas.read_internal_topic(tp, offset, _READ_CHUNK)
                data = following[0] if following is not None else b""


def offsets_topic_configs(config: KafkaConfig) -> tuple[str, int, dict[str, str]]:
    """`__consumer_offsets`' name, partition count and topic configs, as Kafka creates it."""
    return GROUP_METADATA_TOPIC_NAME, config.offsets_topic_num_partitions, {
        "cleanup.policy": "compact",
        "compression.type": "producer",
        "segment.bytes": str(config.offsets_topic_segment_bytes),
    }


def append_error_code(exc: BaseException) -> int:
    """How Kafka reports a failed write to `__consumer_offsets` to a group's clients: the
    append's error mapped to the coordinator errors a client knows to retry on."""
    if isinstance(exc, KafkaError):
        code = exc.error_code
        if code in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.REQUEST_TIMED_OUT):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
            return ErrorCode.NOT_COORDINATOR
        if code in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.INVALID_FETCH_SIZE):
            return InvalidCommitOffsetSizeError.error_code
        if code in (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR):
            return code
    log.error("Unexpected error writing to __consumer_offsets", exc_info=exc)
    return ErrorCode.UNKNOWN_SERVER_ERROR
