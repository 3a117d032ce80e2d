"""Service benchmarks: asyncbroker beside Apache Kafka 4.4, in one sitting, with confluent-kafka.

For each broker (asyncbroker as `asyncbroker serve` starts it, and a single-node KRaft Kafka 4.4
from the jars `make jvm` fetched, run as kafka-server-start.sh runs it: see KafkaServer's
`as_scripts`): startup to the first Metadata answer (the median of five starts; for asyncbroker
also with the web console, as `make run` starts it, and beside what any asyncio broker on uvloop
pays first: the interpreter and the imports of asyncio and uvloop), idle RSS, produce throughput of
1,000,000 x 100 B (acks=1 and -1, 1 and 4 partitions; on 1 partition also 2,000,000 from two
producer processes at once, since one Python producer is the limit there), consume of the same from
offset 0 (with fetch sizes and queue limits raised, and on 1 partition with the client's defaults
too), the same on 1 partition through Kafka's own perf tools (the Java client: 5,000,000 x 100 B
produced with acks=1 and -1, and consumed with the consumer's defaults), 20,000 x 10 KiB both ways,
sequential acks=-1 produce round trips (p50/p99) from a raw socket and from confluent-kafka (its
application thread spinning on poll, and sleeping in it: CLIENT_WAITS; the median of three rounds,
the brokers taking turns: latency_rows), then
20,000 x 10 KiB both ways through Kafka's perf tools and produced from a raw client that costs
nothing per record, and 1,000,000 x 100 B from that client with acks=1 and -1
(large_reference_rows: the brokers' rates where the Python client's are its own), idle RSS
again after those loads, and peak RSS. The two brokers run side by side, and each throughput
row's runs alternate between them (alternating_runs). A bare uvloop echo server answering the same
Produce frame gives the loopback floor for the round trips: its round trips alternate with each
broker's, in chunks of 100, with the client and the servers pinned to CPUs (see
round_trips_beside_echo), so the floor and the broker are measured under the same conditions. Each
figure is printed with Kafka's beside it and the ratio; RESULT lines feed `python -m bench`. The
targets live here, never in tests.

    BENCH_SCALE=0.1 .venv/bin/python bench/bench_service.py      # a quick look
    BENCH_BROKERS=asyncbroker .venv/bin/python bench/bench_service.py   # skip Kafka
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from functools import partial
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from confluent_kafka import Consumer, Producer, TopicPartition

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from asyncbroker.testing import BrokerProcess  # noqa: E402
from asyncbroker.server import RELEASE_BUFFERS_AFTER_S  # noqa: E402
from asyncbroker.testing.broker import serve_command  # noqa: E402
from asyncbroker.testing.process_stats import cpu_seconds, proc_number, rss_kib  # noqa: E402

SCALE = float(os.environ.get("BENCH_SCALE", "1"))
SMALL_COUNT = int(1_000_000 * SCALE)
LARGE_COUNT = int(20_000 * SCALE)
# Round trips per latency row: with 2,000, Kafka's p50 moved by 15% between sittings; 20,000
# take a few seconds per broker.
LATENCY_COUNT = int(20_000 * max(SCALE, 0.25))
BROKERS = os.environ.get("BENCH_BROKERS", "asyncbroker,kafka").split(",")
STARTS = 5  # starts per startup figure (the median): one start varies by +-30% here


def bytes_written(pid: int) -> int:
    """Bytes a process has written through write, send and sendfile (`wchar` of /proc/<pid>/io):
    over a consume run, what the broker sent its consumer."""
    return proc_number(pid, "io", "wchar")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def metadata_request() -> bytes:
    # Metadata v1 with a null topic array: header v1 + body.
    body = struct.pack(">hhih", 3, 1, 1, 5) + b"bench" + struct.pack(">i", -1)
    return struct.pack(">i", len(body)) + body


def wait_for_metadata(port: int, started: float, timeout: float = 60.0) -> float:
    """Seconds since `started` at which a Metadata request on `port` is first answered."""
    while True:
        if time.monotonic() - started > timeout:
            raise RuntimeError(f"no Metadata answer on port {port} in {timeout} s")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                s.sendall(metadata_request())
                size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
                s.recv(size, socket.MSG_WAITALL)
                return time.monotonic() - started
        except (ConnectionRefusedError, ConnectionResetError, struct.error):
            time.sleep(0.002)  # polling for the listener, bounded by the timeout


# -- the brokers ----------------------------------------------------------------


@dataclass
class Running:
    bootstrap: str
    pid: int


@dataclass
class Broker:
    """How to start one broker kind with a partition count (and settings both kinds are given
    alike), and measure its startup."""

    name: str
    start: Callable[..., "contextmanager[Running]"]  # type: ignore[type-arg]
    startup: Callable[[], float]


@contextmanager
def asyncbroker(partitions: int, settings: dict[str, str] | None = None) -> Iterator[Running]:
    overrides = [f"{key}={value}" for key, value in (settings or {}).items()]
    with BrokerProcess([f"num.partitions={partitions}", *overrides]) as broker:
        assert broker.process is not None
        yield Running(broker.bootstrap, broker.process.pid)


def asyncbroker_startup(*, console: bool = False) -> float:
    """`asyncbroker serve` to the first Metadata answer; with `console`, as `make run` starts it."""
    port = free_port()
    log_dir = tempfile.mkdtemp(prefix="bench-start-")
    cmd = serve_command() + ["--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                             "--override", f"log.dirs={log_dir}"]
    if console:
        cmd += ["--console-port", str(free_port())]
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        return wait_for_metadata(port, started)
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(log_dir, ignore_errors=True)


@contextmanager
def kafka(partitions: int, settings: dict[str, str] | None = None) -> Iterator[Running]:
    from jvm.kafka_jvm import KafkaServer

    # Kafka's own defaults, but for what one node needs and the partition count under test;
    # the oracle's settings for fast, timing-free scenarios (cleaner backoff, retention checks,
    # the consumer-protocol assignment interval) do not apply to a benchmark.
    with KafkaServer({"num.partitions": str(partitions), "log.cleaner.backoff.ms": "15000",
                      "log.retention.check.interval.ms": "300000",
                      "group.consumer.assignment.interval.ms": "1000", **(settings or {})},
                     heap="1g", as_scripts=True) as server:
        assert server.process is not None
        yield Running(server.bootstrap, server.process.pid)


def python_asyncio_floor() -> float:
    """What any asyncio broker on uvloop pays before its own first line: the interpreter's start
    and the imports of asyncio and uvloop (a process that only does that, to its exit)."""
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "import asyncio, uvloop"], check=True)
    return time.monotonic() - started


def median_of_starts(start: Callable[[], float]) -> float:
    return statistics.median(start() for _ in range(STARTS))


def kafka_startup() -> float:
    """Kafka from `java kafka.Kafka` to the first Metadata answer, as kafka-server-start.sh starts it
    (its JVM options and 1 GiB heap, without the suite's class-data archive and quick-start
    options); StorageTool formats the log dir before the clock starts."""
    from jvm.kafka_jvm import KafkaServer

    server = KafkaServer(heap="1g", as_scripts=True)
    try:
        server.port, server.controller_port = free_port(), free_port()
        server.format()
        started = time.monotonic()
        server._launch()
        return wait_for_metadata(server.port, started)
    finally:
        server.stop()


KINDS = {
    "asyncbroker": Broker("asyncbroker", asyncbroker, asyncbroker_startup),  # type: ignore[arg-type]
    "kafka": Broker("Kafka 4.4", kafka, kafka_startup),  # type: ignore[arg-type]
}


# -- the client side ------------------------------------------------------------------


class CpuShare:
    """Measures how busy the broker and the client were during a phase (who is the bottleneck)."""

    def __init__(self, broker_pid: int) -> None:
        self.pid = broker_pid
        self.broker_cpu = 0.0
        self.wall = 0.0
        self.written = 0  # bytes the broker wrote meanwhile (bytes_written)

    def __enter__(self) -> "CpuShare":
        self.t0, self.b0, self.w0 = time.monotonic(), cpu_seconds(self.pid), bytes_written(self.pid)
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.monotonic() - self.t0
        self.broker_cpu = cpu_seconds(self.pid) - self.b0
        self.written = bytes_written(self.pid) - self.w0


def keep_client_heap() -> None:
    """Have glibc's malloc keep this process's freed heap for its next clients (a fixed mmap
    threshold of 32 MiB, its top trimmed beyond 1 GiB only), the state a long-running client
    reaches by itself once its first large buffers come and go.

    A producer run of 1 M messages holds up to ~300 MB in librdkafka's queue. In a fresh process
    glibc hands that back to the kernel when the producer goes, and the next run page-faults it
    in again: 79,000 minor faults and 0.2 s of the client's CPU per run, which held one Python
    producer at 1.5 M msgs/s whichever broker it wrote to. After one run of 4 M messages glibc
    had raised its own thresholds and later runs took 5,000 faults and 2.2 M msgs/s; this sets
    that state from the start, for every broker alike."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if name is None:
        return
    mallopt = ctypes.CDLL(name).mallopt
    m_trim_threshold, m_mmap_threshold = -1, -3  # <malloc.h>
    mallopt(m_mmap_threshold, 32 << 20)
    mallopt(m_trim_threshold, 1 << 30)


