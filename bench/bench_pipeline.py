"""Pipeline benchmark: rows/s of the `kafka-log` source, seconds for a compaction audit.

    .venv/bin/python bench/bench_pipeline.py [--records 2000000] [--audit-gb 1.0] [--master local[2]]

1. A log dir of `--records` records (4 partitions, batches of 500 records,
   16-byte keys, 100-byte values, uncompressed) is read by Spark with every
   column materialised in the JVM (`sum(length(value))`, `count(*)`); the
   second of two runs is reported (the first starts the Python workers).
   The same slices read in this process without Spark give the per-core
   decode ceiling.
2. A log dir of about `--audit-gb` GiB (1 KiB values, 20,000 keys per
   partition, 4 partitions, 256 MiB segments) is audited end to end
   (`run_audit`: planning, the scan, both aggregations).

Prints numbers (and RESULT lines for `python -m bench`); asserts nothing.
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

from storage.log import Log  # noqa: E402
from storage.log_config import LogConfig  # noqa: E402
from wire.records import Record, build_batch  # noqa: E402

MIB = 1 << 20
PARTITIONS = 4
BATCH_RECORDS = 500


def _templates(count: int, keys_per_partition: int, value_size: int, now: int) -> list[bytes]:
    """Distinct batches cycling through the key space (appending re-assigns offsets)."""
    value = b"v" * value_size
    out = []
    for t in range(count):
        first = (t * BATCH_RECORDS) % keys_per_partition
        recs = [Record(i, now + i, b"key-%012d" % ((first + i) % keys_per_partition), value)
                for i in range(BATCH_RECORDS)]
        out.append(build_batch(recs))
    return out


def write_log_dir(root: Path, records: int, value_size: int, keys_per_partition: int, segment_bytes: int) -> int:
    """Write `records` records over PARTITIONS partitions; returns the bytes written."""
    now = int(time.time() * 1000)
    templates = _templates(max(1, keys_per_partition // BATCH_RECORDS), keys_per_partition, value_size, now)
    config = LogConfig(segment_bytes=segment_bytes, max_message_bytes=16 * MIB)
    per_partition = records // PARTITIONS
    total = 0
    for p in range(PARTITIONS):
        log = Log.open(root / f"bench-{p}", config)
        for i in range(per_partition // BATCH_RECORDS):
            log.append_as_leader(templates[i % len(templates)])
        total += log.size_in_bytes
        log.close()
    return total


def bench_source(master: str, records: int) -> None:
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import to_arrow_schema

    from pipeline.kafka_log_source import ReadOptions
    from pipeline.record_schema import RECORD_SCHEMA
    from pipeline.segment_reader import read_slice
    from pipeline.session import build_session

    root = Path(tempfile.mkdtemp(prefix="bench-pipeline-"))
    try:
        started = time.perf_counter()
        size = write_log_dir(root, records, 100, 200_000, 256 * MIB)
        print(f"wrote {records:,} records ({size / MIB:.0f} MiB) in {time.perf_counter() - started:.1f}s")

        schema = to_arrow_schema(RECORD_SCHEMA, timezone="UTC")
        slices = ReadOptions({"path": str(root)}).plan()
        started = time.perf_counter()
        rows = sum(b.num_rows for s in slices for b in read_slice(s, schema))
        direct = rows / (time.perf_counter() - started)
        print(f"in-process reader (1 core, no Spark): {direct:,.0f} rows/s")

        spark = build_session(master, "bench-pipeline")
        df = spark.read.format("kafka-log").load(str(root))
        print(f"Spark partitions: {df.rdd.getNumPartitions()}")
        best = 0.0
        for attempt in range(2):
            started = time.perf_counter()
            out = df.agg(F.count(F.lit(1)).alias("n"), F.sum(F.length("value")).alias("bytes"),
                         F.sum(F.size("headers")).alias("h"), F.max("key").alias("k")).collect()[0]
            seconds = time.perf_counter() - started
            assert out["n"] == records, out
            rate = records / seconds
            best = rate if attempt else best
            print(f"run {attempt + 1}: {records:,} rows in {seconds:.2f}s = {rate:,.0f} rows/s")
        print(f"RESULT kafka-log source ({master}) | {best:,.0f} | rows/s | >= 300,000")
        print(f"RESULT in-process reader | {direct:,.0f} | rows/s/core |")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def bench_audit(master: str, gib: float) -> None:
    from pipeline.compaction_audit import run_audit
    from pipeline.session import build_session

    root = Path(tempfile.mkdtemp(prefix="bench-audit-"))
    try:
        value_size = 1000
        records = int(gib * 1024 * MIB / (value_size + 30))
        records -= records % (PARTITIONS * BATCH_RECORDS)
        started = time.perf_counter()
        size = write_log_dir(root, records, value_size, 20_000, 256 * MIB)
        print(f"wrote {records:,} records ({size / MIB:.0f} MiB) in {time.perf_counter() - started:.1f}s")
        spark = build_session(master, "bench-pipeline")
        started = time.perf_counter()
        report = run_audit(spark, [str(root)])
        seconds = time.perf_counter() - started
        audited = sum(p.records for p in report.partitions)
        assert audited == records, audited
        print(f"audit of {size / MIB:,.0f} MiB ({audited:,} records, {len(report.partitions)} partitions): "
              f"{seconds:.1f}s ({size / MIB / seconds:.1f} MiB/s)")
        print(f"RESULT audit of {size / (1024 * MIB):.2f} GiB ({master}) | {seconds:.1f} | s |")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--audit-gb", type=float, default=1.0, help="GiB of log to audit (0 to skip)")
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args(argv)
    bench_source(args.master, args.records)
    if args.audit_gb > 0:
        bench_audit(args.master, args.audit_gb)
    return 0


if __name__ == "__main__":
    sys.exit(main())
