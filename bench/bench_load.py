"""Load: many concurrent connections and partitions, mixed produce/fetch/metadata, on
asyncbroker and on Kafka 4.4 in the same run.

    .venv/bin/python bench/bench_load.py [--connections 1000] [--partitions 1000] [--seconds 20]
    BENCH_BROKERS=asyncbroker .venv/bin/python bench/bench_load.py      # skip Kafka

One asyncio client process opens N connections to a broker subprocess; each connection loops
over a random mix (60% Produce acks=1 of a 200 B record, 30% Fetch of a random partition,
10% Metadata of the topic) for the given time. Reported: requests/s, p50/p99/max latency per
kind, errors, the broker's CPU per request, its RSS and open fds before, at peak and after
the clients leave (an fd leak shows as "after" above "before"), and, before the load, the
quiet round trip of a Metadata request for the whole topic (the median of 50). Each figure is
printed with Kafka's beside it and the ratio. The client keeps itself out of the figures: its
answers are read for their error code without being decoded (one in 32, at random, is decoded
whole and must agree), and its cyclic GC is off while the load runs.
tests/integration/test_load.py runs a bounded form on asyncbroker and asserts no errors, no fd
leak and bounded RSS; numbers are only printed.
"""
from __future__ import annotations

import argparse
import asyncio
import datetime
import gc
import os
import random
import resource
import struct
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kio.schema.create_topics.v5 import request as ct5  # noqa: E402
from kio.schema.fetch.v12 import request as fetch12  # noqa: E402
from kio.schema.metadata.v12 import request as meta12  # noqa: E402
from kio.schema.produce.v9 import request as produce9  # noqa: E402

from asyncbroker.testing import BrokerProcess  # noqa: E402
from asyncbroker.testing.process_stats import cpu_seconds, fd_count, rss_kib  # noqa: E402
from wire.headers import encode_request_header, response_header_version  # noqa: E402
from wire.messages import decode_response, encode_request  # noqa: E402
from wire.records import Record, build_batch  # noqa: E402

TOPIC = "load"


@dataclass
class LoadResult:
    connections: int
    partitions: int
    seconds: float
    requests: int = 0
    errors: list[str] = field(default_factory=list)
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    rss_kib: dict[str, int] = field(default_factory=dict)
    fds: dict[str, int] = field(default_factory=dict)
    topic_create_s: float = 0.0
    metadata_quiet_ms: float = 0.0  # quiet, before the load: the median of 50 Metadata of the topic
    # The broker's CPU seconds while the load ran. The clients send one request at a time, so a
    # request's wait is about connections / rate, and the rate is what the broker's CPU allows:
    # its CPU per request is the broker's own part of p99 (the client shares the machine).
    broker_cpu_s: float = 0.0

    @property
    def broker_cpu_per_request_us(self) -> float:
        return self.broker_cpu_s / self.requests * 1e6 if self.requests else 0.0

    def percentile(self, kind: str, q: float) -> float:
        values = sorted(self.latencies[kind])
        if not values:
            return 0.0
        return values[min(len(values) - 1, int(len(values) * q))] * 1000

    def report(self) -> str:
        lines = [f"load: {self.connections} connections, {self.partitions} partitions, {self.seconds:.0f}s: "
                 f"{self.requests} requests ({self.requests / self.seconds:,.0f}/s), {len(self.errors)} errors; "
                 f"topic ready in {self.topic_create_s:.1f}s; quiet Metadata of the topic p50 "
                 f"{self.metadata_quiet_ms:.2f} ms; broker CPU {self.broker_cpu_per_request_us:.0f} us per request"]
        for kind in sorted(self.latencies):
            lines.append(f"  {kind:9} n={len(self.latencies[kind]):7}  p50 {self.percentile(kind, 0.5):7.2f} ms  "
                         f"p99 {self.percentile(kind, 0.99):7.2f} ms  max {self.percentile(kind, 1.0):7.2f} ms")
        lines.append("  broker RSS MiB " + ", ".join(f"{k} {v // 1024}" for k, v in self.rss_kib.items())
                     + "; open fds " + ", ".join(f"{k} {v}" for k, v in self.fds.items()))
        return "\n".join(lines)