def produce(bootstrap: str, topic: str, count: int, size: int, acks: str) -> float:
    """Messages per second for `count` messages of `size` bytes (until all are acknowledged).

    One message goes first, untimed: it has the broker auto-create the topic and the client
    learn its leader. That takes 0.1-0.3 s on either broker, which is not throughput, and at
    this scale it was a third of the timed run (10 KiB: 430 MB/s measured with it, 1,100
    without)."""
    p, errors, payload = _ready_producer(bootstrap, topic, size, acks)
    started = time.monotonic()
    _send_all(p, topic, payload, count, errors)
    return count / (time.monotonic() - started)


def _ready_producer(bootstrap: str, topic: str, size: int, acks: str) -> tuple[Producer, list[object], bytes]:
    """A producer batching as the benches batch, that has delivered one message to `topic`
    (untimed: the topic exists and its leader is known); its error list and payload."""
    errors: list[object] = []
    # A global callback that fires only on errors: a per-message callback
    # costs the Python client half its produce rate.
    p = Producer({
        "bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5,
        "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000,
        "queue.buffering.max.kbytes": 1_048_576,
        "on_delivery": lambda err, _msg: errors.append(err), "delivery.report.only.error": True,
    })
    payload = os.urandom(size)
    p.produce(topic, payload)
    if p.flush(60) or errors:
        raise RuntimeError(f"the first message to {topic} was not delivered: {errors[:3]}")
    return p, errors, payload


def _send_all(p: Producer, topic: str, payload: bytes, count: int, errors: list[object]) -> None:
    """Produce `count` messages and wait until every one is acknowledged."""
    produce_ = p.produce
    for _ in range(count):
        try:
            produce_(topic, payload)
        except BufferError:  # the client's queue is full (1 GiB): wait for deliveries to free it
            while True:
                p.poll(0.005)
                try:
                    produce_(topic, payload)
                    break
                except BufferError:
                    continue
    remaining = p.flush(120)
    if remaining or errors:
        raise RuntimeError(f"produce failed: {remaining} undelivered, errors {errors[:3]}")


PRODUCER_PROCESSES = 2
"""Producer processes of the parallel produce rows. One Python producer tops out near 2 M
100 B messages/s here with the broker mostly idle (asyncbroker used 11-17% of a CPU; 1.5 M before
keep_client_heap): the client, not the broker, set the single-producer figure."""


def produce_parallel(bootstrap: str, topic: str, count: int, size: int, acks: str) -> float:
    """Messages per second for `count` messages of `size` bytes into `topic`'s partition 0 from
    PRODUCER_PROCESSES processes at once (each its own confluent-kafka producer, `count` shared
    out): from the first one's start to the last one's last acknowledgement."""
    import multiprocessing

    produce(bootstrap, topic, 1, size, acks)  # the topic, made before the clock starts
    spawn = multiprocessing.get_context("spawn")  # no fork of a process with librdkafka threads
    ready, go, results = spawn.Barrier(PRODUCER_PROCESSES + 1), spawn.Event(), spawn.Queue()
    share = count // PRODUCER_PROCESSES
    workers = [spawn.Process(target=_produce_worker, args=(bootstrap, topic, share, size, acks, ready, go, results))
               for _ in range(PRODUCER_PROCESSES)]
    for w in workers:
        w.start()
    try:
        ready.wait(120)  # every producer connected and delivered its first message
        go.set()
        spans = [results.get(timeout=300) for _ in workers]
    finally:
        for w in workers:
            w.join(30)
    failed = [span for span in spans if isinstance(span, str)]
    if failed:
        raise RuntimeError(f"a producer process failed: {failed[0]}")
    return share * PRODUCER_PROCESSES / (max(end for _, end in spans) - min(start for start, _ in spans))


