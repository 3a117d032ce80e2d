"""Spark's own Kafka connector (spark-sql-kafka-0-10 at pyspark's version, on the classpath
of every pipeline.session) against a broker started the way users start it, each test
checking every record:

- batch reads: earliest to latest, offsets as JSON per partition, by timestamp (per
  partition and global), with headers; batch writes with keys, headers and partitions;
- Structured Streaming: a read with a checkpoint, stopped and restarted with no record lost
  or repeated, maxOffsetsPerTrigger; failOnDataLoss after DeleteRecords and after
  retention; the Kafka sink; read_committed over committed and aborted transactions;
- `format("kafka")` and `format("kafka-log")` side by side in one session.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pyspark = pytest.importorskip("pyspark", reason="the [spark] extra is not installed")

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic  # noqa: E402

from pyspark.errors import StreamingQueryException  # noqa: E402

from asyncbroker.testing import BrokerProcess  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

BASE_TS = 1_780_000_000_000  # record timestamps of the tests: a second (or an hour) apart from here
HOUR_MS = 3_600_000


@pytest.fixture(scope="module")
def spark() -> Iterator["pyspark.sql.SparkSession"]:
    from pipeline.session import build_session

    # getOrCreate: the same local[2] session the other Spark tests use when run together.
    yield build_session("local[2]", "asyncbroker-tests", {"spark.sql.shuffle.partitions": "4"})


def new_topic(bootstrap: str, partitions: int = 2, **configs: str) -> str:
    """A new topic that keeps its records whatever their age (retention.ms=-1 unless given): the
    records are stamped from BASE_TS, months before today, and the broker's retention pass (the
    first 30 s after it starts, then every 5 min) would delete them at the default 7 days."""
    name = f"spark-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1, config={"retention.ms": "-1", **configs})])[name].result(20)
    return name


def produce(bootstrap: str, topic: str, partition: int, first: int, count: int, spacing_ms: int = 1000) -> None:
    """Records n = first..first+count-1: key k<n>, value v<n>, header n, stamped
    BASE_TS + n * spacing_ms, one Produce each."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for n in range(first, first + count):
        p.produce(topic, key=f"k{n}".encode(), value=f"v{n}".encode(), partition=partition,
                  headers=[("n", str(n).encode())], timestamp=BASE_TS + n * spacing_ms)
        assert p.flush(30) == 0


def kafka_read(spark: Any, bootstrap: str, topic: str, **options: str) -> Any:
    reader = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
              .option("includeHeaders", "true"))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def rows_of(df: Any) -> list[tuple[int, int, str, str]]:
    """(partition, offset, key, value) of every row, sorted."""
    return sorted((r["partition"], r["offset"], r["key"].decode(), r["value"].decode())
                  for r in df.select("partition", "offset", "key", "value").collect())


def expected(partition: int, offsets: range, first_n: int = 0) -> list[tuple[int, int, str, str]]:
    return [(partition, o, f"k{first_n + o}", f"v{first_n + o}") for o in offsets]


# -- batch ---------------------------------------------------------------------------------------


def test_batch_read_earliest_to_latest_every_field(spark: Any, asyncbroker: BrokerProcess) -> None:
    bootstrap = asyncbroker.bootstrap
    topic = new_topic(bootstrap)
    produce(bootstrap, topic, 0, 0, 20)
    produce(bootstrap, topic, 1, 100, 5)
    rows = kafka_read(spark, bootstrap, topic).collect()
    got = sorted((r["partition"], r["offset"], r["key"], r["value"], r["topic"], r["timestampType"],
                  int(r["timestamp"].timestamp() * 1000), [(h["key"], h["value"]) for h in r["headers"]])
                 for r in rows)
    want = sorted([(0, n, f"k{n}".encode(), f"v{n}".encode(), topic, 0, BASE_TS + n * 1000, [("n", str(n).encode())])
                   for n in range(20)]
                  + [(1, n - 100, f"k{n}".encode(), f"v{n}".encode(), topic, 0, BASE_TS + n * 1000,
                      [("n", str(n).encode())]) for n in range(100, 105)])
    assert got == want


