"""Web console page render time (server time, the Server-Timing header) over a real in-process
Broker: the topics list and a topic page with 1,000 partitions, and the groups list with 100
groups holding committed offsets. Printed, not asserted (the issue's target: < 100 ms).

Then the broker's latency while a page refreshes every second: a broker process (`serve
--console-port`) with the 1,000-partition topic, one confluent-kafka producer sending one
record at a time (acks=all, flushed: the produce round trip) and a consumer reading each back
(produce to fetch, end to end), for PHASE_S seconds without the console and PHASE_S seconds
while a thread GETs the topic page every second.

    python bench/bench_console.py
"""

from __future__ import annotations

import asyncio
import re
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from aiohttp.test_utils import TestClient, TestServer  # noqa: E402

from asyncbroker.broker import Broker  # noqa: E402
from asyncbroker.config import KafkaConfig  # noqa: E402
from asyncbroker.console import actions  # noqa: E402
from asyncbroker.console.server import build_app  # noqa: E402

RUNS = 20
PHASE_S = 10.0


async def server_ms(client: TestClient[object, object], path: str) -> tuple[float, float, int]:
    times = []
    size = 0
    for _ in range(RUNS):
        r = await client.get(path)
        body = await r.read()
        assert r.status == 200, (path, r.status)
        size = len(body)
        m = re.search(r"dur=([0-9.]+)", r.headers["Server-Timing"])
        assert m is not None
        times.append(float(m.group(1)))
    return statistics.median(times), max(times), size


async def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        config = KafkaConfig.load(None, [f"log.dirs={d}", "listeners=PLAINTEXT://127.0.0.1:0",
                                         "offsets.topic.num.partitions=1", "num.partitions=1"], {})
        broker = Broker(config)
        await broker.startup()
        try:
            await actions.create_topic(broker, "wide", 1000, {})
            for p in range(0, 1000, 10):
                await actions.produce(broker, "wide", p, b"k", b"v" * 100, [])
            for g in range(100):
                await actions.reset_offsets(broker, f"group-{g:03d}", "wide", "earliest", "")
            async with TestClient(TestServer(build_app(broker))) as client:
                for name, path in (("topics list, 1,000 partitions", "/topics"),
                                   ("topic page, 1,000 partitions", "/topics/wide"),
                                   ("groups list, 100 groups x 1,000 offsets", "/groups"),
                                   ("group page, 1,000 offsets", "/groups/group-000"),
                                   ("partition page", "/topics/wide/0"),
                                   ("message page, 50 records", "/topics/wide/0/messages")):
                    median, worst, size = await server_ms(client, path)
                    print(f"{name}: median {median:.1f} ms, max {worst:.1f} ms, {size / 1024:.0f} KiB")
                    print(f"RESULT console {name} | {median:.1f} | ms (median server time) | < 100")
        finally:
            await broker.shutdown()


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def latency_while_refreshing() -> None:
    import threading
    import time
    import urllib.request

    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from asyncbroker.testing import BrokerProcess

    with tempfile.TemporaryDirectory() as d, BrokerProcess(["num.partitions=1", "offsets.topic.num.partitions=1"],
                                                           log_dir=Path(d), console=True) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        for name, partitions in (("wide", 1000), ("probe", 1)):
            admin.create_topics([NewTopic(name, partitions)])[name].result(60)
        producer = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 0})
        consumer = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "bench", "fetch.wait.max.ms": 100,
                             "auto.offset.reset": "earliest", "enable.auto.commit": False})
        consumer.assign([__import__("confluent_kafka").TopicPartition("probe", 0, 0)])
        page = b.console_url + "topics/wide"

        def phase(refresh: bool) -> tuple[list[float], list[float], list[float]]:
            stop = threading.Event()
            renders: list[float] = []

            def refresher() -> None:
                while not stop.is_set():
                    started = time.perf_counter()
                    with urllib.request.urlopen(page, timeout=10) as r:
                        r.read()
                        renders.append(float(r.headers["Server-Timing"].split("dur=")[1]))
                    stop.wait(max(0.0, 1.0 - (time.perf_counter() - started)))

            thread = threading.Thread(target=refresher) if refresh else None
            if thread is not None:
                thread.start()
            produce_ms: list[float] = []
            end_to_end_ms: list[float] = []
            deadline = time.monotonic() + PHASE_S
            while time.monotonic() < deadline:
                started = time.perf_counter()
                producer.produce("probe", value=b"x" * 100)
                assert producer.flush(10) == 0
                produce_ms.append((time.perf_counter() - started) * 1000)
                got = time.monotonic() + 10
                while True:  # the record just produced (an error event, e.g. a first
                    msg = consumer.poll(1)  # metadata refresh, is skipped; bounded by `got`)
                    if msg is not None and msg.error() is None:
                        break
                    if msg is not None:
                        print("consumer:", msg.error(), file=sys.stderr)
                    assert time.monotonic() < got, "the produced record was not fetched in 10 s"
                end_to_end_ms.append((time.perf_counter() - started) * 1000)
            stop.set()
            if thread is not None:
                thread.join(15)
            return produce_ms, end_to_end_ms, renders

        phase(False)  # warm-up: connections, metadata, the consumer's position
        for label, refresh in (("without the console", False), ("topic page (1,000 partitions) every 1 s", True)):
            produce_ms, e2e_ms, renders = phase(refresh)
            print(f"broker latency {label}: produce acks=all p50 {_quantile(produce_ms, 0.5):.2f} ms, "
                  f"p99 {_quantile(produce_ms, 0.99):.2f} ms, max {max(produce_ms):.2f} ms; produce->fetch "
                  f"p50 {_quantile(e2e_ms, 0.5):.2f} ms, p99 {_quantile(e2e_ms, 0.99):.2f} ms "
                  f"({len(produce_ms)} records" + (f", {len(renders)} page renders, median "
                                                   f"{statistics.median(renders):.1f} ms server time" if renders
                                                   else "") + ")")
            print(f"RESULT console broker produce p99, {label} | {_quantile(produce_ms, 0.99):.2f} | ms |")
            print(f"RESULT console broker produce->fetch p99, {label} | {_quantile(e2e_ms, 0.99):.2f} | ms |")
        consumer.close()


if __name__ == "__main__":
    asyncio.run(main())
    latency_while_refreshing()
