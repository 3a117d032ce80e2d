"""Share fetch throughput (KIP-932, issue 19's measure): two confluent-kafka ShareConsumers
(librdkafka 2.16, implicit acknowledgement, one thread each) share one partition of 100 B
records, on asyncbroker and on Kafka 4.4 in the same run.

Measured: records per second from the first record received until every record has been
received once, and the broker's CPU over that time. The group's start (the share group
heartbeat, the share partition's initialization) is before the clock starts; each
consumer's poll acknowledges what the previous one returned, so the figure includes the
acknowledgements.

    .venv/bin/python bench/bench_share_fetch.py
    BENCH_SCALE=0.1 BENCH_BROKERS=asyncbroker .venv/bin/python bench/bench_share_fetch.py
"""

from __future__ import annotations

import sys
import threading
import time
import uuid
from pathlib import Path

from confluent_kafka import ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_service import BROKERS, KINDS, SCALE, CpuShare, Report, produce  # noqa: E402

COUNT = int(500_000 * SCALE)
CONSUMERS = 2


class Member(threading.Thread):
    """One share consumer polled on its own thread (librdkafka releases the GIL in poll)."""

    def __init__(self, bootstrap: str, group: str, topic: str, seen: set[int], lock: threading.Lock,
                 stop: threading.Event, first: list[float]) -> None:
        super().__init__(daemon=True)
        self.consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                                       "log_level": 3})
        self.consumer.subscribe([topic])
        self.seen, self.lock, self.stop, self.first = seen, lock, stop, first
        self.received = 0
        self.errors: list[str] = []

    def run(self) -> None:
        while not self.stop.is_set():
            messages = self.consumer.poll(0.1) or []
            offsets = []
            for m in messages:
                if m.error() is not None:
                    self.errors.append(str(m.error()))
                else:
                    offsets.append(m.offset())
            if offsets:
                with self.lock:
                    if not self.first:
                        self.first.append(time.monotonic())
                    self.seen.update(offsets)
                    self.received += len(offsets)
                    if len(self.seen) >= COUNT:
                        self.stop.set()


def share_consume(bootstrap: str, topic: str, group: str, pid: int, timeout: float = 300.0) -> tuple[float, float, int]:
    """(records/s from the first record to the last, broker CPU share, records delivered)."""
    seen: set[int] = set()
    lock, stop, first = threading.Lock(), threading.Event(), []  # type: ignore[var-annotated]
    members = [Member(bootstrap, group, topic, seen, lock, stop, first) for _ in range(CONSUMERS)]
    with CpuShare(pid) as cpu:
        for m in members:
            m.start()
        stop.wait(timeout)
        last = time.monotonic()
        stop.set()
        for m in members:
            m.join(30)
    for m in members:
        m.consumer.close()
    errors = [e for m in members for e in m.errors]
    if len(seen) < COUNT or errors:
        raise RuntimeError(f"{len(seen)} of {COUNT} records within {timeout} s; errors {errors[:3]}")
    return COUNT / (last - first[0]), cpu.broker_cpu / cpu.wall, sum(m.received for m in members)


def main() -> int:
    report = Report()
    print(f"scale {SCALE}: {COUNT:,} x 100 B, {CONSUMERS} share consumers on 1 partition", flush=True)
    for kind in BROKERS:
        broker = KINDS[kind]
        print(f"--- {broker.name}", flush=True)
        with broker.start(1) as running:
            topic, group = f"share-{uuid.uuid4().hex[:8]}", f"share-g-{uuid.uuid4().hex[:8]}"
            admin = AdminClient({"bootstrap.servers": running.bootstrap})
            admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
            resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[ConfigEntry(
                "share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
            admin.incremental_alter_configs([resource])[resource].result(30)
            produce(running.bootstrap, topic, COUNT, 100, "1")
            rate, cpu, delivered = share_consume(running.bootstrap, topic, group, running.pid)
            report.add(kind, "share fetch 100 B, 2 consumers, p=1", rate, "msgs/s", ">= Kafka",
                       higher_is_better=True, note=f"broker CPU {cpu:.0%}, {delivered - COUNT} redelivered")
    report.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
