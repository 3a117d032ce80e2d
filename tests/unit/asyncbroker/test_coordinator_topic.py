"""A coordinator's internal topic (offsets_topic.CoordinatorTopic) on a real in-process Broker:
writes that cannot block are appended on the event loop, the others from the IO pool, and
either way each partition's writes land in the order they were queued."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from asyncbroker import offsets_topic, replica_manager
from asyncbroker.broker import Broker
from asyncbroker.config import KafkaConfig
from asyncbroker.offsets_topic import CoordinatorTopic, StoredRecord
from wire.records import Record, build_batch

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    b = Broker(KafkaConfig.load(None, [f"log.dirs={tmp_path}", "listeners=PLAINTEXT://127.0.0.1:0"], {}))
    await b.startup()
    yield b
    await b.shutdown()


def topic_of(broker: Broker, name: str, configs: dict[str, str], pooled: list[Any]) -> CoordinatorTopic:
    """A two-partition coordinator topic whose IO-pool calls are recorded in `pooled`."""

    async def run_blocking(fn: Any, *args: Any) -> Any:
        pooled.append(args)
        return await broker.run_blocking(fn, *args)

    return CoordinatorTopic(name, 2, {"cleanup.policy": "compact", **configs}, topics=broker.topics,
                            replica_manager=broker.replica_manager, fetch_waiters=broker.fetch_waiters,
                            run_blocking=run_blocking, clock=broker.clock)


async def write_three_rounds(topic: CoordinatorTopic) -> list[int]:
    """Three writes to each partition, queued together (one drain); their first offsets."""
    futures = [topic.enqueue(partition, [(b"k%d" % n, b"v%d-%d" % (partition, n)), (b"x", b"y")])
               for n in range(3) for partition in (0, 1)]
    return list(await asyncio.gather(*futures))


EXPECTED = [StoredRecord(partition, offset, key, value) for partition in (0, 1)
            for n in range(3) for offset, key, value in (
                (2 * n, b"k%d" % n, b"v%d-%d" % (partition, n)), (2 * n + 1, b"x", b"y"))]


async def test_writes_that_cannot_block_are_appended_on_the_loop(broker: Broker) -> None:
    pooled: list[Any] = []
    topic = topic_of(broker, "__coordinator_test", {}, pooled)
    assert await write_three_rounds(topic) == [0, 0, 2, 2, 4, 4]
    writes = [args for args in pooled if args and isinstance(args[0], dict)]
    assert writes == []  # no write left the loop (the topic's creation and reads may)
    assert sorted(await topic.read_all()) == EXPECTED


async def test_writes_that_would_fsync_or_are_too_large_go_to_the_io_pool(broker: Broker) -> None:
    """flush.messages=1: every append fsyncs, which the loop never does; writes that would take
    a round past INLINE_APPEND_MAX_BYTES are left to the pool as well."""
    pooled: list[Any] = []
    topic = topic_of(broker, "__coordinator_test_flushed", {"flush.messages": "1"}, pooled)
    assert await write_three_rounds(topic) == [0, 0, 2, 2, 4, 4]
    writes = [args[0] for args in pooled if args and isinstance(args[0], dict)]
    assert writes and {partition for w in writes for partition in w} == {0, 1}
    assert sorted(await topic.read_all()) == EXPECTED

    pooled.clear()
    large = topic_of(broker, "__coordinator_test_large", {"max.message.bytes": str(4 << 20)}, pooled)
    value = b"z" * (replica_manager.INLINE_APPEND_MAX_BYTES + 1)
    small, big = await asyncio.gather(large.enqueue(0, [(b"k", b"v")]), large.enqueue(1, [(b"k", value)]))
    assert (small, big) == (0, 0)
    assert [sorted(args[0]) for args in pooled if args and isinstance(args[0], dict)] == [[1]]  # only the big one
    assert sorted(await large.read_all()) == [StoredRecord(0, 0, b"k", b"v"), StoredRecord(1, 0, b"k", value)]

    # The bound is the round's, as a Produce request's: two writes that each fit, but not together.
    pooled.clear()
    half = b"h" * (replica_manager.INLINE_APPEND_MAX_BYTES // 2 + 1)
    first, second = await asyncio.gather(large.enqueue(0, [(b"h", half)]), large.enqueue(1, [(b"h", half)]))
    assert (first, second) == (1, 1)
    assert [sorted(args[0]) for args in pooled if args and isinstance(args[0], dict)] == [[1]]  # the second


@pytest.mark.parametrize("records", [
    [(b"k", b"v")], [(None, None)], [(b"", b"")], [(b"k" * 300, b"v" * 70_000), (None, b"x"), (b"y", None)],
    [(b"k%d" % n, b"v" * n) for n in range(200)],
])
def test_the_size_floor_is_never_above_the_batches_made(records: list[tuple[bytes | None, bytes | None]]) -> None:
    writes = [(records, None), (records, (7, 0))]
    made = len(build_batch([Record(i, 0, k, v) for i, (k, v) in enumerate(records)])) + len(
        build_batch([Record(i, 0, k, v) for i, (k, v) in enumerate(records)], producer_id=7, producer_epoch=0,
                    is_transactional=True))
    assert 0 < offsets_topic._least_batch_bytes(writes) <= made


async def test_a_write_over_the_bound_is_not_made_into_batches_on_the_loop(
        broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its batches are made once, on the IO pool: making them grows with its records."""
    loop_thread = threading.get_ident()
    made_on_loop: list[int] = []

    def recording_build_batch(records: Any, **kwargs: Any) -> bytes:
        if threading.get_ident() == loop_thread:
            made_on_loop.append(sum(len(r.value or b"") for r in records))
        return build_batch(records, **kwargs)

    monkeypatch.setattr(offsets_topic, "build_batch", recording_build_batch)
    pooled: list[Any] = []
    topic = topic_of(broker, "__coordinator_test_unbuilt", {"max.message.bytes": str(4 << 20)}, pooled)
    value = b"z" * (replica_manager.INLINE_APPEND_MAX_BYTES + 1)
    small, big = await asyncio.gather(topic.enqueue(0, [(b"k", b"v")]), topic.enqueue(1, [(b"k", value)]))
    assert (small, big) == (0, 0)
    assert made_on_loop == [1]  # the small write's batch only
    assert [sorted(args[0]) for args in pooled if args and isinstance(args[0], dict)] == [[1]]
    assert sorted(await topic.read_all()) == [StoredRecord(0, 0, b"k", b"v"), StoredRecord(1, 0, b"k", value)]
