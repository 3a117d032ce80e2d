"""Tiered storage fetch (issue 21's measure): reading from the remote tier against reading the
local log, at the broker, on asyncbroker and on Kafka 4.4 in the same run.

Each broker runs with tiered storage over a local directory (asyncbroker's LocalTieredStorage;
Kafka 4.4 with the directory RemoteStorageManager plugin `make jvm` builds in tests/jvm/rsm),
and asyncbroker once more over S3 on a local moto server (asyncbroker.testing.S3Server): an
extra row with no Kafka counterpart. One broker at a time, each stopped before the next.

On each, two one-partition topics with 8 MiB segments get the same ~200 MB of 1 KiB values
(16 KiB producer batches): `tiered` (remote.storage.enable, local.retention.bytes=1: once
tiered, every segment but the active one is only remote; the bench waits until ListOffsets -4,
the earliest local offset, is the active segment's base offset) and `local` (not tiered). Then:

- throughput: a confluent-kafka consumer reads each topic whole from offset 0 (from `tiered`,
  all but the active segment, ~3%, comes from the remote tier), MB/s and records/s, the median
  of five passes alternating local and tiered (the first ones also warm the JIT and the remote
  index caches; BENCH_PASSES), with the broker's CPU (share of one core and ms per MB) and the
  bytes it read (/proc rchar: file reads and sendfile, not a socket's recv) per byte delivered;
  over S3, moto's CPU and the S3 requests instead;
- latency: sequential single-batch Fetch requests (partition_max_bytes=1: the first batch whole,
  KIP-74) from a raw socket at random offsets in the remote tier of `tiered`, then in `local`;
  p50/p99 from sending the request to reading the whole answer, and the bytes the broker read
  per fetch (over S3, the S3 requests). Page cache warm for both (the throughput passes read everything just before).

The client (Python, librdkafka) runs on the same 2 cores as the broker: its CPU is printed too.
moto keeps objects in memory and answers ranged GETs by reading the whole object, so the S3 row
is our client path over loopback (boto3, HTTP) plus moto's cost, not a real store's.

    .venv/bin/python bench/bench_tiered_fetch.py
    BENCH_SCALE=0.1 BENCH_BROKERS=asyncbroker .venv/bin/python bench/bench_tiered_fetch.py

BENCH_BROKERS names the runs (default asyncbroker,kafka,asyncbroker-s3). Prints a table and
RESULT lines for `python -m bench`; asserts nothing about speed.
"""

from __future__ import annotations

import datetime
import os
import random
import resource
import shutil
import struct
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "integration"))

from asyncbroker.testing.process_stats import cpu_seconds, proc_number  # noqa: E402
from bench.bench_service import SCALE, CpuShare, Report, percentiles, warm_up_group_coordinator  # noqa: E402

MIB = 1 << 20
SEGMENT_BYTES = 8 * MIB
VALUE = 1024
BATCH_BYTES = 16 * 1024  # the Java producer's default batch.size
COUNT = int(200_000 * SCALE)  # ~205 MB of values at SCALE=1
LATENCY_SAMPLES = int(1_000 * max(SCALE, 0.2))
PASSES = int(os.environ.get("BENCH_PASSES", "5"))
TASK_INTERVAL_MS = "500"  # remote.log.manager.task.interval.ms and log.retention.check.interval.ms, both brokers
RUNS = os.environ.get("BENCH_BROKERS", "asyncbroker,kafka,asyncbroker-s3").split(",")


@dataclass
class TieredBroker:
    bootstrap: str
    pid: int
    log_dir: Path
    store_pid: int | None = None  # the moto server's process, when the remote tier is S3
    store_requests: Callable[[], int] | None = None  # the S3 requests it has answered


