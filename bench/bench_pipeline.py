"""Pipeline benchmark: rows/s of the `kafka-log` source, seconds for a compaction audit.

    .venv/bin/python bench/bench_pipeline.py [--records 2000000] [--audit-gb 1.0] [--master local[2]]

1. A broker takes `--records` records (4 partitions, 16-byte keys, 100-byte
   values, uncompressed, produced by confluent-kafka). Spark reads that topic
   twice over: with the `kafka-log` source from the log dir, and with Spark's
   own Kafka connector from the broker, every column materialised in the JVM
   (`sum(length(value))`, `count(*)`); the second of two runs is reported
   (the first starts the Python workers). Target (issue 17): the source
   >= 2x the connector. The same slices read in this process without Spark
   give the per-core decode ceiling.
2. `--tiered-records` records in a tiered topic whose rolled segments are in the remote tier
   only, and in a topic kept local, read by the `kafka-log` source from the stopped broker's
   log dir (the remote segments from the remote directory): rows/s of each, in Spark and in
   this process.
3. A log dir of about `--audit-gb` GiB (1 KiB values, 20,000 keys per
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


def fill_topic(bootstrap: str, records: int, topic: str = "bench", config: dict[str, str] | None = None) -> None:
    """`records` records of 100 B with 16-byte keys over PARTITIONS partitions of `topic`."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1, config=config or {})])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1_000_000,
                         "queue.buffering.max.kbytes": 1_048_576})
    value = b"v" * 100
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value, b"key-%012d" % (i % 200_000), partition=i % PARTITIONS)
                break
            except BufferError:  # the client's queue is full: let deliveries free it
                producer.poll(0.01)
    if producer.flush(300):
        raise RuntimeError("records left undelivered")


def timed_reads(name: str, df: object, records: int) -> float:
    """rows/s of the second of two full reads of `df` (the first starts Spark's Python workers
    and warms the JVM), every column materialised."""
    from pyspark.sql import functions as F

    best = 0.0
    for attempt in range(2):
        started = time.perf_counter()
        out = df.agg(F.count(F.lit(1)).alias("n"), F.sum(F.length("value")).alias("bytes"),  # type: ignore[attr-defined]
                     F.sum(F.size("headers")).alias("h"), F.max("key").alias("k")).collect()[0]
        seconds = time.perf_counter() - started
        assert out["n"] == records, out
        rate = records / seconds
        best = rate if attempt else best
        print(f"{name} run {attempt + 1}: {records:,} rows in {seconds:.2f}s = {rate:,.0f} rows/s", flush=True)
    return best


def in_process_read(options: dict[str, str]) -> tuple[int, float]:
    """(rows, rows/s) of the `kafka-log` source's planned slices read in this process, without
    Spark: the per-core decode ceiling."""
    from pyspark.sql.pandas.types import to_arrow_schema

    from pipeline.kafka_log_source import ReadOptions
    from pipeline.record_schema import RECORD_SCHEMA
    from pipeline.segment_reader import read_slice

    schema = to_arrow_schema(RECORD_SCHEMA, timezone="UTC")
    slices = ReadOptions(options).plan()
    started = time.perf_counter()
    rows = sum(b.num_rows for s in slices for b in read_slice(s, schema))
    return rows, rows / (time.perf_counter() - started)


