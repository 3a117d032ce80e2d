"""max.connections and max.connections.per.ip (issue 20's limits), over raw sockets: a
connection over the per-address limit is closed at once; at the broker-wide limit the broker
stops accepting, and the waiting client is served as soon as a slot frees, as Kafka does."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator

import pytest

from asyncbroker.testing import BrokerProcess

pytestmark = pytest.mark.timeout(120)

# ApiVersions v0: header v1 (api key 18, version 0, correlation id 9, client id "t"), no body.
API_VERSIONS = struct.pack(">hhih", 18, 0, 9, 1) + b"t"


def connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(struct.pack(">i", len(API_VERSIONS)) + API_VERSIONS)
    return s


def answered(s: socket.socket, timeout: float) -> bool | None:
    """True: an ApiVersions answer came; False: the broker closed the connection; None: nothing
    within `timeout` (still waiting)."""
    s.settimeout(timeout)
    try:
        head = s.recv(8)
    except TimeoutError:
        return None
    except ConnectionResetError:
        return False
    return len(head) == 8 and struct.unpack(">i", head[4:])[0] == 9 if head else False


@pytest.fixture
def sockets() -> Iterator[list[socket.socket]]:
    opened: list[socket.socket] = []
    yield opened
    for s in opened:
        s.close()


def test_per_address_limit_and_its_override(sockets: list[socket.socket]) -> None:
    with BrokerProcess(["max.connections.per.ip=2"]) as b:
        sockets += [connect(b.port) for _ in range(3)]
        assert [answered(s, 10) for s in sockets] == [True, True, False]
        sockets[0].close()
        deadline = time.monotonic() + 10
        while True:  # the closed slot is freed when the broker sees the close
            s = connect(b.port)
            sockets.append(s)
            if answered(s, 10):
                break
            assert time.monotonic() < deadline, "no slot freed after a close"
        assert "Rejected connection from /127.0.0.1, address already has the configured maximum of 2" in b.output()
    with BrokerProcess(["max.connections.per.ip=1", "max.connections.per.ip.overrides=127.0.0.1:3"]) as b:
        more = [connect(b.port) for _ in range(4)]
        sockets += more
        assert [answered(s, 10) for s in more] == [True, True, True, False]


def test_broker_wide_limit_makes_clients_wait(sockets: list[socket.socket]) -> None:
    with BrokerProcess(["max.connections=2"]) as b:
        sockets += [connect(b.port) for _ in range(3)]
        assert [answered(s, 10) for s in sockets[:2]] == [True, True]
        assert answered(sockets[2], 1.0) is None  # not accepted yet, and not dropped
        sockets[0].close()
        assert answered(sockets[2], 10) is True
        assert b.returncode is None


def test_bad_override_stops_startup() -> None:
    b = BrokerProcess(["max.connections.per.ip.overrides=127.0.0.1"])
    with pytest.raises(Exception) as err:
        b.start()
    assert "max.connections.per.ip.overrides" in str(err.value)
    b.cleanup()


def test_limits_change_at_runtime(sockets: list[socket.socket]) -> None:
    """kafka-configs.sh --alter on max.connections.per.ip applies to new connections at once
    (the open ones stay, as on Kafka) and survives a restart."""
    from jvm.kafka_jvm import run_tool

    with BrokerProcess([]) as b:
        result = run_tool("org.apache.kafka.tools.ConfigCommand", [
            "--bootstrap-server", b.bootstrap, "--entity-type", "brokers", "--entity-name", "1", "--alter",
            "--add-config", "max.connections.per.ip=3"])
        assert result.returncode == 0, result.stderr[-2000:]
        deadline = time.monotonic() + 10  # the tool's own connection closes as it exits
        while True:
            sockets += [connect(b.port) for _ in range(4)]
            outcome = [answered(s, 10) for s in sockets]
            if outcome == [True, True, True, False]:
                break
            assert time.monotonic() < deadline, outcome
            for s in sockets:
                s.close()
            sockets.clear()
        for s in sockets:
            s.close()
        sockets.clear()
        b.restart()
        sockets += [connect(b.port) for _ in range(4)]
        assert [answered(s, 10) for s in sockets] == [True, True, True, False]  # the persisted dynamic value
