"""max.connections, max.connections.per.ip (issue 20's limits) and max.connection.creation.rate,
over raw sockets: a connection over the per-address limit is closed at once; at the broker-wide
limit the broker stops accepting, and the waiting client is served as soon as a slot frees; over
the creation rate the acceptor waits before serving the next connection, as Kafka does."""

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


def served_in_turn(port: int, count: int) -> list[float]:
    """Seconds from connecting to the ApiVersions answer, for `count` connections made one
    after another, each closed once answered; each must be served."""
    waits = []
    for _ in range(count):
        started = time.monotonic()
        s = connect(port)
        try:
            assert answered(s, 10) is True
        finally:
            s.close()
        waits.append(time.monotonic() - started)
    return waits


def test_connection_creation_rate_makes_the_acceptor_wait(sockets: list[socket.socket]) -> None:
    """max.connection.creation.rate=2, set at runtime: Kafka's rate over 11 one-second samples
    lets about 20 connections through at once; after that the acceptor waits (up to one
    window, 1 s) before serving each, and serves every one."""
    from jvm.kafka_jvm import run_tool

    with BrokerProcess([]) as b:
        result = run_tool("org.apache.kafka.tools.ConfigCommand", [
            "--bootstrap-server", b.bootstrap, "--entity-type", "brokers", "--entity-default", "--alter",
            "--add-config", "max.connection.creation.rate=2"])
        assert result.returncode == 0, result.stderr[-2000:]
        waits = served_in_turn(b.port, 26)
        assert sum(w >= 0.4 for w in waits[-5:]) >= 3, waits  # the rate is over 2/s from the 21st on


def test_the_inter_broker_listener_counts_only_its_own_connections(sockets: list[socket.socket]) -> None:
    """With two listeners, the inter-broker one (PLAINTEXT, from security.inter.broker.protocol)
    is held to max.connections and max.connection.creation.rate over its own connections only,
    the other one over its own and over both together: clients cannot lock the inter-broker
    listener out (Kafka's protected listener; each probe below was made on Kafka 4.4 first)."""
    listeners = ["listeners=PLAINTEXT://127.0.0.1:0,CLIENT://127.0.0.1:0",
                 "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CLIENT:PLAINTEXT"]
    with BrokerProcess(listeners + ["max.connections=3"]) as b:
        inter_broker, client = b.listener_ports["PLAINTEXT"], b.listener_ports["CLIENT"]
        sockets += [connect(client) for _ in range(3)]
        assert [answered(s, 10) for s in sockets] == [True, True, True]
        sockets.append(connect(inter_broker))
        assert answered(sockets[-1], 10) is True  # over the total, not over its own
        sockets.append(connect(client))
        assert answered(sockets[-1], 1.0) is None  # over the total: waits
        more = [connect(inter_broker) for _ in range(3)]
        sockets += more
        assert [answered(s, 10) for s in more[:2]] == [True, True]
        assert answered(more[2], 1.0) is None  # its fourth: over its own
    for s in sockets:
        s.close()
    sockets.clear()
    with BrokerProcess(listeners + ["max.connection.creation.rate=1"]) as b:
        inter_broker, client = b.listener_ports["PLAINTEXT"], b.listener_ports["CLIENT"]
        waits = served_in_turn(client, 15)
        assert sum(w >= 0.4 for w in waits[-4:]) >= 3, waits  # over 1/s from the 11th on
        # The client listener's burst is not the inter-broker listener's: 5 more there are
        # within its own rate (held to it, each would wait about a second).
        waits = served_in_turn(inter_broker, 5)
        assert sum(waits) < 2, waits


def test_a_listener_of_its_own_limits(sockets: list[socket.socket]) -> None:
    """listener.name.<l>.max.connections and .max.connection.creation.rate hold that listener
    alone (as measured on Kafka 4.4 with its SASL_PLAINTEXT listener beside PLAINTEXT)."""
    listeners = ["listeners=PLAINTEXT://127.0.0.1:0,CLIENT://127.0.0.1:0",
                 "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CLIENT:PLAINTEXT"]
    with BrokerProcess(listeners + ["listener.name.client.max.connections=2",
                                    "listener.name.client.max.connection.creation.rate=1"]) as b:
        inter_broker, client = b.listener_ports["PLAINTEXT"], b.listener_ports["CLIENT"]
        sockets += [connect(client) for _ in range(3)]
        assert [answered(s, 10) for s in sockets[:2]] == [True, True]
        assert answered(sockets[2], 1.0) is None  # its third: over its own max.connections
        others = [connect(inter_broker) for _ in range(4)]
        sockets += others
        assert [answered(s, 10) for s in others] == [True, True, True, True]
        for s in sockets:
            s.close()
        sockets.clear()
        # 3 connections so far on CLIENT, at 1/s: from about the 11th on each waits.
        waits = served_in_turn(client, 12)  # one at a time, within its max.connections
        assert sum(w >= 0.4 for w in waits[-3:]) >= 2, waits


def test_a_listeners_limits_change_at_runtime(sockets: list[socket.socket]) -> None:
    """kafka-configs.sh sets a listener's own max.connections at runtime, cluster-wide and on
    this broker (which wins), as Kafka 4.4 takes it: it holds that listener alone at once,
    survives a restart, and deleting it hands the listener back to the cluster-wide value."""
    from jvm.kafka_jvm import run_tool

    def configs(entity: list[str], change: list[str]) -> None:
        result = run_tool("org.apache.kafka.tools.ConfigCommand", [
            "--bootstrap-server", f"127.0.0.1:{b.listener_ports['PLAINTEXT']}", "--entity-type", "brokers", *entity,
            "--alter", *change])
        assert result.returncode == 0, result.stderr[-2000:]

    def outcome(port: int, count: int) -> list[bool | None]:
        """`count` new connections to `port`, the last given a second (not accepted: None)."""
        for s in sockets:
            s.close()
        sockets.clear()
        sockets.extend(connect(port) for _ in range(count))
        return [answered(s, 10) for s in sockets[:-1]] + [answered(sockets[-1], 1.0)]

    def until(port: int, count: int, expected: list[bool | None]) -> None:
        deadline = time.monotonic() + 15  # the tool's own connection closes as it exits
        while (got := outcome(port, count)) != expected:
            assert time.monotonic() < deadline, got

    listeners = ["listeners=PLAINTEXT://127.0.0.1:0,CLIENT://127.0.0.1:0",
                 "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CLIENT:PLAINTEXT"]
    with BrokerProcess(listeners) as b:
        configs(["--entity-default"], ["--add-config", "listener.name.client.max.connections=3"])
        configs(["--entity-name", "1"], ["--add-config", "listener.name.client.max.connections=2"])
        until(b.listener_ports["CLIENT"], 3, [True, True, None])
        assert outcome(b.listener_ports["PLAINTEXT"], 4) == [True, True, True, True]  # another listener: free
        for s in sockets:
            s.close()
        sockets.clear()
        b.restart()
        assert outcome(b.listener_ports["CLIENT"], 3) == [True, True, None]  # the persisted values
        configs(["--entity-name", "1"], ["--delete-config", "listener.name.client.max.connections"])
        until(b.listener_ports["CLIENT"], 4, [True, True, True, None])


def test_a_bad_listener_limit_stops_startup() -> None:
    b = BrokerProcess(["listener.name.plaintext.max.connections=-1"])
    with pytest.raises(Exception) as err:
        b.start()
    assert "Invalid value -1 for configuration listener.name.plaintext.max.connections" in str(err.value)
    b.cleanup()
