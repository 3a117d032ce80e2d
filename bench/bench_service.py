"""Service benchmarks with confluent-kafka against a real broker subprocess.

Measures: startup to first Metadata answer, idle RSS, produce throughput of
1,000,000 x 100 B (acks=1 and -1, 1 and 4 partitions), consume of the same
from offset 0, 20,000 x 10 KiB both ways, 2,000 sequential acks=-1
produces (p50/p99), and the broker's peak RSS. Prints a report and RESULT
lines for `python -m bench`. Sizes can be scaled down with BENCH_SCALE
(e.g. BENCH_SCALE=0.1) for a quick look; the targets refer to scale 1.
"""

from __future__ import annotations

import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from asyncbroker.testing import BrokerProcess  # noqa: E402
from asyncbroker.testing.broker import serve_command  # noqa: E402

SCALE = float(os.environ.get("BENCH_SCALE", "1"))
SMALL_COUNT = int(1_000_000 * SCALE)
LARGE_COUNT = int(20_000 * SCALE)
LATENCY_COUNT = int(2_000 * max(SCALE, 0.25))


def result(name: str, value: float, unit: str, target: str, fmt: str = "{:,.0f}") -> None:
    print(f"RESULT {name} | {fmt.format(value)} | {unit} | {target}", flush=True)


def rss_kib(pid: int, key: str = "VmRSS") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def cpu_seconds(pid: int) -> float:
    """User+system CPU seconds a process has used (all threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuShare:
    """Prints how busy broker and client were during a phase (who is the bottleneck)."""

    def __init__(self, broker_pid: int, label: str) -> None:
        self.pid, self.label = broker_pid, label

    def __enter__(self) -> "CpuShare":
        self.t0, self.b0, self.c0 = time.monotonic(), cpu_seconds(self.pid), cpu_seconds(os.getpid())
        return self

    def __exit__(self, *exc: object) -> None:
        wall = time.monotonic() - self.t0
        broker, client = cpu_seconds(self.pid) - self.b0, cpu_seconds(os.getpid()) - self.c0
        print(f"  {self.label}: wall {wall:.2f} s, broker CPU {broker:.2f} s ({broker / wall:.0%}), "
              f"client CPU {client:.2f} s ({client / wall:.0%})", flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metadata_request() -> bytes:
    # Metadata v1 with a null topic array: header v1 + body.
    body = struct.pack(">hhih", 3, 1, 1, 5) + b"bench" + struct.pack(">i", -1)
    return struct.pack(">i", len(body)) + body


def startup_seconds() -> float:
    """Seconds from spawning the process to the first Metadata answer."""
    port = free_port()
    log_dir = tempfile.mkdtemp(prefix="bench-start-")
    cmd = serve_command() + ["--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
                             "--override", f"log.dirs={log_dir}"]
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            if time.monotonic() - started > 30:
                raise RuntimeError("broker did not answer Metadata in 30 s")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                    s.sendall(metadata_request())
                    size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
                    s.recv(size, socket.MSG_WAITALL)
                    return time.monotonic() - started
            except (ConnectionRefusedError, ConnectionResetError, struct.error):
                time.sleep(0.002)
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(log_dir, ignore_errors=True)


def produce(bootstrap: str, topic: str, count: int, size: int, acks: str) -> float:
    """Messages per second for `count` messages of `size` bytes (until all are acknowledged)."""
    errors: list = []
    # A global callback that fires only on errors: a per-message callback
    # costs the Python client half its produce rate.
    p = Producer({
        "bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5,
        "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000,
        "queue.buffering.max.kbytes": 1_048_576,
        "on_delivery": lambda err, _msg: errors.append(err), "delivery.report.only.error": True,
    })
    payload = os.urandom(size)
    started = time.monotonic()
    produce_ = p.produce
    for _ in range(count):
        try:
            produce_(topic, payload)
        except BufferError:
            p.poll(0.001)
            produce_(topic, payload)
    remaining = p.flush(120)
    elapsed = time.monotonic() - started
    if remaining or errors:
        raise RuntimeError(f"produce failed: {remaining} undelivered, errors {errors[:3]}")
    return count / elapsed


def consume(bootstrap: str, topic: str, partitions: int, count: int) -> float:
    c = Consumer({
        "bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
        "fetch.max.bytes": 52_428_800, "max.partition.fetch.bytes": 10_485_760,
        "queued.max.messages.kbytes": 1_048_576,
        # librdkafka pauses fetching for fetch.queue.backoff.ms (1 s) once its local
        # queue holds queued.min.messages (100k): one 10 MB fetch of 100 B records.
        "queued.min.messages": 2_000_000, "fetch.queue.backoff.ms": 10,
    })
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


def latency(bootstrap: str, topic: str, count: int) -> tuple[float, float]:
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
            p.poll(0.0001)
        samples.append(done[0] - t0)
    samples.sort()
    return samples[len(samples) // 2] * 1000, samples[int(len(samples) * 0.99)] * 1000


def main() -> int:
    print(f"scale {SCALE}: {SMALL_COUNT:,} x 100 B, {LARGE_COUNT:,} x 10 KiB, {LATENCY_COUNT:,} latency samples")
    result("startup to first Metadata", startup_seconds(), "s", "<= 0.3", "{:.3f}")
    peak_kib = 0
    # One broker per partition count: topics are auto-created with num.partitions.
    for partitions in (1, 4):
        with BrokerProcess([f"num.partitions={partitions}"]) as broker:
            pid = broker.process.pid  # type: ignore[union-attr]
            bs = broker.bootstrap
            if partitions == 1:
                time.sleep(0.5)  # let startup allocations settle before sampling idle memory
                result("broker RSS idle", rss_kib(pid) / 1024, "MB", "<= 40", "{:.1f}")
            for acks in ("1", "-1"):
                topic = f"small-acks{acks.replace('-', 'm')}"
                with CpuShare(pid, f"produce acks={acks} p={partitions}"):
                    rate = produce(bs, topic, SMALL_COUNT, 100, acks)
                result(f"produce 100 B acks={acks} p={partitions}", rate, "msgs/s", ">= 800,000")
            with CpuShare(pid, f"consume p={partitions}"):
                rate = consume(bs, "small-acks1", partitions, SMALL_COUNT)
            result(f"consume 100 B p={partitions}", rate, "msgs/s", ">= 600,000")
            if partitions == 1:
                with CpuShare(pid, "produce 10 KiB"):
                    rate = produce(bs, "large", LARGE_COUNT, 10 * 1024, "1")
                result("produce 10 KiB acks=1", rate * 10 * 1024 / 1e6, "MB/s", ">= 500", "{:,.1f}")
                with CpuShare(pid, "consume 10 KiB"):
                    rate = consume(bs, "large", 1, LARGE_COUNT)
                result("consume 10 KiB", rate * 10 * 1024 / 1e6, "MB/s", ">= 500", "{:,.1f}")
                p50, p99 = latency(bs, "latency", LATENCY_COUNT)
                result("sequential acks=-1 produce p50", p50, "ms", "<= 0.2", "{:.3f}")
                result("sequential acks=-1 produce p99", p99, "ms", "<= 1", "{:.3f}")
            peak_kib = max(peak_kib, rss_kib(pid, "VmHWM"))
    result("broker RSS peak", peak_kib / 1024, "MB", "<= 150", "{:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
