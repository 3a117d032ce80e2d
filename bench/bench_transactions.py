"""Transactions beside Apache Kafka 4.4 (issue 14): what a transactional producer costs.

For each broker: 100 B records produced idempotently (acks=all), then the same through a
transactional producer committing every 1,000 records, and the latency of committing a
one-record transaction (EndTxn answered, p50/p99 of sequential commits). The transactional
rate over the idempotent one is the overhead of the protocol (AddPartitions, EndTxn, markers).

    BENCH_SCALE=0.1 .venv/bin/python bench/bench_transactions.py
    BENCH_BROKERS=asyncbroker .venv/bin/python bench/bench_transactions.py
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path

from confluent_kafka import Producer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_service import BROKERS, KINDS, SCALE, CpuShare, Report, percentiles  # noqa: E402

RECORDS = int(200_000 * SCALE)
PER_TRANSACTION = 1_000
COMMITS = int(500 * max(SCALE, 0.2))


def produce_rate(bootstrap: str, topic: str, count: int, transactional: bool) -> float:
    conf: dict[str, object] = {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                               "linger.ms": 5, "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000}
    if transactional:
        conf["transactional.id"] = f"bench-{uuid.uuid4().hex[:8]}"
    p = Producer(conf)
    payload = os.urandom(100)
    if transactional:
        p.init_transactions(30)
    started = time.monotonic()
    sent = 0
    while sent < count:
        if transactional:
            p.begin_transaction()
        for _ in range(min(PER_TRANSACTION, count - sent)):
            try:
                p.produce(topic, payload)
            except BufferError:
                p.poll(0.001)
                p.produce(topic, payload)
            sent += 1
        if transactional:
            p.commit_transaction(60)
    if p.flush(60):
        raise RuntimeError("records left undelivered")
    return count / (time.monotonic() - started)


def commit_latency(bootstrap: str, topic: str, count: int) -> tuple[float, float]:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"lat-{uuid.uuid4().hex[:8]}",
                  "linger.ms": 0, "socket.nagle.disable": True})
    p.init_transactions(30)
    samples = []
    for i in range(count + 10):
        p.begin_transaction()
        p.produce(topic, b"x" * 100)
        p.flush(10)
        t0 = time.perf_counter()
        p.commit_transaction(30)
        if i >= 10:  # the first few warm both sides up
            samples.append(time.perf_counter() - t0)
    return percentiles(samples)


def measure(kind: str, report: Report) -> None:
    broker = KINDS[kind]
    print(f"--- {broker.name}", flush=True)
    with broker.start(1) as running:
        bs, pid = running.bootstrap, running.pid
        produce_rate(bs, "warm", 1_000, transactional=True)
        with CpuShare(pid) as cpu:
            rate = produce_rate(bs, "idempotent", RECORDS, transactional=False)
        report.add(kind, "idempotent produce 100 B", rate, "msgs/s", ">= Kafka", higher_is_better=True,
                   note=f"broker CPU {cpu.broker_cpu / cpu.wall:.0%}")
        with CpuShare(pid) as cpu:
            rate = produce_rate(bs, "transactional", RECORDS, transactional=True)
        report.add(kind, f"transactional produce 100 B, {PER_TRANSACTION} per txn", rate, "msgs/s", ">= Kafka",
                   higher_is_better=True, note=f"broker CPU {cpu.broker_cpu / cpu.wall:.0%}")
        p50, p99 = commit_latency(bs, "commits", COMMITS)
        report.add(kind, "commit of a 1-record transaction p50", p50, "ms", "<= Kafka", higher_is_better=False,
                   fmt="{:.3f}")
        report.add(kind, "commit of a 1-record transaction p99", p99, "ms", "<= Kafka", higher_is_better=False,
                   fmt="{:.3f}")


def main() -> int:
    print(f"scale {SCALE}: {RECORDS:,} x 100 B, {COMMITS:,} commits; brokers: {', '.join(BROKERS)}")
    report = Report()
    for kind in BROKERS:
        measure(kind, report)
    report.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
