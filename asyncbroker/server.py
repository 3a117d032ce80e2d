"""The broker process: uvloop, the listeners, signal handling, orderly shutdown.

Entry points (the CLI's `serve` starts a KafkaServer as `run` does, beside its console and metrics):

    run(config) -> int        blocking; installs uvloop; returns the exit code
    KafkaServer(config)       `await start()` / `await stop()` inside a running loop

Shutdown on SIGTERM/SIGINT follows Kafka's controlled shutdown on one node:
stop accepting, let every connection answer the requests it already
received (parked fetches answer at once), then LogManager.shutdown flushes,
writes the checkpoints and the clean-shutdown marker. After a SIGKILL the
next start finds no marker and storage recovers the unflushed segments.

`python -m asyncbroker.server --override key=value ...` starts a broker
without the CLI (config file with `--config`).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import resource
import signal
import socket
import ssl
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from storage.config_def import parse_host_counts
from wire import framing

from asyncbroker.broker import Broker
from asyncbroker.config import Endpoint, KafkaConfig
from asyncbroker.connection import READ_AHEAD_BYTES, KafkaConnection
from asyncbroker.connection_quotas import ConnectionQuotas
from asyncbroker.metrics import METRICS
from asyncbroker.request_channel import RequestChannel

if TYPE_CHECKING:
    from asyncbroker.jwks_token_validator import JwksTokenValidator
    from asyncbroker.scram_credentials import ScramCredential

log = logging.getLogger("asyncbroker.server")

RELEASE_BUFFERS_AFTER_S = 5.0
"""A broker that owns its process and received less than a connection's read-ahead in this long
hands the freed receive buffers malloc keeps for it back to the kernel."""

LOG_FORMAT = "[%(asctime)s] %(levelname)s %(message)s (%(name)s)"


def raise_open_files_limit() -> tuple[int, int] | None:
    """Raise the process's soft limit on open files (RLIMIT_NOFILE) to its hard limit, as the
    JVM does for Kafka (HotSpot's MaxFDLimit, on by default).

    Each partition keeps its active segment's files open and each client a socket, while
    shells and service managers often start programs with a soft limit of 1024 under a far
    higher hard one. Left there, a few hundred partitions took the log dir offline with
    EMFILE where Kafka, started the same way, carries on. Returns (before, after), or None
    when the soft limit already was the hard one or the kernel refused to raise it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == hard:
        return None
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError) as exc:  # e.g. an unlimited hard limit the kernel will not grant
        log.warning("Could not raise the open files limit (RLIMIT_NOFILE) from %d to %d: %s", soft, hard, exc)
        return None
    return soft, hard


