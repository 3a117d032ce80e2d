"""Fetch of many idle partitions: what a consumer of a wide topic costs the broker while nothing
is produced, on asyncbroker and on Kafka 4.4 side by side in the same run.

    .venv/bin/python bench/bench_fetch_partitions.py
    BENCH_BROKERS=asyncbroker .venv/bin/python bench/bench_fetch_partitions.py   # skip Kafka

A topic of PARTITIONS partitions, one record in partition 0 (the rest empty); from a raw
socket, REQUESTS back-to-back Fetch v12 requests (max wait 0) at the log end of every partition:

- sessionless (session epoch -1, as librdkafka fetches: its Fetch requests carry session id 0
  and epoch -1): every request names every partition, every answer lists them;
- incremental (KIP-227, as Java clients fetch): a session holds the partitions, each request
  names none, and the answers list none (nothing changed). asyncbroker does not read them again
  (asyncbroker.fetch_session: idle partitions); Kafka reads every one on each fetch.

Reported per kind and broker: the broker's CPU per request (user+system, all its threads) and
the round trip's p50 and p99, the median of ROUNDS rounds after a warm-up; the brokers take
turns round by round (who goes first alternating), the waiting one at nice 19. Numbers are
printed, never asserted.
"""
from __future__ import annotations

import datetime
import os
import socket
import struct
import sys
import time
from contextlib import ExitStack
from pathlib import Path

HERE = Path(__file__).resolve().parent
for path in (HERE, HERE.parent):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from kio.schema.fetch.v12 import request as f12  # noqa: E402
from kio.static.primitive import i32, i32Timedelta, i64  # noqa: E402

import bench_service as bs  # noqa: E402
from asyncbroker.testing.process_stats import cpu_seconds  # noqa: E402
from wire.headers import encode_request_header  # noqa: E402
from wire.messages import decode_response, encode_request  # noqa: E402

PARTITIONS = int(os.environ.get("BENCH_PARTITIONS", "1000"))
REQUESTS = int(os.environ.get("BENCH_REQUESTS", "2000"))
ROUNDS = 3
TOPIC = "wide"


def fetch_frame(session_id: int, epoch: int, partitions: int) -> bytes:
    """A Fetch v12 at the log end of `partitions` partitions (partition 0 holds one record)."""
    parts = tuple(f12.FetchPartition(partition=i32(p), current_leader_epoch=i32(-1), fetch_offset=i64(1 if p == 0 else 0),
                                     last_fetched_epoch=i32(-1), log_start_offset=i64(-1),
                                     partition_max_bytes=i32(1 << 20)) for p in range(partitions))
    request = f12.FetchRequest(
        replica_id=i32(-1), max_wait=i32Timedelta.parse(datetime.timedelta(0)), min_bytes=i32(0),
        max_bytes=i32(50 << 20), isolation_level=0, session_id=i32(session_id), session_epoch=i32(epoch),
        topics=(f12.FetchTopic(topic=TOPIC, partitions=parts),) if partitions else (),
        forgotten_topics_data=(), rack_id="")
    body = encode_request_header(1, 12, 1, "bench") + encode_request(request)
    return struct.pack(">i", len(body)) + body


class FetchClient:
    def __init__(self, bootstrap: str) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.session_id, self.epoch = 0, 0

    def _exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise EOFError("the broker closed the connection")
            buf += chunk
        return bytes(buf)

    def round_trip(self, frame: bytes) -> bytes:
        self.sock.sendall(frame)
        return self._exact(struct.unpack(">i", self._exact(4))[0])

    def open_session(self) -> None:
        answer = self.round_trip(fetch_frame(0, 0, PARTITIONS))
        response = decode_response(1, 12, answer[5:])  # correlation id, then an empty tagged section
        assert response.error_code == 0 and response.session_id != 0, response.error_code
        self.session_id, self.epoch = response.session_id, 1

    def next_frame(self, incremental: bool) -> bytes:
        if not incremental:
            return SESSIONLESS
        frame = fetch_frame(self.session_id, self.epoch, 0)
        self.epoch += 1
        return frame


SESSIONLESS = fetch_frame(0, -1, PARTITIONS)


def measure_round(client: FetchClient, pid: int, incremental: bool) -> tuple[float, float, float]:
    """(broker CPU ms per request, p50 ms, p99 ms) over REQUESTS requests."""
    frames = [client.next_frame(incremental) for _ in range(REQUESTS)]
    samples = []
    cpu = cpu_seconds(pid)
    for frame in frames:
        started = time.perf_counter()
        client.round_trip(frame)
        samples.append(time.perf_counter() - started)
    cpu = cpu_seconds(pid) - cpu
    p50, p99 = bs.percentiles(samples)
    return cpu / REQUESTS * 1e3, p50, p99


def main() -> int:
    kinds = bs.BROKERS
    print(f"Fetch v12 of {PARTITIONS:,} idle partitions, {REQUESTS:,} requests x {ROUNDS} rounds; brokers: "
          f"{', '.join(kinds)}", flush=True)
    report = bs.Report()
    with ExitStack() as stack:
        running = {kind: stack.enter_context(bs.KINDS[kind].start(PARTITIONS, bs.BOTH_BROKERS)) for kind in kinds}
        clients = {}
        for kind, r in running.items():
            bs.produce(r.bootstrap, TOPIC, 1, 100, "1")  # creates the topic; one record in partition 0
            clients[kind] = (FetchClient(r.bootstrap), FetchClient(r.bootstrap))
            clients[kind][1].open_session()
        for incremental, name in ((False, "sessionless"), (True, "incremental session")):
            results: dict[str, list[tuple[float, float, float]]] = {kind: [] for kind in running}
            for kind in running:  # warm-up (Kafka's JIT above all), untimed
                measure_round(clients[kind][incremental], running[kind].pid, incremental)
            for i in range(ROUNDS):
                for kind in (list(running) if i % 2 == 0 else list(reversed(running))):
                    waiting = [r.pid for other, r in running.items() if other != kind]
                    with bs.in_background(waiting):
                        results[kind].append(measure_round(clients[kind][incremental], running[kind].pid, incremental))
            for kind, rounds in results.items():
                cpu, p50, p99 = (sorted(column)[ROUNDS // 2] for column in zip(*rounds))
                for label, value, unit in (("broker CPU", cpu, "ms/request"), ("p50", p50, "ms"), ("p99", p99, "ms")):
                    report.add(kind, f"Fetch {PARTITIONS:,} idle partitions, {name}: {label}", value, unit, "<= Kafka",
                               higher_is_better=False, fmt="{:.3f}")
    report.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
