"""asyncbroker → Kafka: `asyncbroker migrate LOGDIR --to-kafka` hands a stopped broker's log
directory to Apache Kafka 4.4, which serves it as its own without being formatted.

One asyncbroker is written to the way a team uses it (every codec, headers, an idempotent
producer, transactions committed and aborted, a compacted topic compacted, records deleted,
topic and broker configs, a consumer group's commits), stopped, migrated, and checked:
DumpLogSegments finds nothing wrong in what Kafka is handed; Kafka serves every record at
its offset with its key, value, headers and timestamp; log start offsets, configs, producer
state and committed offsets hold (a Java consumer group resumes); new appends continue the
offsets; and Kafka's own cleaner compacts the compacted topic. Bad input is refused with a
message and the directory untouched."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from asyncbroker.testing import BrokerProcess
from jvm.dump_log_check import check_log_dir, describe
from jvm.kafka_jvm import KafkaServer, run_tool
from migration_workload import CODECS, COMPACTED, write_workload
from topic_reader import read_all
from storage.cluster_metadata import CLUSTER_METADATA_DIR
from storage.log_file_utils import CLEAN_SHUTDOWN_FILE

pytestmark = pytest.mark.timeout(300)

CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
TRANSACTIONS_COMMAND = "org.apache.kafka.tools.TransactionsCommand"


def migrate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "asyncbroker", "migrate", *args], capture_output=True,
                          text=True, timeout=120, check=False)


def producers(bootstrap: str, topic: str, partition: int) -> list[tuple[str, ...]]:
    """kafka-transactions.sh describe-producers: (producer id, epoch, last sequence) per producer."""
    result = run_tool(TRANSACTIONS_COMMAND, ["--bootstrap-server", bootstrap, "describe-producers",
                                             "--topic", topic, "--partition", str(partition)])
    assert result.returncode == 0, result.stderr[-2000:]
    rows = [line.split() for line in result.stdout.splitlines()[1:] if line.strip()]
    return sorted((r[0], r[1], r[3]) for r in rows)


def committed_reads(bootstrap: str) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "txn-reader", "isolation.level": "read_committed",
                  "enable.partition.eof": True, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition("txn", 0, -2)])
        out: list[bytes] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                return out
            out.append(m.value())
        raise AssertionError(f"txn: no end of partition within 30 s, read {out}")
    finally:
        c.close()


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any], str]]:
    """A log dir asyncbroker wrote and stopped, then migrated; what asyncbroker served and what
    migrate printed."""
    log_dir = tmp_path_factory.mktemp("to-kafka") / "data"
    with BrokerProcess(["log.cleaner.backoff.ms=3600000"], log_dir=log_dir, monitor=True) as ours:
        b = ours.bootstrap
        write_workload(b, compacted_rounds=3, transactions=True)
        assert ours.clean_now("compacted") is not None  # asyncbroker's cleaner compacts it once
        seen = {"codecs": read_all(b, "codecs", 2), "plain": read_all(b, "plain", 1),
                "compacted": read_all(b, "compacted", 1), "txn": committed_reads(b),
                "producers": {p: producers(b, "codecs", p) for p in (0, 1)}}
        assert ours.stop() == 0
    assert (log_dir / CLEAN_SHUTDOWN_FILE).exists()
    result = migrate(str(log_dir), "--to-kafka")
    assert result.returncode == 0, result.stderr
    yield log_dir, seen, result.stdout


@pytest.fixture(scope="module")
def kafka_on_it(migrated: tuple[Path, dict[str, Any], str]) -> Iterator[KafkaServer]:
    """Kafka 4.4 started on the migrated directory, unformatted."""
    log_dir, _, _ = migrated
    server = KafkaServer()
    try:
        server.start_unformatted(log_dir)
        yield server
    finally:
        server.stop()


def test_migrate_reports_what_it_handed_over(migrated: tuple[Path, dict[str, Any], str]) -> None:
    log_dir, _, out = migrated
    # codecs, plain, compacted, txn and the two coordinator topics.
    assert out.startswith("Handed 6 topic(s), 105 partition(s) of cluster ")
    assert "process.roles=broker,controller\nnode.id=1\n" in out and f"log.dirs={log_dir}\n" in out
    assert (log_dir / CLUSTER_METADATA_DIR).is_dir()
    assert not list(log_dir.glob("asyncbroker-*.json"))  # the metadata log is the configs' one copy


def test_kafka_finds_nothing_wrong_in_the_segments(migrated: tuple[Path, dict[str, Any], str]) -> None:
    """DumpLogSegments over every segment, index and producer snapshot handed to Kafka."""
    log_dir, _, _ = migrated
    report = check_log_dir(log_dir, lambda topic: topic in ("compacted", "__consumer_offsets", "__transaction_state"))
    assert report.files[".log"] >= 4 and report.findings == [], describe(report.findings)


def features(bootstrap: str) -> dict[str, str]:
    """kafka-features.sh describe: each feature's finalized level."""
    result = run_tool("org.apache.kafka.tools.FeatureCommand", ["--bootstrap-server", bootstrap, "describe"])
    assert result.returncode == 0, result.stderr[-2000:]
    return dict(re.findall(r"Feature: (\S+).*FinalizedVersionLevel: (\S+)", result.stdout))