def bench_source(master: str, records: int) -> None:
    """The same topic read by the `kafka-log` source (from the log dir) and by Spark's own Kafka
    connector (from the broker serving that log dir)."""
    from asyncbroker.testing import BrokerProcess
    from pipeline.session import build_session

    root = Path(tempfile.mkdtemp(prefix="bench-pipeline-"))
    try:
        with BrokerProcess(["log.cleaner.enable=false"], log_dir=root) as broker:
            started = time.perf_counter()
            fill_topic(broker.bootstrap, records)
            print(f"produced {records:,} records in {time.perf_counter() - started:.1f}s", flush=True)

            _rows, direct = in_process_read({"path": str(root), "topics": "bench"})
            print(f"in-process reader (1 core, no Spark): {direct:,.0f} rows/s")

            spark = build_session(master, "bench-pipeline")
            ours_df = spark.read.format("kafka-log").option("topics", "bench").load(str(root))
            print(f"kafka-log Spark partitions: {ours_df.rdd.getNumPartitions()}")
            ours = timed_reads("kafka-log", ours_df, records)
            theirs_df = (spark.read.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
                         .option("subscribe", "bench").option("includeHeaders", "true").load())
            theirs = timed_reads("Spark's Kafka connector", theirs_df, records)
        ratio = ours / theirs
        print(f"RESULT kafka-log source ({master}) | {ours:,.0f} | rows/s | >= 2x Spark's Kafka connector on the "
              f"same topic ({theirs:,.0f}, ratio {ratio:.2f}x)")
        print(f"RESULT in-process reader | {direct:,.0f} | rows/s/core |")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def bench_tiered_source(master: str, records: int) -> None:
    """The `kafka-log` source over a tiered topic whose rolled segments are in the remote tier
    only (local.retention.bytes=1, the local-directory tier), against the same records in a topic
    kept local, read from the stopped broker's log dir: the in-process reader and a Spark job."""
    from asyncbroker.testing import BrokerProcess
    from pipeline.session import build_session
    from storage.remote_storage_manager import LOCAL_TIERED_STORAGE

    root = Path(tempfile.mkdtemp(prefix="bench-tiered-"))
    log_dir, remote_dir = root / "logs", root / "remote"
    overrides = ["log.cleaner.enable=false", "remote.log.storage.system.enable=true",
                 f"remote.log.storage.manager.class.name={LOCAL_TIERED_STORAGE}", f"rsm.config.dir={remote_dir}",
                 "remote.log.manager.task.interval.ms=200", "log.retention.check.interval.ms=200",
                 "log.initial.task.delay.ms=0"]
    segment = {"segment.bytes": str(4 * MIB)}
    try:
        with BrokerProcess(overrides, log_dir=log_dir) as broker:
            fill_topic(broker.bootstrap, records, "local", segment)
            fill_topic(broker.bootstrap, records, "tiered",
                       {**segment, "remote.storage.enable": "true", "local.retention.bytes": "1"})

            def local_segments() -> list[int]:
                return [len(list((log_dir / f"tiered-{p}").glob("*.log"))) for p in range(PARTITIONS)]

            deadline = time.monotonic() + 300
            while local_segments() != [1] * PARTITIONS:  # each partition keeps only its active segment
                if time.monotonic() > deadline:
                    raise RuntimeError(f"rolled segments not tiered in 300 s: local segments {local_segments()}")
                time.sleep(0.2)  # the broker's remote log manager copies every 200 ms
        remote = sum(1 for _ in remote_dir.rglob("*.log"))
        print(f"tiered: {remote} segments in the remote tier, {PARTITIONS} active ones local", flush=True)

        spark = build_session(master, "bench-pipeline")
        # Untimed: the session's first job starts its Python workers (seconds), which the first
        # topic measured would otherwise pay.
        spark.read.format("kafka-log").option("topics", "local").load(str(log_dir)).count()
        rates: dict[str, tuple[float, float]] = {}
        for topic, options in (("local", {}), ("tiered", {"remoteStorage": str(remote_dir)})):
            rows, direct = in_process_read({"path": str(log_dir), "topics": topic, **options})
            assert rows == records, (topic, rows)
            print(f"{topic}: in-process reader (1 core, no Spark) {direct:,.0f} rows/s", flush=True)
            reader = spark.read.format("kafka-log").option("topics", topic)
            for key, value in options.items():
                reader = reader.option(key, value)
            rates[topic] = (direct, timed_reads(f"kafka-log, {topic}", reader.load(str(log_dir)), records))
        for topic, label in (("local", "local segments"), ("tiered", "remote-only segments")):
            direct, spark_rate = rates[topic]
            print(f"RESULT kafka-log source, {label} ({master}) | {spark_rate:,.0f} | rows/s | "
                  f"in-process reader {direct:,.0f} rows/s/core")
        print(f"RESULT kafka-log source, remote-only / local | {rates['tiered'][1] / rates['local'][1]:.2f} | x |")
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
    parser.add_argument("--tiered-records", type=int, default=1_000_000,
                        help="records of the tiered and the local topic read by the source (0 to skip)")
    parser.add_argument("--audit-gb", type=float, default=1.0, help="GiB of log to audit (0 to skip)")
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args(argv)
    bench_source(args.master, args.records)
    if args.tiered_records > 0:
        bench_tiered_source(args.master, args.tiered_records)
    if args.audit_gb > 0:
        bench_audit(args.master, args.audit_gb)
    return 0


if __name__ == "__main__":
    sys.exit(main())
