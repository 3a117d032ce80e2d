"""Rebalance time of a 4-member group, classic protocol against the consumer protocol (KIP-848),
on asyncbroker and on Kafka 4.4 in the same run (issue 19's measure).

Four confluent-kafka consumers (one process, polled in turn) subscribe to an 8-partition topic
one after the other. Measured: seconds from the first subscribe until every member holds two
partitions and together they hold all eight. Both brokers run with Kafka's defaults (a 5 s
heartbeat and a 1 s assignment interval for the consumer protocol) but for
group.initial.rebalance.delay.ms, 0 on both, so that the classic protocol's figure is its
rebalances and not a fixed 3 s wait: what a user sees when a group of four starts.

    .venv/bin/python bench/bench_group_protocols.py
    BENCH_BROKERS=asyncbroker .venv/bin/python bench/bench_group_protocols.py
"""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_service import BROKERS, KINDS, Report  # noqa: E402

MEMBERS, PARTITIONS = 4, 8


def time_to_stable(bootstrap: str, protocol: str, timeout: float = 120.0) -> float:
    topic, group = f"rebalance-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    config = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
              "enable.auto.commit": False}
    if protocol == "classic":
        config["partition.assignment.strategy"] = "cooperative-sticky"
    consumers = []
    started = time.monotonic()
    try:
        for _ in range(MEMBERS):
            c = Consumer(config)
            c.subscribe([topic])
            consumers.append(c)
        while time.monotonic() - started < timeout:
            for c in consumers:
                c.poll(0.01)
            held = [{tp.partition for tp in c.assignment()} for c in consumers]
            if all(len(h) == PARTITIONS // MEMBERS for h in held) and len(set().union(*held)) == PARTITIONS:
                return time.monotonic() - started
        raise RuntimeError(f"{protocol}: no stable assignment within {timeout} s")
    finally:
        for c in consumers:
            c.close()


def main() -> int:
    report = Report()
    for kind in BROKERS:
        broker = KINDS[kind]
        print(f"--- {broker.name}", flush=True)
        with broker.start(1, {"group.initial.rebalance.delay.ms": "0"}) as running:
            for protocol in ("classic", "consumer"):
                seconds = time_to_stable(running.bootstrap, protocol)
                report.add(kind, f"4 members to a stable assignment, {protocol} protocol", seconds, "s", "",
                           higher_is_better=False, fmt="{:.2f}")
    report.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