def test_feature_levels_are_those_kafka_formats_44_with(kafka: KafkaServer, kafka_on_it: KafkaServer) -> None:
    """The migrated node runs the features of a node Kafka's own format tool made (the session's)."""
    migrated_features = features(kafka_on_it.bootstrap)
    assert migrated_features["metadata.version"] == "4.4-IV2"
    assert migrated_features == features(kafka.bootstrap)


def test_every_record_as_asyncbroker_served_it(migrated: tuple[Path, dict[str, Any], str], kafka_on_it: KafkaServer) -> None:
    log_dir, seen, _ = migrated
    assert len(seen["codecs"]) == 200 and [r[1] for r in seen["plain"]] == list(range(3, 10))
    for topic, partitions in (("codecs", 2), ("plain", 1), ("compacted", 1)):
        assert read_all(kafka_on_it.bootstrap, topic, partitions) == seen[topic], topic
    assert committed_reads(kafka_on_it.bootstrap) == seen["txn"] == [b"commit", b"commit"]
    assert not [d.name for d in log_dir.iterdir() if d.name.endswith("-stray")]
    assert "stray" not in kafka_on_it.output().lower()


def test_topic_and_broker_configs(kafka_on_it: KafkaServer) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_on_it.bootstrap})
    resources = [ConfigResource(ConfigResource.Type.TOPIC, t) for t in ("compacted", "plain", "codecs")]
    described = {r.name: f.result(10) for r, f in admin.describe_configs(resources).items()}
    overridden = {t: {k: v.value for k, v in entries.items() if v.source == 1}  # DYNAMIC_TOPIC_CONFIG
                  for t, entries in described.items()}
    assert overridden == {"compacted": COMPACTED, "plain": {"retention.ms": "86400000"}, "codecs": {}}
    broker = ConfigResource(ConfigResource.Type.BROKER, "1")
    entries = admin.describe_configs([broker])[broker].result(10)
    got = {k: (entries[k].value, entries[k].source) for k in ("log.retention.ms", "message.max.bytes")}
    # 3 DYNAMIC_DEFAULT_BROKER_CONFIG, 2 DYNAMIC_BROKER_CONFIG
    assert got == {"log.retention.ms": ("123456789", 3), "message.max.bytes": ("2000000", 2)}


def test_idempotent_producer_state(migrated: tuple[Path, dict[str, Any], str], kafka_on_it: KafkaServer) -> None:
    """Kafka loads the producer snapshots: the same producers, epochs and last sequences."""
    _, seen, _ = migrated
    assert len(seen["producers"][0]) == len(CODECS)
    assert {p: producers(kafka_on_it.bootstrap, "codecs", p) for p in (0, 1)} == seen["producers"]


