"""Prometheus metrics of the broker, and the tiny HTTP endpoint that serves them.

Usage from the service (CORE's connection code and broker):

    from asyncbroker.metrics import METRICS

    METRICS.request(header.api_key)       # once per request handled: the API key (int) or a
                                          # name; keys are labelled with Kafka's names
                                          # ("Produce", "CreateTopics", ...)
    METRICS.request_error(header.api_key) # a request answered with an error / whose handler raised
    METRICS.request_time(header.api_key, ns)  # its handling time (a fetch's wait included), in a
                                          # power-of-two histogram per API
    METRICS.bytes_in(len(frame) + 4)      # bytes read from clients
    METRICS.bytes_out(n)                  # bytes written to clients
    METRICS.connection_opened() / METRICS.connection_closed()
    METRICS.messages_in(topic, n)         # records appended by Produce
    METRICS.bind(broker)                  # gauges (topics, partitions, log size) read the
                                          # broker's LogManager when scraped
    server = await start_metrics_server("127.0.0.1", port)   # --metrics-port

The counters are plain ints in dicts, bumped on the event loop (a dict
lookup and an add: no lock, no prometheus object per request), and
prometheus_client is imported only when metrics are first rendered: its
import (HTTP server, WSGI, ...) cost ~45 ms of a 0.3 s startup. At scrape
time one collector turns the counters into metric families; gauges that
walk the logs are computed then too, never on the request path. One
process-wide `METRICS` with its own registry (not prometheus' global one)
so tests that start several brokers do not collide on names.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

from wire.messages import ApiKey

if TYPE_CHECKING:
    from cleaner.log_cleaner import LogCleaner
    from storage.log_manager import LogManager

    from asyncbroker.memory_pool import MemoryPool
    from asyncbroker.topics import TopicManager

log = logging.getLogger(__name__)


async def _cleaner_metrics(broker: ScrapedBroker) -> dict[str, Any]:
    return await (await broker.cleaner_ready()).metrics()


class FetchSessionCounts(Protocol):
    """What a scrape reads of the fetch session cache (asyncbroker.fetch_session)."""

    @property
    def sessions(self) -> int: ...
    @property
    def partitions_cached(self) -> int: ...
    @property
    def evictions(self) -> int: ...


class FetchSessions(Protocol):
    @property
    def cache(self) -> FetchSessionCounts: ...


class ScrapedBroker(Protocol):
    """What a scrape reads of the bound broker (the Broker is one): its logs and topics once
    started, and the cleaner's state through the loop it lives on."""

    @property
    def started(self) -> bool: ...
    @property
    def log_manager(self) -> LogManager: ...
    @property
    def topics(self) -> TopicManager: ...
    @property
    def cleaner(self) -> LogCleaner | None: ...
    @property
    def fetch_manager(self) -> FetchSessions: ...
    @property
    def loop(self) -> asyncio.AbstractEventLoop | None: ...
    @property
    def memory_pool(self) -> MemoryPool | None: ...
    async def cleaner_ready(self) -> LogCleaner: ...


def api_name(api: int | str) -> str:
    """Kafka's name of an API ("CreateTopics") from its key; names pass through."""
    if isinstance(api, str):
        return api
    try:
        key = ApiKey(int(api))
    except ValueError:
        return f"Unknown{int(api)}"
    return "".join(part.capitalize() for part in key.name.split("_"))


class _Collector:
    """A prometheus collector over the bound broker's state, computed per scrape (nothing is
    registered up front)."""

    def __init__(self, metrics: BrokerMetrics) -> None:
        self._metrics = metrics

    def describe(self) -> list[Any]:
        return []


class _LogCollector(_Collector):
    """Scrape-time gauges over the bound broker's logs (partitions, sizes, offsets)."""

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        broker = self._metrics.broker
        topics = GaugeMetricFamily("asyncbroker_topics", "Topics on this broker")
        partitions = GaugeMetricFamily("asyncbroker_partitions", "Partitions hosted on this broker")
        size = GaugeMetricFamily("asyncbroker_log_size_bytes", "Size of the partition logs on disk", labels=["topic"])
        segments = GaugeMetricFamily("asyncbroker_log_segments", "Number of log segments", labels=["topic"])
        end = GaugeMetricFamily("asyncbroker_log_end_offset_sum", "Sum of the log end offsets of a topic's partitions",
                                labels=["topic"])
        if broker is not None and broker.started:  # scraped from another thread, maybe during startup
            logs = list(broker.log_manager.all_logs())
            per_topic: dict[str, list[int]] = {}
            for lg in logs:
                try:
                    acc = per_topic.setdefault(lg.topic_partition.topic, [0, 0, 0])
                    acc[0] += int(lg.size_in_bytes)
                    acc[1] += len(lg.segments)
                    acc[2] += int(lg.log_end_offset)
                except Exception:  # a log closed by a concurrent delete: skip it in this scrape
                    continue
            partitions.add_metric([], len(logs))
            topics.add_metric([], len(broker.topics.all()))
            for topic, (nbytes, nsegments, leo) in sorted(per_topic.items()):
                size.add_metric([topic], nbytes)
                segments.add_metric([topic], nsegments)
                end.add_metric([topic], leo)
        else:
            partitions.add_metric([], 0)
            topics.add_metric([], 0)
        yield topics
        yield partitions
        yield size
        yield segments
        yield end


