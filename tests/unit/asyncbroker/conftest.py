"""An aiohttp test client of the web console over whichever `broker` fixture a test module
defines (console_testlib.started_broker with the settings it needs)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from asyncbroker.broker import Broker


@pytest.fixture
async def client(broker: Broker) -> AsyncIterator[TestClient[web.Request, web.Application]]:
    from asyncbroker.console.server import build_app

    async with TestClient(TestServer(build_app(broker))) as c:
        yield c