class KafkaServer:
    """One broker: storage + listeners. Start and stop inside a running event loop.

    Each served listener gets its own Acceptor (as Kafka's SocketServer has one per
    endpoint): a task that accepts while ConnectionQuotas allows (max.connections,
    max.connections.per.ip) and hands each socket to a KafkaConnection, through TLS on an
    SSL listener (asyncbroker.ssl_factory). Connections know their listener, so Metadata
    answers with that listener's address."""

    def __init__(self, config: KafkaConfig, *,
                 scram_users: Sequence[tuple[str, str, ScramCredential]] = (), owns_process: bool = False) -> None:
        self.config = config
        # The broker is its process's only tenant (the CLI, `python -m asyncbroker.server`), so
        # it sets process-wide things: how much freed memory malloc keeps for receive buffers,
        # and the open files limit.
        self.owns_process = owns_process
        # (user, mechanism, credential) to add before serving (`serve --add-scram`).
        self.scram_users = list(scram_users)
        self.broker: Broker | None = None
        self._sockets: list[socket.socket] = []
        self._acceptors: list[asyncio.Task[None]] = []
        self.quotas: ConnectionQuotas | None = None
        # listener name -> (host, port) bound
        self.bound: dict[str, tuple[str, int]] = {}
        self._connections: set[KafkaConnection] = set()
        # Every listener's connections take their turns in one queue (Kafka's RequestChannel).
        self._request_channel: RequestChannel | None = None
        self.bound_host: str = ""
        self.bound_port: int = 0
        self._reaper: asyncio.Task[None] | None = None
        self._buffer_releaser: asyncio.Task[None] | None = None
        self._token_validators: list[JwksTokenValidator] = []

    async def start(self) -> Broker:
        """Build and start the broker, then listen; returns the started broker."""
        started = time.monotonic()
        log.info("[KafkaServer id=%d] starting", self.config.node_id)
        # TLS stores are read before any log directory is touched: a bad one stops startup
        # with a message naming the key.
        listeners = [(e, self._ssl_context(e)) for e in self.config.served_listeners()]
        for e, _ in listeners:
            self._check_sasl(e)
        self.quotas = quotas = ConnectionQuotas(*self._quota_limits(), self.config.protected_listener())
        if self.owns_process and not framing.retain_receive_buffers(READ_AHEAD_BYTES):
            log.debug("The C library does not say how much freed memory to keep; receive buffers are its choice")
        if self.owns_process and (raised := raise_open_files_limit()) is not None:
            log.info("Raised the open files limit (RLIMIT_NOFILE) from %d to %d, its hard limit", *raised)
        broker = Broker(self.config)
        self.broker = broker
        await broker.startup()
        if self.scram_users:
            # Stored before the first connection is accepted, so no client races them.
            await broker.run_blocking(broker.scram_credentials.apply,
                                      {(u, m): c for u, m, c in self.scram_users}, set())
            log.info("Added SCRAM credentials for %s", ", ".join(f"{u} ({m})" for u, m, _ in self.scram_users))
        await self._start_token_validators(broker)
        quotas.client_quotas = broker.quota_managers.quotas
        quotas.window_seconds, quotas.num_samples = self.config.quota_window_size_seconds, self.config.quota_window_num
        # The limits in force: dynamic values set before the last shutdown too, and any change.
        quotas.reconfigure(*self._quota_limits())
        broker.config_change_listeners.append(lambda: quotas.reconfigure(*self._quota_limits()))
        loop = asyncio.get_running_loop()
        self._request_channel = RequestChannel(loop)
        for endpoint, context in listeners:
            name = endpoint.listener_name
            log.info("Created data-plane acceptor and processors for endpoint : ListenerName(%s)", name)
            sock = _listen(endpoint.host or "0.0.0.0", endpoint.port, self.config.socket_receive_buffer_bytes,
                           self.config.socket_listen_backlog_size)
            self._sockets.append(sock)
            acceptor = Acceptor(name, sock, context, quotas, self._connection_factory(broker, name),
                                send_buffer_bytes=self.config.socket_send_buffer_bytes)
            self._acceptors.append(loop.create_task(acceptor.run(), name=f"acceptor-{name}"))
            host, port = sock.getsockname()[:2]
            self.bound[name] = (host, port)
            if broker.advertised_for(name)[1] == 0:
                broker.set_advertised_port(port, name)
            log.info("Awaiting socket connections on %s:%d.", host, port)
        self.bound_host, self.bound_port = next(iter(self.bound.values()))
        self._reaper = loop.create_task(self._close_idle_connections())
        if self.owns_process:
            self._buffer_releaser = loop.create_task(self._release_buffers_when_idle())
        # Everything loaded so far (modules, schemas, logs) lives for the whole run:
        # keep it out of the cyclic GC's scans so collections stay short (p99 latency).
        gc.freeze()
        log.info(
            "[KafkaServer id=%d] started in %.0f ms (cluster id %s, advertised %s:%d)",
            self.config.node_id, (time.monotonic() - started) * 1000,
            broker.cluster_id, broker.advertised_host, broker.advertised_port,
        )
        return broker

    async def _start_token_validators(self, broker: Broker) -> None:
        """One JWKS validator for the listeners whose OAUTHBEARER handler checks signed tokens,
        its keys fetched before the first connection."""
        from asyncbroker.config import OAUTHBEARER_JWKS_HANDLER

        listeners = [key.split(" ")[0] for key, handler in self.config.listener_callback_handlers.items()
                     if handler == OAUTHBEARER_JWKS_HANDLER]
        if not listeners:
            return
        from asyncbroker.jwks_token_validator import JwksTokenValidator  # only such listeners need PyJWT

        validator = JwksTokenValidator(self.config)
        await validator.start(broker.run_blocking)
        self._token_validators.append(validator)
        for name in listeners:
            broker.jwks_validators[name] = validator

    def _quota_limits(self) -> tuple[int, int, dict[str, int], int, dict[str, dict[str, int]]]:
        """The connection limits in force, as ConnectionQuotas takes them."""
        c = self.config
        # The overrides were validated (HostCounts) when they were set.
        return (int(c.effective("max.connections")), int(c.effective("max.connections.per.ip")),
                parse_host_counts(str(c.effective("max.connections.per.ip.overrides"))),
                int(c.effective("max.connection.creation.rate")), c.effective_listener_limits())

    def _connection_factory(self, broker: Broker, listener_name: str) -> Callable[[str], KafkaConnection]:
        """KafkaConnections of one listener; each frees its ConnectionQuotas slot as it closes."""
        quotas, connections = self.quotas, self._connections
        assert quotas is not None

        channel = self._request_channel
        assert channel is not None

        def make(ip: str) -> KafkaConnection:
            return KafkaConnection(broker, broker.handlers, connections, request_channel=channel,
                                   listener_name=listener_name, on_close=lambda: quotas.dec(listener_name, ip))

        return make

    def _check_sasl(self, endpoint: Endpoint) -> None:
        """A SASL listener offering PLAIN needs its users (its JAAS config), as Kafka does."""
        if self.config.security_protocol(endpoint.listener_name) in ("SASL_PLAINTEXT", "SASL_SSL") \
                and "PLAIN" in self.config.sasl_enabled_mechanisms:
            from asyncbroker.sasl_authenticator import plain_users

            plain_users(self.config, endpoint.listener_name)

    def _ssl_context(self, endpoint: Endpoint) -> ssl.SSLContext | None:
        if self.config.security_protocol(endpoint.listener_name) not in ("SSL", "SASL_SSL"):
            return None
        from asyncbroker.ssl_factory import SslFactory  # imported only when a listener needs TLS

        return SslFactory(self.config).create_server_context()

    async def _close_idle_connections(self) -> None:
        """Kafka's Selector idle expiry, checked at a tenth of connections.max.idle.ms."""
        max_idle_s = self.config.connections_max_idle_ms / 1000
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(max(0.1, max_idle_s / 10))
            now = loop.time()
            for conn in list(self._connections):
                conn.close_if_idle(now, max_idle_s)

    async def _release_buffers_when_idle(self) -> None:
        """Once less than a connection's read-ahead has arrived in RELEASE_BUFFERS_AFTER_S, after
        at least that much since the last release, the freed receive buffers malloc keeps go back
        to the kernel: a broker idle after a load returns to its idle memory, one under load keeps
        reusing them, and one that stays idle is not trimmed again and again."""
        received = released = METRICS.received_bytes
        while True:
            await asyncio.sleep(RELEASE_BUFFERS_AFTER_S)
            now = METRICS.received_bytes
            if now - received < READ_AHEAD_BYTES and now - released >= READ_AHEAD_BYTES:
                framing.release_receive_buffers()
                released = now
            received = now

    async def stop(self) -> None:
        """Stop accepting, answer in-flight requests, then shut storage down cleanly."""
        log.info("[KafkaServer id=%d] shutting down", self.config.node_id)
        for task in (self._reaper, self._buffer_releaser):
            if task is not None:
                task.cancel()
        for validator in self._token_validators:
            validator.stop()
        for task in self._acceptors:
            task.cancel()
        for sock in self._sockets:
            sock.close()
        broker = self.broker
        if broker is not None:
            broker.fetch_waiters.close()  # parked fetches answer now
            broker.close_group_requests()  # parked JoinGroup/SyncGroup answer NOT_COORDINATOR
        conns = list(self._connections)
        if conns:
            done, pending = await asyncio.wait(
                [asyncio.ensure_future(c.close_gracefully()) for c in conns], timeout=10
            )
            if pending:
                log.warning("%d connection(s) did not finish in time; closing them", len(pending))
                for task in pending:
                    task.cancel()
        if broker is not None:
            await broker.shutdown()
        log.info("[KafkaServer id=%d] shut down completed", self.config.node_id)


