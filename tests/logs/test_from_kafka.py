"""Kafka → asyncbroker: a log directory written by Apache Kafka 4.4 (a broker of its own,
stopped cleanly) opens in asyncbroker as it was. Topic configs come from Kafka's metadata
log (storage.cluster_metadata), committed offsets from its `__consumer_offsets`; every
record keeps its offset, key, value, headers and timestamp, log start offsets hold, new
appends continue the offsets, dynamic broker configs carry over, and asyncbroker's cleaner
compacts the compacted topic."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource

from asyncbroker.testing import BrokerProcess
from jvm.kafka_jvm import KafkaServer
from migration_workload import COMPACTED, write_workload
from topic_reader import read_all
from storage.log_file_utils import CLEAN_SHUTDOWN_FILE

pytestmark = pytest.mark.timeout(300)



@pytest.fixture(scope="module")
def kafka_written() -> Iterator[tuple[KafkaServer, dict[str, Any]]]:
    """A Kafka 4.4 broker of this module's own, written to and stopped; what it served."""
    kafka = KafkaServer().start()
    try:
        b = kafka.bootstrap
        write_workload(b, compacted_rounds=4)  # r3 stays in the active segment
        seen = {"codecs": read_all(b, "codecs", 2), "plain": read_all(b, "plain", 1),
                "compacted": read_all(b, "compacted", 1)}
        kafka.shutdown()  # SIGTERM: the JVM exits 143 after a clean shutdown, which leaves the marker
        assert (kafka.log_dir / CLEAN_SHUTDOWN_FILE).exists()
        yield kafka, seen
    finally:
        kafka.stop()


@pytest.fixture(scope="module")
def ours(kafka_written: tuple[KafkaServer, dict[str, Any]]) -> Iterator[BrokerProcess]:
    kafka, _ = kafka_written
    with BrokerProcess(["node.id=1", "log.cleaner.backoff.ms=3600000"], log_dir=kafka.log_dir, monitor=True) as b:
        yield b


def test_every_record_as_kafka_served_it(kafka_written: tuple[KafkaServer, dict[str, Any]],
                                         ours: BrokerProcess) -> None:
    _, seen = kafka_written
    assert len(seen["codecs"]) == 200 and [r[1] for r in seen["plain"]] == list(range(3, 10))
    for topic, partitions in (("codecs", 2), ("plain", 1), ("compacted", 1)):
        assert read_all(ours.bootstrap, topic, partitions) == seen[topic], topic
    topics = AdminClient({"bootstrap.servers": ours.bootstrap}).list_topics(timeout=10).topics
    assert {"codecs", "plain", "compacted"} <= set(topics)
    assert "__cluster_metadata" not in topics


def test_topic_configs_from_kafkas_metadata_log(ours: BrokerProcess) -> None:
    admin = AdminClient({"bootstrap.servers": ours.bootstrap})
    resources = [ConfigResource(ConfigResource.Type.TOPIC, t) for t in ("compacted", "plain", "codecs")]
    described = {r.name: f.result(10) for r, f in admin.describe_configs(resources).items()}
    overridden = {t: {k: v.value for k, v in entries.items() if v.source == 1}  # DYNAMIC_TOPIC_CONFIG
                  for t, entries in described.items()}
    assert overridden == {"compacted": COMPACTED, "plain": {"retention.ms": "86400000"}, "codecs": {}}


def test_dynamic_broker_configs_from_kafkas_metadata_log(ours: BrokerProcess) -> None:
    admin = AdminClient({"bootstrap.servers": ours.bootstrap})
    resource = ConfigResource(ConfigResource.Type.BROKER, "1")
    entries = admin.describe_configs([resource])[resource].result(10)
    got = {k: (entries[k].value, entries[k].source) for k in ("log.retention.ms", "message.max.bytes")}
    # 3 DYNAMIC_DEFAULT_BROKER_CONFIG, 2 DYNAMIC_BROKER_CONFIG
    assert got == {"log.retention.ms": ("123456789", 3), "message.max.bytes": ("2000000", 2)}
    topic = ConfigResource(ConfigResource.Type.TOPIC, "codecs")
    inherited = admin.describe_configs([topic])[topic].result(10)["retention.ms"]
    assert (inherited.value, inherited.source) == ("123456789", 3)


def test_committed_offsets_and_new_appends(ours: BrokerProcess) -> None:
    c = Consumer({"bootstrap.servers": ours.bootstrap, "group.id": "resumer", "enable.auto.commit": False})
    try:
        committed = c.committed([TopicPartition("codecs", 0), TopicPartition("codecs", 1),
                                 TopicPartition("plain", 0)], timeout=30)
        assert [(tp.topic, tp.partition, tp.offset) for tp in committed] == [
            ("codecs", 0, 17), ("codecs", 1, 23), ("plain", 0, 6)]
    finally:
        c.close()
    delivered: list[int] = []
    p = Producer({"bootstrap.servers": ours.bootstrap})
    p.produce("plain", b"after the move", partition=0, on_delivery=lambda err, m: delivered.append(m.offset()))
    assert p.flush(30) == 0
    assert delivered == [10]


def test_the_compacted_topic_is_compacted(ours: BrokerProcess) -> None:
    assert ours.clean_now("compacted") is not None
    records = read_all(ours.bootstrap, "compacted", 1)
    below_active = [r for r in records if r[3] != b"r3"]
    # Every key's latest update survives; the older ones below the active segment are gone.
    assert sorted((r[2], r[3]) for r in records if r[3] == b"r3") == [(f"key-{k}".encode(), b"r3") for k in range(4)]
    assert below_active == []


def test_kafka_log_and_the_audit_read_it(kafka_written: tuple[KafkaServer, dict[str, Any]]) -> None:
    """The pipeline reads the directory Kafka wrote: every record through kafka-log (Kafka's
    metadata log is not a topic there), and the audit knows the compacted topic's policy."""
    pytest.importorskip("pyspark", reason="the [spark] extra is not installed")
    from pipeline.compaction_audit import run_audit
    from pipeline.session import build_session

    kafka, seen = kafka_written
    spark = build_session("local[2]", "asyncbroker-tests", {"spark.sql.shuffle.partitions": "4"})
    rows = spark.read.format("kafka-log").load(str(kafka.log_dir)).select("topic", "partition", "offset").collect()
    topics = {r["topic"] for r in rows}
    assert "__cluster_metadata" not in topics and {"codecs", "plain", "compacted"} <= topics
    assert sorted((r["partition"], r["offset"]) for r in rows if r["topic"] == "codecs") == [
        (r[0], r[1]) for r in seen["codecs"]]
    report = run_audit(spark, [str(kafka.log_dir)], topics=["compacted", "plain"])
    assert {p.topic: p.cleanup_policy for p in report.partitions} == {"compacted": "compact", "plain": "delete"}
