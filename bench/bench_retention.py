"""Retention benchmark: one kafka-log-retention pass over 1,000 partitions x 20 segments, run by
LogJobs on a uvloop event loop exactly as the broker runs it, while a probe task measures how
late the loop wakes up (the lag a request would see meanwhile). Prints seconds and lag; asserts
nothing.

    .venv/bin/python bench/bench_retention.py [--partitions 1000] [--segments 20] [--gc-freeze]

Three passes: a check that deletes nothing (every segment younger than retention.ms), the pass
that deletes 19 of each partition's 20 segments (renames to `.deleted`, log-start checkpoint),
and the delete-file sweep file.delete.delay.ms later (the unlinks).

The worst loop stalls come from CPython's full (generation 2) garbage collections, which walk
every object of 20,000 loaded segments and hold the GIL for 100-200 ms whichever thread
triggers them. `--gc-freeze` calls gc.freeze() once the logs are loaded (what a broker can do
after startup) so those collections skip the long-lived log objects.
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import shutil
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import uvloop  # noqa: E402

from asyncbroker.adjustable_clock import AdjustableClock  # noqa: E402
from asyncbroker.config import KafkaConfig  # noqa: E402
from asyncbroker.log_jobs import LogJobs  # noqa: E402
from storage.clock import MockClock  # noqa: E402
from storage.log_config import LogConfig  # noqa: E402
from storage.log_manager import LogManager  # noqa: E402
from storage.topic_partition import TopicPartition  # noqa: E402
from wire.records import Record, build_batch  # noqa: E402

T0 = 1_700_000_000_000
DAY_MS = 86_400_000
CONFIG = LogConfig(segment_bytes=1 << 20, retention_ms=7 * DAY_MS, file_delete_delay_ms=60_000)


def build_partitions(root: Path, partitions: int, segments: int) -> None:
    """One partition written through the API (segments 0..n-2 stamped T0, the last T0 + 8 d),
    copied to the others, as a clean shutdown leaves them."""
    clock = MockClock(T0)
    lm = LogManager([root], CONFIG, clock=clock)
    lm.startup()
    log = lm.create_log(TopicPartition("bench", 0), CONFIG)
    for s in range(segments):
        if s == segments - 1:
            clock.set(T0 + 8 * DAY_MS)
        batch = build_batch([Record(offset=i, timestamp=clock.milliseconds(), key=b"k%d" % i, value=b"v" * 200)
                             for i in range(20)])
        log.append_as_leader(batch)
        if s < segments - 1:
            log.roll()
    lm.shutdown()
    for p in range(1, partitions):
        shutil.copytree(root / "bench-0", root / f"bench-{p}")


class LagProbe:
    """Sleeps 1 ms in a loop and records how late each wake-up is."""

    def __init__(self) -> None:
        self.lags: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            t = loop.time()
            await asyncio.sleep(0.001)
            self.lags.append(loop.time() - t - 0.001)

    def start(self) -> None:
        self.lags.clear()
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> tuple[float, float]:
        assert self._task is not None
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass
        lags = sorted(self.lags) or [0.0]
        return lags[-1] * 1000, lags[int(len(lags) * 0.99) - 1 if len(lags) > 1 else 0] * 1000


async def measure(what: str, probe: LagProbe, work) -> tuple[object, float, float, float]:  # type: ignore[no-untyped-def]
    probe.start()
    await asyncio.sleep(0.05)  # baseline samples
    started = time.perf_counter()
    result = await work()
    secs = time.perf_counter() - started
    max_lag, p99 = await probe.stop()
    print(f"{what:<46}: {secs:7.3f} s   loop lag max {max_lag:6.1f} ms, p99 {p99:5.1f} ms")
    return result, secs, max_lag, p99


async def run(root: Path, partitions: int, segments: int, gc_freeze: bool) -> None:
    clock = AdjustableClock(MockClock(T0 + DAY_MS))
    config = KafkaConfig.load(None, [f"log.dirs={root}", "log.initial.task.delay.ms=3600000"], {})
    lm = LogManager([root], CONFIG, clock=clock)
    started = time.perf_counter()
    await asyncio.to_thread(lm.startup)
    print(f"open {len(lm.all_logs())} partitions x {segments} segments{'':<14}: {time.perf_counter() - started:7.3f} s")
    if gc_freeze:
        gc.collect()
        gc.freeze()  # the loaded logs are long-lived: keep them out of full collections
    jobs = LogJobs(lm, config, clock=clock)
    jobs.start()
    probe = LagProbe()
    try:
        check, check_secs, _, _ = await measure("retention pass, nothing due", probe, jobs.run_retention_now)
        clock.advance(7 * DAY_MS + 1)
        run_, secs, max_lag, p99 = await measure("retention pass, 19 of 20 segments due", probe,
                                                 jobs.run_retention_now)
        print(f"  deleted {run_.segments_deleted} segments, {run_.bytes_deleted / (1 << 20):.1f} MiB "  # type: ignore[attr-defined]
              f"from {len(run_.deletions)} partitions")  # type: ignore[attr-defined]
        clock.advance(60_000)
        _, unlink_secs, unlink_lag, _ = await measure("delete-file sweep after file.delete.delay.ms", probe,
                                                      jobs.delete_due_files_now)
        label = f"{partitions}x{segments}{', gc.freeze' if gc_freeze else ''}"
        print(f"RESULT retention pass {label}, nothing due | {check_secs:.3f} | s |")
        print(f"RESULT retention pass {label}, {run_.segments_deleted} segments deleted | {secs:.3f} | s |")  # type: ignore[attr-defined]
        print(f"RESULT max event-loop lag during that pass | {max_lag:.1f} | ms | < 50 with --gc-freeze (gen-2 GC dominates otherwise)")
        print(f"RESULT p99 event-loop lag during that pass | {p99:.1f} | ms |")
        print(f"RESULT delete-file sweep {label} | {unlink_secs:.3f} | s | loop lag max {unlink_lag:.1f} ms")
    finally:
        await jobs.stop()
        await asyncio.to_thread(lm.shutdown)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--segments", type=int, default=20)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--gc-freeze", action="store_true", help="gc.freeze() after loading the logs")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-retention-", dir=args.dir))
    try:
        started = time.perf_counter()
        build_partitions(root, args.partitions, args.segments)
        print(f"build {args.partitions} partitions x {args.segments} segments{'':<13}: "
              f"{time.perf_counter() - started:7.3f} s")
        uvloop.run(run(root, args.partitions, args.segments, args.gc_freeze))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