def test_a_java_consumer_group_resumes(kafka_on_it: KafkaServer) -> None:
    """kafka-console-consumer.sh in group `resumer` starts at the offsets committed on asyncbroker."""
    out = run_tool(CONSOLE_CONSUMER, ["--bootstrap-server", kafka_on_it.bootstrap, "--topic", "plain", "--group",
                                      "resumer", "--max-messages", "4", "--timeout-ms", "30000",
                                      "--formatter-property", "print.offset=true"])
    assert out.stdout.splitlines() == [f"Offset:{n}\tp{n}" for n in range(6, 10)], out.stderr[-2000:]


def test_new_appends_continue_the_offsets(kafka_on_it: KafkaServer) -> None:
    delivered: dict[str, int] = {}
    p = Producer({"bootstrap.servers": kafka_on_it.bootstrap, "enable.idempotence": True})
    p.produce("plain", b"after the move", partition=0, on_delivery=lambda err, m: delivered.update({m.topic(): m.offset()}))
    p.produce("codecs", b"after the move", partition=1,
              on_delivery=lambda err, m: delivered.update({m.topic(): m.offset()}))
    assert p.flush(30) == 0
    assert delivered == {"plain": 10, "codecs": 100}


def test_kafkas_cleaner_compacts_the_compacted_topic(migrated: tuple[Path, dict[str, Any], str],
                                                   kafka_on_it: KafkaServer) -> None:
    """asyncbroker handed over r2 alone (its clean rolled the segment first, as clean_now does,
    and removed r0 and r1), then an empty active segment. Round r3 goes into that segment and r4,
    timestamped a second later, rolls it; Kafka's cleaner (backoff 200 ms, starting from
    asyncbroker's cleaner checkpoint) then removes r2, which r3 supersedes, below the active r4."""
    _, seen, _ = migrated
    keys = [f"key-{k}".encode() for k in range(4)]
    assert [(r[2], r[3]) for r in seen["compacted"]] == [(k, b"r2") for k in keys]
    timestamp = max(r[5] for r in seen["compacted"])
    p = Producer({"bootstrap.servers": kafka_on_it.bootstrap})
    for r in (3, 4):
        for k in keys:
            p.produce("compacted", f"r{r}".encode(), k, partition=0, timestamp=timestamp + (r - 2) * 1000)
        assert p.flush(30) == 0
    deadline = time.monotonic() + 60
    while True:
        values = [(r[2], r[3]) for r in read_all(kafka_on_it.bootstrap, "compacted", 1)]
        if values == [(k, r) for r in (b"r3", b"r4") for k in keys]:
            break
        assert time.monotonic() < deadline, f"Kafka's cleaner left {values}"
        time.sleep(0.5)  # polling a condition with a deadline


# -- bad input: a clear message, and nothing changed -------------------------------------------


def snapshot_of(d: Path) -> dict[str, str]:
    return {str(f.relative_to(d)): hashlib.sha256(f.read_bytes()).hexdigest() if f.is_file() else "dir"
            for f in sorted(d.rglob("*"))}


@pytest.fixture
def stopped_dir(tmp_path: Path) -> Path:
    log_dir = tmp_path / "data"
    with BrokerProcess([], log_dir=log_dir) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        for f in admin.create_topics([NewTopic("t", 1, 1)]).values():
            f.result(30)
        p = Producer({"bootstrap.servers": b.bootstrap})
        p.produce("t", b"v")
        assert p.flush(30) == 0
    return log_dir


def refused(log_dir: Path, message: str) -> None:
    before = snapshot_of(log_dir)
    result = migrate(str(log_dir), "--to-kafka")
    assert result.returncode == 1 and message in result.stderr, result.stderr
    assert "Nothing was changed." in result.stderr
    assert snapshot_of(log_dir) == before


def test_refuses_a_directory_in_use(stopped_dir: Path) -> None:
    with BrokerProcess([], log_dir=stopped_dir):
        refused(stopped_dir, "is in use: another process holds .lock")


def test_refuses_an_unclean_shutdown(stopped_dir: Path) -> None:
    b = BrokerProcess([], log_dir=stopped_dir).start()
    b.kill()
    refused(stopped_dir, "was not shut down cleanly")
    # The way out the message gives: start it (recovery runs), stop it, migrate.
    with BrokerProcess([], log_dir=stopped_dir):
        pass
    assert migrate(str(stopped_dir), "--to-kafka").returncode == 0


