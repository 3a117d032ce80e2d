"""Reading a topic back whole with a client, to compare what two brokers (or one broker
before and after a move) serve; and a produce-then-read round trip through one listener."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

CONSOLE_PRODUCER = "org.apache.kafka.tools.ConsoleProducer"
CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"


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


def round_trip(conf: dict[str, str], topic: str, values: list[bytes]) -> list[bytes]:
    """Produce `values` to partition 0 of `topic` and read them back with the same settings."""
    p = Producer(conf)
    for v in values:
        p.produce(topic, v, partition=0)
    assert p.flush(30) == 0
    c = Consumer({**conf, "group.id": f"g-{uuid.uuid4().hex[:6]}", "enable.partition.eof": True})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        got: list[bytes] = []
        for _ in range(200):
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                break
            got.append(m.value())
        return got
    finally:
        c.close()


def java_round_trip(bootstrap: str, topic: str, settings: dict[str, str], config: Path) -> None:
    """Kafka's console producer writes two lines and its console consumer reads them back (the
    Java client 4.4), both with the client `settings` (written to `config`)."""
    from jvm.kafka_jvm import run_tool

    config.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    produced = run_tool(CONSOLE_PRODUCER, ["--bootstrap-server", bootstrap, "--topic", topic,
                                           "--command-config", str(config)], input="alpha\nbeta\n")
    assert produced.returncode == 0, produced.stderr[-2000:]
    consumed = run_tool(CONSOLE_CONSUMER, ["--bootstrap-server", bootstrap, "--topic", topic, "--from-beginning",
                                           "--max-messages", "2", "--timeout-ms", "30000",
                                           "--command-config", str(config)])
    assert consumed.stdout.splitlines() == ["alpha", "beta"], consumed.stderr[-2000:]
