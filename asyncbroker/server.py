"""The broker process: uvloop, the listeners, signal handling, orderly shutdown.

Entry points (the CLI's `serve` calls `run`):

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
import signal
import ssl
import sys
import time
from collections.abc import Sequence

from asyncbroker.broker import Broker
from asyncbroker.config import Endpoint, KafkaConfig
from asyncbroker.connection import KafkaConnection

log = logging.getLogger("asyncbroker.server")

LOG_FORMAT = "[%(asctime)s] %(levelname)s %(message)s (%(name)s)"


class KafkaServer:
    """One broker: storage + listeners. Start and stop inside a running event loop.

    Each served listener gets its own acceptor (as Kafka's SocketServer has one per
    endpoint); an SSL listener's wraps its connections in TLS (asyncbroker.ssl_factory).
    Connections know their listener, so Metadata answers with that listener's address."""

    def __init__(self, config: KafkaConfig) -> None:
        self.config = config
        self.broker: Broker | None = None
        self._servers: list[asyncio.AbstractServer] = []
        # listener name -> (host, port) bound
        self.bound: dict[str, tuple[str, int]] = {}
        self._connections: set[KafkaConnection] = set()
        self.bound_host: str = ""
        self.bound_port: int = 0
        self._reaper: asyncio.Task[None] | None = None

    async def start(self) -> Broker:
        """Build and start the broker, then listen; returns the started broker."""
        started = time.monotonic()
        log.info("[KafkaServer id=%d] starting", self.config.node_id)
        # TLS stores are read before any log directory is touched: a bad one stops startup
        # with a message naming the key.
        listeners = [(e, self._ssl_context(e)) for e in self.config.served_listeners()]
        broker = Broker(self.config)
        self.broker = broker
        await broker.startup()
        loop = asyncio.get_running_loop()
        registry = broker.handlers
        connections = self._connections
        for endpoint, context in listeners:
            name = endpoint.listener_name

            def connection(name: str = name) -> KafkaConnection:
                return KafkaConnection(broker, registry, connections, listener_name=name)

            log.info("Created data-plane acceptor and processors for endpoint : ListenerName(%s)", name)
            server = await loop.create_server(connection, host=endpoint.host or "0.0.0.0", port=endpoint.port,
                                              reuse_address=True, backlog=1024, ssl=context)
            self._servers.append(server)
            host, port = server.sockets[0].getsockname()[:2]
            self.bound[name] = (host, port)
            if broker.advertised_for(name)[1] == 0:
                broker.set_advertised_port(port, name)
            log.info("Awaiting socket connections on %s:%d.", host, port)
        self.bound_host, self.bound_port = next(iter(self.bound.values()))
        self._reaper = loop.create_task(self._close_idle_connections())
        # Everything loaded so far (modules, schemas, logs) lives for the whole run:
        # keep it out of the cyclic GC's scans so collections stay short (p99 latency).
        gc.freeze()
        log.info(
            "[KafkaServer id=%d] started in %.0f ms (cluster id %s, advertised %s:%d)",
            self.config.node_id, (time.monotonic() - started) * 1000,
            broker.cluster_id, broker.advertised_host, broker.advertised_port,
        )
        return broker

    def _ssl_context(self, endpoint: Endpoint) -> ssl.SSLContext | None:
        if self.config.security_protocol(endpoint.listener_name) != "SSL":
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

    async def stop(self) -> None:
        """Stop accepting, answer in-flight requests, then shut storage down cleanly."""
        log.info("[KafkaServer id=%d] shutting down", self.config.node_id)
        if self._reaper is not None:
            self._reaper.cancel()
        for server in self._servers:
            server.close()
        broker = self.broker
        if broker is not None:
            broker.fetch_waiters.close()  # parked fetches answer now
            if broker.started:
                broker.group_coordinator.close()  # parked JoinGroup/SyncGroup answer NOT_COORDINATOR
        conns = list(self._connections)
        if conns:
            done, pending = await asyncio.wait(
                [asyncio.ensure_future(c.close_gracefully()) for c in conns], timeout=10
            )
            if pending:
                log.warning("%d connection(s) did not finish in time; closing them", len(pending))
                for task in pending:
                    task.cancel()
        for server in self._servers:
            try:
                await asyncio.wait_for(server.wait_closed(), 1)
            except TimeoutError:
                pass
        if broker is not None:
            await broker.shutdown()
        log.info("[KafkaServer id=%d] shut down completed", self.config.node_id)


async def serve(config: KafkaConfig) -> int:
    """Run until SIGTERM/SIGINT; return the process exit code."""
    server = KafkaServer(config)
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