class _CleanerCollector(_Collector):
    """Scrape-time gauges of the log cleaner (Kafka's LogCleaner / LogCleanerManager metrics,
    `asyncbroker_log_cleaner_<kafka name>`; per-dir ones labelled `log_dir`). Nothing when the
    cleaner is disabled."""

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        broker = self._metrics.broker
        if broker is None:
            return
        loop = broker.loop
        if loop is None or loop.is_closed():
            return
        try:
            if asyncio.get_running_loop() is loop:
                return  # scraped on the broker's own loop: cannot wait for it here
        except RuntimeError:
            pass  # the usual case: a scrape thread
        try:
            # The cleaner's state lives on the broker's loop (uncleanable-bytes reads segments).
            # A broker with no compacted log has not started its cleaner: a scrape asks for
            # it, so it starts now, and its metrics are there from the first scrape on, as
            # Kafka's are from startup.
            values = asyncio.run_coroutine_threadsafe(_cleaner_metrics(broker), loop).result(timeout=10)
        except Exception:  # noqa: BLE001 - a scrape must not fail because of one subsystem
            log.debug("Could not read the log cleaner's metrics", exc_info=True)
            return
        for name, value in values.items():
            metric = "asyncbroker_log_cleaner_" + name.replace("-", "_")
            if isinstance(value, dict):
                family = GaugeMetricFamily(metric, f"LogCleanerManager {name}, per log dir", labels=["log_dir"])
                for log_dir, v in sorted(value.items()):
                    family.add_metric([log_dir], float(v))
            else:
                family = GaugeMetricFamily(metric, f"LogCleaner {name}")
                family.add_metric([], float(value))
            yield family


class _FetchSessionCollector(_Collector):
    """Kafka's FetchSessionCache metrics (NumIncrementalFetchSessions,
    NumIncrementalFetchPartitionsCached, IncrementalFetchSessionEvictionsPerSec as a count)."""

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        broker = self._metrics.broker
        if broker is None:
            return
        cache = broker.fetch_manager.cache
        yield GaugeMetricFamily("asyncbroker_incremental_fetch_sessions", "Incremental fetch sessions cached",
                                value=cache.sessions)
        yield GaugeMetricFamily("asyncbroker_incremental_fetch_partitions_cached",
                                "Partitions in the cached incremental fetch sessions", value=cache.partitions_cached)
        yield CounterMetricFamily("asyncbroker_incremental_fetch_session_evictions",
                                  "Incremental fetch sessions evicted to make room for new ones", value=cache.evictions)


class _RemoteLogCollector(_Collector):
    """Tiered storage's metrics (Kafka's RemoteCopy*/RemoteFetch*/RemoteDelete* and the
    per-topic remote size and copy lag), read from the RemoteLogManager at scrape time.
    Nothing without tiered storage."""

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        rlm = getattr(self._metrics.broker, "remote_log_manager", None)
        if rlm is None:
            return
        stats = rlm.stats
        for name, doc, value in (
            ("remote_copy_requests", "Segments copied to remote storage", stats.copied_segments),
            ("remote_copy_bytes", "Bytes copied to remote storage", stats.copied_bytes),
            ("remote_copy_errors", "Segment copies that failed (retried after a back-off)", stats.failed_copies),
            ("remote_delete_requests", "Remote segments deleted", stats.deleted_segments),
            ("remote_delete_errors", "Remote segment deletes that failed", stats.failed_deletes),
            ("remote_fetch_requests", "Fetches of a partition read from remote storage", stats.fetch_requests),
            ("remote_fetch_bytes", "Bytes read from remote storage for fetches", stats.fetch_bytes),
            ("remote_fetch_errors", "Remote reads that failed", stats.failed_fetches),
        ):
            yield CounterMetricFamily("asyncbroker_" + name, doc, value=value)
        try:
            gauges = rlm.partition_gauges()
        except Exception:  # noqa: BLE001 - a scrape must not fail because of one subsystem
            log.debug("Could not read the remote log gauges", exc_info=True)
            return
        families = [GaugeMetricFamily("asyncbroker_remote_log_size_bytes", "Bytes in remote storage, by topic",
                                      labels=["topic"]),
                    GaugeMetricFamily("asyncbroker_remote_copy_lag_bytes",
                                      "Bytes of rolled segments not yet in remote storage, by topic", labels=["topic"]),
                    GaugeMetricFamily("asyncbroker_remote_copy_lag_segments",
                                      "Rolled segments not yet in remote storage, by topic", labels=["topic"])]
        for topic, values in sorted(gauges.items()):
            for family, value in zip(families, values):
                family.add_metric([topic], float(value))
        yield from families


