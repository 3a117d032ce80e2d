"""Writeback: sustained 10 KiB produce into one partition against `dd conv=fdatasync` on the same
disk, and the acks=-1 round trip right after it, against the quiet one. Both brokers, one run.

Kafka leaves writeback to the OS. A broker that writes on its event loop can stall there when
the kernel throttles a writer whose dirty pages have piled up (balance_dirty_pages), and every
request on the loop waits. Issue 17's targets:

  * sustained produce of SUSTAINED_GB (default 2) GB of 10 KiB values into one partition
    >= 0.9x what dd writes with conv=fdatasync into the same filesystem in the same run;
  * p99 of sequential acks=-1 round trips (raw socket, 100 B) in the seconds right after
    >= 1 GB of writes <= 2x the quiet p99 measured before them.

A probe thread also times round trips *during* the sustained produce (reported, no target).
The Python producer is the limit of the sustained row on a fast disk (its process near a whole
CPU): the same bytes again from the raw client (bench_service.raw_produce) show the broker's
own sustained rate (once the first run's pages are written back, as dd starts from clean ones).
Prints a table and RESULT lines for `python -m bench`; asserts nothing.

    .venv/bin/python bench/bench_writeback.py
    SUSTAINED_GB=0.5 BENCH_BROKERS=asyncbroker .venv/bin/python bench/bench_writeback.py
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.queues
import os
import re
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_service import (  # noqa: E402
    BROKERS,
    KINDS,
    RAW_BATCH_RECORDS,
    RAW_WINDOW,
    CpuShare,
    Report,
    percentiles,
    keep_client_heap,
    produce,
    produce_frame,
    raw_produce,
    raw_round_trips,
)

SUSTAINED_GB = float(os.environ.get("SUSTAINED_GB", "2"))
VALUE = 10 * 1024
ROUND_TRIPS = 2_000


def dd_fdatasync_mb_s(directory: str, gb: float) -> float:
    """MB/s `dd conv=fdatasync` writes `gb` GB of zeros at into a file under `directory`."""
    target = Path(directory) / "dd.bench"
    count = int(gb * 1000)  # 1 MB blocks
    try:
        started = time.monotonic()
        done = subprocess.run(["dd", "if=/dev/zero", f"of={target}", "bs=1M", f"count={count}", "conv=fdatasync"],
                              capture_output=True, text=True, check=True)
        elapsed = time.monotonic() - started
    finally:
        target.unlink(missing_ok=True)
    # dd's own figure is over its copy; ours includes the final fdatasync and is the same measure.
    match = re.search(r"([\d.]+) s,", done.stderr)
    seconds = float(match.group(1)) if match else elapsed
    return count * (1 << 20) / seconds / 1e6


class RoundTripProbe:
    """Sequential raw-socket acks=-1 round trips for as long as the phase around it runs.

    A process of its own: a thread beside the producer would time this process's GIL (the
    producer's loop holds it for the 5 ms switch interval), not the broker.
    """

    def __init__(self, port: int, frame: bytes) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._stop = ctx.Event()
        self._results: multiprocessing.queues.SimpleQueue[list[float]] = ctx.SimpleQueue()
        self._process = ctx.Process(target=_probe, args=(port, frame, self._stop, self._results), daemon=True)
        self.samples: list[float] = []

    def __enter__(self) -> "RoundTripProbe":
        self._process.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.samples = self._results.get()
        self._process.join(60)


def _probe(port: int, frame: bytes, stop: Any, results: Any) -> None:
    samples: list[float] = []
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while not stop.is_set():
            t0 = time.perf_counter()
            s.sendall(frame)
            size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
            s.recv(size, socket.MSG_WAITALL)
            samples.append(time.perf_counter() - t0)
            stop.wait(0.005)  # a request every ~5 ms: a probe, not a load
    results.put(samples)


def dirty_mb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("Dirty:"):
            return int(line.split()[1]) / 1024
    return 0.0


def measure(kind: str, report: Report, dd_mb_s: float) -> None:
    broker = KINDS[kind]
    print(f"--- {broker.name}", flush=True)
    count = int(SUSTAINED_GB * 1e9 / VALUE)
    with broker.start(1) as running:
        bs, pid = running.bootstrap, running.pid
        port = int(bs.rsplit(":", 1)[1])
        frame = produce_frame("probe")
        produce(bs, "probe", 1, 100, "-1")  # create the topic
        produce(bs, "sustained", 1, VALUE, "1")
        quiet = raw_round_trips(port, frame, ROUND_TRIPS)
        with RoundTripProbe(port, frame) as probe, CpuShare(pid) as cpu:
            rate = produce(bs, "sustained", count, VALUE, "1")
        dirty = dirty_mb()
        after = raw_round_trips(port, frame, ROUND_TRIPS)
        during = percentiles(probe.samples) if probe.samples else (0.0, 0.0)
        # The same bytes again from a client that costs nothing per record: what the broker
        # sustains where the Python producer is not the limit. From clean pages, as the first
        # run and dd start (the first run's are written back first, untimed).
        os.sync()
        with CpuShare(pid) as raw_cpu:
            raw_rate = raw_produce(bs, "sustained-raw", count, size=VALUE, per_request=RAW_BATCH_RECORDS)
        raw_dirty = dirty_mb()
    report.add(kind, f"sustained 10 KiB produce, {SUSTAINED_GB:g} GB, p=1", rate * VALUE / 1e6, "MB/s",
               f">= 0.9x dd fdatasync ({0.9 * dd_mb_s:,.0f})", higher_is_better=True, fmt="{:,.1f}",
               note=f"broker CPU {cpu.broker_cpu / cpu.wall:.0%}, {dirty:,.0f} MB dirty at the end")
    report.add(kind, f"sustained 10 KiB produce, {SUSTAINED_GB:g} GB, raw client ({RAW_BATCH_RECORDS} per request, "
               f"{RAW_WINDOW} in flight)", raw_rate * VALUE / 1e6, "MB/s", f">= 0.9x dd fdatasync ({0.9 * dd_mb_s:,.0f})",
               higher_is_better=True, fmt="{:,.1f}",
               note=f"broker CPU {raw_cpu.broker_cpu / raw_cpu.wall:.0%}, {raw_dirty:,.0f} MB dirty at the end")
    report.add(kind, "acks=-1 round trip p99, quiet", quiet[1], "ms", "", higher_is_better=False, fmt="{:.3f}")
    report.add(kind, "acks=-1 round trip p99, right after", after[1], "ms", f"<= 2x quiet ({2 * quiet[1]:.3f})",
               higher_is_better=False, fmt="{:.3f}", note=f"{after[1] / quiet[1]:.2f}x quiet")
    report.add(kind, "acks=-1 round trip p99, during", during[1], "ms", "", higher_is_better=False,
               fmt="{:.3f}", note=f"p50 {during[0]:.3f} ms, max {max(probe.samples, default=0) * 1000:.1f} ms, "
                                  f"{len(probe.samples)} samples")


def main() -> int:
    keep_client_heap()  # the Python producer as bench_service runs it
    print(f"{SUSTAINED_GB:g} GB of 10 KiB values; brokers: {', '.join(BROKERS)}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-dd-") as directory:
        dd_mb_s = dd_fdatasync_mb_s(directory, SUSTAINED_GB)
    print(f"  dd conv=fdatasync, {SUSTAINED_GB:g} GB: {dd_mb_s:,.1f} MB/s", flush=True)
    print(f"RESULT dd conv=fdatasync {SUSTAINED_GB:g} GB | {dd_mb_s:,.1f} | MB/s |", flush=True)
    report = Report()
    for kind in BROKERS:
        measure(kind, report, dd_mb_s)
    report.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
