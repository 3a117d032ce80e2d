"""Client quotas: does a throttled producer's rate converge to its quota, and does a producer
next to it keep its speed?

A broker subprocess; producer_byte_rate=QUOTA (default 2 MiB/s) for client id "throttled" (set
with AlterClientQuotas). First the free producer runs alone for a baseline; then both run at
once for 3 x WINDOW seconds, and each one's delivered bytes over the last WINDOW seconds give
its rate (the first window's burst, which Kafka's rate spreads over the whole quota window,
has aged out of the measurement by then, as it has on Kafka). Each producer is its own
process (confluent-kafka, 10 KiB values, no compression; librdkafka also backs off on the
throttle time it hears).

Targets (issue 20): the throttled rate within 10% of the quota over 10 s; the free producer's
rate next to it close to its rate alone (it shares the machine's two cores with the other).
Prints RESULT lines for `python -m bench`.
"""
from __future__ import annotations

import os
import sys
import multiprocessing
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from asyncbroker.testing import BrokerProcess  # noqa: E402

QUOTA = float(os.environ.get("BENCH_QUOTA_BYTES", str(2 * 1024 * 1024)))
WINDOW = float(os.environ.get("BENCH_QUOTA_WINDOW", "10"))
VALUE = b"q" * 10_240


def result(name: str, value: float, unit: str, target: str = "", fmt: str = "{:,.2f}") -> None:
    print(f"RESULT {name} | {fmt.format(value)} | {unit} | {target}", flush=True)


def set_quota(bootstrap: str, client_id: str, rate: float) -> None:
    """AlterClientQuotas through a raw request (librdkafka has no client-quota admin call)."""
    sys.path.insert(0, str(ROOT / "tests" / "oracle"))
    from differential import Connection, entity, request_class_name

    conn = Connection(bootstrap)
    try:
        request = entity(49, 1, request_class_name(49, 1), validate_only=False, entries=(entity(
            49, 1, "EntryData", entity=(entity(49, 1, "EntityData", entity_type="client-id", entity_name=client_id),),
            ops=(entity(49, 1, "OpData", key="producer_byte_rate", value=rate, remove=False),)),))
        answer = conn.receive(49, 1, conn.send(request))
        assert answer.entries[0].error_code.value == 0, answer
    finally:
        conn.close()


def produce(bootstrap: str, client_id: str, topic: str, seconds: float, out: "multiprocessing.Queue[list[float]]") -> None:
    """One producer sending as fast as librdkafka lets it; puts the delivery times on `out`."""
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 5,
                         "compression.type": "none", "queue.buffering.max.kbytes": 8192, "acks": 1,
                         "batch.size": 65536})
    delivered: list[float] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is None:
            delivered.append(time.monotonic())

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            producer.produce(topic, VALUE, on_delivery=on_delivery)
        except BufferError:
            producer.poll(0.01)
            continue
        producer.poll(0)
    producer.flush(60)
    out.put(delivered)


def run(bootstrap: str, producers: list[tuple[str, str]], seconds: float) -> tuple[float, list[list[float]]]:
    """Start the producers at once (one process each); (their start, their delivery times)."""
    queues = [multiprocessing.Queue() for _ in producers]  # type: ignore[var-annotated]
    procs = [multiprocessing.Process(target=produce, args=(bootstrap, cid, topic, seconds, q))
             for (cid, topic), q in zip(producers, queues)]
    start = time.monotonic()
    for p in procs:
        p.start()
    times = [q.get(timeout=seconds + 120) for q in queues]
    for p in procs:
        p.join(30)
    return start, times


def rate(times: list[float], since: float, until: float) -> float:
    return sum(len(VALUE) for t in times if since <= t < until) / (until - since)


def measure(bootstrap: str) -> tuple[float, float, float]:
    """(throttled rate, free rate next to it, free rate alone) in bytes/s, on one broker."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for topic in ("q-free", "q-throttled"):
        admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
    set_quota(bootstrap, "throttled", QUOTA)
    # The free producer alone, measured over the same stretch of an equally long run (after
    # 20 s of writes the disk's writeback, not the quota, sets the pace).
    start, (alone,) = run(bootstrap, [("free", "q-free")], 3 * WINDOW)
    free_alone = rate(alone, start + 2 * WINDOW, start + 3 * WINDOW)
    start, (free, throttled) = run(bootstrap, [("free", "q-free"), ("throttled", "q-throttled")], 3 * WINDOW)
    since, until = start + 2 * WINDOW, start + 3 * WINDOW
    return rate(throttled, since, until), rate(free, since, until), free_alone


def main() -> int:
    with BrokerProcess(["num.partitions=1"]) as broker:
        ours = measure(broker.bootstrap)
    kafka = None
    if os.environ.get("BENCH_KAFKA", "1") != "0":
        sys.path.insert(0, str(ROOT / "tests"))
        from jvm.kafka_jvm import KafkaServer

        with KafkaServer(heap="1g", as_scripts=True) as server:
            kafka = measure(server.bootstrap)
    mib = 1024 * 1024
    for name, figures in (("asyncbroker", ours), ("Kafka 4.4", kafka)):
        if figures is None:
            continue
        throttled_rate, free_rate, free_alone = figures
        print(f"{name}: quota {QUOTA / mib:.2f} MiB/s; throttled {throttled_rate / mib:.2f} MiB/s over the last "
              f"{WINDOW:.0f} s; free {free_rate / mib:.2f} MiB/s next to it, {free_alone / mib:.2f} MiB/s alone")
    result("quota: throttled rate / quota", ours[0] / QUOTA, "ratio", "0.9-1.1")
    result("quota: free producer next to a throttled one / alone", ours[1] / ours[2], "ratio", ">= 0.8")
    if kafka is not None:
        result("quota: throttled rate / quota, Kafka 4.4", kafka[0] / QUOTA, "ratio")
        result("quota: free producer next to a throttled one / alone, Kafka 4.4", kafka[1] / kafka[2], "ratio")
        result("quota: free producer next to a throttled one, asyncbroker / Kafka", ours[1] / kafka[1], "ratio", ">= 1")
    return 0

if __name__ == "__main__":
    sys.exit(main())
