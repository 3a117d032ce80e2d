"""The kafka-log source, the export and the compaction audit over a tiered topic (KIP-405).

A real broker with the local-directory remote tier takes several 1 MiB segments of a topic with
`local.retention.bytes=1`, so every rolled segment is copied to the remote directory and its
local copy deleted; the log dir keeps the active segment and `__remote_log_metadata`. Once the
broker is stopped, the readers replay that metadata from the log dir's files and read the remote
segments from the remote directory: every record from offset 0, in order, equal to what a
consumer got from the broker. A topic whose copied segments are still local too is read once,
records below a DeleteRecords log start are not read, and a remote tier not given is an error
saying so (never fewer rows). A broker tiering to an S3 server (the session's moto server) is
read the same way through its S3 settings.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pyspark = pytest.importorskip("pyspark", reason="the [spark] extra is not installed")

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from asyncbroker.cli import main as asyncbroker_main  # noqa: E402
from asyncbroker.testing import BrokerProcess  # noqa: E402
from asyncbroker.testing.s3_server import S3Server  # noqa: E402
from wait_for import wait_until  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

MIB = 1 << 20
RECORDS = 6000  # about 6 MB of 1000-byte values: six 1 MiB segments
TRIMMED = 3000
TRIM_TO = 1500
LOCAL_TIERED_STORAGE = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"
S3_REMOTE_STORAGE = "asyncbroker.S3RemoteStorageManager"


def tiered_overrides(remote_dir: Path) -> list[str]:
    return ["remote.log.storage.system.enable=true",
            f"remote.log.storage.manager.class.name={LOCAL_TIERED_STORAGE}",
            f"rsm.config.dir={remote_dir}", "rlmm.config.remote.log.metadata.topic.num.partitions=3",
            "remote.log.manager.task.interval.ms=200", "log.retention.check.interval.ms=200",
            "log.initial.task.delay.ms=0"]


def value_of(topic: str, i: int) -> bytes:
    return (f"{topic}:{i:08d}:" * 100).encode()[:1000]


def produce(bootstrap: str, topic: str, count: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 64 * 1024})
    for i in range(count):
        while True:
            try:
                p.produce(topic, key=b"k%d" % (i % 100), value=value_of(topic, i),
                          headers=[("i", str(i).encode())] if i % 3 == 0 else None)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(60) == 0
    p.close()  # not left reconnecting to the broker once it is stopped


def consume_all(bootstrap: str, topic: str, count: int) -> list[tuple[Any, ...]]:
    """(offset, timestamp ms, key, value, headers) of every record, as a consumer reads them."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    seen: list[tuple[Any, ...]] = []
    try:
        def done() -> bool:
            for m in c.consume(500, 0.5):
                assert m.error() is None, m.error()
                seen.append((m.offset(), m.timestamp()[1], m.key(), m.value(),
                             [(k, v) for k, v in m.headers() or []]))
            return len(seen) >= count

        wait_until(done, timeout=120, message=lambda: f"consumed {len(seen)} of {count} of {topic}")
    finally:
        c.close()
    return seen


def remote_logs(remote_dir: Path, topic: str) -> list[Path]:
    return sorted(p for d in remote_dir.glob(f"{topic}-0-*") for p in d.glob("*.log"))


class Tiered:
    """A stopped broker's log dir and remote dir, and what a consumer read from it before."""

    def __init__(self, root: Path) -> None:
        self.log_dir = root / "logs"
        self.remote_dir = root / "remote"
        self.consumed: dict[str, list[tuple[Any, ...]]] = {}
        self.local_start: dict[str, int] = {}