def test_refuses_an_unknown_format_version(stopped_dir: Path) -> None:
    meta = stopped_dir / "meta.properties"
    meta.write_text(meta.read_text().replace("version=1", "version=7"))
    refused(stopped_dir, "has version 7; only version 1 (KRaft) is known")


def test_refuses_a_directory_that_is_kafkas_already(stopped_dir: Path) -> None:
    assert migrate(str(stopped_dir), "--to-kafka").returncode == 0
    refused(stopped_dir, "already holds a KRaft metadata log")


def test_refuses_what_is_not_a_partition_directory(stopped_dir: Path) -> None:
    (stopped_dir / "backup").mkdir()
    refused(stopped_dir, "backup is not a partition directory")
    # What Kafka itself skips is no reason to refuse.
    (stopped_dir / "backup").rmdir()
    (stopped_dir / "remote-log-index-cache").mkdir()
    (stopped_dir / "t-0.0123456789abcdef0123456789abcdef-delete").mkdir()
    assert migrate(str(stopped_dir), "--to-kafka", "--dry-run").returncode == 0


def test_refuses_a_tiered_topic(tmp_path: Path) -> None:
    """Kafka could not read the remote tier (asyncbroker's layout) and would not start with a
    tiered topic and tiered storage off: the migration says what to do instead."""
    log_dir = tmp_path / "data"
    with BrokerProcess(["remote.log.storage.system.enable=true",
                        "remote.log.storage.manager.class.name="
                        "org.apache.kafka.server.log.remote.storage.LocalTieredStorage",
                        f"rsm.config.dir={tmp_path / 'remote'}",
                        "rlmm.config.remote.log.metadata.topic.num.partitions=1"], log_dir=log_dir) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic("tiered", 1, 1, config={"remote.storage.enable": "true"})])["tiered"].result(30)
    refused(log_dir, "topic tiered is tiered (remote.storage.enable=true)")


def test_dry_run_changes_nothing(stopped_dir: Path) -> None:
    before = snapshot_of(stopped_dir)
    result = migrate(str(stopped_dir), "--to-kafka", "--dry-run")
    assert result.returncode == 0 and result.stdout.startswith("Would hand 1 topic(s), 1 partition(s)")
    assert snapshot_of(stopped_dir) == before


def test_several_log_dirs(tmp_path: Path) -> None:
    """Every log.dirs entry is handed over; each partition stays in its directory (the
    PartitionRecord names it by directory id) and Kafka serves them all."""
    dirs = [tmp_path / "a", tmp_path / "b"]
    with BrokerProcess([f"log.dirs={dirs[0]},{dirs[1]}"], log_dir=dirs[0]) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        for f in admin.create_topics([NewTopic("spread", 4, 1)]).values():
            f.result(30)
        p = Producer({"bootstrap.servers": b.bootstrap})
        for n in range(40):
            p.produce("spread", f"v{n}".encode(), partition=n % 4)
        assert p.flush(30) == 0
        seen = read_all(b.bootstrap, "spread", 4)
    where = {d.name: sorted(x.name for x in d.iterdir() if x.name.startswith("spread-")) for d in dirs}
    assert all(where.values()), where  # both directories hold partitions
    result = migrate(str(dirs[0]), str(dirs[1]), "--to-kafka")
    assert result.returncode == 0, result.stderr
    assert (dirs[0] / CLUSTER_METADATA_DIR).is_dir() and not (dirs[1] / CLUSTER_METADATA_DIR).exists()
    server = KafkaServer({"log.dirs": f"{dirs[0]},{dirs[1]}"})
    try:
        server.start_unformatted(dirs[0])
        assert read_all(server.bootstrap, "spread", 4) == seen
    finally:
        server.stop()
    assert {d.name: sorted(x.name for x in d.iterdir() if x.name.startswith("spread-")) for d in dirs} == where


