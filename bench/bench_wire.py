"""Wire-layer benchmarks (printed numbers, not tests).

    .venv/bin/python -m bench.bench_wire

1. produce path: validate_batch (header + CRC-32C) and assign_offsets on a
   1 MiB uncompressed batch of 100-byte records -> GB/s (goal >= 1 GB/s; no
   per-record Python work on this path).
2. decode every record of a 1 MiB (uncompressed size) zstd batch -> records/s.
3. hot response encoders vs kio, and frame splitting.
"""

from __future__ import annotations

import datetime
import importlib
import os
import time
from collections.abc import Callable

from wire.compression import CompressionType
from wire.framing import FrameReader, frame
from wire.messages import encode_response
from wire.records import (
    BATCH_HEADER_SIZE,
    Record,
    assign_offsets,
    build_batch,
    decode_columns,
    decode_records,
    record_keys_and_offsets,
    validate_batch,
)
from wire.response_encoders import (
    FetchPartitionData,
    FetchTopicData,
    ProducePartitionResult,
    ProduceTopicResult,
    encode_fetch_response,
    encode_produce_response,
)

MIB = 1 << 20


def _timeit(fn: Callable[[], object], min_seconds: float = 0.5) -> tuple[float, int]:
    """Seconds per call (best of a few rounds) and calls in the last round."""
    fn()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - t0
        if elapsed >= min_seconds / 4:
            break
        n *= 2
    best = elapsed / n
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best, n


def _records(total_bytes: int, value_size: int) -> list[Record]:
    rnd = os.urandom(value_size)
    out = []
    i = 0
    size = 0
    while size < total_bytes:
        value = (b"%010d" % i + rnd)[:value_size]
        out.append(Record(i, 1_700_000_000_000 + i, b"key-%d" % (i % 1000), value))
        size += value_size + 16  # ~ encoded size: value, key, varints
        i += 1
    return out


def bench_produce_path() -> None:
    records = _records(MIB, 100)
    batch = bytearray(build_batch(records))
    size = len(batch)

    def create_time() -> None:
        validate_batch(batch, 0, from_client=True)
        assign_offsets(batch, 0, 1_000_000, 3)

    def log_append_time() -> None:
        validate_batch(batch, 0, from_client=True)
        assign_offsets(batch, 0, 1_000_000, 3, log_append_time_ms=1_700_000_000_000)

    for label, fn in (("CreateTime", create_time), ("LogAppendTime (CRC twice)", log_append_time)):
        per_call, _ = _timeit(fn)
        print(
            f"validate+assign_offsets, {label}: {size / MIB:.2f} MiB batch, {len(records)} records of 100 B: "
            f"{per_call * 1e6:8.1f} us/batch  {size / per_call / 1e9:6.2f} GB/s"
        )


def bench_decode_zstd() -> None:
    records = _records(MIB, 100)
    batch = build_batch(records, compression=CompressionType.ZSTD)
    per_call, _ = _timeit(lambda: decode_records(batch), min_seconds=1.0)
    print(
        f"decode_records, zstd batch ({len(batch) / 1024:.0f} KiB compressed, ~1 MiB of records, "
        f"{len(records)} records): {per_call * 1e3:7.1f} ms/batch  {len(records) / per_call / 1e6:5.2f} M records/s"
    )
    raw = build_batch(records)
    per_call, _ = _timeit(lambda: decode_records(raw), min_seconds=1.0)
    print(f"decode_records, uncompressed 1 MiB batch: {len(records) / per_call / 1e6:5.2f} M records/s")
    per_call, _ = _timeit(lambda: decode_columns(raw, 0, 0, len(records)), min_seconds=1.0)
    print(f"decode_columns (the Spark source), uncompressed 1 MiB batch: "
          f"{len(records) / per_call / 1e6:5.2f} M records/s")
    data = raw[BATCH_HEADER_SIZE:]
    per_call, _ = _timeit(lambda: record_keys_and_offsets(data, len(records), 0, 0), min_seconds=1.0)
    print(f"record_keys_and_offsets (cleaner pass 1), 1 MiB section: {len(records) / per_call / 1e6:5.2f} M records/s")


def _kio_produce(version: int, topics: int, parts: int) -> object:
    m = importlib.import_module(f"kio.schema.produce.v{version}.response")
    from kio.schema.errors import ErrorCode
    from kio.static.primitive import i32Timedelta

    return m.ProduceResponse(
        responses=tuple(
            m.TopicProduceResponse(
                name=f"topic-{t}",
                partition_responses=tuple(
                    m.PartitionProduceResponse(
                        index=p, error_code=ErrorCode.none, base_offset=1000 + p, log_append_time=None,
                        log_start_offset=0, record_errors=(), error_message=None,
                    )
                    for p in range(parts)
                ),
            )
            for t in range(topics)
        ),
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
    )


def bench_encoders() -> None:
    topics, parts = 4, 8
    ours_in = [
        ProduceTopicResult(f"topic-{t}", [ProducePartitionResult(p, 0, 1000 + p, -1, 0) for p in range(parts)])
        for t in range(topics)
    ]
    kio_entity = _kio_produce(11, topics, parts)
    assert encode_produce_response(11, ours_in) == encode_response(kio_entity)
    ours, _ = _timeit(lambda: encode_produce_response(11, ours_in))
    theirs, _ = _timeit(lambda: encode_response(kio_entity))
    print(f"ProduceResponse v11 ({topics}x{parts} partitions): ours {ours * 1e6:6.1f} us, kio {theirs * 1e6:6.1f} us")

    chunk = memoryview(bytearray(MIB))
    fetch_in = [
        FetchTopicData(f"topic-{t}", [FetchPartitionData(p, 0, 5000, 5000, 0, None, -1, [chunk]) for p in range(parts)])
        for t in range(topics)
    ]
    per_call, _ = _timeit(lambda: encode_fetch_response(12, fetch_in))
    print(
        f"FetchResponse v12 ({topics}x{parts} partitions, 1 MiB records each, zero-copy parts): "
        f"{per_call * 1e6:6.1f} us"
    )


def bench_framing() -> None:
    payload = b"x" * 200
    stream = b"".join(frame(payload) for _ in range(5000))
    chunks = [stream[i : i + 65536] for i in range(0, len(stream), 65536)]

    def run() -> None:
        reader = FrameReader()
        for c in chunks:
            reader.feed(c)

    per_call, _ = _timeit(run)
    print(f"FrameReader: 200-byte frames in 64 KiB reads: {5000 / per_call / 1e6:5.2f} M frames/s")


def main() -> None:
    bench_produce_path()
    bench_decode_zstd()
    bench_encoders()
    bench_framing()


if __name__ == "__main__":
    main()