class Client:
    """One connection. Requests are pre-encoded bodies (only the header is built per call) and
    answers are read for their first error code without decoding them: with 1,000 connections
    on a 2-core machine the client would otherwise be what is measured (kio decoding a
    1,000-partition Metadata answer costs more than the broker's serving it). Every
    answer in FULL_DECODE_EVERY, at random, is also decoded whole and must agree."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.cid = 0

    @classmethod
    async def connect(cls, host: str, port: int) -> "Client":
        reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer)

    async def call(self, entity: object) -> object:
        """Send a kio request and decode the answer (set-up calls)."""
        key, ver = entity.__api_key__, entity.__version__  # type: ignore[attr-defined]
        data = await self.call_encoded(key, ver, encode_request(entity))
        return decode_response(key, ver, data[_header_size(key, ver):])

    async def call_encoded(self, key: int, ver: int, body: bytes) -> bytes:
        """Send a pre-encoded request body; returns the answer frame past its size."""
        self.cid += 1
        frame = encode_request_header(key, ver, self.cid, "load") + body
        self.writer.write(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", await self.reader.readexactly(4))[0]
        data = await self.reader.readexactly(size)
        cid = struct.unpack_from(">i", data)[0]
        if cid != self.cid:
            raise AssertionError(f"correlation id {cid} != {self.cid}")
        return data

    def close(self) -> None:
        self.writer.close()


FULL_DECODE_EVERY = 32
"""One answer in this many is decoded whole: drawn at random, not every 32nd of each connection.
The connections advance in step (one request per round of all of them), so every 32nd answer
of each fell in the same round: a thousand whole decodes at once held the client's loop for a
few hundred ms every ~2.4 s, and that stall was the load's p99 on either broker."""


def _header_size(key: int, ver: int) -> int:
    return 4 + (1 if response_header_version(key, ver) >= 1 else 0)


def _uvarint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def _skip_compact_string(data: bytes, pos: int) -> int:
    n, pos = _uvarint(data, pos)
    return pos + max(n - 1, 0)


def _skip_tagged_fields(data: bytes, pos: int) -> int:
    count, pos = _uvarint(data, pos)
    for _ in range(count):
        _, pos = _uvarint(data, pos)
        size, pos = _uvarint(data, pos)
        pos += size
    return pos


def first_error_code(kind: str, data: bytes) -> int:
    """The error code of the one partition (Produce, Fetch) or topic (Metadata) asked about,
    read from the answer's bytes (Produce v9, Fetch v12, Metadata v12: all flexible)."""
    pos = _skip_tagged_fields(data, 4)  # response header v1: correlation id, tagged fields
    if kind == "produce":
        pos = _uvarint(data, pos)[1]  # responses
        pos = _skip_compact_string(data, pos)  # topic name
        pos = _uvarint(data, pos)[1] + 4  # partition_responses, index
        return int(struct.unpack_from(">h", data, pos)[0])
    if kind == "fetch":
        pos += 4  # throttle time
        top = struct.unpack_from(">h", data, pos)[0]
        if top:
            return int(top)
        pos = _uvarint(data, pos + 2 + 4)[1]  # session id, responses
        pos = _skip_compact_string(data, pos)  # topic name
        pos = _uvarint(data, pos)[1] + 4  # partitions, partition index
        return int(struct.unpack_from(">h", data, pos)[0])
    pos += 4  # throttle time
    brokers, pos = _uvarint(data, pos)
    for _ in range(max(brokers - 1, 0)):
        pos = _skip_compact_string(data, pos + 4)  # node id, host
        pos = _skip_compact_string(data, pos + 4)  # port, rack
        pos = _skip_tagged_fields(data, pos)
    pos = _skip_compact_string(data, pos) + 4  # cluster id, controller id
    pos = _uvarint(data, pos)[1]  # topics
    return int(struct.unpack_from(">h", data, pos)[0])


def decoded_error_code(kind: str, data: bytes) -> int:
    key, ver = _VERSIONS[kind]
    resp: Any = decode_response(key, ver, data[_header_size(key, ver):])
    if kind == "produce":
        return int(resp.responses[0].partition_responses[0].error_code)
    if kind == "fetch":
        return int(resp.error_code or resp.responses[0].partitions[0].error_code)
    return int(resp.topics[0].error_code)


_VERSIONS = {"produce": (0, 9), "fetch": (1, 12), "metadata": (3, 12)}


def _produce(partition: int, value: bytes) -> object:
    batch = build_batch([Record(offset=0, timestamp=int(time.time() * 1000), key=None, value=value, headers=[])])
    return produce9.ProduceRequest(transactional_id=None, acks=1, timeout=datetime.timedelta(seconds=30),
                                   topic_data=(produce9.TopicProduceData(name=TOPIC, partition_data=(
                                       produce9.PartitionProduceData(index=partition, records=batch),)),))


def _fetch(partition: int) -> object:
    return fetch12.FetchRequest(
        cluster_id=None, replica_id=-1, max_wait=datetime.timedelta(0), min_bytes=0, max_bytes=64 << 10,
        isolation_level=0, session_id=0, session_epoch=-1,
        topics=(fetch12.FetchTopic(topic=TOPIC, partitions=(fetch12.FetchPartition(
            partition=partition, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1,
            log_start_offset=-1, partition_max_bytes=16 << 10),)),),
        forgotten_topics_data=(), rack_id="")


