"""A connection waiting for its turn in the request channel: its requests are still answered
when it closes gracefully (broker shutdown) or its client half-closes, and an idle check leaves it
alone. A real Broker, a real uvloop transport over a socket pair, a channel that gives no turns."""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kio.schema.api_versions.v3 import request as av3

from asyncbroker.broker import Broker
from asyncbroker.connection import KafkaConnection
from asyncbroker.request_channel import RequestChannel
from console_testlib import started_broker
from wire.headers import encode_request_header
from wire.messages import encode_request

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    async with started_broker(tmp_path) as b:
        yield b


def _api_versions(correlation_id: int) -> bytes:
    request = av3.ApiVersionsRequest(client_software_name="t", client_software_version="1")
    body = encode_request_header(request.__api_key__, request.__version__, correlation_id, "turns") \
        + encode_request(request)
    return struct.pack(">i", len(body)) + body


async def _waiting_connection(broker: Broker) -> tuple[KafkaConnection, socket.socket, RequestChannel]:
    """A connection whose channel is full (no turns): its request is read and waits."""
    loop = asyncio.get_running_loop()
    channel = RequestChannel(loop, max_starts_per_turn=0)
    ours, theirs = socket.socketpair()
    theirs.setblocking(False)
    _transport, conn = await loop.connect_accepted_socket(
        lambda: KafkaConnection(broker, broker.handlers, set(), request_channel=channel), ours)
    await loop.sock_sendall(theirs, _api_versions(7))
    for _ in range(200):  # until the broker has read it: bounded, on a condition
        if channel.waiting:
            break
        await asyncio.sleep(0.005)
    assert channel.waiting == 1
    return conn, theirs, channel


async def _answer_then_eof(sock: socket.socket) -> tuple[int, bytes]:
    loop = asyncio.get_running_loop()
    data = b""
    while True:
        chunk = await asyncio.wait_for(loop.sock_recv(sock, 65536), 5)
        if not chunk:
            break
        data += chunk
    size = struct.unpack_from(">i", data)[0]
    return struct.unpack_from(">i", data, 4)[0], data[4 + size:]


async def test_a_graceful_close_answers_a_connection_still_waiting_for_its_turn(broker: Broker) -> None:
    conn, theirs, _channel = await _waiting_connection(broker)
    assert not conn.close_if_idle(asyncio.get_running_loop().time() + 3600, 1.0)  # busy, not idle
    await conn.close_gracefully()
    correlation_id, rest = await _answer_then_eof(theirs)
    assert (correlation_id, rest) == (7, b"")
    theirs.close()


async def test_a_half_close_keeps_a_waiting_connection_open_for_its_answer(broker: Broker) -> None:
    conn, theirs, _channel = await _waiting_connection(broker)
    theirs.shutdown(socket.SHUT_WR)
    for _ in range(200):  # until the EOF has reached the connection
        if conn._closing:
            break
        await asyncio.sleep(0.005)
    assert conn._closing and not conn._closed  # half-closed, still open for the answer
    await conn.close_gracefully()  # the broker's shutdown: the turn never came
    correlation_id, rest = await _answer_then_eof(theirs)
    assert (correlation_id, rest) == (7, b"")
    theirs.close()