def _produce_worker(bootstrap: str, topic: str, count: int, size: int, acks: str, ready: Any, go: Any,
                    results: Any) -> None:
    try:
        keep_client_heap()  # a process of its own: as the parent's clients
        p, errors, payload = _ready_producer(bootstrap, topic, size, acks)
        ready.wait(120)
        go.wait(120)
        started = time.monotonic()  # CLOCK_MONOTONIC: one clock for every process of the machine
        _send_all(p, topic, payload, count, errors)
        results.put((started, time.monotonic()))
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which raises it
        results.put(f"{type(exc).__name__}: {exc}")


def warm_up_group_coordinator(bootstrap: str, topic: str, group: str = "bench") -> None:
    """Have the broker create __consumer_offsets (50 partitions) before a consume is timed.

    The consumer's group.id makes librdkafka look up its coordinator, and the first lookup on
    a fresh broker creates the offsets topic: a one-time cost (seconds on Kafka) that is not
    consume throughput. Done the same way on both brokers: a consumer of the group asks for
    its committed offset until it gets an answer."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                c.committed([TopicPartition(topic, 0)], timeout=10)
                return
            except Exception:  # noqa: BLE001 - COORDINATOR_NOT_AVAILABLE while the topic is created
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)  # retry a lookup, bounded by the deadline
    finally:
        c.close()


RUNS = 3
"""Each throughput is the median of this many runs: one run of 1 M small or 20,000 large
messages lasts under a second here, and single runs moved by 10-15% from one to the next."""


class RunFigures(NamedTuple):
    rate: float  # the median run's
    cpu_share: float  # of one CPU, over the runs
    cpu_s: float  # the broker's CPU seconds per run
    written: float  # bytes the broker wrote per run: on a consume run, what it sent


Rates = dict[str, RunFigures]


def alternating_runs(running: dict[str, Running], run: Callable[[Running, int], float], *,
                     before: Callable[[], None] | None = None) -> Rates:
    """Per broker kind: the median rate, the broker's share of a CPU during its runs, its CPU
    seconds and the bytes it wrote per run (RunFigures), over RUNS runs each. The brokers are up
    side by side and take turns run by run, who goes first alternating: whatever drifts over a
    sitting (dirty pages still being written back, a warmer JIT, the machine's other load) falls
    on both alike. Measured one
    broker after the other, the same row moved by up to 20% between sittings and changed sign.
    The broker waiting its turn runs in_background. `before` runs before each run, outside it
    (clean_page_cache)."""
    rates: dict[str, list[float]] = {kind: [] for kind in running}
    cpu = dict.fromkeys(running, 0.0)
    wall = dict.fromkeys(running, 0.0)
    written = dict.fromkeys(running, 0)
    for i in range(RUNS):
        for kind in (list(running) if i % 2 == 0 else list(reversed(running))):
            waiting = [r.pid for other, r in running.items() if other != kind]
            if before is not None:
                before()
            with in_background(waiting), CpuShare(running[kind].pid) as share:
                rates[kind].append(run(running[kind], i))
            cpu[kind] += share.broker_cpu
            wall[kind] += share.wall
            written[kind] += share.written
    return {kind: RunFigures(sorted(rates[kind])[RUNS // 2], cpu[kind] / wall[kind], cpu[kind] / RUNS,
                             written[kind] / RUNS) for kind in running}


def clean_page_cache() -> None:
    """Write every dirty page back and free the page cache (as root; else only the former),
    untimed, before a run of 10 KiB produces. The runs before leave gigabytes dirty and memory
    full of cached pages: a run then meets the kernel's throttle of writers (balance_dirty_pages)
    and reclaims a page for each one it writes, and measures this machine's disk (dd fdatasync:
    about 340 MB/s) and reclaim on either broker, not the broker (seen: both at 85-90% CPU, at
    400 and 350 MB/s, where a fresh machine took 1,700 MB/s at 34%). bench_writeback measures
    produce against the disk."""
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("1\n")
    except OSError:
        pass  # not root: written back, not freed


def in_background(pids: list[int]) -> AbstractContextManager[None]:
    """Every thread of these processes at nice 19, put back on exit: a broker waiting its turn
    yields the CPUs to the one measured. Kafka's JVM, idle after a run, went on using 4-12% of
    a CPU for seconds (its compiler and collector threads); asyncbroker idle uses none."""
    return each_thread(pids, lambda tid: os.getpriority(os.PRIO_PROCESS, tid),
                       lambda tid, nice: os.setpriority(os.PRIO_PROCESS, tid, nice), 19)


def add_rates(report: Report, results: Rates, name: str, unit: str, target: str, *, per: int = 0,
              scale: float = 1.0, fmt: str = "{:,.0f}") -> None:
    """One row from alternating_runs' results: the rate times `scale`, the broker's CPU share,
    and with `per` its CPU per message of a run of that many."""
    for kind, (rate, share, cpu_s, _) in results.items():
        cost = f", {cpu_s / per * 1e6:.2f} us/msg" if per else ""
        report.add(kind, name, rate * scale, unit, target, higher_is_better=True, fmt=fmt,
                   note=f"broker CPU {share:.0%}{cost}")


def produce_run(bootstrap: str, topic: str, count: int, size: int, acks: str, run: int) -> float:
    """One produce run, into a topic of its own (`<topic>-<run>`): a consumer reading the
    first run's topic finds exactly `count` messages (and one more), no backlog to prefetch."""
    return produce(bootstrap, f"{topic}-{run}", count, size, acks)


def produce_parallel_run(bootstrap: str, topic: str, count: int, size: int, acks: str, run: int) -> float:
    """One parallel produce run, into a topic of its own, as produce_run."""
    return produce_parallel(bootstrap, f"{topic}-{run}", count, size, acks)


def consume_run(bootstrap: str, topic: str, partitions: int, count: int, run: int, *, tuned: bool = True) -> float:
    """One consume run: the first produce run's topic, read from the start again."""
    return consume(bootstrap, f"{topic}-0", partitions, count, tuned=tuned)