@contextmanager
def asyncbroker(backend: str) -> Iterator[TieredBroker]:
    """asyncbroker with tiered storage over a directory ("local") or moto's S3 ("s3")."""
    from asyncbroker.testing import BrokerProcess
    from asyncbroker.testing.s3_server import S3Server
    from jvm.kafka_jvm import asyncbroker_tiered_overrides

    tmp = Path(tempfile.mkdtemp(prefix="bench-tiered-"))
    try:
        with ExitStack() as stack:
            store_pid, store_requests = None, None
            if backend == "s3":
                s3 = stack.enter_context(S3Server())
                s3.create_bucket("bench")
                assert s3.process is not None
                store_pid = s3.process.pid
                store_requests = lambda: s3.requests  # noqa: E731
                overrides = ["remote.log.storage.system.enable=true",
                             "remote.log.storage.manager.class.name=asyncbroker.S3RemoteStorageManager",
                             *s3.broker_overrides("bench", prefix="tiered"),
                             f"remote.log.manager.task.interval.ms={TASK_INTERVAL_MS}"]
            else:
                overrides = asyncbroker_tiered_overrides(tmp / "remote")
            broker = stack.enter_context(BrokerProcess(
                [*overrides, "num.partitions=1", f"log.retention.check.interval.ms={TASK_INTERVAL_MS}",
                 "log.initial.task.delay.ms=0"], log_dir=tmp / "logs", startup_timeout=60))
            assert broker.process is not None
            yield TieredBroker(broker.bootstrap, broker.process.pid, tmp / "logs", store_pid, store_requests)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def kafka() -> Iterator[TieredBroker]:
    """Kafka 4.4 with tiered storage over a directory (the rsm plugin), the same intervals."""
    from jvm.kafka_jvm import KafkaServer

    # bench_service's Kafka settings, but retention checked as often as asyncbroker's here:
    # local retention is what leaves the tiered segments only remote.
    with KafkaServer({"num.partitions": "1", "log.cleaner.backoff.ms": "15000",
                      "log.retention.check.interval.ms": TASK_INTERVAL_MS,
                      "group.consumer.assignment.interval.ms": "1000"},
                     heap="1g", tiered_storage=True, as_scripts=True) as server:
        assert server.process is not None
        yield TieredBroker(server.bootstrap, server.process.pid, server.log_dir)


def read_chars(pid: int) -> int:
    """Bytes the process has read with read(2)-like calls and sendfile(2) (/proc rchar: files,
    and sockets read with read, not with recv)."""
    return proc_number(pid, "io", "rchar")


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# -- producing and waiting for the tier ---------------------------------------------------------


def produce(bootstrap: str, topic: str, count: int) -> None:
    errors: list[object] = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 5, "batch.size": BATCH_BYTES,
                  "queue.buffering.max.messages": 1_000_000, "queue.buffering.max.kbytes": 1_048_576,
                  "on_delivery": lambda err, _msg: errors.append(err), "delivery.report.only.error": True})
    payload = os.urandom(VALUE)
    for _ in range(count):
        while True:
            try:
                p.produce(topic, payload)
                break
            except BufferError:  # the client's queue is full: wait for deliveries to free it
                p.poll(0.005)
    remaining = p.flush(300)
    if remaining or errors:
        raise RuntimeError(f"produce to {topic} failed: {remaining} undelivered, errors {errors[:3]}")


def list_offset(bootstrap: str, topic: str, timestamp: int) -> int:
    """ListOffsets v9 (-4 earliest local and -5 latest tiered are not in confluent-kafka's OffsetSpec)."""
    from kio.schema.list_offsets.v9 import request as lo9
    from raw_client import RawClient

    with RawClient(bootstrap) as client:
        resp = client.request(lo9.ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=(
            lo9.ListOffsetsTopic(name=topic, partitions=(
                lo9.ListOffsetsPartition(partition_index=0, timestamp=timestamp),)),)))
    found = resp.topics[0].partitions[0]
    if found.error_code != 0:
        raise RuntimeError(f"ListOffsets {timestamp} on {topic}: error {found.error_code}")
    return int(found.offset)


def wait_until_tiered(broker: TieredBroker, topic: str, timeout: float) -> tuple[int, float]:
    """Wait until every segment but the active one is only remote: earliest local (-4) is the
    active segment's base offset (the newest segment file's name once producing has ended) and
    latest tiered (-5) the offset before it. Returns that offset and the seconds it took."""
    active_base = max(int(p.name[:20]) for p in (broker.log_dir / f"{topic}-0").glob("*.log"))
    started = time.monotonic()
    deadline = started + timeout
    while True:
        local_start = list_offset(broker.bootstrap, topic, -4)
        tiered_end = list_offset(broker.bootstrap, topic, -5)
        if local_start == active_base and tiered_end == active_base - 1:
            return active_base, time.monotonic() - started
        if time.monotonic() > deadline:
            raise RuntimeError(f"{topic} not tiered after {timeout:.0f} s: earliest local {local_start}, "
                               f"latest tiered {tiered_end}, active segment base {active_base}")
        time.sleep(0.2)  # polling a condition, bounded by the deadline


# -- throughput -----------------------------------------------------------------------------------


@dataclass
class Pass:
    seconds: float
    bytes: int
    broker_cpu: float  # seconds
    broker_read: int  # rchar bytes
    client_cpu: float  # seconds
    store_cpu: float  # seconds (moto), 0 without
    store_requests: int  # S3 requests (moto), 0 without