@pytest.fixture(scope="module")
def tiered(tmp_path_factory: pytest.TempPathFactory) -> Tiered:
    """Three tiered topics: `tiered` (local.retention.bytes=1: all but the active segment are remote
    only), `both` (local retention unset: copied segments stay local too) and `trimmed`
    (DeleteRecords to offset 1500 after its segments went remote); and `plain`, not tiered."""
    t = Tiered(tmp_path_factory.mktemp("tiered"))
    with BrokerProcess(tiered_overrides(t.remote_dir), log_dir=t.log_dir) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        tiered_config = {"remote.storage.enable": "true", "segment.bytes": str(MIB)}
        futures = admin.create_topics([
            NewTopic("tiered", 1, 1, config={**tiered_config, "local.retention.bytes": "1"}),
            NewTopic("both", 1, 1, config=tiered_config),
            NewTopic("trimmed", 1, 1, config={**tiered_config, "local.retention.bytes": "1"}),
            NewTopic("plain", 1, 1)])
        for future in futures.values():
            future.result(30)
        for topic, count in (("tiered", RECORDS), ("both", RECORDS), ("trimmed", TRIMMED), ("plain", 100)):
            produce(broker.bootstrap, topic, count)

        def local_logs(topic: str) -> list[Path]:
            return sorted((t.log_dir / f"{topic}-0").glob("*.log"))

        # Every rolled segment is copied; local retention then leaves `tiered` only its active one.
        wait_until(lambda: len(local_logs("tiered")) == 1 and len(local_logs("trimmed")) == 1, timeout=120,
                   message=lambda: f"local segments {[p.name for p in local_logs('tiered')]}")
        wait_until(lambda: len(remote_logs(t.remote_dir, "both")) == len(local_logs("both")) - 1, timeout=120,
                   message=lambda: f"remote segments of both: {remote_logs(t.remote_dir, 'both')}")
        assert len(remote_logs(t.remote_dir, "tiered")) >= 5 and len(local_logs("both")) >= 6
        for topic in ("tiered", "both", "trimmed"):
            t.local_start[topic] = int(local_logs(topic)[0].name[:20])
        for topic, count in (("tiered", RECORDS), ("both", RECORDS)):
            t.consumed[topic] = consume_all(broker.bootstrap, topic, count)

        # DeleteRecords: the remote segment wholly below the new log start goes, the one holding it stays.
        trimmed_remote = len(remote_logs(t.remote_dir, "trimmed"))
        result = admin.delete_records([TopicPartition("trimmed", 0, TRIM_TO)])
        for future in result.values():
            future.result(30)
        wait_until(lambda: len(remote_logs(t.remote_dir, "trimmed")) < trimmed_remote, timeout=60,
                   message=lambda: f"remote segments of trimmed: {remote_logs(t.remote_dir, 'trimmed')}")
        t.consumed["trimmed"] = consume_all(broker.bootstrap, "trimmed", TRIMMED - TRIM_TO)
        assert t.consumed["trimmed"][0][0] == TRIM_TO
    return t


@pytest.fixture(scope="module")
def spark() -> Iterator["pyspark.sql.SparkSession"]:
    from pipeline.session import build_session

    yield build_session("local[2]", "asyncbroker-tests", {"spark.sql.shuffle.partitions": "4"})


def read(spark: Any, log_dir: Path, topic: str, **options: str) -> Any:
    reader = spark.read.format("kafka-log").option("topics", topic)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(str(log_dir))


def as_consumed(rows: list[Any]) -> list[tuple[Any, ...]]:
    """kafka-log rows in consume_all's shape, in the order the source returned them."""
    return [(r["offset"], r["ts_ms"], None if r["key"] is None else bytes(r["key"]), bytes(r["value"]),
             [(h["key"], bytes(h["value"])) for h in r["headers"] or []]) for r in rows]


def collect(df: Any) -> list[tuple[Any, ...]]:
    from pyspark.sql import functions as F

    return as_consumed(df.withColumn("ts_ms", F.unix_millis("timestamp"))
                       .select("offset", "ts_ms", "key", "value", "headers").collect())


