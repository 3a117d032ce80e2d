"""Cleaner benchmark: MB/s per worker (Kafka's "MB of log processed ... MB/sec" figure)
on 100-byte and 1 KiB records with 10% / 50% / 90% of the records superseded, with 1 and
2 worker processes. Kafka's own cleaner in the seed's example ran at 16.5 MB/s; the
target is >= 33 MB/s per worker. Prints numbers; asserts nothing.

    .venv/bin/python bench/bench_cleaner.py [--mib 4] [--batch 100]
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import shutil
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cleaner.cleaner_config import CleanerConfig  # noqa: E402
from cleaner.log_cleaner import LogCleaner  # noqa: E402
from storage.clock import SYSTEM_CLOCK  # noqa: E402
from storage.log import Log  # noqa: E402
from storage.log_config import LogConfig  # noqa: E402
from wire.records import Record, build_batch  # noqa: E402

MB = 1024 * 1024
TARGET = 33.0


def build_log(dir: Path, value_size: int, superseded: float, mib: float, batch: int) -> Log:
    """A compacted log of ~mib MiB where `superseded` of the records have a later value."""
    config = LogConfig(cleanup_policy=("compact",), segment_bytes=8 * MB, file_delete_delay_ms=0)
    log = Log.open(dir, config, clock=SYSTEM_CLOCK)
    record_bytes = value_size + 20
    total = int(mib * MB / record_bytes)
    keys = max(1, int(total * (1 - superseded)))
    value = b"v" * value_size
    now = SYSTEM_CLOCK.milliseconds()
    offset = 0
    while offset < total:
        n = min(batch, total - offset)
        recs = [Record(i, now, b"key-%010d" % ((offset + i) % keys), value) for i in range(n)]
        log.append_as_leader(build_batch(recs))
        offset += n
    log.roll()
    return log


async def run_case(root: Path, value_size: int, superseded: float, workers: int, mib: float, batch: int
                   ) -> tuple[list[float], list[float], float]:
    logs = {}
    for i in range(workers):
        log = build_log(root / f"bench{value_size}-{i}", value_size, superseded, mib, batch)
        logs[log.topic_partition] = log
    config = CleanerConfig(num_threads=workers, dedupe_buffer_size=workers * 64 * MB)
    cleaner = LogCleaner(config, [root], lambda: logs)
    await cleaner.startup(background=False, prestart=True)  # the workers are up before the clock starts
    try:
        started = time.perf_counter()
        stats = await asyncio.gather(*(cleaner.clean_now(tp) for tp in logs))
        wall = time.perf_counter() - started
    finally:
        await cleaner.shutdown()
        for log in logs.values():
            log.close()
    per_worker = [s.bytes_read / MB / s.elapsed_secs for s in stats if s is not None]
    per_worker_cpu = [s.bytes_read / MB / max(s.cpu_secs, 1e-9) for s in stats if s is not None]
    aggregate = sum(s.bytes_read for s in stats if s is not None) / MB / wall
    return per_worker, per_worker_cpu, aggregate


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=float, default=4.0, help="log size per partition (MiB)")
    parser.add_argument("--batch", type=int, default=100, help="records per producer batch")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    root = Path(tempfile.mkdtemp(prefix="bench-cleaner-"))
    try:
        print("MB/s as Kafka's summary line counts it (bytes of log processed / clean time); 'per CPU-s'")
        print("divides by the worker's CPU time instead (what it would do with a core to itself).")
        print(f"{'record':>7} {'superseded':>10} {'workers':>7} {'MB/s per worker':>16} {'per CPU-s':>10} "
              f"{'aggregate MB/s':>15}")
        for value_size in (100, 1024):
            for superseded in (0.1, 0.5, 0.9):
                for workers in (1, 2):
                    case_root = root / f"{value_size}-{superseded}-{workers}"
                    case_root.mkdir()
                    per_worker, per_cpu, aggregate = asyncio.run(
                        run_case(case_root, value_size, superseded, workers, args.mib, args.batch))
                    mean = sum(per_worker) / len(per_worker)
                    cpu = sum(per_cpu) / len(per_cpu)
                    print(f"{value_size:>7} {int(superseded * 100):>9}% {workers:>7} {mean:>16.1f} {cpu:>10.1f} "
                          f"{aggregate:>15.1f}", flush=True)
                    print(f"RESULT cleaner {value_size}B {int(superseded * 100)}% superseded {workers}w "
                          f"| {mean:.1f} | MB/s per worker | >= {TARGET:.0f}", flush=True)
                    shutil.rmtree(case_root, ignore_errors=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
