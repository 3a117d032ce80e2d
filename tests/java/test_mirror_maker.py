"""MirrorMaker 2 (Kafka's connect-mirror, dedicated mode as connect-mirror-maker.sh runs it)
replicating from asyncbroker to Apache Kafka 4.4: the online way to outgrow one node.

Every record arrives in `<alias>.orders` on Kafka with its partition, offset, key, value,
headers and timestamp; the topic's configs follow it; and with group offset sync the
consumer group's offsets, translated through MirrorMaker's offset syncs (which it keeps in
asyncbroker, the source), let the group continue on Kafka exactly where it stopped. The
settings are MirrorMaker's defaults but for replication factors of 1 and short intervals.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from asyncbroker.testing import BrokerProcess
from jvm.kafka_jvm import KafkaServer, java_command
from topic_reader import read_all

pytestmark = pytest.mark.timeout(300)

MIRROR_MAKER = "org.apache.kafka.connect.mirror.MirrorMaker"
PARTITIONS = 2


def committed(bootstrap: str, group: str, topic: str) -> list[int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        return [tp.offset for tp in c.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=30)]
    finally:
        c.close()


def produce(bootstrap: str, topic: str, start: int, count: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for n in range(start, start + count):
        p.produce(topic, f"order-{n}".encode(), f"customer-{n % 7}".encode(), partition=n % PARTITIONS,
                  headers=[("source", b"asyncbroker"), ("n", str(n).encode())])
    assert p.flush(30) == 0


def wait_for(what: str, check, timeout: float = 120.0, mirror: "MirrorMaker | None" = None):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if mirror is not None:
            assert mirror.process.poll() is None, f"MirrorMaker exited:\n{mirror.output()[-4000:]}"
        assert time.monotonic() < deadline, f"{what} within {timeout} s" + (
            f"\nMirrorMaker's log:\n{mirror.output()[-4000:]}" if mirror is not None else "")
        time.sleep(0.5)  # polling a condition with a deadline


class MirrorMaker:
    """A dedicated MirrorMaker 2 from `source` to `target` as a child process."""

    def __init__(self, directory: Path, alias: str, source: str, target: str, topic: str) -> None:
        settings = {
            "clusters": f"{alias}, target",
            f"{alias}.bootstrap.servers": source,
            "target.bootstrap.servers": target,
            f"{alias}->target.enabled": "true",
            f"{alias}->target.topics": topic,
            f"target->{alias}.enabled": "false",
            # One node each side.
            "replication.factor": "1",
            "checkpoints.topic.replication.factor": "1",
            "heartbeats.topic.replication.factor": "1",
            "offset-syncs.topic.replication.factor": "1",
            "offset.storage.replication.factor": "1",
            "status.storage.replication.factor": "1",
            "config.storage.replication.factor": "1",
            # The group follows: checkpoints and their sync into Kafka's group, every second;
            # an offset sync for every record, flushed every second, so translation is exact.
            "sync.group.offsets.enabled": "true",
            "sync.group.offsets.interval.seconds": "1",
            "emit.checkpoints.interval.seconds": "1",
            "emit.heartbeats.interval.seconds": "1",
            "refresh.topics.interval.seconds": "1",
            "refresh.groups.interval.seconds": "1",
            "offset.lag.max": "0",
            "offset.flush.interval.ms": "1000",
        }
        self.properties = directory / "mm2.properties"
        self.properties.write_text("".join(f"{k} = {v}\n" for k, v in settings.items()))
        self._output = directory / "mm2.out"
        with self._output.open("wb") as out:
            self.process = subprocess.Popen(
                java_command("mirror", MIRROR_MAKER, [str(self.properties)], heap="512m"),
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)

    def output(self) -> str:
        return self._output.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with BrokerProcess([], log_dir=tmp_path_factory.mktemp("mm2-source")) as b:
        yield b


def test_mirror_maker_from_asyncbroker_to_kafka(source: BrokerProcess, kafka: KafkaServer, tmp_path: Path) -> None:
    alias = f"ab{uuid.uuid4().hex[:6]}"
    topic, remote = "orders", f"{alias}.orders"
    admin = AdminClient({"bootstrap.servers": source.bootstrap})
    for f in admin.create_topics([NewTopic(topic, PARTITIONS, 1, config={"retention.ms": "604800000"})]).values():
        f.result(30)
    produce(source.bootstrap, topic, 0, 100)
    # The group `billing` has read everything so far and committed it.
    c = Consumer({"bootstrap.servers": source.bootstrap, "group.id": "billing", "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(topic, p, 50) for p in range(PARTITIONS)], asynchronous=False)
    c.close()
    mirror = MirrorMaker(tmp_path, alias, source.bootstrap, kafka.bootstrap, topic)
    try:
        expected = read_all(source.bootstrap, topic, PARTITIONS)
        target = AdminClient({"bootstrap.servers": kafka.bootstrap})
        wait_for(f"{remote} on Kafka", lambda: remote in target.list_topics(timeout=10).topics, mirror=mirror)
        wait_for("every record on Kafka", lambda: len(read_all(kafka.bootstrap, remote, PARTITIONS)) == 100,
                 mirror=mirror)
        # Each record where it was: partition, offset, key, value, headers, timestamp.
        assert read_all(kafka.bootstrap, remote, PARTITIONS) == expected
        resource = ConfigResource(ConfigResource.Type.TOPIC, remote)
        wait_for("retention.ms synced", lambda: target.describe_configs([resource])[resource].result(10)
                 ["retention.ms"].value == "604800000", mirror=mirror)
        # Group offset sync: translated through the offset syncs MirrorMaker keeps in asyncbroker.
        wait_for("the group's offsets synced to Kafka",
                 lambda: committed(kafka.bootstrap, "billing", remote) == [50, 50], mirror=mirror)
        syncs = AdminClient({"bootstrap.servers": source.bootstrap}).list_topics(timeout=10).topics
        assert "mm2-offset-syncs.target.internal" in syncs
        # New records keep flowing; the group, moved to Kafka, continues with exactly them.
        produce(source.bootstrap, topic, 100, 10)
        wait_for("the new records on Kafka", lambda: len(read_all(kafka.bootstrap, remote, PARTITIONS)) == 110,
                 mirror=mirror)
        # Nothing asyncbroker answered made MirrorMaker fail a task (its topic ACL sync, for one,
        # needs the SECURITY_DISABLED answer of a broker without an authorizer).
        assert [line for line in mirror.output().splitlines() if " ERROR " in line] == []
    finally:
        mirror.stop()
    c = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": "billing", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    try:
        c.subscribe([remote])
        got: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(got) < 10 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append(m.value())
    finally:
        c.close()
    # Exactly the ten new records: a group that started over would read order-0... first.
    assert sorted(got) == sorted(f"order-{n}".encode() for n in range(100, 110))
