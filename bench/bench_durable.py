"""Durable produce: acks=-1 with flush.messages=1 (every ack after an fsync), 1 and 16 producers.

Group commit (storage/log.py Log._group_commit) lets appends that arrive while an fsync runs
share the next one, so 16 concurrent producers should get far more than 16x fewer fsyncs
than acks. Two measurements:

  * service: a broker subprocess with log.flush.interval.messages=1; N raw-socket producers,
    one request (one 100 B record) in flight each, all on one partition; acks/s and p50/p99;
  * storage: N threads calling Log.append_as_leader on one log (flush.messages=1), with group
    commit and with appends serialised behind one lock (what fsync under the log lock gave).

Prints RESULT lines for `python -m bench`. BENCH_SECONDS (default 4) is each phase's length.
"""
from __future__ import annotations

import asyncio
import datetime
import os
import shutil
import statistics
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kio.schema.create_topics.v5 import request as ct5  # noqa: E402
from kio.schema.produce.v9 import request as produce9  # noqa: E402

from asyncbroker.testing import BrokerProcess  # noqa: E402
from storage.log import Log  # noqa: E402
from storage.log_config import LogConfig  # noqa: E402
from wire.headers import encode_request_header, response_header_version  # noqa: E402
from wire.messages import decode_response, encode_request  # noqa: E402
from wire.records import Record, build_batch  # noqa: E402

SECONDS = float(os.environ.get("BENCH_SECONDS", "4"))
TOPIC = "durable"


def result(name: str, value: float, unit: str, target: str = "", fmt: str = "{:,.0f}") -> None:
    print(f"RESULT {name} | {fmt.format(value)} | {unit} | {target}", flush=True)


def frame(entity: object, cid: int) -> bytes:
    body = encode_request_header(entity.__api_key__, entity.__version__, cid, "bench") + encode_request(entity)  # type: ignore[attr-defined]
    return struct.pack(">i", len(body)) + body


async def call(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, entity: object, cid: int) -> object:
    writer.write(frame(entity, cid))
    size = struct.unpack(">i", await reader.readexactly(4))[0]
    data = await reader.readexactly(size)
    key, ver = entity.__api_key__, entity.__version__  # type: ignore[attr-defined]
    return decode_response(key, ver, data[4 + (1 if response_header_version(key, ver) >= 1 else 0):])


async def producer(host: str, port: int, deadline: float, latencies: list[float]) -> int:
    reader, writer = await asyncio.open_connection(host, port)
    batch = build_batch([Record(offset=0, timestamp=int(time.time() * 1000), key=None, value=b"v" * 100, headers=[])])
    req = produce9.ProduceRequest(transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=30),
                                  topic_data=(produce9.TopicProduceData(name=TOPIC, partition_data=(
                                      produce9.PartitionProduceData(index=0, records=batch),)),))
    acks = 0
    cid = 0
    while time.monotonic() < deadline:
        cid += 1
        t0 = time.perf_counter()
        resp = await call(reader, writer, req, cid)
        latencies.append(time.perf_counter() - t0)
        err = resp.responses[0].partition_responses[0].error_code  # type: ignore[attr-defined]
        if err:
            raise RuntimeError(f"produce error {err}")
        acks += 1
    writer.close()
    return acks


async def service_phase(host: str, port: int, n: int) -> tuple[float, float, float]:
    latencies: list[float] = []
    deadline = time.monotonic() + SECONDS
    started = time.monotonic()
    counts = await asyncio.gather(*(producer(host, port, deadline, latencies) for _ in range(n)))
    elapsed = time.monotonic() - started
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    return sum(counts) / elapsed, statistics.median(latencies) * 1000, p99 * 1000


async def create_topic(host: str, port: int) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    await call(reader, writer, ct5.CreateTopicsRequest(topics=(ct5.CreatableTopic(
        name=TOPIC, num_partitions=1, replication_factor=1, assignments=(), configs=()),),
        timeout=datetime.timedelta(seconds=10), validate_only=False), 1)
    writer.close()


def bench_service() -> None:
    print(f"-- service: acks=-1, flush.messages=1, 100 B records, one partition, {SECONDS:.0f}s per phase")
    with BrokerProcess(["log.flush.interval.messages=1"]) as broker:
        host, port = broker.host, broker.port
        asyncio.run(create_topic(host, port))
        for n in (1, 16):
            rate, p50, p99 = asyncio.run(service_phase(host, port, n))
            print(f"  {n:>2} producer(s): {rate:8,.0f} durable acks/s  p50 {p50:.2f} ms  p99 {p99:.2f} ms")
            result(f"durable acks/s, {n} producer(s)", rate, "acks/s")
            result(f"durable ack p99, {n} producer(s)", p99, "ms", fmt="{:.2f}")


def storage_phase(threads: int, serialized: bool) -> float:
    d = Path(tempfile.mkdtemp(prefix="bench-durable-"))
    log = Log.open(d / "t-0", LogConfig(flush_messages=1))
    batch = build_batch([Record(offset=0, timestamp=int(time.time() * 1000), key=None, value=b"v" * 100, headers=[])])
    gate = threading.Lock()
    deadline = time.monotonic() + SECONDS / 2
    counts = [0] * threads

    def work(i: int) -> None:
        while time.monotonic() < deadline:
            if serialized:
                with gate:
                    log.append_as_leader(batch)
            else:
                log.append_as_leader(batch)
            counts[i] += 1

    started = time.monotonic()
    ts = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    elapsed = time.monotonic() - started
    assert log.recovery_point == log.log_end_offset
    log.close()
    shutil.rmtree(d, ignore_errors=True)
    return sum(counts) / elapsed


def bench_storage() -> None:
    print(f"-- storage: Log.append_as_leader with flush.messages=1, {SECONDS / 2:.0f}s per phase")
    for n in (1, 16):
        serial = storage_phase(n, True)
        grouped = storage_phase(n, False)
        print(f"  {n:>2} thread(s): one fsync per append {serial:8,.0f}/s   group commit {grouped:8,.0f}/s")
        result(f"storage durable appends/s, {n} thread(s), group commit", grouped, "appends/s")
        result(f"storage durable appends/s, {n} thread(s), fsync per append", serial, "appends/s")


if __name__ == "__main__":
    bench_storage()
    bench_service()
