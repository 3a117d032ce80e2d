"""Web console page render time (server time, the Server-Timing header) over a real in-process
Broker: the topics list and a topic page with 1,000 partitions, and the groups list with 100
groups holding committed offsets. Printed, not asserted (the issue's target: < 100 ms).

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


if __name__ == "__main__":
    asyncio.run(main())