def test_the_source_reads_a_tiered_topic_from_offset_0_in_order(spark: Any, tiered: Tiered) -> None:
    df = read(spark, tiered.log_dir, "tiered", remoteStorage=str(tiered.remote_dir), maxPartitionBytes="262144")
    # Remote segments are planned and split like local ones: four slices or more per 1 MiB segment.
    assert df.rdd.getNumPartitions() >= 4 * len(remote_logs(tiered.remote_dir, "tiered"))
    got = collect(df)
    assert [r[0] for r in got] == list(range(RECORDS))  # every record, in order, once
    assert got == tiered.consumed["tiered"]
    assert tiered.local_start["tiered"] >= RECORDS * 5 // 6  # most of them came from the remote tier


def test_the_brokers_settings_locate_the_remote_tier(spark: Any, tiered: Tiered) -> None:
    df = read(spark, tiered.log_dir, "tiered", **{"remote.log.storage.manager.class.name": LOCAL_TIERED_STORAGE,
                                                  "rsm.config.dir": str(tiered.remote_dir)})
    assert [r["offset"] for r in df.select("offset").collect()] == list(range(RECORDS))


def test_segments_both_remote_and_local_are_read_once(spark: Any, tiered: Tiered) -> None:
    from pipeline.kafka_log_source import ReadOptions

    options = ReadOptions({"path": str(tiered.log_dir), "topics": "both", "remoteStorage": str(tiered.remote_dir)})
    (part,) = options.scan().partitions
    assert len(part.remote_segments) >= 5 and part.local_log_start_offset == 0
    assert all(not s.path.startswith(str(tiered.remote_dir)) for s in options.plan())  # all read locally
    assert collect(read(spark, tiered.log_dir, "both", remoteStorage=str(tiered.remote_dir))) == tiered.consumed["both"]
    # A tiered topic with nothing remote-only needs no remote tier.
    assert read(spark, tiered.log_dir, "both").count() == RECORDS


def test_records_below_the_log_start_are_not_read(spark: Any, tiered: Tiered) -> None:
    df = read(spark, tiered.log_dir, "trimmed", remoteStorage=str(tiered.remote_dir))
    got = collect(df)
    assert got == tiered.consumed["trimmed"]
    assert got[0][0] == TRIM_TO and tiered.local_start["trimmed"] > TRIM_TO
    # respectLogStartOffset=false: what the remote segment holding the log start still has below it.
    everything = read(spark, tiered.log_dir, "trimmed", remoteStorage=str(tiered.remote_dir),
                      respectLogStartOffset="false")
    offsets = [r["offset"] for r in everything.select("offset").collect()]
    assert offsets == list(range(offsets[0], TRIMMED)) and 0 < offsets[0] < TRIM_TO


def test_a_remote_tier_not_given_is_an_error_not_fewer_rows(spark: Any, tiered: Tiered) -> None:
    with pytest.raises(Exception, match=r"(?s)tiered storage only.*tiered-0 \(offsets 0 to \d+: \d segment\(s\).*"
                                        r"remoteStorage.*localOnly=true"):
        read(spark, tiered.log_dir, "tiered").count()
    local = read(spark, tiered.log_dir, "tiered", localOnly="true")
    assert [r["offset"] for r in local.select("offset").collect()] == list(range(tiered.local_start["tiered"], RECORDS))
    # Offsets past the remote tier need none.
    past = read(spark, tiered.log_dir, "tiered", startingOffsets=str(tiered.local_start["tiered"]))
    assert past.count() == RECORDS - tiered.local_start["tiered"]
    # A wrong directory is found out before any row is read.
    with pytest.raises(Exception, match="has none of them"):
        read(spark, tiered.log_dir, "tiered", remoteStorage=str(tiered.log_dir)).count()