def test_an_offsets_topic_of_another_partition_count(tmp_path: Path) -> None:
    """asyncbroker run with offsets.topic.num.partitions=3: Kafka places groups by the
    partition count its metadata gives `__consumer_offsets` (Java's String.hashCode, as here),
    so the group's commits are found without re-placing them."""
    log_dir = tmp_path / "data"
    with BrokerProcess(["offsets.topic.num.partitions=3"], log_dir=log_dir) as b:
        p = Producer({"bootstrap.servers": b.bootstrap})
        for n in range(5):
            p.produce("plain", f"p{n}".encode(), partition=0)
        assert p.flush(30) == 0
        for group, offset in (("billing", 2), ("shipping", 4), ("audit", 1)):
            c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "enable.auto.commit": False})
            c.commit(offsets=[TopicPartition("plain", 0, offset)], asynchronous=False)
            c.close()
    assert sorted(d.name for d in log_dir.iterdir() if d.name.startswith("__consumer_offsets-")) == [
        f"__consumer_offsets-{n}" for n in range(3)]
    assert migrate(str(log_dir), "--to-kafka").returncode == 0
    server = KafkaServer()
    try:
        server.start_unformatted(log_dir)
        for group, offset in (("billing", 2), ("shipping", 4), ("audit", 1)):
            c = Consumer({"bootstrap.servers": server.bootstrap, "group.id": group, "enable.auto.commit": False})
            try:
                assert [tp.offset for tp in c.committed([TopicPartition("plain", 0)], timeout=30)] == [offset], group
            finally:
                c.close()
    finally:
        server.stop()


def test_share_group_offsets_kafka_reads(tmp_path: Path) -> None:
    """Share group offsets set with AlterShareGroupOffsets are Kafka's to serve once migrated:
    DumpLogSegments decodes every record of __share_group_state and __consumer_offsets, and
    Kafka's DescribeShareGroupOffsets (all partitions: the group's initialized share
    partitions, from __consumer_offsets; their states, from __share_group_state) answers the
    start offsets and lags asyncbroker answered."""
    from kio.schema.alter_share_group_offsets.v0 import request as alter_v0
    from kio.schema.describe_share_group_offsets.v1 import request as describe_v1

    from integration.raw_client import RawClient

    def described(bootstrap: str) -> list[tuple[int, int, int]] | None:
        """(partition, start offset, lag) of each share partition; None while the coordinator loads."""
        with RawClient(bootstrap, timeout=90) as c:
            answer = c.request(describe_v1.DescribeShareGroupOffsetsRequest(groups=(
                describe_v1.DescribeShareGroupOffsetsRequestGroup(group_id="sg", topics=None),)))
        group = answer.groups[0]
        if group.error_code.value in (14, 15, 16):  # loading, not available, not the coordinator
            return None
        assert group.error_code.value == 0, answer
        return sorted((p.partition_index, p.start_offset, p.lag) for t in group.topics for p in t.partitions)

    log_dir = tmp_path / "data"
    with BrokerProcess([], log_dir=log_dir) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic("shared", 2, 1)])["shared"].result(30)
        p = Producer({"bootstrap.servers": b.bootstrap})
        for n in range(10):
            p.produce("shared", f"s{n}".encode(), partition=n % 2)
        assert p.flush(30) == 0
        with RawClient(b.bootstrap) as c:
            altered = c.request(alter_v0.AlterShareGroupOffsetsRequest(group_id="sg", topics=(
                alter_v0.AlterShareGroupOffsetsRequestTopic(topic_name="shared", partitions=tuple(
                    alter_v0.AlterShareGroupOffsetsRequestPartition(partition_index=i, start_offset=o)
                    for i, o in ((0, 2), (1, 4)))),)))
            assert altered.error_code.value == 0, altered
        ours = described(b.bootstrap)
        assert ours == [(0, 2, 3), (1, 4, 1)]
    assert migrate(str(log_dir), "--to-kafka").returncode == 0
    report = check_log_dir(log_dir, lambda topic: topic == "__consumer_offsets")
    assert report.findings == [], describe(report.findings)
    server = KafkaServer()
    try:
        server.start_unformatted(log_dir)
        deadline = time.monotonic() + 90
        while (theirs := described(server.bootstrap)) != ours and time.monotonic() < deadline:
            time.sleep(0.5)  # Kafka loads __share_group_state's partitions after it starts
        assert theirs == ours
    finally:
        server.stop()