class _CounterCollector(_Collector):
    """The broker's counters as metric families, read at scrape time (from any thread:
    the dicts are copied before iterating, the loop may add a label meanwhile)."""

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        m = self._metrics
        for name, doc, label, values in (
            ("asyncbroker_requests", "Requests handled, by API", "api", m._requests),
            ("asyncbroker_request_errors", "Requests whose handling raised, by API", "api", m._errors),
            ("asyncbroker_messages_in", "Records appended, by topic", "topic", m._messages_in),
        ):
            family = CounterMetricFamily(name, doc, labels=[label])
            for key, value in list(values.items()):
                family.add_metric([key], value)
            yield family
        seconds = CounterMetricFamily("asyncbroker_request_time_seconds", "Time handling requests, by API",
                                      labels=["api"])
        for key, times in list(m._times.items()):
            seconds.add_metric([key], times[0] / 1e9)
        yield seconds
        yield CounterMetricFamily("asyncbroker_bytes_in", "Bytes received from clients", value=m._bytes_in)
        yield CounterMetricFamily("asyncbroker_bytes_out", "Bytes sent to clients", value=m._bytes_out)
        yield CounterMetricFamily("asyncbroker_connections_accepted", "Client connections accepted",
                                  value=m._connections_total)
        yield GaugeMetricFamily("asyncbroker_connections", "Open client connections", value=m._connections)
        # Kafka's SocketServer MemoryPoolAvailable / MemoryPoolUsed and its selectors'
        # memory-pool-depleted-time-total; with no pool (queued.max.request.bytes unset) Kafka
        # reports Long.MAX_VALUE available and none used.
        pool = m.broker.memory_pool if m.broker is not None else None
        yield GaugeMetricFamily("asyncbroker_memory_pool_available_bytes", "Bytes left for received requests "
                                "(queued.max.request.bytes)", value=pool.available if pool is not None else (1 << 63) - 1)
        yield GaugeMetricFamily("asyncbroker_memory_pool_used_bytes", "Bytes held by received requests not yet "
                                "answered (with queued.max.request.bytes)", value=pool.used if pool is not None else 0)
        yield CounterMetricFamily("asyncbroker_memory_pool_depleted_seconds", "Time with no bytes left for received "
                                  "requests", value=pool.depleted_seconds if pool is not None else 0.0)


TIME_BUCKETS = 48  # bucket b holds handling times of bit length b: [2^(b-1), 2^b) ns


class MetricsSnapshot:
    """Cumulative counters at one moment; `since(earlier)` gives what happened in between."""

    __slots__ = ("requests", "times", "messages_in", "bytes_in", "bytes_out")

    def __init__(self, requests: dict[str, int], times: dict[str, list[int]], messages_in: dict[str, int],
                 bytes_in: int, bytes_out: int) -> None:
        self.requests = requests
        self.times = times
        self.messages_in = messages_in
        self.bytes_in = bytes_in
        self.bytes_out = bytes_out

    def since(self, earlier: MetricsSnapshot) -> MetricsSnapshot:
        def minus(now: dict[str, int], before: dict[str, int]) -> dict[str, int]:
            return {k: v - before.get(k, 0) for k, v in now.items() if v - before.get(k, 0)}

        times = {}
        for name, values in self.times.items():
            before = earlier.times.get(name)
            delta = values if before is None else [a - b for a, b in zip(values, before)]
            if delta[1]:
                times[name] = delta
        return MetricsSnapshot(minus(self.requests, earlier.requests), times,
                               minus(self.messages_in, earlier.messages_in), self.bytes_in - earlier.bytes_in,
                               self.bytes_out - earlier.bytes_out)

    def mean_ms(self, name: str) -> float:
        t = self.times.get(name)
        return t[0] / t[1] / 1e6 if t and t[1] else 0.0

    def quantile_ms(self, name: str, q: float) -> float:
        """The upper bound of the power-of-two bucket holding the q-quantile (at most 2x above it)."""
        t = self.times.get(name)
        if not t or not t[1]:
            return 0.0
        rank, seen = q * t[1], 0
        for b, n in enumerate(t[2:]):
            seen += n
            if seen >= rank:
                return (1 << b) / 1e6
        return (1 << (len(t) - 3)) / 1e6


