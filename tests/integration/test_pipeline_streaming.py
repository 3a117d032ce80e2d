"""Spark over a running broker: the kafka-log source reads the log dir while it is written,
and a Structured Streaming query through Spark's own Kafka connector copies a topic,
stops, and resumes from its checkpoint."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark", reason="the [spark] extra is not installed")

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def spark() -> Iterator["pyspark.sql.SparkSession"]:
    from pipeline.session import build_session

    # getOrCreate: the same local[2] session the unit tests use when run together
    yield build_session("local[2]", "asyncbroker-tests", {"spark.sql.shuffle.partitions": "4"})


def _create(bootstrap: str, *topics: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(t, num_partitions=2, replication_factor=1) for t in topics])
    for f in futures.values():
        f.result(20)


def _produce(bootstrap: str, topic: str, first: int, count: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(first, first + count):
        p.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), headers=[("n", str(i).encode())])
    assert p.flush(20) == 0


def _consume_all(bootstrap: str, topic: str, expected: int, timeout: float = 60) -> list[tuple[bytes, bytes]]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "verify", "enable.auto.commit": False,
                  "enable.partition.eof": True})
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(2)])
        out: list[tuple[bytes, bytes]] = []
        eof: set[int] = set()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not (len(eof) == 2 and len(out) >= expected):
            msg = c.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                eof.add(msg.partition())
                continue
            eof.discard(msg.partition())
            out.append((msg.key(), msg.value()))
        return out
    finally:
        c.close()


def _high_watermarks(bootstrap: str, topic: str) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "hw"})
    try:
        return sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(2))
    finally:
        c.close()


def _copy_query(spark, bootstrap: str, src: str, dst: str, checkpoint: Path, trigger: dict):  # noqa: ANN001, ANN202
    source = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", src).option("startingOffsets", "earliest").option("includeHeaders", "true")
              .option("maxOffsetsPerTrigger", "60").load())
    upper = source.select("key", F.upper(F.col("value").cast("string")).cast("binary").alias("value"), "headers")
    return (upper.writeStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", dst)
            .option("checkpointLocation", str(checkpoint)).trigger(**trigger).start())


def test_kafka_log_reads_a_log_dir_the_broker_is_writing(spark, asyncbroker, tmp_path: Path) -> None:  # noqa: ANN001
    """While a producer appends, every read is a gap-free prefix of what was produced."""
    import threading

    bootstrap = asyncbroker.bootstrap
    topic = f"live-{tmp_path.name[-8:]}"
    _create(bootstrap, topic)
    stop = threading.Event()
    produced = [0]

    def produce_until_stopped() -> None:
        p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2, "enable.idempotence": False,
                      "max.in.flight.requests.per.connection": 1})
        i = 0
        while not stop.wait(0.05) and i < 200_000:  # paced (~2k/s), bounded: the reads stay small
            for _ in range(100):
                p.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=0)
                i += 1
            p.flush(10)
            produced[0] = i
        p.flush(10)

    writer = threading.Thread(target=produce_until_stopped, daemon=True)
    writer.start()
    try:
        counts: list[int] = []
        during: list[bool] = []
        for _ in range(3):
            deadline = time.monotonic() + 30
            while produced[0] <= (counts[-1] if counts else 0) and time.monotonic() < deadline:
                time.sleep(0.05)  # noqa: the producer thread is the thing being waited for
            df = (spark.read.format("kafka-log").option("topics", topic).option("partitions", "0")
                  .load(str(asyncbroker.log_dir)))
            stats = df.agg(
                F.count(F.lit(1)).alias("n"), F.countDistinct("offset").alias("distinct"),
                F.min("offset").alias("lo"), F.max("offset").alias("hi"),
                F.sum((F.col("offset") != F.substring(F.col("value").cast("string"), 2, 20).cast("long"))
                      .cast("int")).alias("mismatched"),
            ).collect()[0]
            # a gap-free, duplicate-free prefix whose records are intact
            assert (stats["lo"], stats["hi"], stats["distinct"]) == (0, stats["n"] - 1, stats["n"]), stats
            assert stats["mismatched"] == 0
            counts.append(stats["n"])
            during.append(writer.is_alive())
        assert counts == sorted(counts) and counts[0] > 0
        assert all(during)  # every read ran against a log dir still being appended to
    finally:
        stop.set()
        writer.join(20)


def test_copy_topic_restart_from_checkpoint(spark, asyncbroker_bootstrap: str, tmp_path: Path) -> None:  # noqa: ANN001
    bootstrap = asyncbroker_bootstrap
    src, dst = f"stream-src-{tmp_path.name[-8:]}", f"stream-dst-{tmp_path.name[-8:]}"
    _create(bootstrap, src, dst)
    _produce(bootstrap, src, 0, 200)
    checkpoint = tmp_path / "checkpoint"

    first = _copy_query(spark, bootstrap, src, dst, checkpoint, {"availableNow": True})
    first.awaitTermination(120)
    assert first.exception() is None
    batches = [p["numInputRows"] for p in first.recentProgress if p["numInputRows"]]
    assert sum(batches) == 200 and max(batches) <= 60 and len(batches) >= 4  # maxOffsetsPerTrigger held
    assert _high_watermarks(bootstrap, dst) == 200

    _produce(bootstrap, src, 200, 100)  # arrives while no query runs
    second = _copy_query(spark, bootstrap, src, dst, checkpoint, {"processingTime": "200 milliseconds"})
    try:
        deadline = time.monotonic() + 120
        while _high_watermarks(bootstrap, dst) < 300 and time.monotonic() < deadline:
            assert second.exception() is None
            second.awaitTermination(0.5)
    finally:
        second.stop()
    copied = _consume_all(bootstrap, dst, 300)
    assert sorted(copied) == sorted((f"k{i}".encode(), f"V{i}".encode()) for i in range(300))  # no loss, no dup