METADATA = meta12.MetadataRequest(topics=(meta12.MetadataRequestTopic(topic_id=None, name=TOPIC),),
                                  allow_auto_topic_creation=False, include_topic_authorized_operations=False)


class Requests:
    """Every request the load sends, encoded once: a produce and a fetch per partition
    (the same 200 B record each time), and the Metadata request."""

    def __init__(self, partitions: int) -> None:
        value = b"v" * 200
        self.produce = [encode_request(_produce(p, value)) for p in range(partitions)]
        self.fetch = [encode_request(_fetch(p)) for p in range(partitions)]
        self.metadata = encode_request(METADATA)


async def _worker(client: Client, result: LoadResult, requests: Requests, deadline: float,
                  rng: random.Random) -> None:
    partitions = len(requests.produce)
    while time.monotonic() < deadline:
        r = rng.random()
        kind = "produce" if r < 0.6 else "fetch" if r < 0.9 else "metadata"
        partition = rng.randrange(partitions)
        body = (requests.produce[partition] if kind == "produce" else requests.fetch[partition]
                if kind == "fetch" else requests.metadata)
        key, ver = _VERSIONS[kind]
        t0 = time.perf_counter()
        try:
            data = await client.call_encoded(key, ver, body)
        except Exception as exc:  # noqa: BLE001 - every failure is reported
            result.errors.append(f"{kind}: {type(exc).__name__}: {exc}")
            return
        result.latencies[kind].append(time.perf_counter() - t0)
        result.requests += 1
        err = first_error_code(kind, data)
        if rng.random() < 1 / FULL_DECODE_EVERY:
            full = decoded_error_code(kind, data)
            if full != err:
                result.errors.append(f"{kind} p{partition}: read error {err}, decoded {full}")
        if err:
            result.errors.append(f"{kind} p{partition}: error {err}")


@dataclass
class Target:
    """A broker under load: where it listens, and its process (for RSS and fds)."""

    name: str
    host: str
    port: int
    pid: int


async def wait_for_leaders(client: Client, partitions: int, timeout: float = 120.0) -> None:
    """Until Metadata shows every partition of the topic with a leader (Kafka's controller
    answers CreateTopics before its broker leads them all)."""
    deadline = time.monotonic() + timeout
    while True:
        resp: Any = await client.call(METADATA)
        topic = resp.topics[0]
        if topic.error_code == 0 and len(topic.partitions) == partitions \
                and all(p.error_code == 0 and p.leader_id >= 0 for p in topic.partitions):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{TOPIC}: not every partition has a leader after {timeout}s")
        await asyncio.sleep(0.1)  # polling a condition, bounded by the deadline


async def wait_for_produce(client: Client, requests: "Requests", timeout: float = 120.0) -> None:
    """Until every partition takes a record: Kafka answers NOT_LEADER_OR_FOLLOWER for a while
    after its Metadata already names the leader (its replica manager catches up with the
    metadata image). One record per partition, on both brokers alike."""
    deadline = time.monotonic() + timeout
    pending = list(range(len(requests.produce)))
    while pending:
        waiting = []
        for partition in pending:
            data = await client.call_encoded(0, 9, requests.produce[partition])
            err = first_error_code("produce", data)
            if err == 6:  # NOT_LEADER_OR_FOLLOWER
                waiting.append(partition)
            elif err:
                raise RuntimeError(f"produce to partition {partition}: error {err}")
        pending = waiting
        if pending and time.monotonic() > deadline:
            raise RuntimeError(f"{len(pending)} partitions still refuse produce after {timeout}s")
        if pending:
            await asyncio.sleep(0.1)  # polling a condition, bounded by the deadline


