"""A fetch whose bytes are not in the page cache (a cold segment after a restart, evicted
pages) is read on an IO thread and answers the same records as a cached one, which the
broker reads on its loop."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from asyncbroker.testing import BrokerProcess

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess(["num.partitions=1"]) as b:
        yield b


def evict(directory: Path) -> None:
    for path in directory.iterdir():
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def consume_all(bootstrap: str, topic: str, count: int) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(values) < count and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                values.append(m.value())
        return values
    finally:
        c.close()


def test_cold_and_cached_fetches_answer_the_same_records(broker: BrokerProcess) -> None:
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    expected = [b"value-%d" % i + b"x" * (i % 300) for i in range(500)]
    for value in expected:
        p.produce("cold", value=value)
    assert p.flush(30) == 0
    assert consume_all(broker.bootstrap, "cold", len(expected)) == expected  # cached: read on the loop
    evict(Path(broker.log_dir) / "cold-0")
    assert consume_all(broker.bootstrap, "cold", len(expected)) == expected  # cold: read on an IO thread
