"""Remote storage backends (tiered storage, KIP-405): upload MB/s of one rolled segment to a
local S3 API server (moto's, asyncbroker.testing.S3Server) and to LocalTieredStorage, then
reads from each: the whole segment (MB/s) and 1 MiB ranged reads at random positions (latency),
beside the same reads from the local segment file. Prints numbers; asserts nothing.

moto keeps objects in its own process's memory and answers over loopback: the S3 figures are
the cost of our client path (boto3, HTTP, multipart) rather than of a real store's network.

    .venv/bin/python bench/bench_remote_storage.py [--mib 64] [--reads 50]
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from asyncbroker.testing.s3_server import S3Server  # noqa: E402
from storage.clock import SYSTEM_CLOCK  # noqa: E402
from storage.local_tiered_storage import LocalTieredStorage  # noqa: E402
from storage.log import Log  # noqa: E402
from storage.log_config import LogConfig  # noqa: E402
from storage.log_file_utils import producer_snapshot_file  # noqa: E402
from storage.remote_storage_manager import (  # noqa: E402
    LogSegmentData,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    RemoteStorageManager,
    TopicIdPartition,
)
from storage.s3_remote_storage_manager import S3RemoteStorageManager  # noqa: E402
from wire.records import Record, build_batch  # noqa: E402

MiB = 1024 * 1024


def build_segment(dir: Path, mib: int) -> tuple[LogSegmentData, RemoteLogSegmentMetadata]:
    """A rolled segment of `mib` MiB: batches of four 240 KiB records of random bytes."""
    log = Log.open(dir, LogConfig(segment_bytes=2 * mib * MiB), clock=SYSTEM_CLOCK)
    now = SYSTEM_CLOCK.milliseconds()
    value = os.urandom(240 * 1024)
    while log.size_in_bytes < mib * MiB:
        log.append_as_leader(build_batch([Record(offset=i, timestamp=now, key=None, value=value) for i in range(4)]))
    log.roll()
    first, following = log.segments.values()[:2]
    data = LogSegmentData(log_segment=first.log.path, offset_index=first.offset_index.path,
                          time_index=first.time_index.path, transaction_index=None,
                          producer_snapshot_index=producer_snapshot_file(dir, following.base_offset),
                          leader_epoch_index=b"0\n1\n0 0\n")
    size = first.size()
    log.close()
    tp = TopicIdPartition(uuid.uuid4(), "bench", 0)
    metadata = RemoteLogSegmentMetadata(
        segment_id=RemoteLogSegmentId(tp, uuid.uuid4()), start_offset=0, end_offset=following.base_offset - 1,
        max_timestamp_ms=now, broker_id=0, event_timestamp_ms=now, segment_leader_epochs=((0, 0),),
        segment_size_in_bytes=size, state=RemoteLogSegmentState.COPY_SEGMENT_STARTED)
    return data, metadata


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def measure(name: str, rsm: RemoteStorageManager, data: LogSegmentData, metadata: RemoteLogSegmentMetadata,
            positions: list[int]) -> None:
    size_mib = metadata.segment_size_in_bytes / MiB
    started = time.perf_counter()
    rsm.copy_log_segment_data(metadata, data)
    upload = time.perf_counter() - started
    print(f"RESULT {name} upload of a {size_mib:.0f} MiB segment | {size_mib / upload:.1f} | MB/s | ", flush=True)
    started = time.perf_counter()
    whole = rsm.fetch_log_segment(metadata, 0)
    fetch = time.perf_counter() - started
    assert len(whole) == metadata.segment_size_in_bytes
    print(f"RESULT {name} fetch of the whole segment | {size_mib / fetch:.1f} | MB/s | ", flush=True)
    latencies = []
    for position in positions:
        started = time.perf_counter()
        rsm.fetch_log_segment(metadata, position, position + MiB - 1)
        latencies.append((time.perf_counter() - started) * 1000)
    print(f"RESULT {name} 1 MiB ranged fetch p50 | {percentile(latencies, 0.5):.2f} | ms | ", flush=True)
    print(f"RESULT {name} 1 MiB ranged fetch p99 | {percentile(latencies, 0.99):.2f} | ms | ", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--reads", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-remote-") as tmp:
        root = Path(tmp)
        data, metadata = build_segment(root / "bench-0", args.mib)
        rng = random.Random(7)
        positions = [rng.randrange(0, metadata.segment_size_in_bytes - MiB) for _ in range(args.reads)]

        # The local segment file itself: what a fetch above the local log start reads.
        latencies = []
        with open(data.log_segment, "rb", buffering=0) as f:
            for position in positions:
                started = time.perf_counter()
                os.pread(f.fileno(), MiB, position)
                latencies.append((time.perf_counter() - started) * 1000)
        print(f"RESULT local segment 1 MiB pread p50 (page cache) | {percentile(latencies, 0.5):.2f} | ms | ", flush=True)

        local = LocalTieredStorage(root / "tier")
        measure("LocalTieredStorage", local, data, metadata, positions)
        local.close()
        with S3Server() as server:
            bucket = server.create_bucket("bench")
            s3 = S3RemoteStorageManager(bucket, "tiered", server.endpoint_url, server.region, server.access_key_id,
                                        server.secret_access_key)
            measure("S3 (moto)", s3, data, metadata, positions)
            s3.close()


if __name__ == "__main__":
    main()
