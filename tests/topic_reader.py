"""Reading a topic back whole with a client, to compare what two brokers (or one broker
before and after a move) serve."""

from __future__ import annotations

import time
import uuid
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition


def read_all(bootstrap: str, topic: str, partitions: int) -> list[tuple[Any, ...]]:
    """(partition, offset, key, value, headers, timestamp) of every record, to the high watermarks."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False, "enable.partition.eof": True, "auto.offset.reset": "earliest"})
    try:
        c.assign([TopicPartition(topic, p, -2) for p in range(partitions)])  # -2: earliest
        out: list[tuple[Any, ...]] = []
        eof: set[int] = set()
        deadline = time.monotonic() + 60
        while len(eof) < partitions:
            assert time.monotonic() < deadline, f"{topic}: {len(out)} records, eof {eof}"
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                eof.add(m.partition())
                continue
            out.append((m.partition(), m.offset(), m.key(), m.value(), tuple(m.headers() or ()), m.timestamp()[1]))
        return sorted(out)
    finally:
        c.close()