def consume_all(broker: TieredBroker, topic: str, count: int) -> Pass:
    """Read `topic` whole from offset 0 with confluent-kafka (bench_service.consume's settings),
    checking every offset arrives once and in order."""
    c = Consumer({
        "bootstrap.servers": broker.bootstrap, "group.id": "bench", "enable.auto.commit": False,
        "fetch.max.bytes": 52_428_800, "max.partition.fetch.bytes": 10_485_760,
        "queued.max.messages.kbytes": 1_048_576, "queued.min.messages": 2_000_000, "fetch.queue.backoff.ms": 10,
    })
    c.list_topics(topic, timeout=30)  # connected, with the metadata, before the clock starts
    c.assign([TopicPartition(topic, 0, 0)])
    got = size = 0
    expected = 0
    store0 = cpu_seconds(broker.store_pid) if broker.store_pid else 0.0
    requests0 = broker.store_requests() if broker.store_requests else 0
    read0, client0 = read_chars(broker.pid), own_cpu_seconds()
    with CpuShare(broker.pid) as cpu:
        deadline = time.monotonic() + 600
        while got < count and time.monotonic() < deadline:
            for m in c.consume(num_messages=min(10_000, count - got), timeout=1.0):
                if m.error() is not None:
                    raise RuntimeError(f"consuming {topic}: {m.error()}")
                if m.offset() != expected:
                    raise RuntimeError(f"consuming {topic}: offset {m.offset()}, expected {expected}")
                expected += 1
                got += 1
                size += len(m.value())
    result = Pass(cpu.wall, size, cpu.broker_cpu, read_chars(broker.pid) - read0, own_cpu_seconds() - client0,
                  (cpu_seconds(broker.store_pid) - store0) if broker.store_pid else 0.0,
                  (broker.store_requests() - requests0) if broker.store_requests else 0)
    c.close()
    if got < count:
        raise RuntimeError(f"consumed {got} of {count} from {topic}")
    return result


# -- latency --------------------------------------------------------------------------------------


def fetch_request(topic: str, offset: int) -> object:
    from kio.schema.fetch.v12 import request as fetch12

    return fetch12.FetchRequest(
        replica_id=-1, max_wait=datetime.timedelta(milliseconds=500), min_bytes=1, max_bytes=1, isolation_level=0,
        session_id=0, session_epoch=-1, forgotten_topics_data=(), rack_id="",
        topics=(fetch12.FetchTopic(topic=topic, partitions=(
            fetch12.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1),)),))


def check_answer(frame: bytes, correlation: int, offset: int) -> int:
    """The records' size, after checking the answer holds the batch with `offset` (Fetch v12:
    flexible header, so a tagged-fields byte after the correlation id)."""
    from wire.messages import decode_response

    assert struct.unpack_from(">i", frame, 0)[0] == correlation
    resp = decode_response(1, 12, frame[5:])
    part = resp.responses[0].partitions[0]
    if resp.error_code or part.error_code:
        raise RuntimeError(f"fetch at {offset}: error {resp.error_code or part.error_code}")
    records = part.records or b""
    base, length = struct.unpack_from(">qi", records, 0)
    last = base + struct.unpack_from(">i", records, 23)[0]
    if not (base <= offset <= last) or len(records) != 12 + length:
        raise RuntimeError(f"fetch at {offset}: got one batch {base}..{last} of {len(records)} B")
    return len(records)


def fetch_latencies(broker: TieredBroker, topic: str, first: int, end: int,
                    samples: int) -> tuple[list[float], int, int]:
    """Sequential single-batch fetches at random offsets in [first, end) on one connection:
    seconds per fetch, and the bytes the broker read (rchar) and the S3 requests meanwhile."""
    from raw_client import RawClient

    from wire.headers import encode_request_header
    from wire.messages import encode_request

    rng = random.Random(21)
    out: list[float] = []
    with RawClient(broker.bootstrap, timeout=30) as client:
        for i in range(samples + 20):
            if i == 20:  # after the warm-up
                read0 = read_chars(broker.pid)
                requests0 = broker.store_requests() if broker.store_requests else 0
            offset = rng.randrange(first, end)
            correlation = i + 1
            request = fetch_request(topic, offset)
            body = encode_request_header(1, 12, correlation, "bench") + encode_request(request)
            frame = struct.pack(">i", len(body)) + body  # encoded before the clock starts
            t0 = time.perf_counter()
            client.send_raw(frame)
            frame = client.recv_frame()
            took = time.perf_counter() - t0
            check_answer(frame, correlation, offset)
            if i >= 20:
                out.append(took)
    return out, read_chars(broker.pid) - read0, (broker.store_requests() - requests0) if broker.store_requests else 0


# -- the run ---------------------------------------------------------------------------------------