async def quiet_metadata(client: Client, body: bytes, result: LoadResult) -> None:
    times = []
    for _ in range(50):
        t0 = time.perf_counter()
        data = await client.call_encoded(3, 12, body)
        times.append((time.perf_counter() - t0) * 1000)
        if first_error_code("metadata", data):
            raise RuntimeError(f"Metadata of {TOPIC}: error {first_error_code('metadata', data)}")
    result.metadata_quiet_ms = sorted(times)[len(times) // 2]


async def run_load_async(target: Target, connections: int, partitions: int, seconds: float) -> LoadResult:
    result = LoadResult(connections, partitions, seconds)
    pid, host, port = target.pid, target.host, target.port
    admin = await Client.connect(host, port)
    started = time.monotonic()
    resp = await admin.call(ct5.CreateTopicsRequest(topics=(ct5.CreatableTopic(
        name=TOPIC, num_partitions=partitions, replication_factor=1, assignments=(), configs=()),),
        timeout=datetime.timedelta(seconds=120), validate_only=False))
    err = resp.topics[0].error_code  # type: ignore[attr-defined]
    if err:
        raise RuntimeError(f"create topic: error {err}")
    await wait_for_leaders(admin, partitions)
    requests = Requests(partitions)
    await wait_for_produce(admin, requests)
    result.topic_create_s = time.monotonic() - started
    await quiet_metadata(admin, requests.metadata, result)
    admin.close()
    result.rss_kib["before"] = rss_kib(pid)
    result.fds["before"] = fd_count(pid)
    clients: list[Client] = []
    for i in range(0, connections, 100):  # connect in waves (the listen backlog is finite)
        clients += await asyncio.gather(*(Client.connect(host, port) for _ in range(min(100, connections - i))))
    rng = random.Random(1)
    # The client's own cyclic GC paused its loop for tens of ms at a time, and every answer that
    # arrived meanwhile was counted late: set up, then no collections while the load runs.
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        deadline = time.monotonic() + seconds
        cpu_before = cpu_seconds(pid)
        workers = [asyncio.ensure_future(_worker(c, result, requests, deadline, random.Random(rng.random())))
                   for c in clients]
        peak_rss = peak_fds = 0
        while not all(w.done() for w in workers):
            peak_rss, peak_fds = max(peak_rss, rss_kib(pid)), max(peak_fds, fd_count(pid))
            await asyncio.wait(workers, timeout=0.5)
        result.broker_cpu_s = cpu_seconds(pid) - cpu_before
    finally:
        gc.enable()
        gc.unfreeze()
    result.rss_kib["peak"] = peak_rss
    result.fds["peak"] = peak_fds
    for c in clients:
        c.close()
    # The broker notices the closes asynchronously: wait (bounded) for its fds to come back.
    settle = time.monotonic() + 15
    while time.monotonic() < settle and fd_count(pid) > result.fds["before"]:
        await asyncio.sleep(0.1)
    result.fds["after"] = fd_count(pid)
    result.rss_kib["after"] = rss_kib(pid)
    return result


def _raise_fd_limit(connections: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = connections + 256
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))


def run_load(connections: int, partitions: int, seconds: float, overrides: list[str] | None = None) -> LoadResult:
    """The load on asyncbroker, as `make run` starts it (plus `overrides`)."""
    _raise_fd_limit(connections)
    with BrokerProcess(list(overrides or [])) as broker:
        target = Target("asyncbroker", broker.host, broker.port, broker.process.pid)  # type: ignore[union-attr]
        return asyncio.run(run_load_async(target, connections, partitions, seconds))


def run_load_kafka(connections: int, partitions: int, seconds: float) -> LoadResult:
    """The same load on a single-node KRaft Kafka 4.4 (the jars `make jvm` fetched)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from jvm.kafka_jvm import KafkaServer

    _raise_fd_limit(connections)
    with KafkaServer({"num.partitions": "1"}, heap="1g", as_scripts=True) as kafka:
        assert kafka.process is not None
        target = Target("kafka", "127.0.0.1", kafka.port, kafka.process.pid)
        return asyncio.run(run_load_async(target, connections, partitions, seconds))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("BENCH_SECONDS", "20")))
    args = parser.parse_args()
    brokers = os.environ.get("BENCH_BROKERS", "asyncbroker,kafka").split(",")
    results: dict[str, LoadResult] = {}
    for name in brokers:
        run = run_load if name == "asyncbroker" else run_load_kafka
        results[name] = run(args.connections, args.partitions, args.seconds)
        print(f"{name}: {results[name].report()}", flush=True)
        for e in results[name].errors[:10]:
            print("  error:", e)
    shape = f"({args.connections} conns, {args.partitions} partitions)"

    def row(name: str, unit: str, value: Callable[[LoadResult], float], lower_is_better: bool = True) -> None:
        ours = value(results["asyncbroker"]) if "asyncbroker" in results else None
        theirs = value(results["kafka"]) if "kafka" in results else None
        versus = ""
        if ours is not None and theirs is not None and ours > 0 and theirs > 0:
            versus = f" (Kafka 4.4 {theirs:,.3f}, ratio {(theirs / ours if lower_is_better else ours / theirs):.2f}x)"
        if ours is not None:
            shown = f"{ours:,.3f}" if ours < 10 else f"{ours:,.1f}"
            print(f"RESULT load {name} {shape} | {shown} | {unit} |{versus}", flush=True)

    for kind in ("produce", "fetch", "metadata"):
        row(f"{kind} p99", "ms", lambda r, k=kind: r.percentile(k, 0.99))
    row("requests/s", "req/s", lambda r: r.requests / args.seconds, lower_is_better=False)
    row("quiet Metadata p50", "ms", lambda r: r.metadata_quiet_ms)
    row("broker CPU per request", "us", lambda r: r.broker_cpu_per_request_us)
    row("broker peak RSS", "MiB", lambda r: r.rss_kib.get("peak", 0) / 1024)
    errors = sum(len(r.errors) for r in results.values())
    print(f"RESULT load errors | {errors} | | 0")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