def test_export_writes_every_record_of_the_tiered_topics(spark: Any, tiered: Tiered, tmp_path: Path) -> None:
    from pipeline.parquet_export import export_records

    out = tmp_path / "out"
    written = export_records(spark, [str(tiered.log_dir)], str(out), topics=["tiered", "both", "trimmed"],
                             read_options={"remoteStorage": str(tiered.remote_dir)})
    assert written == 2 * RECORDS + TRIMMED - TRIM_TO
    exported = spark.read.parquet(str(out)).where("topic = 'tiered'").orderBy("offset")
    rows = [(r["offset"], bytes(r["value"])) for r in exported.select("offset", "value").collect()]
    assert rows == [(r[0], r[3]) for r in tiered.consumed["tiered"]]
    with pytest.raises(ValueError, match="tiered storage only"):
        export_records(spark, [str(tiered.log_dir)], str(tmp_path / "refused"), topics=["tiered"])
    assert not (tmp_path / "refused").exists()


def test_audit_shows_the_remote_segments(spark: Any, tiered: Tiered) -> None:
    from pipeline.audit_report import to_html, to_text
    from pipeline.compaction_audit import run_audit

    report = run_audit(spark, [str(tiered.log_dir)], read_options={"remoteStorage": str(tiered.remote_dir)})
    by_topic = {p.topic: p for p in report.partitions}
    a = by_topic["tiered"]
    logs = remote_logs(tiered.remote_dir, "tiered")
    assert a.remote is not None and a.remote.read
    assert (a.remote.segments, a.remote.bytes) == (len(logs), sum(p.stat().st_size for p in logs))
    assert (a.remote.start_offset, a.remote.end_offset) == (0, tiered.local_start["tiered"] - 1)
    assert a.remote.local_log_start_offset == tiered.local_start["tiered"]
    assert a.records == RECORDS and a.remote.records == tiered.local_start["tiered"]
    stamps = [r[1] for r in tiered.consumed["tiered"]]
    assert a.remote.min_timestamp_ms == min(stamps)
    assert a.remote.max_timestamp_ms == max(stamps[: tiered.local_start["tiered"]])
    assert a.log_start_offset == 0 and a.last_compaction_gap_offset is None  # no gap at the tier boundary
    assert (a.segments, a.bytes) == (1, (tiered.log_dir / "tiered-0" / f"{a.remote.local_log_start_offset:020d}.log")
                                     .stat().st_size)  # the local part
    assert any(f.startswith(f"tiered: {len(logs)} remote segment(s)") for f in a.findings)
    trimmed = by_topic["trimmed"]
    assert trimmed.log_start_offset == TRIM_TO and trimmed.records == TRIMMED - TRIM_TO
    assert trimmed.remote is not None and trimmed.remote.records == tiered.local_start["trimmed"] - TRIM_TO
    assert by_topic["plain"].remote is None and by_topic["plain"].records == 100
    assert "remote segs" in to_text(report) and "remote storage" in to_html(report)

    local = run_audit(spark, [str(tiered.log_dir)], topics=["tiered"], read_options={"localOnly": "true"})
    (only,) = local.partitions
    assert only.remote is not None and not only.remote.read and only.remote.segments == len(logs)
    assert only.records == RECORDS - tiered.local_start["tiered"] and only.last_compaction_gap_offset is None
    assert any("not read" in f for f in only.findings)