class BrokerMetrics:
    """The broker's counters; see the module docstring for the calls."""

    def __init__(self) -> None:
        self.broker: ScrapedBroker | None = None
        self._requests: dict[str, int] = {}  # Kafka's API name -> count
        self._errors: dict[str, int] = {}
        # API name -> [total ns, count, then counts of handling times by bit length of the ns]
        self._times: dict[str, list[int]] = {}
        self._messages_in: dict[str, int] = {}  # topic -> records
        self._api_names: dict[int | str, str] = {}
        self._bytes_in = 0
        self._bytes_out = 0
        self._connections = 0
        self._connections_total = 0
        self._registry: Any = None

    @property
    def registry(self) -> Any:
        """The prometheus CollectorRegistry, built (and prometheus_client imported) on first use."""
        if self._registry is None:
            from prometheus_client import CollectorRegistry

            registry = CollectorRegistry(auto_describe=False)
            registry.register(_CounterCollector(self))
            registry.register(_LogCollector(self))
            registry.register(_CleanerCollector(self))
            registry.register(_RemoteLogCollector(self))
            registry.register(_FetchSessionCollector(self))
            self._registry = registry
        return self._registry

    def bind(self, broker: ScrapedBroker) -> None:
        """Point the scrape-time gauges at this broker (the last bound broker wins)."""
        self.broker = broker

    def unbind(self, broker: ScrapedBroker) -> None:
        if self.broker is broker:
            self.broker = None

    def _name(self, api: int | str) -> str:
        name = self._api_names.get(api)
        if name is None:
            name = self._api_names[api] = api_name(api)
        return name

    def request(self, api: int | str) -> None:
        name = self._api_names.get(api) or self._name(api)  # (known: no call; every request counts here)
        self._requests[name] = self._requests.get(name, 0) + 1

    def request_error(self, api: int | str) -> None:
        name = self._name(api)
        self._errors[name] = self._errors.get(name, 0) + 1

    def request_time(self, api: int | str, ns: int) -> None:
        name = self._name(api)
        times = self._times.get(name)
        if times is None:
            times = self._times[name] = [0] * (2 + TIME_BUCKETS)
        times[0] += ns
        times[1] += 1
        times[2 + min(ns.bit_length(), TIME_BUCKETS - 1)] += 1

    def snapshot(self) -> MetricsSnapshot:
        """The counters now (copies), for rates and latencies over an interval (the web console)."""
        return MetricsSnapshot(dict(self._requests), {k: list(v) for k, v in self._times.items()},
                               dict(self._messages_in), self._bytes_in, self._bytes_out)

    @property
    def received_bytes(self) -> int:
        """Bytes received from clients since the process started."""
        return self._bytes_in

    def bytes_in(self, n: int) -> None:
        self._bytes_in += n

    def bytes_out(self, n: int) -> None:
        self._bytes_out += n

    def messages_in(self, topic: str, n: int) -> None:
        self._messages_in[topic] = self._messages_in.get(topic, 0) + n

    def connection_opened(self) -> None:
        self._connections += 1
        self._connections_total += 1

    def connection_closed(self) -> None:
        self._connections -= 1

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        from prometheus_client import generate_latest

        return generate_latest(self.registry)

    def value(self, name: str, labels: dict[str, str] | None = None) -> float | None:
        """A sample's current value (for tests and the monitor console)."""
        value: float | None = self.registry.get_sample_value(name, labels or {})
        return value


METRICS = BrokerMetrics()


async def _serve_http(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answer one HTTP/1.x request with the metrics (any path; GET or HEAD)."""
    try:
        request_line = await asyncio.wait_for(reader.readline(), timeout=10)
        # Drain the request headers; they carry nothing we use.
        while True:
            line = await asyncio.wait_for(reader.readline(), timeout=10)
            if line in (b"\r\n", b"\n", b""):
                break
        method = request_line.split(b" ", 1)[0]
        if method not in (b"GET", b"HEAD"):
            writer.write(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        else:
            from prometheus_client.exposition import CONTENT_TYPE_LATEST

            # Gauges walk the logs; keep that off the event loop.
            body = await asyncio.get_running_loop().run_in_executor(None, METRICS.render)
            head = (
                f"HTTP/1.1 200 OK\r\nContent-Type: {CONTENT_TYPE_LATEST}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            ).encode()
            writer.write(head if method == b"HEAD" else head + body)
        await writer.drain()
    except (asyncio.TimeoutError, ConnectionError):
        pass
    finally:
        writer.close()


async def start_metrics_server(host: str, port: int) -> asyncio.Server:
    """Serve /metrics over HTTP on host:port until the returned server is closed."""
    server = await asyncio.start_server(_serve_http, host, port)
    log.info("Prometheus metrics on http://%s:%d/metrics", host, server.sockets[0].getsockname()[1])
    return server