USE_DEFAULT_BUFFER_SIZE = -1
"""socket.send.buffer.bytes / socket.receive.buffer.bytes: leave the buffer to the OS."""


def _listen(host: str, port: int, receive_buffer_bytes: int, backlog: int) -> socket.socket:
    """A non-blocking listening socket (SO_REUSEADDR, socket.listen.backlog.size) on host:port.

    socket.receive.buffer.bytes is SO_RCVBUF of the listening socket, set before it binds, as
    Kafka's SocketServer sets it: accepted sockets inherit it, and the TCP window scale each
    connection agrees on follows from it."""
    # An ASCII host goes to getaddrinfo as bytes: a str is always run through the "idna" codec,
    # whose import (stringprep, unicodedata) is half a MB of a broker's idle memory.
    name: str | bytes = host.encode("ascii") if host.isascii() else host
    family = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)  # as socket.create_server
        if receive_buffer_bytes != USE_DEFAULT_BUFFER_SIZE:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer_bytes)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise OSError(exc.errno, f"{exc.strerror} (while attempting to bind on address {(host, port)!r})") from None
        sock.listen(backlog)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


class Acceptor:
    """Accepts on one listener's socket while the quotas allow and starts its connections.

    A TLS handshake runs in a task of its own, so a client that never finishes one holds a
    slot (until ssl handshake times out) but never the acceptor."""

    def __init__(self, listener_name: str, sock: socket.socket, context: ssl.SSLContext | None,
                 quotas: ConnectionQuotas, protocol: Callable[[str], KafkaConnection], *,
                 send_buffer_bytes: int) -> None:
        self.listener_name = listener_name
        self.sock = sock
        self.context = context
        self.quotas = quotas
        self.protocol = protocol
        self.send_buffer_bytes = send_buffer_bytes  # socket.send.buffer.bytes
        self._starting: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self.quotas.wait_for_slot(self.listener_name)
            try:
                conn, address = await loop.sock_accept(self.sock)
            except OSError as exc:  # EMFILE and the like: Kafka's acceptor logs and goes on
                log.error("Error while accepting connection on %s: %s", self.listener_name, exc)
                await asyncio.sleep(0.1)  # the cause (too many open files) needs time to clear
                continue
            try:
                wait_ms = self.quotas.creation_throttle_ms(self.listener_name)
                if wait_ms:
                    # Over max.connection.creation.rate: accept nothing more until the wait is
                    # over, then serve this connection (the others wait in the backlog).
                    await asyncio.sleep(wait_ms / 1000)
                # Again, as Kafka checks after accepting: another listener's acceptor may have
                # taken the last slot while this one waited in accept.
                await self.quotas.wait_for_slot(self.listener_name)
            except BaseException:
                conn.close()  # the broker stopping: the held connection goes with it
                raise
            ip = str(address[0])
            throttle_ms = self.quotas.connection_throttle_ms(ip)
            if throttle_ms:
                self.quotas.unrecord_creation(self.listener_name)
                # Not served, not counted; closed when the throttle ends (Kafka's delayed close).
                loop.call_later(throttle_ms / 1000, conn.close)
                continue
            if not self.quotas.inc(self.listener_name, ip):
                conn.close()
                continue
            task = loop.create_task(self._start(conn, ip))
            self._starting.add(task)
            task.add_done_callback(self._starting.discard)

    async def _start(self, conn: socket.socket, ip: str) -> None:
        loop = asyncio.get_running_loop()
        try:
            # Kafka's SocketServer: no Nagle, TCP keepalive, and SO_SNDBUF from socket.send.buffer.bytes.
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            if self.send_buffer_bytes != USE_DEFAULT_BUFFER_SIZE:
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.send_buffer_bytes)
            await loop.connect_accepted_socket(lambda: self.protocol(ip), conn, ssl=self.context)
        except (OSError, ssl.SSLError, asyncio.TimeoutError) as exc:
            # The connection never started (a failed TLS handshake): its slot is free again.
            log.debug("Connection from /%s on %s did not start: %s", ip, self.listener_name, exc)
            conn.close()
            self.quotas.dec(self.listener_name, ip)


