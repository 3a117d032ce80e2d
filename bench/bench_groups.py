"""Consumer-group and idempotent-producer benchmarks against a real broker subprocess.

Measures:
- rebalance time as a group grows from 1 to 4 members, with aiokafka
  consumers (heartbeat 100 ms: a member learns of a rebalance on its next
  heartbeat) and on raw connections (JoinGroup + SyncGroup for all members,
  the coordinator's own cost);
- OffsetCommit throughput: commits/s from 8 connections with 16 requests in
  flight each, one partition per commit;
- produce throughput of confluent-kafka with enable.idempotence=true vs false.

Prints a report and RESULT lines for `python -m bench`. BENCH_SCALE scales
the counts down for a quick look.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import struct
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kio.schema.join_group.v9 import request as join9  # noqa: E402
from kio.schema.offset_commit.v8 import request as commit8  # noqa: E402
from kio.schema.sync_group.v5 import request as sync5  # noqa: E402

from asyncbroker.testing import BrokerProcess  # noqa: E402
from asyncbroker.testing.process_stats import cpu_seconds  # noqa: E402
from wire.headers import encode_request_header, response_header_version  # noqa: E402
from wire.messages import decode_response, encode_request  # noqa: E402

SCALE = float(os.environ.get("BENCH_SCALE", "1"))
COMMITS = int(100_000 * SCALE)
PRODUCE_COUNT = int(500_000 * SCALE)


def result(name: str, value: float, unit: str, target: str, fmt: str = "{:,.0f}") -> None:
    print(f"RESULT {name} | {fmt.format(value)} | {unit} | {target}", flush=True)


class AsyncRawClient:
    """Pipelined requests on one asyncio connection (responses come back in order)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.correlation = 0
        self.pending: list[tuple[int, int, int, asyncio.Future[Any]]] = []
        self.reader_task = asyncio.ensure_future(self._read())

    @classmethod
    async def connect(cls, bootstrap: str) -> "AsyncRawClient":
        host, port = bootstrap.rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        return cls(reader, writer)

    def send(self, entity: Any) -> asyncio.Future[Any]:
        self.correlation += 1
        header = encode_request_header(entity.__api_key__, entity.__version__, self.correlation, "bench")
        body = header + encode_request(entity)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending.append((self.correlation, entity.__api_key__, entity.__version__, fut))
        self.writer.write(struct.pack(">i", len(body)) + body)
        return fut

    async def _read(self) -> None:
        while True:
            size = struct.unpack(">i", await self.reader.readexactly(4))[0]
            frame = await self.reader.readexactly(size)
            _cid, key, version, fut = self.pending.pop(0)
            offset = 4 + (1 if response_header_version(key, version) >= 1 else 0)
            fut.set_result(decode_response(key, version, frame[offset:]))

    async def close(self) -> None:
        self.reader_task.cancel()
        self.writer.close()


def subscription(topic: str) -> bytes:
    """ConsumerProtocolSubscription v0 for one topic."""
    name = topic.encode()
    return struct.pack(">hih", 0, 1, len(name)) + name + struct.pack(">i", -1)


async def raw_rebalance(bootstrap: str) -> list[float]:
    """Seconds for all members to get their assignment after member k joins (k = 2..4)."""
    clients = [await AsyncRawClient.connect(bootstrap) for _ in range(4)]
    ms = datetime.timedelta(milliseconds=30_000)
    protocols = (join9.JoinGroupRequestProtocol(name="range", metadata=subscription("bench-rb")),)

    def join(c: AsyncRawClient, member_id: str) -> asyncio.Future[Any]:
        return c.send(join9.JoinGroupRequest(group_id="raw-rb", session_timeout=ms, rebalance_timeout=ms,
                                             member_id=member_id, group_instance_id=None, protocol_type="consumer",
                                             protocols=protocols, reason=None))

    async def join_and_sync(c: AsyncRawClient, member_id: str) -> tuple[str, int]:
        res = await join(c, member_id)
        assignments = tuple(sync5.SyncGroupRequestAssignment(member_id=m.member_id, assignment=b"x")
                            for m in res.members)
        sync = await c.send(sync5.SyncGroupRequest(group_id="raw-rb", generation_id=res.generation_id,
                                                   member_id=res.member_id, group_instance_id=None,
                                                   protocol_type="consumer", protocol_name="range",
                                                   assignments=assignments))
        assert sync.error_code == 0, sync
        return res.member_id, res.generation_id

    members: list[str] = []
    first = await join(clients[0], "")
    members.append((await join_and_sync(clients[0], first.member_id))[0])
    times = []
    for k in range(1, 4):
        started = time.monotonic()
        new = await join(clients[k], "")
        # Everyone (re)joins with its id; the coordinator completes when all are in.
        results = await asyncio.gather(*(join_and_sync(clients[i], members[i]) for i in range(k)),
                                       join_and_sync(clients[k], new.member_id))
        times.append(time.monotonic() - started)
        members = [m for m, _ in results]
    for c in clients:
        await c.close()
    return times