def measure(run: str, report: Report) -> None:
    kind = "kafka" if run == "kafka" else "asyncbroker"
    suffix = " S3 (moto)" if run == "asyncbroker-s3" else ""
    start = {"asyncbroker": lambda: asyncbroker("local"), "asyncbroker-s3": lambda: asyncbroker("s3"),
             "kafka": kafka}[run]
    print(f"--- {run}", flush=True)
    with start() as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap, "log_level": 3})
        topics = {
            "tiered": {"remote.storage.enable": "true", "local.retention.bytes": "1",
                       "segment.bytes": str(SEGMENT_BYTES)},
            "local": {"segment.bytes": str(SEGMENT_BYTES)},
        }
        for name, future in admin.create_topics([NewTopic(t, 1, 1, config=c) for t, c in topics.items()]).items():
            future.result(60)
        del admin  # a librdkafka handle: gone before the broker is, or it logs the disconnection
        t0 = time.monotonic()
        for topic in topics:
            produce(broker.bootstrap, topic, COUNT)
        produced = time.monotonic() - t0
        local_start, waited = wait_until_tiered(broker, "tiered", max(120.0, 300 * SCALE))
        print(f"  produced 2 x {COUNT:,} x {VALUE} B in {produced:.1f} s; tiered up to offset {local_start:,} "
              f"({local_start / COUNT:.0%}) {waited:.1f} s later", flush=True)
        warm_up_group_coordinator(broker.bootstrap, "local")

        passes: dict[str, list[Pass]] = {"local": [], "tiered": []}
        for _ in range(PASSES):
            for topic in ("local", "tiered"):
                passes[topic].append(consume_all(broker, topic, COUNT))
        for topic, ps in passes.items():
            print(f"  {topic}: " + ", ".join(f"{p.bytes / p.seconds / 1e6:,.1f}" for p in ps) + " MB/s", flush=True)
        median = {topic: sorted(ps, key=lambda p: p.seconds)[len(ps) // 2] for topic, ps in passes.items()}
        mb_s = {topic: p.bytes / p.seconds / 1e6 for topic, p in median.items()}
        for topic, label in (("tiered", "remote tier"), ("local", "local log")):
            if topic == "local" and suffix:
                continue  # the same local read as the directory run's
            p = median[topic]
            note = f"broker CPU {p.broker_cpu / p.seconds:.0%}, client CPU {p.client_cpu / p.seconds:.0%}"
            if broker.store_pid:
                note += f", moto CPU {p.store_cpu / p.seconds:.0%}, {p.store_requests} S3 requests"
            else:  # a socket's recv is not in rchar: not measured over S3
                note += f", broker read {p.broker_read / p.bytes:.2f} B per B delivered"
            report.add(kind, f"consume, {label}{suffix}", mb_s[topic], "MB/s", ">= Kafka",
                       higher_is_better=True, fmt="{:,.1f}", note=note)
            report.add(kind, f"consume records, {label}{suffix}", COUNT / p.seconds, "records/s",
                       ">= Kafka", higher_is_better=True)
            report.add(kind, f"broker CPU per MB, {label}{suffix}", p.broker_cpu * 1e3 / (p.bytes / 1e6),
                       "ms/MB", "<= Kafka", higher_is_better=False, fmt="{:.2f}")
        if not suffix:
            report.add(kind, "consume, remote tier / local log", mb_s["tiered"] / mb_s["local"], "x",
                       ">= Kafka", higher_is_better=True, fmt="{:.2f}")

        p50s = {}
        for name, label, topic, end in (("remote", "remote tier", "tiered", local_start), ("local", "local log", "local", COUNT)):
            if name == "local" and suffix:
                continue
            samples, read, requests = fetch_latencies(broker, topic, 0, end, LATENCY_SAMPLES)
            p50, p99 = percentiles(samples)
            p50s[name] = p50
            note = (f"{requests / len(samples):.2f} S3 requests per fetch" if broker.store_pid
                    else f"broker read {read / len(samples) / 1024:.0f} KiB per fetch")
            report.add(kind, f"1-batch fetch p50, {label}{suffix}", p50, "ms", "<= Kafka",
                       higher_is_better=False, fmt="{:.3f}", note=note)
            report.add(kind, f"1-batch fetch p99, {label}{suffix}", p99, "ms", "<= Kafka",
                       higher_is_better=False, fmt="{:.3f}")
        if "local" in p50s:
            report.add(kind, "1-batch fetch p50, remote tier / local log", p50s["remote"] / p50s["local"], "x",
                       "<= Kafka", higher_is_better=False, fmt="{:.2f}")


def main() -> int:
    print(f"scale {SCALE}: {COUNT:,} x {VALUE} B ({COUNT * VALUE / 1e6:,.0f} MB) per topic, {SEGMENT_BYTES // MIB} MiB "
          f"segments, {BATCH_BYTES // 1024} KiB batches, {LATENCY_SAMPLES:,} latency samples each; runs: "
          f"{', '.join(RUNS)}", flush=True)
    report = Report()
    for run in RUNS:
        measure(run, report)
    report.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