async def serve(config: KafkaConfig) -> int:
    """Run until SIGTERM/SIGINT; return the process exit code."""
    server = KafkaServer(config, owns_process=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await server.start()
    except OSError as exc:
        log.error("Fatal error during startup: %s", exc)
        await _shutdown_after_failed_start(server)
        return 1
    except Exception:
        log.exception("Fatal error during startup")
        await _shutdown_after_failed_start(server)
        return 1
    await stop.wait()
    await server.stop()
    return 0


async def _shutdown_after_failed_start(server: KafkaServer) -> None:
    if server.broker is not None:
        try:
            await server.broker.shutdown()
        except Exception:  # noqa: BLE001 - already failing; report the first error
            log.exception("Error while shutting down after a failed start")


def configure_logging(level: str = "INFO") -> None:
    logging.basicConfig(level=getattr(logging, level.upper(), logging.INFO), format=LOG_FORMAT, stream=sys.stderr)


def run(config: KafkaConfig) -> int:
    """Blocking entry point: run the broker on uvloop until a signal stops it."""
    import uvloop

    return uvloop.run(serve(config))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m asyncbroker.server", description="Run the broker.")
    parser.add_argument("--config", help="server.properties file")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)
    configure_logging(args.log_level)
    config = KafkaConfig.load(args.config, args.override)
    return run(config)


if __name__ == "__main__":
    sys.exit(main())