def test_the_cli_reads_the_remote_tier_from_the_brokers_config(spark: Any, tiered: Tiered, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "server.properties"
    config.write_text(f"log.dirs={tiered.log_dir}\n"
                      f"remote.log.storage.system.enable=true\n"
                      f"remote.log.storage.manager.class.name={LOCAL_TIERED_STORAGE}\n"
                      f"rsm.config.dir={tiered.remote_dir}\n")
    # The refusal comes before Spark: with SPARK_HOME empty, starting a session would fail otherwise.
    no_spark = {**os.environ, "SPARK_HOME": str(tmp_path / "no-spark")}
    for command in (["audit"], ["export", "--out", str(tmp_path / "refused-out")]):
        refused = subprocess.run([sys.executable, "-m", "asyncbroker", *command, str(tiered.log_dir), "--topics",
                                  "tiered"], capture_output=True, text=True, timeout=120, check=False, env=no_spark)
        assert refused.returncode == 1, (command, refused.stderr[-3000:])
        assert "tiered storage only" in refused.stderr and "--remote-storage or --broker-config" in refused.stderr
        assert "Traceback" not in refused.stderr
    assert not (tmp_path / "refused-out").exists()
    # The export runs in this process, on the module's Spark session (getOrCreate), not a JVM of its own.
    out = tmp_path / "cli-out"
    capsys.readouterr()
    assert asyncbroker_main(["export", "--broker-config", str(config), "--topics", "tiered", "--out", str(out)]) == 0
    assert f"exported {RECORDS} records" in capsys.readouterr().out


class S3Tiered:
    """A stopped broker's log dir whose tiered topic went to a bucket of the session's S3 server,
    the broker's S3 settings (rsm.config.*), and what a consumer read."""

    def __init__(self, log_dir: Path, settings: dict[str, str], consumed: list[tuple[Any, ...]],
                 local_start: int) -> None:
        self.log_dir, self.settings, self.consumed, self.local_start = log_dir, settings, consumed, local_start


@pytest.fixture(scope="module")
def s3_tiered(s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Tiered]:
    bucket = s3_server.create_bucket(f"pipeline-{uuid.uuid4().hex[:12]}")
    settings = {"remote.log.storage.manager.class.name": S3_REMOTE_STORAGE,
                **{f"rsm.config.{k}": v for k, v in s3_server.rsm_configs(bucket, prefix="cold/tier").items()}}
    log_dir = tmp_path_factory.mktemp("s3-tiered") / "logs"
    overrides = [o for o in tiered_overrides(Path("unused")) if not o.startswith(("remote.log.storage.manager",
                                                                                   "rsm.config."))]
    with BrokerProcess([*overrides, *(f"{k}={v}" for k, v in settings.items())], log_dir=log_dir) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("tiered", 1, 1, config={
            "remote.storage.enable": "true", "segment.bytes": str(MIB),
            "local.retention.bytes": "1"})])["tiered"].result(30)
        produce(broker.bootstrap, "tiered", TRIMMED)
        local = log_dir / "tiered-0"
        wait_until(lambda: len(list(local.glob("*.log"))) == 1, timeout=120,
                   message=lambda: f"local segments {sorted(p.name for p in local.glob('*.log'))}")
        consumed = consume_all(broker.bootstrap, "tiered", TRIMMED)
        local_start = int(next(local.glob("*.log")).name[:20])
        del admin  # not kept reconnecting, in this suspended fixture, to the broker once stopped
    assert any(k.startswith("cold/tier/tiered-0-") and k.endswith(".log") for k in s3_server.keys(bucket))
    yield S3Tiered(log_dir, settings, consumed, local_start)
    s3_server.delete_bucket(bucket)


def test_a_remote_tier_in_s3_reads_the_same(spark: Any, s3_tiered: S3Tiered, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """The broker tiered to S3; the readers take its S3 settings (or the tier as a URI) and read the
    bucket through pyarrow's S3 filesystem."""
    from pipeline.remote_tier import remote_tier_from_settings

    assert s3_tiered.local_start > 0
    got = collect(read(spark, s3_tiered.log_dir, "tiered", maxPartitionBytes="262144", **s3_tiered.settings))
    assert got == s3_tiered.consumed
    tier = remote_tier_from_settings(s3_tiered.settings)
    secret = s3_tiered.settings["rsm.config.s3.secret.access.key"]
    assert tier is not None and tier.root.endswith("/cold/tier") and secret not in tier.describe()
    assert read(spark, s3_tiered.log_dir, "tiered", remoteStorage=tier.location).count() == TRIMMED
    config = tmp_path / "server.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in s3_tiered.settings.items()))
    capsys.readouterr()
    assert asyncbroker_main(["audit", str(s3_tiered.log_dir), "--topics", "tiered",
                             "--broker-config", str(config)]) == 0  # on the module's Spark session
    audit = capsys.readouterr().out
    assert f"hold offsets 0 to {s3_tiered.local_start - 1} ({s3_tiered.local_start} records read" in audit