def test_batch_read_by_offsets_and_by_timestamp(spark: Any, asyncbroker: BrokerProcess) -> None:
    bootstrap = asyncbroker.bootstrap
    topic = new_topic(bootstrap)
    produce(bootstrap, topic, 0, 0, 20)
    produce(bootstrap, topic, 1, 0, 20)
    # JSON per partition: -2 is earliest, -1 latest; the ending offset is exclusive.
    df = kafka_read(spark, bootstrap, topic, startingOffsets=f'{{"{topic}": {{"0": 5, "1": -2}}}}',
                    endingOffsets=f'{{"{topic}": {{"0": 10, "1": -1}}}}')
    assert rows_of(df) == expected(0, range(5, 10)) + expected(1, range(20))
    # By timestamp per partition: each starts at the first record stamped at or after it.
    df = kafka_read(spark, bootstrap, topic,
                    startingOffsetsByTimestamp=f'{{"{topic}": {{"0": {BASE_TS + 12_000}, "1": {BASE_TS + 2_500}}}}}',
                    endingOffsetsByTimestamp=f'{{"{topic}": {{"0": {BASE_TS + 15_000}, "1": {BASE_TS + 4_000}}}}}')
    assert rows_of(df) == expected(0, range(12, 15)) + expected(1, range(3, 4))
    # One timestamp for every partition.
    df = kafka_read(spark, bootstrap, topic, startingTimestamp=str(BASE_TS + 17_000))
    assert rows_of(df) == expected(0, range(17, 20)) + expected(1, range(17, 20))


def test_batch_write_keys_headers_and_partitions(spark: Any, asyncbroker: BrokerProcess) -> None:
    from pyspark.sql import functions as F

    bootstrap = asyncbroker.bootstrap
    topic = new_topic(bootstrap, partitions=3)
    df = spark.createDataFrame([(f"k{i}", f"v{i}", i % 3) for i in range(30)], ["key", "value", "partition"])
    df = df.withColumn("partition", F.col("partition").cast("int")).withColumn("headers", F.array(F.struct(F.lit("n").alias("key"),
                                                   F.col("value").cast("binary").alias("value"))))
    df.write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", topic).save()
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{topic}", "enable.partition.eof": True})
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(3)])
        got: list[tuple[int, bytes, bytes, list[tuple[str, bytes]]]] = []
        eof: set[int] = set()
        deadline = time.monotonic() + 30
        while len(eof) < 3 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                eof.add(m.partition())
                continue
            got.append((m.partition(), m.key(), m.value(), list(m.headers() or [])))
    finally:
        c.close()
    assert sorted(got) == sorted((i % 3, f"k{i}".encode(), f"v{i}".encode(), [("n", f"v{i}".encode())])
                                 for i in range(30))


def test_kafka_and_kafka_log_side_by_side(spark: Any, asyncbroker: BrokerProcess) -> None:
    """The same records through the broker (format "kafka") and from its log directory
    (format "kafka-log"), in one session."""
    bootstrap = asyncbroker.bootstrap
    topic = new_topic(bootstrap)
    produce(bootstrap, topic, 0, 0, 50)
    produce(bootstrap, topic, 1, 0, 7)
    over_the_wire = rows_of(kafka_read(spark, bootstrap, topic))
    from_files = rows_of(spark.read.format("kafka-log").option("topics", topic).load(str(asyncbroker.log_dir)))
    assert over_the_wire == from_files == expected(0, range(50)) + expected(1, range(7))


# -- streaming -----------------------------------------------------------------------------------


class Collected:
    """Rows a streaming query handed to foreachBatch, batch by batch (on the driver)."""

    def __init__(self) -> None:
        self.batches: list[list[tuple[int, int, str, str]]] = []

    def __call__(self, df: Any, batch_id: int) -> None:
        self.batches.append(rows_of(df))

    @property
    def rows(self) -> list[tuple[int, int, str, str]]:
        return sorted(r for b in self.batches for r in b)


def stream(spark: Any, bootstrap: str, topic: str, checkpoint: Path, sink: Collected, **options: str) -> Any:
    reader = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest"))
    for key, value in options.items():
        reader = reader.option(key, value)
    return (reader.load().writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True).start())


def finish(query: Any) -> None:
    """Wait for an availableNow query to end; raise what it failed with."""
    assert query.awaitTermination(180), "the streaming query did not finish"
    if query.exception() is not None:
        raise AssertionError(str(query.exception()))


def test_streaming_read_restarts_from_its_checkpoint(spark: Any, asyncbroker: BrokerProcess, tmp_path: Path) -> None:
    bootstrap = asyncbroker.bootstrap
    topic = new_topic(bootstrap)
    produce(bootstrap, topic, 0, 0, 30)
    produce(bootstrap, topic, 1, 0, 10)
    checkpoint = tmp_path / "checkpoint"
    first = Collected()
    finish(stream(spark, bootstrap, topic, checkpoint, first, maxOffsetsPerTrigger="7"))
    assert first.rows == expected(0, range(30)) + expected(1, range(10))
    sizes = [len(b) for b in first.batches if b]
    assert max(sizes) <= 7 and len(sizes) >= 6, sizes  # maxOffsetsPerTrigger held
    produce(bootstrap, topic, 0, 30, 5)  # arrives while no query runs
    second = Collected()
    finish(stream(spark, bootstrap, topic, checkpoint, second, maxOffsetsPerTrigger="7"))
    assert second.rows == expected(0, range(30, 35))  # no record lost or repeated