def warm_up_clients(bootstrap: str) -> None:
    """An untimed produce and consume before the first timed one, on each broker. The first
    consumer of this process read 1 M records at 1.5 M/s and the next ones at 2.0-2.3 M/s,
    whichever broker went first (librdkafka's and Python's first allocations): without it,
    the broker measured first paid for that. The produce is as long as a timed run's, so that
    the heap keep_client_heap keeps has grown to a run's size before the first one."""
    produce(bootstrap, "warm-up", SMALL_COUNT, 100, "1")
    warm_up_group_coordinator(bootstrap, "warm-up")
    consume(bootstrap, "warm-up", 1, SMALL_COUNT // 4)


TUNED_CONSUMER = {
    "fetch.max.bytes": 52_428_800, "max.partition.fetch.bytes": 10_485_760,
    "queued.max.messages.kbytes": 1_048_576,
    # librdkafka pauses fetching for fetch.queue.backoff.ms (1 s) once its local
    # queue holds queued.min.messages (100k): one 10 MB fetch of 100 B records.
    "queued.min.messages": 2_000_000, "fetch.queue.backoff.ms": 10,
}
"""The consumer's settings for throughput. `tuned=False` keeps librdkafka's defaults, which the
issue's consume target names: there the client's own 1 s backoff, every time 100k messages wait
in its queue, sets the rate whichever broker serves it. The queue fills when the client's fetch
thread outpaces the application, and here the two run close (about 1 M msgs/s each), so a
broker that answers a little sooner meets the pause more often: 1 ms of delay added to each of
asyncbroker's Fetch answers raised this row from 260-375 K to 350-890 K msgs/s, and ending
answers at their last whole batch (less for the client to parse) lowered it by about a fifth."""


def consume(bootstrap: str, topic: str, partitions: int, count: int, *, tuned: bool = True) -> float:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                  **(TUNED_CONSUMER if tuned else {})})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = 0
    started = time.monotonic()
    deadline = started + 300
    while got < count and time.monotonic() < deadline:
        # consume() blocks until num_messages arrive or the timeout: never ask for
        # more than remain, or the last call waits out its full timeout.
        for m in c.consume(num_messages=min(10_000, count - got), timeout=1.0):
            if m.error() is None:
                got += 1
    elapsed = time.monotonic() - started
    c.close()
    if got < count:
        raise RuntimeError(f"consumed {got} of {count}")
    return count / elapsed


# -- Kafka's own perf tools: the Java client ------------------------------------------

JAVA_COUNT = int(5_000_000 * SCALE)
"""100 B records per run of Kafka's perf tools (each run is a JVM of its own, JIT warm-up
included, so runs are longer than the Python client's)."""
PRODUCER_PERFORMANCE = "org.apache.kafka.tools.ProducerPerformance"
CONSUMER_PERFORMANCE = "org.apache.kafka.tools.ConsumerPerformance"
_RECORDS_SENT = re.compile(r"(\d+) records sent, ([\d.]+) records/sec")


