"""The kafka-log source, the export and the compaction audit over a log directory copied to
an object store: the session's local S3 server (moto's, on 127.0.0.1: the `s3_server`
fixture of tests/conftest.py) holds a copy of a stopped
broker's log dir, and Spark reads it through pyarrow's S3 filesystem, as executors without
the broker's disk would. Every record read from the copy equals the local read of the same
directory, however the segments are split into tasks, and so does the audit's report."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pyspark = pytest.importorskip("pyspark", reason="the [spark] extra is not installed")

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from pyarrow import fs as pafs  # noqa: E402

from asyncbroker.testing import BrokerProcess  # noqa: E402
from asyncbroker.testing.s3_server import S3Server  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

COLUMNS = ["topic", "partition", "offset", "timestamp", "key", "value", "headers", "producer_id",
           "is_transactional", "batch_base_offset"]


@pytest.fixture(scope="module")
def spark() -> Iterator["pyspark.sql.SparkSession"]:
    from pipeline.session import build_session

    yield build_session("local[2]", "asyncbroker-tests", {"spark.sql.shuffle.partitions": "4"})


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A stopped broker's log dir: plain, keyed-with-headers and transactional records, over
    several segments."""
    path = tmp_path_factory.mktemp("copied") / "logs"
    with BrokerProcess([], log_dir=path) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        # segment.ms=100 and records stamped a second apart every 500: a segment per 500 records.
        topics = [NewTopic("events", 2, 1, config={"segment.ms": "100"}), NewTopic("ledger", 1, 1)]
        for future in admin.create_topics(topics).values():
            future.result(30)
        p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5, "compression.type": "lz4"})
        now = int(time.time() * 1000)
        for i in range(5000):
            p.produce("events", f"event-{i}-".encode() * 5, f"k{i % 97}".encode(), partition=i % 2,
                      headers=[("i", str(i).encode())] if i % 3 else None, timestamp=now + (i // 500) * 1000)
            if i % 500 == 499:
                assert p.flush(30) == 0  # the next second's records go in a Produce of their own
        assert p.flush(30) == 0
        t = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "ledger-writer"})
        t.init_transactions(30)
        for n in range(3):
            t.begin_transaction()
            t.produce("ledger", f"entry-{n}".encode(), b"acct", partition=0)
            t.commit_transaction(30)
    assert len(list((path / "events-0").glob("*.log"))) > 2  # several segments to split and read
    return path


@pytest.fixture(scope="module")
def s3_copy(log_dir: Path, s3_server: S3Server) -> str:
    """The log dir copied under s3://<bucket>/copy on the session's S3 server; the URI to read it by
    (credentials and endpoint in the URI, as pyarrow reads them: Spark's Python workers do
    not see the test's environment)."""
    bucket = s3_server.create_bucket(f"logs-{uuid.uuid4().hex[:12]}")
    query = f"endpoint_override={s3_server.host}:{s3_server.port}&scheme=http&region={s3_server.region}"
    auth = f"{s3_server.access_key_id}:{s3_server.secret_access_key}"
    fs, _ = pafs.FileSystem.from_uri(f"s3://{auth}@{bucket}?{query}")
    pafs.copy_files(str(log_dir), f"{bucket}/copy", source_filesystem=pafs.LocalFileSystem(), destination_filesystem=fs)
    return f"s3://{auth}@{bucket}/copy?{query}"


def rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.select(*COLUMNS).collect())


def test_kafka_log_reads_the_copy_as_the_original(spark: Any, log_dir: Path, s3_copy: str) -> None:
    local = rows(spark.read.format("kafka-log").load(str(log_dir)))
    assert len([r for r in local if r[0] == "events"]) == 5000
    assert [r[5] for r in local if r[0] == "ledger"] == [b"entry-0", b"entry-1", b"entry-2"]
    remote = spark.read.format("kafka-log").load(s3_copy)
    assert rows(remote) == local
    # Split at the copied offset indexes into many tasks: the same records, none twice.
    split = spark.read.format("kafka-log").option("maxPartitionBytes", "16384").load(s3_copy)
    assert split.rdd.getNumPartitions() > 10
    assert rows(split) == local
    # Options work as on a local dir; Hadoop's s3a:// names the same copy.
    only = (spark.read.format("kafka-log").option("topics", "events").option("partitions", "1")
            .option("startingOffsets", '{"events": {"1": 100}}').option("endingOffsets", "200")
            .load("s3a" + s3_copy[len("s3"):]))
    assert [r[2] for r in rows(only)] == list(range(100, 200))


def test_export_from_the_copy(spark: Any, log_dir: Path, s3_copy: str, tmp_path: Path) -> None:
    from pipeline.parquet_export import export_records

    written = export_records(spark, [s3_copy], str(tmp_path / "out"))
    # Every record of the dir, the internal topics' (__transaction_state) included.
    local = sorted((r[0], r[1], r[2]) for r in rows(spark.read.format("kafka-log").load(str(log_dir))))
    assert written == len(local) and len(local) > 5003
    exported = spark.read.parquet(str(tmp_path / "out"))
    assert sorted((r["topic"], r["partition"], r["offset"]) for r in exported.collect()) == local


def test_a_missing_copy_is_a_clear_error(spark: Any, s3_copy: str) -> None:
    missing = s3_copy.replace("/copy?", "/nothing-here?")
    with pytest.raises(Exception, match="does not exist or is empty"):
        spark.read.format("kafka-log").load(missing).count()


def test_audit_of_the_copy(spark: Any, log_dir: Path, s3_copy: str) -> None:
    """The compaction audit reads the copy's files (checkpoints, indexes, batch headers) and
    records as it reads the original: the same report, partition by partition."""
    import msgspec

    from pipeline.compaction_audit import run_audit

    now = int(time.time() * 1000)
    local = run_audit(spark, [str(log_dir)], now_ms=now)
    remote = run_audit(spark, [s3_copy], now_ms=now)
    assert [p.topic for p in local.partitions] == [p.topic for p in remote.partitions]
    assert {"events", "ledger"} <= {p.topic for p in local.partitions}
    for ours, theirs in zip(local.partitions, remote.partitions):
        mine, copy = msgspec.structs.asdict(ours), msgspec.structs.asdict(theirs)
        assert mine == copy, (ours.topic, ours.partition)


def test_the_cli_exports_a_copy(spark: Any, log_dir: Path, s3_copy: str, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    from asyncbroker.cli import main as asyncbroker_main

    out = tmp_path / "cli-out"
    capsys.readouterr()
    assert asyncbroker_main(["export", s3_copy, "--out", str(out)]) == 0  # on the module's Spark session
    records = spark.read.format("kafka-log").load(str(log_dir)).count()
    assert f"exported {records} records to {out}" in capsys.readouterr().out
    assert (out / "topic=events").is_dir() and (out / "topic=ledger").is_dir()
