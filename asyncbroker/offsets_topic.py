"""`__consumer_offsets`: the compacted internal topic the group coordinator writes to.

Kafka creates it on the first FindCoordinator (with `offsets.topic.num.partitions`
partitions, cleanup.policy=compact and `offsets.topic.segment.bytes`) and maps
a group to the partition `abs(javaHashCode(groupId)) % partitions`; the same
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
from collections.abc import Iterator, Sequence
from typing import Any

from storage.topic_partition import TopicPartition
from wire.errors import CoordinatorNotAvailableError, TopicExistsError
from wire.records import Record, build_batch, decode_records, iter_batch_headers

log = logging.getLogger(__name__)

GROUP_METADATA_TOPIC_NAME = "__consumer_offsets"
_READ_CHUNK = 4 * 1024 * 1024


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


class OffsetsTopic:
    """Creates, appends to and reads back `__consumer_offsets`."""

    def __init__(self, broker: Any) -> None:
        self.broker = broker
        self._creating: asyncio.Future[None] | None = None
        self._queue: list[tuple[int, Sequence[tuple[bytes, bytes | None]], asyncio.Future[int]]] = []
        self._writer: asyncio.Task[None] | None = None

    @property
    def num_partitions(self) -> int:
        meta = self.broker.topics.get(GROUP_METADATA_TOPIC_NAME)
        return meta.partitions if meta is not None else self.broker.config.offsets_topic_num_partitions

    def exists(self) -> bool:
        return self.broker.topics.get(GROUP_METADATA_TOPIC_NAME) is not None

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
        config = self.broker.config
        configs = {
            "cleanup.policy": "compact",
            "compression.type": "producer",
            "segment.bytes": str(config.offsets_topic_segment_bytes),
        }
        try:
            await self.broker.topics.create_topic(
                GROUP_METADATA_TOPIC_NAME, num_partitions=config.offsets_topic_num_partitions, configs=configs
            )
            log.info("Created internal topic %s with %d partitions", GROUP_METADATA_TOPIC_NAME,
                     config.offsets_topic_num_partitions)
        except TopicExistsError:
            pass
        finally:
            self._creating = None

    async def append(self, partition: int, records: Sequence[tuple[bytes, bytes | None]]) -> int:
        """Append (key, value-or-tombstone) records as one batch; returns its first offset.

        The write's place in the log is fixed when this is called, before its
        first await (see `enqueue`).
        """
        return await self.enqueue(partition, records)

    def enqueue(self, partition: int, records: Sequence[tuple[bytes, bytes | None]]) -> asyncio.Future[int]:
        """Queue a write; writes to one partition reach the log in the order they were queued.

        One writer task drains the queue: everything queued meanwhile, for
        every partition, is appended in a single executor hop (one batch per
        write), so concurrent commits share the cost of leaving the loop.
        """
        fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._queue.append((partition, records, fut))
        if self._writer is None:
            self._writer = asyncio.ensure_future(self._drain())
        return fut

    async def _drain(self) -> None:
        queue = self._queue
        try:
            while queue:
                pending = queue[:]
                del queue[:]
                by_partition: dict[int, list[tuple[Sequence[tuple[bytes, bytes | None]], asyncio.Future[int]]]] = {}
                for partition, records, fut in pending:
                    by_partition.setdefault(partition, []).append((records, fut))
                try:
                    await self.ensure_created()
                    outcomes = await self.broker.run_blocking(self._write_all, {
                        partition: [records for records, _ in writes] for partition, writes in by_partition.items()
                    })
                except Exception as exc:  # noqa: BLE001 - every waiter gets the failure
                    outcomes = {partition: exc for partition in by_partition}
                waiters = getattr(self.broker, "fetch_waiters", None)
                for partition, writes in by_partition.items():
                    outcome = outcomes[partition]
                    if isinstance(outcome, BaseException):
                        for _, fut in writes:
                            if not fut.done():
                                fut.set_exception(outcome)
                        continue
                    firsts, appended_bytes = outcome
                    if waiters is not None:
                        waiters.on_append(TopicPartition(GROUP_METADATA_TOPIC_NAME, partition), appended_bytes)
                    for (_, fut), first in zip(writes, firsts):
                        if not fut.done():
                            fut.set_result(first)
        finally:
            self._writer = None

    def _write_all(self, writes: dict[int, list[Sequence[tuple[bytes, bytes | None]]]]
                   ) -> dict[int, tuple[list[int], int] | BaseException]:
        """Executor side: one append per partition; a failure stays with its partition."""
        now = self.broker.clock.milliseconds()
        outcomes: dict[int, tuple[list[int], int] | BaseException] = {}
        for partition, partition_writes in writes.items():
            tp = TopicPartition(GROUP_METADATA_TOPIC_NAME, partition)
            try:
                log_ = self.broker.get_log(tp)
                if log_ is None:
                    raise CoordinatorNotAvailableError(f"{tp} is not available")
                batches = [build_batch([Record(i, now, key, value) for i, (key, value) in enumerate(records)])
                           for records in partition_writes]
                info = log_.append_as_leader(b"".join(batches), 0)
            except Exception as exc:  # noqa: BLE001 - reported to this partition's writers
                outcomes[partition] = exc
                continue
            firsts = []
            offset = info.first_offset
            for records in partition_writes:
                firsts.append(offset)
                offset += len(records)
            outcomes[partition] = (firsts, info.valid_bytes)
        return outcomes

    def read_all_blocking(self) -> Iterator[tuple[int, int, bytes | None, bytes | None]]:
        """Executor side: every record of every partition as (partition, offset, key, value), in log order."""
        if not self.exists():
            return
        for partition in range(self.num_partitions):
            log_ = self.broker.get_log(TopicPartition(GROUP_METADATA_TOPIC_NAME, partition))
            if log_ is None:
                continue
            offset = log_.log_start_offset
            end = log_.high_watermark
            while offset < end:
                data = log_.read(offset, _READ_CHUNK).read_bytes()
                if not data:
                    break
                progressed = False
                for header, pos in iter_batch_headers(data):
                    if header.next_offset <= offset:
                        continue
                    progressed = True
                    offset = header.next_offset
                    if header.is_control:
                        continue
                    for rec in decode_records(data, pos):
                        yield partition, rec.offset, rec.key, rec.value
                if not progressed:
                    break