async def aiokafka_rebalance(bootstrap: str) -> list[float]:
    from aiokafka import AIOKafkaConsumer

    consumers: list[Any] = []
    times = []

    def balanced() -> bool:
        sets = [c.assignment() for c in consumers]
        return all(sets) and sorted(tp.partition for s in sets for tp in s) == list(range(8))

    for k in range(4):
        c = AIOKafkaConsumer("bench-rb", bootstrap_servers=bootstrap, group_id="aiokafka-rb",
                             heartbeat_interval_ms=100, session_timeout_ms=10_000, enable_auto_commit=False)
        started = time.monotonic()
        await c.start()
        consumers.append(c)
        deadline = started + 30
        while not balanced():
            if time.monotonic() > deadline:
                raise RuntimeError("aiokafka group did not balance in 30 s")
            await asyncio.sleep(0.005)
        if k:
            times.append(time.monotonic() - started)
    for c in consumers:
        await c.stop()
    return times


async def commit_throughput(bootstrap: str, total: int, connections: int = 8, depth: int = 16) -> float:
    clients = [await AsyncRawClient.connect(bootstrap) for _ in range(connections)]
    per_conn = total // connections

    def request(i: int, n: int) -> Any:
        return commit8.OffsetCommitRequest(
            group_id=f"commit-bench-{i}", generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
            topics=(commit8.OffsetCommitRequestTopic(name="bench-rb", partitions=(
                commit8.OffsetCommitRequestPartition(partition_index=n % 8, committed_offset=n,
                                                     committed_leader_epoch=-1, committed_metadata=""),)),),
        )

    await clients[0].send(request(0, 0))  # creates __consumer_offsets before timing

    async def run(i: int, c: AsyncRawClient) -> None:
        inflight: list[asyncio.Future[Any]] = []
        for n in range(per_conn):
            inflight.append(c.send(request(i, n)))
            if len(inflight) >= depth:
                resp = await inflight.pop(0)
                assert resp.topics[0].partitions[0].error_code == 0, resp
        for f in inflight:
            await f

    started = time.monotonic()
    await asyncio.gather(*(run(i, c) for i, c in enumerate(clients)))
    elapsed = time.monotonic() - started
    for c in clients:
        await c.close()
    return per_conn * connections / elapsed


def produce_rate(bootstrap: str, topic: str, idempotent: bool) -> float:
    from confluent_kafka import Producer

    errors: list[Any] = []
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": idempotent, "acks": "all",
                  "linger.ms": 5, "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000,
                  "on_delivery": lambda err, _m: errors.append(err), "delivery.report.only.error": True})
    payload = os.urandom(100)
    started = time.monotonic()
    for _ in range(PRODUCE_COUNT):
        try:
            p.produce(topic, payload)
        except BufferError:
            p.poll(0.001)
            p.produce(topic, payload)
    remaining = p.flush(120)
    elapsed = time.monotonic() - started
    if remaining or errors:
        raise RuntimeError(f"produce failed: {remaining} undelivered, {errors[:3]}")
    return PRODUCE_COUNT / elapsed


def main() -> None:
    with BrokerProcess(["group.initial.rebalance.delay.ms=0", "num.partitions=8"]) as broker:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for f in admin.create_topics([NewTopic("bench-rb", 8), NewTopic("bench-plain", 1),
                                      NewTopic("bench-idem", 1)]).values():
            f.result()
        raw = asyncio.run(raw_rebalance(broker.bootstrap))
        print(f"raw protocol rebalance 1->2, 2->3, 3->4 members: {', '.join(f'{t * 1000:.1f} ms' for t in raw)}")
        result("rebalance 3->4 members (raw JoinGroup+SyncGroup)", raw[-1] * 1000, "ms", "", "{:.1f}")
        client = asyncio.run(aiokafka_rebalance(broker.bootstrap))
        print(f"aiokafka rebalance 1->2, 2->3, 3->4 members: {', '.join(f'{t * 1000:.0f} ms' for t in client)}")
        result("rebalance 3->4 members (aiokafka, 100 ms heartbeat)", client[-1] * 1000, "ms", "", "{:.0f}")
        rate = asyncio.run(commit_throughput(broker.bootstrap, COMMITS))
        print(f"OffsetCommit: {rate:,.0f} commits/s (8 connections x 16 in flight)")
        result("OffsetCommit throughput", rate, "commits/s", "")
        pid = broker.process.pid  # type: ignore[union-attr]
        cpu0 = cpu_seconds(pid)
        plain = produce_rate(broker.bootstrap, "bench-plain", idempotent=False)
        cpu1 = cpu_seconds(pid)
        idem = produce_rate(broker.bootstrap, "bench-idem", idempotent=True)
        cpu2 = cpu_seconds(pid)
        per_msg = [(cpu1 - cpu0) / PRODUCE_COUNT * 1e6, (cpu2 - cpu1) / PRODUCE_COUNT * 1e6]
        print(f"produce 100 B acks=all: plain {plain:,.0f} msg/s, idempotent {idem:,.0f} msg/s "
              f"({idem / plain:.0%} of plain); broker CPU per message: plain {per_msg[0]:.2f} us, "
              f"idempotent {per_msg[1]:.2f} us (equal broker cost: the throughput gap is on the client, "
              f"whose idempotent mode keeps at most 5 requests in flight)")
        result("produce 100 B acks=all, plain", plain, "msg/s", "")
        result("produce 100 B acks=all, idempotent", idem, "msg/s", "")
        result("broker CPU per idempotent message", per_msg[1], "us", f"plain: {per_msg[0]:.2f}", "{:.2f}")


if __name__ == "__main__":
    main()
