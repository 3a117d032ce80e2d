"""Storage benchmark: append 1 MiB batches (no fsync / fsync per append), read them back,
and open 1,000 partitions x 10 segments. Prints MB/s and seconds; asserts nothing.

    .venv/bin/python bench/bench_storage.py [--mib 128] [--fsync-mib 16] [--partitions 1000]
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from storage.clock import SYSTEM_CLOCK  # noqa: E402
from storage.log import Log  # noqa: E402
from storage.log_config import LogConfig  # noqa: E402
from storage.log_file_utils import CLEAN_SHUTDOWN_FILE  # noqa: E402
from storage.log_manager import LogManager  # noqa: E402
from wire.records import Record, build_batch  # noqa: E402

MIB = 1 << 20


def one_mib_batch() -> bytes:
    """~1 MiB uncompressed batch: 1,000 records of ~1 KiB."""
    value = b"x" * 1040
    return build_batch([Record(offset=i, timestamp=SYSTEM_CLOCK.milliseconds(), key=b"key-%d" % i, value=value)
                        for i in range(1000)])


def bench_append(root: Path, total_mib: int, fsync: bool) -> tuple[float, float, Log]:
    config = LogConfig(flush_messages=1 if fsync else LogConfig().flush_messages, segment_bytes=256 * MIB,
                       max_message_bytes=2 * MIB)
    log = Log.open(root / ("fsync-0" if fsync else "append-0"), config)
    data = one_mib_batch()
    n = max(1, total_mib * MIB // len(data))
    start = time.perf_counter()
    for _ in range(n):
        log.append_as_leader(data)
    elapsed = time.perf_counter() - start
    return n * len(data) / MIB / elapsed, elapsed, log


def bench_read(log: Log) -> tuple[float, float]:
    start = time.perf_counter()
    offset, total = log.log_start_offset, 0
    while offset < log.log_end_offset:
        info = log.read(offset, MIB + 4096)
        data = info.read_bytes()
        if not data:
            break
        total += len(data)
        # Next fetch starts after the last complete batch (what a consumer does).
        pos, last = 0, offset
        while pos + 61 <= len(data):
            base = int.from_bytes(data[pos : pos + 8], "big")
            length = int.from_bytes(data[pos + 8 : pos + 12], "big")
            if pos + 12 + length > len(data):
                break
            last = base + int.from_bytes(data[pos + 23 : pos + 27], "big") + 1
            pos += 12 + length
        offset = last
    elapsed = time.perf_counter() - start
    return total / MIB / elapsed, elapsed


def build_partitions(root: Path, partitions: int, segments: int) -> None:
    """One partition written through the API, copied to the others (as a clean shutdown leaves them)."""
    from storage.topic_partition import TopicPartition

    lm = LogManager([root], LogConfig(segment_bytes=MIB), recovery_threads_per_data_dir=2)
    lm.startup()
    small = build_batch([Record(offset=0, timestamp=SYSTEM_CLOCK.milliseconds(), key=b"k", value=b"v" * 100)])
    log = lm.create_log(TopicPartition("bench", 0))
    for s in range(segments):
        for _ in range(20):
            log.append_as_leader(small)
        if s < segments - 1:
            log.roll()
    lm.shutdown()
    for p in range(1, partitions):
        shutil.copytree(root / "bench-0", root / f"bench-{p}")


def bench_open(root: Path, threads: int, clean: bool) -> tuple[float, int]:
    if not clean:
        (root / CLEAN_SHUTDOWN_FILE).unlink(missing_ok=True)
    lm = LogManager([root], LogConfig(segment_bytes=MIB), recovery_threads_per_data_dir=threads)
    start = time.perf_counter()
    lm.startup()
    elapsed = time.perf_counter() - start
    count = len(lm.all_logs())
    lm.shutdown()
    return elapsed, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=128)
    parser.add_argument("--fsync-mib", type=int, default=16)
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--segments", type=int, default=10)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-storage-", dir=args.dir))
    try:
        rate, secs, log = bench_append(root, args.mib, fsync=False)
        print(f"append 1 MiB batches, no fsync   : {rate:8.1f} MiB/s  ({args.mib} MiB in {secs:.2f} s)")
        rate, secs = bench_read(log)
        print(f"read back (1 MiB fetches)        : {rate:8.1f} MiB/s  ({secs:.2f} s)")
        log.close()
        rate, secs, flog = bench_append(root, args.fsync_mib, fsync=True)
        print(f"append 1 MiB batches, fsync each : {rate:8.1f} MiB/s  ({args.fsync_mib} MiB in {secs:.2f} s)")
        flog.close()
        parts = root / "parts"
        parts.mkdir()
        start = time.perf_counter()
        build_partitions(parts, args.partitions, args.segments)
        print(f"create {args.partitions} partitions x {args.segments} segments: {time.perf_counter() - start:.2f} s")
        secs, count = bench_open(parts, 2, clean=True)
        print(f"open {count} partitions x {args.segments} segments, clean shutdown  : {secs:.2f} s")
        secs, count = bench_open(parts, 2, clean=False)
        print(f"open {count} partitions x {args.segments} segments, unclean (recovery): {secs:.2f} s")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
