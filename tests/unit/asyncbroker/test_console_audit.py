"""The console's audit lever end to end: a real in-process Broker with a compacted topic, the
POST starting `asyncbroker audit` (Spark, a child process) over the live log dir, the page
showing it running and then serving its HTML report. One test: it pays Spark's start time."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from asyncbroker.broker import Broker
from asyncbroker.console import actions
from asyncbroker.console.audit import spark_missing
from asyncbroker.console.server import build_app
from console_testlib import started_broker

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300),
              pytest.mark.skipif(spark_missing() is not None, reason=str(spark_missing()))]


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    async with started_broker(tmp_path) as b:
        yield b


async def test_audit_lever_runs_the_audit_and_serves_its_report(broker: Broker) -> None:
    await actions.create_topic(broker, "ledger", 1, {"cleanup.policy": "compact"})
    for i in range(60):
        await actions.produce(broker, "ledger", 0, b"<k>%d" % (i % 7), b"v%d" % i, [])
    await actions.produce(broker, "ledger", 0, b"<k>3", None, [])  # a tombstone
    async with TestClient(TestServer(build_app(broker))) as client:
        html = await (await client.get("/topics/ledger/0")).text()
        assert 'id="run-audit"' in html
        m = re.search(r'name="csrf_token" value="([^"]+)"', html)
        assert m is not None
        r = await client.post("/topics/ledger/audit", data={"csrf_token": "forged"}, allow_redirects=False)
        assert r.status == 403  # CSRF
        r = await client.post("/topics/ledger/audit", data={"csrf_token": m.group(1)}, allow_redirects=False)
        assert r.status == 303 and r.headers["Location"] == "/topics/ledger/audit"
        html = await (await client.get("/topics/ledger/audit")).text()
        assert 'id="audit-running"' in html and 'http-equiv="refresh"' in html
        r = await client.post("/topics/ledger/audit", data={"csrf_token": m.group(1)}, allow_redirects=False)
        assert r.status == 409 and "one runs at a time" in await r.text()
        started = time.monotonic()
        while 'data-state="running"' in html:
            assert time.monotonic() - started < 240, "the audit did not finish within 240 s"
            await asyncio.sleep(0.5)  # the page's own refresh interval, polled
            html = await (await client.get("/topics/ledger/audit")).text()
        assert 'id="audit-done"' in html, html
        assert 'http-equiv="refresh"' not in html
        r = await client.get("/topics/ledger/audit/report")
        assert r.status == 200 and r.content_type == "text/html"
        assert r.headers["Content-Security-Policy"].startswith("sandbox")
        report = await r.text()
        assert "ledger" in report and "<svg" in report
        r = await client.get("/topics/ledger/audit/report?download=1")
        assert r.headers["Content-Disposition"] == 'attachment; filename="audit-ledger.html"'
    # The broker carried on: the audit read its live log dir read-only.
    assert "Produced" in await actions.produce(broker, "ledger", 0, b"k", b"after", [])
