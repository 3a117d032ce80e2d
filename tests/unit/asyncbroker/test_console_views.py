"""The web console's views, rendered by its aiohttp application over a real in-process Broker
(real log directory in tmp) through aiohttp's test client: pages, escaping of record bytes,
bad input, the CSRF check and the forms."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from asyncbroker.broker import Broker
from asyncbroker.config import KafkaConfig
from asyncbroker.console import actions
from asyncbroker.console.server import build_app
from console_testlib import started_broker

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    async with started_broker(tmp_path, "group.initial.rebalance.delay.ms=0") as b:
        yield b


async def token(client: TestClient[object, object]) -> str:
    html = await (await client.get("/topics")).text()
    m = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert m is not None
    return m.group(1)


async def test_topics_and_partition_pages(broker: Broker, client: TestClient[object, object]) -> None:
    await actions.create_topic(broker, "orders", 3, {"retention.ms": "3600000"})
    for i in range(5):
        await actions.produce(broker, "orders", 1, b"k%d" % i, b"v%d" % i, [])
    html = await (await client.get("/topics")).text()
    assert '<a href="/topics/orders">orders</a>' in html
    html = await (await client.get("/topics/orders")).text()
    # The override is marked as such, a default as a default.
    assert re.search(r'class="override"><td>retention.ms</td><td>3600000</td>', html)
    assert re.search(r'class="default"><td>segment.bytes</td>', html)
    html = await (await client.get("/topics/orders/1")).text()
    assert 'id="segments"' in html and "retention deletes it next" not in html  # only the active segment
    assert "only the active segment" in html


async def test_record_bytes_are_escaped(broker: Broker, client: TestClient[object, object]) -> None:
    await actions.create_topic(broker, "xss", 1, {})
    await actions.produce(broker, "xss", 0, b"<script>alert('k')</script>", b'"><img src=x onerror=alert(1)>',
                          [("<script>h</script>", b"<script>alert('h')</script>")])
    html = await (await client.get("/topics/xss/0/messages")).text()
    assert "<script>alert" not in html and "<img" not in html and "<script>h" not in html
    assert "&lt;script&gt;alert(&#39;k&#39;)&lt;/script&gt;" in html
    assert "&lt;script&gt;h&lt;/script&gt;" in html and "&#34;&gt;&lt;img src=x" in html


async def test_binary_huge_and_json_values(broker: Broker, client: TestClient[object, object]) -> None:
    await actions.create_topic(broker, "mixed", 1, {})
    await actions.produce(broker, "mixed", 0, None, bytes(range(256)), [])
    await actions.produce(broker, "mixed", 0, b"big", b"x" * 200_000, [])
    await actions.produce(broker, "mixed", 0, b"j", json.dumps({"a": [1, 2]}).encode(), [])
    response = await client.get("/topics/mixed/0/messages")
    html = await response.text()
    assert response.status == 200
    assert "00 01 02 03" in html and "binary: shown as hex" in html
    assert "… 195904 more bytes not shown" in html and len(html) < 100_000
    assert '<pre class="json">{\n  &#34;a&#34;: [' in html
    html = await (await client.get("/topics/mixed/0/messages?format=hex&offset=2")).text()
    assert '7b 22 61 22' in html  # {"a"


async def test_bad_input_is_a_clear_message(broker: Broker, client: TestClient[object, object]) -> None:
    await actions.create_topic(broker, "small", 1, {})
    await actions.produce(broker, "small", 0, b"k", b"v", [])
    r = await client.get("/topics/nope/0/messages")
    assert r.status == 404 and "Unknown topic &#39;nope&#39;" in await r.text()
    r = await client.get("/topics/small/0/messages?offset=99")
    assert r.status == 400 and "Offset 99 is out of range" in await r.text()
    r = await client.get("/topics/small/0/messages?offset=abc")
    assert r.status == 400 and "offset must be a whole number" in await r.text()
    r = await client.get("/topics/small/0/messages?limit=501")
    assert r.status == 400 and "1 to 500 records" in await r.text()
    r = await client.get("/topics/small/7")
    assert r.status == 404
    r = await client.get("/groups/none")
    assert r.status == 404
    # The broker is unharmed: the partition still reads.
    r = await client.get("/topics/small/0/messages?offset=0")
    assert r.status == 200 and 'class="record"' in await r.text()


async def test_forms_need_the_csrf_token(broker: Broker, client: TestClient[object, object]) -> None:
    r = await client.post("/topics", data={"name": "forged", "partitions": "1"}, allow_redirects=False)
    assert r.status == 403 and broker.topics.get("forged") is None
    r = await client.post("/topics", data={"name": "forged", "csrf_token": "wrong"}, allow_redirects=False)
    assert r.status == 403
    t = await token(client)
    r = await client.post("/topics", data={"name": "made", "partitions": "2", "configs": "cleanup.policy=compact",
                                           "csrf_token": t}, allow_redirects=False)
    assert r.status == 303 and broker.topics.get("made") is not None
    r = await client.post("/topics/made/config", data={"key": "retention.ms", "value": "1000", "csrf_token": t},
                          allow_redirects=False)
    assert r.status == 303 and broker.topics.get("made").configs["retention.ms"] == "1000"  # type: ignore[union-attr]
    r = await client.post("/topics/made/produce", data={"key": "a", "value": "{}", "csrf_token": t})
    assert r.status == 200 and "Produced 1 record to made-0 at offset 0" in await r.text()
    r = await client.post("/topics/made/config", data={"key": "no.such.key", "value": "1", "csrf_token": t})
    assert r.status == 409 and "no.such.key" in await r.text()
    r = await client.post("/topics/made/delete", data={"csrf_token": t}, allow_redirects=False)
    assert r.status == 303 and broker.topics.get("made") is None


async def test_groups_lag_and_reset_on_an_empty_group(broker: Broker, client: TestClient[object, object]) -> None:
    await actions.create_topic(broker, "events", 2, {})
    for i in range(6):
        await actions.produce(broker, "events", i % 2, None, b"v", [])
    await actions.reset_offsets(broker, "g1", "events", "earliest", "")
    html = await (await client.get("/groups")).text()
    assert '<a href="/groups/g1">g1</a>' in html
    html = await (await client.get("/groups/g1")).text()
    assert '<b id="total-lag">6</b>' in html
    t = await token(client)
    r = await client.post("/groups/g1/reset", data={"topic": "events", "to": "offset", "value": "2", "csrf_token": t})
    assert r.status == 200 and '<b id="total-lag">2</b>' in await r.text()


async def test_request_rates_latencies_and_message_rates(tmp_path: Path) -> None:
    """Requests of a real client (confluent-kafka, in a thread: the broker's loop is this one)
    to a listening broker show on the overview with their rate and latency; records appended,
    per topic, on the topics page."""
    import asyncio

    from confluent_kafka import Producer

    from asyncbroker.server import KafkaServer

    config = KafkaConfig.load(None, [f"log.dirs={tmp_path}", "listeners=PLAINTEXT://127.0.0.1:0",
                                     "offsets.topic.num.partitions=1"], {})
    server = KafkaServer(config)
    broker = await server.start()
    try:
        async with TestClient(TestServer(build_app(broker))) as client:
            await actions.create_topic(broker, "rated", 1, {})
            host, port = server.bound["PLAINTEXT"]

            def produce() -> int:
                producer = Producer({"bootstrap.servers": f"{host}:{port}", "linger.ms": 0})
                for i in range(20):
                    producer.produce("rated", value=b"v%d" % i)
                    producer.poll(0)
                return int(producer.flush(30))

            assert await asyncio.to_thread(produce) == 0
            html = await (await client.get("/overview")).text()
            m = re.search(r'<tr class="api"><td>Produce</td><td class="num">([0-9.]+)</td>'
                          r'<td class="num">([0-9.]+)</td>', html)
            assert m is not None and float(m.group(1)) > 0 and float(m.group(2)) > 0, html
            assert "<td>Metadata</td>" in html
            html = await (await client.get("/topics")).text()
            m = re.search(r'<a href="/topics/rated">rated</a>.*?<td class="num rate">([0-9.]+)</td>', html, re.S)
            assert m is not None and float(m.group(1)) > 0
    finally:
        await server.stop()


async def test_partition_charts_tombstones_and_last_clean(broker: Broker,
                                                          client: TestClient[object, object]) -> None:
    await actions.create_topic(broker, "compacted", 1, {"cleanup.policy": "compact", "segment.ms": "100"})
    for i in range(6):
        await actions.produce(broker, "compacted", 0, b"k%d" % (i % 2), b"v" if i < 4 else None, [])
    html = await (await client.get("/topics/compacted/0")).text()
    assert 'id="chart-sizes"' in html and 'id="chart-tombstones"' in html and 'id="chart-dirty"' in html
    assert '<td class="num" id="tombstones">2</td>' in html
    assert "not since the broker started" in html
    assert "asyncbroker audit " in html and "--topics compacted --html audit.html" in html
    await actions.compact(broker, "compacted", 0)
    html = await (await client.get("/topics/compacted/0")).text()
    m = re.search(r'<td id="last-clean">([^<]+)</td>', html)
    assert m is not None and "UTC" in m.group(1), html
    assert "<svg" in html and "<script" not in html.split("<main>")[1]


async def test_the_audit_page_shows_one_state_when_the_run_ends_while_it_renders(
        broker: Broker, client: TestClient[object, object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The page renders on the console's render thread while the audit's task may finish the
    run: its refresh and its text come from the state read once, before the render. (The lever's
    own test, with Spark, met this race as a finished page that still refreshed.)"""
    import time

    from asyncbroker.console.audit import AuditRun, AuditState
    from asyncbroker.console.server import AUDIT_KEY, RENDERER_KEY

    app = client.server.app
    run = AuditRun("ledger", tmp_path, ["true"])
    app[AUDIT_KEY].runs["ledger"] = run
    renderer = app[RENDERER_KEY]
    render = renderer.render

    def render_as_the_run_ends(name: str, **context: object) -> str:
        run.state, run.finished = AuditState.DONE, time.time()
        return render(name, **context)

    monkeypatch.setattr(renderer, "render", render_as_the_run_ends)
    html = await (await client.get("/topics/ledger/audit")).text()
    assert 'data-state="running"' in html and 'id="audit-running"' in html
    assert 'http-equiv="refresh"' in html
    monkeypatch.setattr(renderer, "render", render)
    html = await (await client.get("/topics/ledger/audit")).text()
    assert 'id="audit-done"' in html and 'http-equiv="refresh"' not in html