def test_streaming_kafka_sink(spark: Any, asyncbroker: BrokerProcess, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    bootstrap = asyncbroker.bootstrap
    src, dst = new_topic(bootstrap), new_topic(bootstrap)
    produce(bootstrap, src, 0, 0, 40)
    produce(bootstrap, src, 1, 40, 40)
    source = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", src)
              .option("startingOffsets", "earliest").load())
    query = (source.select("key", F.upper(F.col("value").cast("string")).alias("value"), "partition")
             .writeStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", dst)
             .option("checkpointLocation", str(tmp_path / "sink")).trigger(availableNow=True).start())
    finish(query)
    got = sorted((p, k, v) for p, _o, k, v in rows_of(kafka_read(spark, bootstrap, dst)))
    assert got == sorted((0 if n < 40 else 1, f"k{n}", f"V{n}") for n in range(80))


def test_read_committed_skips_aborted_transactions(spark: Any, asyncbroker: BrokerProcess, tmp_path: Path) -> None:
    bootstrap = asyncbroker.bootstrap
    topic = new_topic(bootstrap, partitions=1)
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"spark-{topic}"})
    p.init_transactions(30)
    for n, commit in ((0, True), (5, False), (10, True)):
        p.begin_transaction()
        for i in range(n, n + 5):
            p.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0)
        # Sent before the abort (librdkafka drops what it has not sent yet when it aborts), so
        # the aborted records are in the log and only the isolation level hides them.
        assert p.flush(30) == 0
        (p.commit_transaction if commit else p.abort_transaction)(30)
    committed = sorted(f"v{i}" for i in (*range(0, 5), *range(10, 15)))

    def values(df: Any) -> list[str]:
        return sorted(r["value"].decode() for r in df.select("value").collect())

    assert values(kafka_read(spark, bootstrap, topic, **{"kafka.isolation.level": "read_committed"})) == committed
    assert values(kafka_read(spark, bootstrap, topic)) == sorted(f"v{i}" for i in range(15))
    sink = Collected()
    finish(stream(spark, bootstrap, topic, tmp_path / "rc", sink, **{"kafka.isolation.level": "read_committed"}))
    assert sorted(v for _p, _o, _k, v in sink.rows) == committed


def _delete_records(bootstrap: str, topic: str, partition: int, before: int) -> None:
    from confluent_kafka import TopicPartition as TP

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.delete_records([TP(topic, partition, before)]).values():
        f.result(20)


@pytest.fixture(scope="module")
def retention_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker whose retention pass the test runs on demand (the monitor's lever)."""
    with BrokerProcess(log_dir=tmp_path_factory.mktemp("spark-retention"), monitor=True) as broker:
        yield broker


@pytest.mark.parametrize("how", ["DeleteRecords", "retention"])
def test_fail_on_data_loss(spark: Any, retention_broker: BrokerProcess, tmp_path: Path, how: str) -> None:
    """Records a query has not read yet go (DeleteRecords, or retention of old segments):
    with failOnDataLoss=true (the default) the restarted query fails with Spark's data-loss
    error; with failOnDataLoss=false it goes on from the new earliest offset."""
    bootstrap = retention_broker.bootstrap
    topic = new_topic(bootstrap, partitions=1, **({"segment.ms": "100"} if how == "retention" else {}))
    produce(bootstrap, topic, 0, 0, 10, spacing_ms=HOUR_MS)
    strict, lenient = tmp_path / "strict", tmp_path / "lenient"
    for checkpoint in (strict, lenient):
        sink = Collected()
        finish(stream(spark, bootstrap, topic, checkpoint, sink))
        assert sink.rows == expected(0, range(10))
    produce(bootstrap, topic, 0, 10, 10, spacing_ms=HOUR_MS)  # offsets 10..19, not read yet
    if how == "DeleteRecords":
        _delete_records(bootstrap, topic, 0, 15)
    else:
        # Records an hour apart roll a segment each (segment.ms=100); a retention.ms half an hour
        # past record 15's age makes the retention pass delete every segment below 15.
        retention_ms = int(time.time() * 1000) - (BASE_TS + 15 * HOUR_MS) + HOUR_MS // 2
        admin = AdminClient({"bootstrap.servers": bootstrap})
        resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
            ConfigEntry("retention.ms", str(retention_ms), incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([resource])[resource].result(20)
        retention_broker.run_retention()
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"lso-{topic}"})
    try:
        low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    finally:
        c.close()
    assert (low, high) == (15, 20), (how, low, high)

    query = stream(spark, bootstrap, topic, strict, Collected())
    with pytest.raises(StreamingQueryException) as failed:
        query.awaitTermination(180)
    assert "Some data may have been lost because they are not available in Kafka any more" in str(failed.value)

    sink = Collected()
    finish(stream(spark, bootstrap, topic, lenient, sink, failOnDataLoss="false"))
    assert sink.rows == expected(0, range(15, 20))