def kafka_perf_tool(main: str, args: list[str]) -> str:
    """Run one of Kafka's perf tools as kafka-producer-perf-test.sh and kafka-consumer-perf-test.sh
    run them (the scripts' JVM options, a 512 MiB heap); what it printed."""
    from jvm.kafka_jvm import run_tool

    done = run_tool(main, args, heap="512m", timeout=600, as_scripts=True)
    if done.returncode != 0:
        raise RuntimeError(f"{main} exited with {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return done.stdout


def java_produce(bootstrap: str, topic: str, count: int, acks: str, size: int = 100) -> float:
    """Records per second of kafka-producer-perf-test: `count` records of `size` bytes as fast as
    it can send them, batched as the Python producer batches (linger.ms=5, batch.size=1000000).
    The topic is made first, as `produce` makes its own, so its creation is not in the timed run."""
    produce(bootstrap, topic, 1, 100, acks)
    out = kafka_perf_tool(PRODUCER_PERFORMANCE, [
        "--topic", topic, "--num-records", str(count), "--record-size", str(size), "--throughput", "-1",
        "--producer-props", f"bootstrap.servers={bootstrap}", f"acks={acks}", "linger.ms=5", "batch.size=1000000",
    ])
    summaries = _RECORDS_SENT.findall(out)
    if not summaries or int(summaries[-1][0]) != count:
        raise RuntimeError(f"no summary of {count} records in ProducerPerformance's output:\n{out[-2000:]}")
    return float(summaries[-1][1])  # the last line is the whole run's


def java_consume(bootstrap: str, topic: str, count: int, group: str) -> tuple[float, float]:
    """(records per second while fetching, milliseconds the group join took) of
    kafka-consumer-perf-test reading `count` records of `topic` from its start in a new group,
    with the Java consumer's defaults. Its fetch rate leaves the join out, as the tool does."""
    out = kafka_perf_tool(CONSUMER_PERFORMANCE, [
        "--bootstrap-server", bootstrap, "--topic", topic, "--messages", str(count), "--group", group,
    ])
    lines = [line for line in out.splitlines() if line.strip()]
    if len(lines) < 2:
        raise RuntimeError(f"no summary in ConsumerPerformance's output:\n{out[-2000:]}")
    # A header line of names, then one line of values.
    row = dict(zip((name.strip() for name in lines[-2].split(",")), (value.strip() for value in lines[-1].split(","))))
    if int(row["data.consumed.in.nMsg"]) < count:
        raise RuntimeError(f"ConsumerPerformance read {row['data.consumed.in.nMsg']} of {count} records")
    return float(row["fetch.nMsg.sec"]), float(row["rebalance.time.ms"])


CLIENT_WAITS = (("", 0.0001), (", client waiting in poll", 1.0))
"""How client_latency's loop waits for each delivery: poll(0.0001), which confluent-kafka rounds
to a non-blocking poll, so the application thread spins; then poll(1.0), which sleeps until the
delivery report arrives (one more thread wake-up, so a higher p50). On this 2-CPU machine the
spinning thread, the client's own I/O thread and the broker want three CPUs: 1-3% of round trips
then wait 2-4 ms, about a scheduler tick, and that set the spinning p99 on either broker. Sleeping
in poll, those waits went. In one check the p99 was, spinning, 2.4-3.8 ms on asyncbroker and
3.9-4.2 ms on Kafka; sleeping in poll, 0.51-0.65 and 0.62-1.11 ms."""


def client_latency(bootstrap: str, topic: str, count: int, poll_timeout: float = 0.0001) -> tuple[float, float]:
    """p50/p99 ms of sequential acks=-1 produces of 100 B through confluent-kafka, each delivery
    waited for with poll(poll_timeout) (see CLIENT_WAITS)."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "socket.nagle.disable": True})
    done: list[float] = []
    samples: list[float] = []
    p.produce(topic, b"warm-up")
    p.flush(10)
    for _ in range(count):
        done.clear()
        t0 = time.perf_counter()
        p.produce(topic, b"x" * 100, on_delivery=lambda err, msg: done.append(time.perf_counter()))
        while not done:
            p.poll(poll_timeout)
        samples.append(done[0] - t0)
    return percentiles(samples)


def percentiles(samples: list[float]) -> tuple[float, float]:
    samples.sort()
    return samples[len(samples) // 2] * 1000, samples[int(len(samples) * 0.99)] * 1000


def produce_frame(topic: str, *, acks: int = -1, size: int = 100, records: int = 1) -> bytes:
    """One Produce v9 request (one batch of `records` records of `size` bytes) as bytes on the wire."""
    from kio.schema.produce.v9 import request as produce9

    from wire.headers import encode_request_header
    from wire.messages import encode_request
    from wire.records import Record, build_batch

    import datetime

    now = int(time.time() * 1000)
    batch = build_batch([Record(offset=i, timestamp=now, key=None, value=b"x" * size) for i in range(records)])
    req = produce9.ProduceRequest(
        transactional_id=None, acks=acks, timeout=datetime.timedelta(seconds=30),
        topic_data=(produce9.TopicProduceData(name=topic, partition_data=(
            produce9.PartitionProduceData(index=0, records=batch),)),),
    )
    body = encode_request_header(0, 9, 1, "bench") + encode_request(req)
    return struct.pack(">i", len(body)) + body


RAW_BATCH_RECORDS = 100
"""10 KiB records per raw Produce request: a 1 MB batch, as the Python and Java producers send."""
RAW_SMALL_BATCH_RECORDS = 8_000
"""100 B records per raw Produce request: 0.87 MB, a batch as librdkafka fills one under its
message.max.bytes (1,000,000)."""
RAW_WINDOW = 5
"""Raw requests unanswered at a time: the Java producer's max.in.flight.requests.per.connection."""


def raw_produce(bootstrap: str, topic: str, count: int, *, size: int, per_request: int, acks: int = 1) -> float:
    """Records per second (of `size` bytes) of a client that costs nothing per record: one
    Produce request of a batch of `per_request` records, built once and sent again and again
    over one connection, RAW_WINDOW unanswered at a time, until `count` records. Every answer
    is checked for an error."""
    from wire.messages import decode_response

    produce(bootstrap, topic, 1, 100, "1")  # the topic exists, as the producers' runs make it
    frame = produce_frame(topic, acks=acks, size=size, records=per_request)
    requests = max(1, count // per_request)
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sent = answered = 0
        started = time.monotonic()
        while answered < requests:
            while sent < requests and sent - answered < RAW_WINDOW:
                s.sendall(frame)
                sent += 1
            length = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
            answer = s.recv(length, socket.MSG_WAITALL)
            # v9 answers have a flexible header: the correlation id, then an empty tag buffer.
            partition = decode_response(0, 9, answer[5:]).responses[0].partition_responses[0]
            if partition.error_code != 0:
                raise RuntimeError(f"raw produce to {topic}: error {partition.error_code}")
            answered += 1
        elapsed = time.monotonic() - started
    return requests * per_request / elapsed


def raw_round_trips(port: int, frame: bytes, count: int) -> tuple[float, float]:
    """p50/p99 ms of sending `frame` and reading one whole answer frame, sequentially."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        _round_trips(s, frame, 50)  # warm-up
        return percentiles(_round_trips(s, frame, count))


def _round_trips(s: socket.socket, frame: bytes, count: int) -> list[float]:
    samples = []
    for _ in range(count):
        t0 = time.perf_counter()
        s.sendall(frame)
        size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
        s.recv(size, socket.MSG_WAITALL)
        samples.append(time.perf_counter() - t0)
    return samples


INTERLEAVE_CHUNK = 100
"""Round trips taken on one server before switching to the other."""
CLIENT_CPU, SERVER_CPU = 0, 1


@contextmanager
def each_thread(pids: list[int], get: Callable[[int], Any], put: Callable[[int, Any], None], value: Any
                ) -> Iterator[None]:
    """Every thread of these processes (0 = this one) given `value` through `put`, each put
    back on exit as `get` found it."""
    before: dict[int, Any] = {}
    for pid in pids:
        for tid in (int(t) for t in os.listdir(f"/proc/{pid or os.getpid()}/task")):
            try:
                before[tid] = get(tid)
                put(tid, value)
            except ProcessLookupError:  # a thread that ended meanwhile
                pass
    try:
        yield
    finally:
        for tid, old in before.items():
            try:
                put(tid, old)
            except ProcessLookupError:
                pass


def pinned(pid: int, cpu: int) -> AbstractContextManager[None]:
    """Every thread of `pid` on `cpu` (0 = this process), put back as it was on exit."""
    return each_thread([pid], os.sched_getaffinity, os.sched_setaffinity, {cpu})


class RoundTrips(NamedTuple):
    """round_trips_beside_echo's answer: p50/p99 ms of each server, and the CPU each used per
    round trip (us; all its threads, over the whole interleaved measurement)."""

    ours: tuple[float, float]
    floor: tuple[float, float]
    our_cpu_us: float
    floor_cpu_us: float


def round_trips_beside_echo(port: int, pid: int, echo_port: int, echo_pid: int, frame: bytes, count: int, *,
                            same_cpu: bool = False) -> RoundTrips:
    """p50/p99 ms of the broker's round trips and of the echo server's, taken in alternating
    chunks of INTERLEAVE_CHUNK, so that the floor is measured under the broker's conditions
    (after the same throughput runs, with the same writeback in flight), and each server's CPU
    per round trip: what a round trip's time beyond the echo's is made of. Each server idles
    while the other's chunk runs (an idle JVM does not quite: its share counts in Kafka's CPU).

    Where the server runs decides the floor on this VM: an echo on the client's CPU answers in
    about 16 us, one on the other CPU in about 56 us (the wake-up crosses CPUs). Left to the
    scheduler, a run gets either, so the client is pinned to CLIENT_CPU and each server to
    SERVER_CPU (to CLIENT_CPU too with `same_cpu`) while it is measured."""
    server_cpu = CLIENT_CPU if same_cpu else SERVER_CPU
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s, \
            socket.create_connection(("127.0.0.1", echo_port), timeout=10) as e, \
            pinned(0, CLIENT_CPU), pinned(pid, server_cpu), pinned(echo_pid, server_cpu):
        for sock in (s, e):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            _round_trips(sock, frame, 50)  # warm-up
        ours: list[float] = []
        floor: list[float] = []
        our_cpu, floor_cpu = cpu_seconds(pid), cpu_seconds(echo_pid)
        while len(ours) < count:
            ours += _round_trips(s, frame, INTERLEAVE_CHUNK)
            floor += _round_trips(e, frame, INTERLEAVE_CHUNK)
        our_cpu, floor_cpu = cpu_seconds(pid) - our_cpu, cpu_seconds(echo_pid) - floor_cpu
    return RoundTrips(percentiles(ours), percentiles(floor), our_cpu / len(ours) * 1e6, floor_cpu / len(floor) * 1e6)


ECHO_SERVER = textwrap.dedent("""
    import asyncio, sys, uvloop

    class Echo(asyncio.Protocol):
        def connection_made(self, transport):
            self.transport = transport
        def data_received(self, data):
            self.transport.write(data)

    async def main():
        server = await asyncio.get_running_loop().create_server(Echo, "127.0.0.1", 0)
        print(server.sockets[0].getsockname()[1], flush=True)
        await server.serve_forever()

    uvloop.run(main())
""")


@contextmanager
def echo_server() -> Iterator[tuple[int, int]]:
    """The loopback floor: a bare uvloop echo server (port, pid), up for the whole run."""
    proc = subprocess.Popen([sys.executable, "-c", ECHO_SERVER], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield int(proc.stdout.readline()), proc.pid
    finally:
        proc.terminate()
        proc.wait(10)


# -- the run ----------------------------------------------------------------------------


@dataclass
class Row:
    name: str
    unit: str
    target: str
    higher_is_better: bool
    fmt: str = "{:,.0f}"
    values: dict[str, float] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)


class Report:
    def __init__(self) -> None:
        self.rows: dict[str, Row] = {}

    def add(self, broker: str, name: str, value: float, unit: str, target: str, *, higher_is_better: bool,
            fmt: str = "{:,.0f}", note: str = "") -> None:
        row = self.rows.setdefault(name, Row(name, unit, target, higher_is_better, fmt))
        row.values[broker] = value
        if note:
            row.notes[broker] = note
        print(f"  {broker:12s} {name}: {fmt.format(value)} {unit}{'  (' + note + ')' if note else ''}", flush=True)

    def print(self) -> None:
        print("\nasyncbroker beside Kafka 4.4 (ratio > 1: asyncbroker is better)")
        print(f"  {'measure':46s} {'asyncbroker':>14s} {'Kafka 4.4':>14s} {'ratio':>7s}  target")
        for row in self.rows.values():
            ours, theirs = row.values.get("asyncbroker"), row.values.get("kafka")
            ratio = ""
            if ours and theirs:
                ratio = f"{(ours / theirs) if row.higher_is_better else (theirs / ours):.2f}x"
            cell = lambda v: "-" if v is None else row.fmt.format(v)  # noqa: E731
            print(f"  {row.name + ' (' + row.unit + ')':46s} {cell(ours):>14s} {cell(theirs):>14s} {ratio:>7s}  "
                  f"{row.target}")
            if ours is not None:
                versus = f"Kafka 4.4 {cell(theirs)}, ratio {ratio}" if theirs else "Kafka not measured"
                print(f"RESULT {row.name} | {cell(ours)} | {row.unit} | {row.target} ({versus})", flush=True)
            elif theirs is not None:
                print(f"RESULT Kafka 4.4 {row.name} | {cell(theirs)} | {row.unit} |", flush=True)


BOTH_BROKERS = {"group.initial.rebalance.delay.ms": "0"}
"""Settings both brokers run with, beside their defaults: the Kafka oracle's (tests/jvm) 0 ms
initial rebalance delay, so that a consumer group's join is not 3 s of a consume run."""


def java_rows(report: Report, running: dict[str, Running]) -> None:
    """100 B produce and consume on one partition through Kafka's own perf tools, the reference
    (Java) client, with the consumer's defaults: beside the Python client's rows, which client
    sets the rate shows. (The broker's CPU share here counts each tool's JVM start as well.)"""
    for acks in ("1", "-1"):
        topic = f"java-acks{acks.replace('-', 'm')}"
        results = alternating_runs(running, lambda r, run: java_produce(r.bootstrap, f"{topic}-{run}", JAVA_COUNT, acks))
        add_rates(report, results, f"produce 100 B acks={acks} p=1, Kafka's Java producer", "msgs/s",
                  ">= Kafka, >= 1.8 M", per=JAVA_COUNT)
    joins: dict[str, list[float]] = {kind: [] for kind in running}

    def consume_java(r: Running, run: int) -> float:
        rate, join_ms = java_consume(r.bootstrap, "java-acks1-0", JAVA_COUNT, f"java-{run}")
        joins[next(kind for kind, other in running.items() if other is r)].append(join_ms)
        return rate

    results = alternating_runs(running, consume_java)
    for kind, (rate, share, cpu_s, _) in results.items():
        report.add(kind, "consume 100 B p=1, Kafka's Java consumer, its defaults", rate, "msgs/s", ">= Kafka, >= 1 M",
                   higher_is_better=True, note=f"broker CPU {share:.0%}, {cpu_s / JAVA_COUNT * 1e6:.2f} us/msg, "
                                              f"group join {statistics.median(joins[kind]):.0f} ms")


def large_reference_rows(report: Report, running: dict[str, Running]) -> None:
    """10 KiB both ways through Kafka's perf tools, and produce from a client that costs nothing
    per record: the Python client's 10 KiB rows show that client's rate (its produce() copies each
    value, and the broker's CPU share there is low), these the brokers'. After the latency rows,
    so that their writes do not add to the writeback those rows meet."""
    results = alternating_runs(running, lambda r, run: java_produce(r.bootstrap, f"java-large-{run}",
                                                                    LARGE_COUNT, "1", 10 * 1024),
                               before=clean_page_cache)
    add_rates(report, results, "produce 10 KiB acks=1, Kafka's Java producer", "MB/s", ">= Kafka, >= 900",
              scale=10 * 1024 / 1e6, fmt="{:,.1f}")
    for r in running.values():
        consume(r.bootstrap, "java-large-0", 1, LARGE_COUNT)  # untimed: back in the page cache
    results = alternating_runs(running, lambda r, run: java_consume(r.bootstrap, "java-large-0", LARGE_COUNT,
                                                                    f"java-large-{run}")[0])
    add_rates(report, results, "consume 10 KiB, Kafka's Java consumer, its defaults", "MB/s", ">= Kafka, >= 900",
              scale=10 * 1024 / 1e6, fmt="{:,.1f}")
    results = alternating_runs(running, lambda r, run: raw_produce(r.bootstrap, f"raw-large-{run}", LARGE_COUNT,
                                                                   size=10 * 1024, per_request=RAW_BATCH_RECORDS),
                               before=clean_page_cache)
    add_rates(report, results, f"produce 10 KiB acks=1, raw client ({RAW_BATCH_RECORDS} per request, "
              f"{RAW_WINDOW} in flight)", "MB/s", ">= Kafka, >= 900", scale=10 * 1024 / 1e6, fmt="{:,.1f}")
    # 100 B from the same client: one Python producer is the limit of the 100 B rows (its broker
    # CPU share is low), this is the brokers' rate on one partition.
    for acks in (1, -1):
        results = alternating_runs(running, lambda r, run: raw_produce(
            r.bootstrap, f"raw-small-acks{'m1' if acks < 0 else acks}-{run}", SMALL_COUNT, size=100,
            per_request=RAW_SMALL_BATCH_RECORDS, acks=acks))
        add_rates(report, results, f"produce 100 B acks={acks} p=1, raw client ({RAW_SMALL_BATCH_RECORDS:,} per "
                  f"request, {RAW_WINDOW} in flight)", "msgs/s", ">= Kafka, >= 1.8 M", per=SMALL_COUNT)


def startup_rows(report: Report) -> None:
    """Start to the first Metadata answer, each broker on its own (nothing else running)."""
    for kind in BROKERS:
        broker = KINDS[kind]
        startup = median_of_starts(broker.startup)
        report.add(kind, "start to first Metadata", startup, "s", "<= 0.1", higher_is_better=False, fmt="{:.3f}")
        if kind == "asyncbroker":
            floor = median_of_starts(python_asyncio_floor)
            report.add(kind, "python + import asyncio, uvloop", floor, "s", "the floor", higher_is_better=False,
                       fmt="{:.3f}")
            report.add(kind, "start to first Metadata / that floor", startup / floor, "x", "", higher_is_better=False,
                       fmt="{:.2f}")
            report.add(kind, "start to first Metadata, with the web console (make run)",
                       median_of_starts(partial(asyncbroker_startup, console=True)), "s", "", higher_is_better=False,
                       fmt="{:.3f}")


LATENCY_PLACEMENTS = (("", False), (", same CPU as the client", True))
"""Where round_trips_beside_echo runs the servers: the CPU beside the client's, then the client's own."""


def latency_rows(report: Report, running: dict[str, Running], echo: tuple[int, int]) -> None:
    """Round trips of each broker: raw-socket ones beside the echo floor, then confluent-kafka's.

    Each figure is the median of RUNS rounds, the brokers taking turns round by round (who goes
    first alternating) as in alternating_runs, the broker waiting its turn in_background: Kafka's
    idle JVM keeps its compiler and collector threads busy, asyncbroker idle does not. Taken once
    per broker, one after the other, the confluent-kafka p50 came out 0.90x Kafka's in one sitting
    where four alternating rounds right after had asyncbroker ahead in every round."""
    figures: dict[str, dict[str, list[float]]] = {kind: defaultdict(list) for kind in running}
    for r in running.values():
        produce(r.bootstrap, "latency", 1, 100, "-1")  # create the topic
    frame = produce_frame("latency")
    for i in range(RUNS):
        for kind in (list(running) if i % 2 == 0 else list(reversed(running))):
            r, seen = running[kind], figures[kind]
            with in_background([o.pid for other, o in running.items() if other != kind]):
                port = int(r.bootstrap.rsplit(":", 1)[1])
                for placement, same_cpu in LATENCY_PLACEMENTS:
                    trips = round_trips_beside_echo(port, r.pid, *echo, frame, LATENCY_COUNT, same_cpu=same_cpu)
                    (p50, p99), (floor50, floor99) = trips.ours, trips.floor
                    for name, value in (("floor50", floor50), ("floor99", floor99), ("p50", p50), ("p99", p99),
                                        ("ratio50", p50 / floor50), ("ratio99", p99 / floor99),
                                        ("cpu", trips.our_cpu_us), ("floor_cpu", trips.floor_cpu_us)):
                        seen[name + placement].append(value)
                for wait, poll_timeout in CLIENT_WAITS:
                    p50, p99 = client_latency(r.bootstrap, "latency", LATENCY_COUNT, poll_timeout)
                    seen["client50" + wait].append(p50)
                    seen["client99" + wait].append(p99)
    for kind in running:
        median = {name: statistics.median(values) for name, values in figures[kind].items()}
        for placement, same_cpu in LATENCY_PLACEMENTS:
            target = "" if same_cpu else "<= 1.5"
            report.add(kind, f"uvloop echo round trip p50 beside it{placement}", median["floor50" + placement], "ms",
                       "the floor", higher_is_better=False, fmt="{:.3f}",
                       note=f"p99 {median['floor99' + placement]:.3f} ms")
            report.add(kind, f"acks=-1 round trip p50, raw socket{placement}", median["p50" + placement], "ms", "",
                       higher_is_better=False, fmt="{:.3f}")
            report.add(kind, f"acks=-1 round trip p99, raw socket{placement}", median["p99" + placement], "ms", "",
                       higher_is_better=False, fmt="{:.3f}")
            # The median of each round's ratio: a round's broker and echo figures share its conditions.
            report.add(kind, f"acks=-1 round trip p50 / echo's{placement}", median["ratio50" + placement], "x",
                       target, higher_is_better=False, fmt="{:.2f}")
            report.add(kind, f"acks=-1 round trip p99 / echo's{placement}", median["ratio99" + placement], "x",
                       target, higher_is_better=False, fmt="{:.2f}")
            report.add(kind, f"server CPU per acks=-1 round trip{placement}", median["cpu" + placement], "us", "",
                       higher_is_better=False, fmt="{:.1f}", note=f"the echo's {median['floor_cpu' + placement]:.1f} us")
        for wait, _ in CLIENT_WAITS:
            report.add(kind, f"acks=-1 produce p50, confluent-kafka{wait}", median["client50" + wait], "ms", "",
                       higher_is_better=False, fmt="{:.3f}")
            report.add(kind, f"acks=-1 produce p99, confluent-kafka{wait}", median["client99" + wait], "ms", "",
                       higher_is_better=False, fmt="{:.3f}")


def measure(report: Report, echo: tuple[int, int]) -> None:
    """Every row for every broker: the brokers run side by side, and each throughput row's runs
    alternate between them (alternating_runs)."""
    startup_rows(report)
    peak_kib = dict.fromkeys(BROKERS, 0)
    for partitions in (1, 4):
        with ExitStack() as stack:
            running: dict[str, Running] = {
                kind: stack.enter_context(KINDS[kind].start(partitions, BOTH_BROKERS)) for kind in BROKERS}
            print(f"--- {partitions} partition(s): {', '.join(KINDS[kind].name for kind in running)} side by side",
                  flush=True)
            if partitions == 1:
                time.sleep(1.0)  # let startup allocations settle before sampling idle memory
                for kind, r in running.items():
                    report.add(kind, "RSS idle", rss_kib(r.pid) / 1024, "MB", "<= 30", higher_is_better=False,
                               fmt="{:.1f}")
                for r in running.values():
                    warm_up_clients(r.bootstrap)
            for acks in ("1", "-1"):
                topic = f"small-acks{acks.replace('-', 'm')}"
                results = alternating_runs(
                    running, lambda r, run: produce_run(r.bootstrap, topic, SMALL_COUNT, 100, acks, run))
                add_rates(report, results, f"produce 100 B acks={acks} p={partitions}", "msgs/s",
                          ">= Kafka, >= 1.8 M on p=1", per=SMALL_COUNT)
            if partitions == 1:
                for acks in ("1", "-1"):
                    topic = f"parallel-acks{acks.replace('-', 'm')}"
                    count = SMALL_COUNT * PRODUCER_PROCESSES
                    results = alternating_runs(
                        running, lambda r, run: produce_parallel_run(r.bootstrap, topic, count, 100, acks, run))
                    add_rates(report, results, f"produce 100 B acks={acks} p=1, {PRODUCER_PROCESSES} producer processes",
                              "msgs/s", ">= Kafka, >= 1.8 M", per=count)
            for r in running.values():
                warm_up_group_coordinator(r.bootstrap, "small-acks1-0")
            consumes = [(True, f"consume 100 B p={partitions}", ">= Kafka, >= 1 M on p=1")]
            if partitions == 1:
                consumes.append((False, "consume 100 B p=1, client defaults", ">= Kafka, >= 1 M"))
            for tuned, name, target in consumes:
                results = alternating_runs(
                    running, lambda r, run: consume_run(r.bootstrap, "small-acks1", partitions, SMALL_COUNT, run,
                                                        tuned=tuned))
                add_rates(report, results, name, "msgs/s", target, per=SMALL_COUNT)
                if partitions == 1:
                    # What a Fetch answer carries beyond the records: a trailing piece of a
                    # batch that the client drops (Kafka sends one, asyncbroker does not: KD-215).
                    for kind, figures in results.items():
                        report.add(kind, f"{name}: bytes sent per 100 B record", figures.written / SMALL_COUNT, "B",
                                   "", higher_is_better=False, fmt="{:.1f}")
            if partitions == 1:
                java_rows(report, running)
                results = alternating_runs(running, lambda r, run: produce_run(r.bootstrap, "large", LARGE_COUNT,
                                                                               10 * 1024, "1", run),
                                           before=clean_page_cache)
                add_rates(report, results, "produce 10 KiB acks=1", "MB/s", ">= Kafka, >= 900", scale=10 * 1024 / 1e6,
                          fmt="{:,.1f}")
                # One untimed read first, on each broker: a run is 0.2 s, and the first read after
                # the produce runs met their writeback on either broker (370-620 MB/s, then
                # 1,100-1,500), so three runs gave a median that came out of which broker drew it.
                for r in running.values():
                    consume(r.bootstrap, "large-0", 1, LARGE_COUNT)
                results = alternating_runs(running, lambda r, run: consume_run(r.bootstrap, "large", 1, LARGE_COUNT, run))
                add_rates(report, results, "consume 10 KiB", "MB/s", ">= Kafka, >= 900", scale=10 * 1024 / 1e6,
                          fmt="{:,.1f}")
                latency_rows(report, running, echo)
                large_reference_rows(report, running)
                # Idle again after those loads, the same while for both brokers: asyncbroker hands
                # the receive buffers malloc kept for it back after RELEASE_BUFFERS_AFTER_S quiet.
                time.sleep(2 * RELEASE_BUFFERS_AFTER_S + 1)
                for kind, r in running.items():
                    report.add(kind, "RSS idle after the runs above", rss_kib(r.pid) / 1024, "MB", "<= 30",
                               higher_is_better=False, fmt="{:.1f}")
            for kind, r in running.items():
                peak_kib[kind] = max(peak_kib[kind], rss_kib(r.pid, "VmHWM"))
    for kind in BROKERS:
        report.add(kind, "RSS peak", peak_kib[kind] / 1024, "MB", "<= 150", higher_is_better=False, fmt="{:.1f}")


def main() -> int:
    print(f"scale {SCALE}: {SMALL_COUNT:,} x 100 B, {LARGE_COUNT:,} x 10 KiB, {LATENCY_COUNT:,} latency samples; "
          f"brokers: {', '.join(BROKERS)}")
    keep_client_heap()
    report = Report()
    with echo_server() as echo:
        quiet = raw_round_trips(echo[0], produce_frame("latency"), LATENCY_COUNT)
        print(f"  uvloop echo floor, quiet (same Produce frame): p50 {quiet[0]:.3f} ms, p99 {quiet[1]:.3f} ms",
              flush=True)
        print(f"RESULT uvloop echo round trip p50, quiet | {quiet[0]:.3f} | ms |", flush=True)
        print(f"RESULT uvloop echo round trip p99, quiet | {quiet[1]:.3f} | ms |", flush=True)
        measure(report, echo)
    report.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
