"""Tiered storage (KIP-405) on a real broker with real clients, over the local-directory backend.

A tiered topic's rolled segments are copied to the remote directory with their indexes, the
local copies go once local retention allows (only after the copy), and consumers reading from
offset 0 get every record back through the remote tier, in order. ListOffsets answers the
earliest (-2), earliest local (-4) and latest tiered (-5) offsets as Kafka 4.4 does.
"""
from __future__ import annotations

import os
import re
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, ShareConsumer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from asyncbroker.testing import BrokerProcess
from asyncbroker.testing.broker import BrokerStartError, free_port_block
from asyncbroker.testing.s3_server import S3Server
from raw_client import RawClient
from wait_for import wait_until

pytestmark = pytest.mark.timeout(180)

MIB = 1 << 20
RECORDS = 6000
VALUE = 1000  # about 6 MB: six 1 MiB segments


def tiered_overrides(remote_dir: Path) -> list[str]:
    return ["remote.log.storage.system.enable=true",
            "remote.log.storage.manager.class.name=org.apache.kafka.server.log.remote.storage.LocalTieredStorage",
            f"rsm.config.dir={remote_dir}", "rlmm.config.remote.log.metadata.topic.num.partitions=5",
            "remote.log.manager.task.interval.ms=200", "log.retention.check.interval.ms=200",
            "log.initial.task.delay.ms=0"]


@pytest.fixture
def remote_dir(tmp_path: Path) -> Path:
    return tmp_path / "remote"


@pytest.fixture
def broker(tmp_path: Path, remote_dir: Path) -> Iterator[BrokerProcess]:
    with BrokerProcess(tiered_overrides(remote_dir), log_dir=tmp_path / "logs") as b:
        yield b


def create_tiered(bootstrap: str, topic: str = "tiered", **configs: str) -> AdminClient:
    """A one-partition tiered topic with 1 MiB segments (`configs` on top); the admin client."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config={
        "remote.storage.enable": "true", "segment.bytes": str(MIB), **configs})])[topic].result(15)
    return admin


def produce(bootstrap: str, topic: str, count: int = RECORDS) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 64 * 1024})
    for i in range(count):
        while True:
            try:
                p.produce(topic, key=b"%d" % i, value=(b"%08d" % i) * (VALUE // 8))
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(60) == 0


def list_offset(bootstrap: str, topic: str, timestamp: int) -> int:
    """ListOffsets v9 over a raw socket: -4 (earliest local) and -5 (latest tiered) are not
    named by confluent-kafka's OffsetSpec."""
    from kio.schema.list_offsets.v9 import request as lo9

    with RawClient(bootstrap) as client:
        resp = client.request(lo9.ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=(
            lo9.ListOffsetsTopic(name=topic, partitions=(
                lo9.ListOffsetsPartition(partition_index=0, timestamp=timestamp),)),)))
    found = resp.topics[0].partitions[0]
    assert found.error_code == 0, found
    return int(found.offset)


def consume_all(bootstrap: str, topic: str, count: int, timeout: float = 60) -> list[int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    seen: list[int] = []
    try:
        def done() -> bool:
            for m in c.consume(500, 0.5):
                assert m.error() is None, m.error()
                assert m.value() == (b"%08d" % m.offset()) * (VALUE // 8)
                seen.append(m.offset())
            return len(seen) >= count

        wait_until(done, timeout=timeout, message=lambda: f"consumed {len(seen)} of {count}")
    finally:
        c.close()
    return seen


def remote_files(remote_dir: Path, topic: str) -> list[Path]:
    return sorted(p for d in remote_dir.glob(f"{topic}-0-*") for p in d.iterdir())


def test_segments_move_to_the_remote_tier_and_read_back_in_order(broker: BrokerProcess, remote_dir: Path,
                                                                 tmp_path: Path) -> None:
    create_tiered(broker.bootstrap, **{"local.retention.bytes": "1"})
    produce(broker.bootstrap, "tiered")
    local = tmp_path / "logs" / "tiered-0"

    # Every rolled segment is copied; local retention then keeps only the active segment.
    wait_until(lambda: len(list(local.glob("*.log"))) == 1, timeout=60,
               message=lambda: f"local segments {sorted(p.name for p in local.glob('*.log'))}")
    logs = [p for p in remote_files(remote_dir, "tiered") if p.suffix == ".log"]
    assert len(logs) >= 5
    for log_file in logs:
        stem = log_file.name[:-len(".log")]
        for suffix in (".index", ".timeindex", ".snapshot", ".leader_epoch_checkpoint"):
            assert (log_file.parent / (stem + suffix)).exists(), stem + suffix
    active_base = int(next(local.glob("*.log")).name[:20])

    assert list_offset(broker.bootstrap, "tiered", -2) == 0  # earliest: the remote tier's first offset
    assert list_offset(broker.bootstrap, "tiered", -1) == RECORDS
    assert list_offset(broker.bootstrap, "tiered", -4) == active_base  # earliest local
    assert list_offset(broker.bootstrap, "tiered", -5) == active_base - 1  # latest tiered

    assert consume_all(broker.bootstrap, "tiered", RECORDS) == list(range(RECORDS))


def remote_start_offsets(remote_dir: Path, topic: str) -> list[int]:
    return sorted(int(p.name[:20]) for p in remote_files(remote_dir, topic) if p.suffix == ".log")


def test_sigkill_during_a_copy_then_restart(tmp_path: Path, remote_dir: Path) -> None:
    """The broker dies with a segment's files uploaded and COPY_SEGMENT_FINISHED not yet
    written: after the restart that copy is deleted, the segment is copied again once, and
    every record reads back from offset 0."""
    logs = tmp_path / "logs"
    b = BrokerProcess(tiered_overrides(remote_dir), log_dir=logs,
                      env={**os.environ, "BROKER_FAULT_POINT": "remote.copy:2"})
    try:
        b.start()
        # Copies disabled while producing (local.retention.* must then follow retention.*), then on.
        admin = create_tiered(b.bootstrap, **{"remote.log.copy.disable": "true"})
        produce(b.bootstrap, "tiered")
        rolled = len(list((logs / "tiered-0").glob("*.log"))) - 1
        admin.incremental_alter_configs([ConfigResource("topic", "tiered", incremental_configs=[
            ConfigEntry("remote.log.copy.disable", "false", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("local.retention.bytes", "1", incremental_operation=AlterConfigOpType.SET)])])[
            ConfigResource("topic", "tiered")].result(15)
        wait_until(lambda: b.returncode is not None, timeout=30, message="the broker did not die at its second copy")
        assert b.kill() == -9
        assert len(remote_start_offsets(remote_dir, "tiered")) == 2  # the second one's files are there

        b.env = {k: v for k, v in os.environ.items() if k != "BROKER_FAULT_POINT"}
        b.start()
        wait_until(lambda: len(list((logs / "tiered-0").glob("*.log"))) == 1, timeout=60,
                   message="local segments were not deleted after their copies")
        starts = remote_start_offsets(remote_dir, "tiered")
        assert len(starts) == rolled and starts == sorted(set(starts))  # each segment once
        assert consume_all(b.bootstrap, "tiered", RECORDS) == list(range(RECORDS))
    finally:
        b.cleanup()


def test_sigkill_during_a_remote_delete_then_restart(tmp_path: Path, remote_dir: Path) -> None:
    """DeleteRecords past two remote segments; the broker dies with the first one's files
    deleted and DELETE_SEGMENT_FINISHED not yet written. After the restart both are gone and
    every record from the new log start offset reads back."""
    logs = tmp_path / "logs"
    b = BrokerProcess(tiered_overrides(remote_dir), log_dir=logs,
                      env={**os.environ, "BROKER_FAULT_POINT": "remote.delete:1"})
    try:
        b.start()
        admin = create_tiered(b.bootstrap, **{"local.retention.bytes": "1"})
        produce(b.bootstrap, "tiered")
        wait_until(lambda: len(list((logs / "tiered-0").glob("*.log"))) == 1, timeout=60)
        starts = remote_start_offsets(remote_dir, "tiered")
        cut = starts[2]  # past the first two remote segments
        try:
            admin.delete_records([TopicPartition("tiered", 0, cut)])[TopicPartition("tiered", 0, cut)].result(15)
        except KafkaException as exc:
            # The log start offset moves before the answer is written, and the remote log manager's
            # task (every 200 ms) may reach the fault and kill the broker in between: the answer is
            # then lost with the connection. Its effect is checked after the restart below.
            assert exc.args[0].code() == KafkaError._TRANSPORT, exc
        wait_until(lambda: b.returncode is not None, timeout=30, message="the broker did not die deleting")
        assert b.kill() == -9

        b.env = {k: v for k, v in os.environ.items() if k != "BROKER_FAULT_POINT"}
        b.start()
        wait_until(lambda: remote_start_offsets(remote_dir, "tiered") == starts[2:], timeout=30,
                   message=lambda: f"remote segments {remote_start_offsets(remote_dir, 'tiered')}")
        assert list_offset(b.bootstrap, "tiered", -2) == cut
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "after-delete", "enable.auto.commit": False})
        c.assign([TopicPartition("tiered", 0, OFFSET_BEGINNING)])
        seen: list[int] = []
        try:
            def done() -> bool:
                seen.extend(m.offset() for m in c.consume(500, 0.5) if m.error() is None)
                return len(seen) >= RECORDS - cut
            wait_until(done, timeout=60, message=lambda: f"consumed {len(seen)}")
        finally:
            c.close()
        assert seen == list(range(cut, RECORDS))
    finally:
        b.cleanup()


def s3_overrides(s3: S3Server, bucket: str) -> list[str]:
    return ["remote.log.storage.system.enable=true",
            "remote.log.storage.manager.class.name=asyncbroker.S3RemoteStorageManager",
            *s3.broker_overrides(bucket, prefix="tiered"), "rlmm.config.remote.log.metadata.topic.num.partitions=5",
            "remote.log.manager.task.interval.ms=200", "log.retention.check.interval.ms=200",
            "log.initial.task.delay.ms=0", "remote.log.manager.task.retry.backoff.ms=100",
            "remote.log.manager.task.retry.backoff.max.ms=500"]


def scrape(port: int) -> dict[str, float]:
    """The broker's Prometheus samples, by name with their labels (`name{topic="t"}`)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=15) as response:
        text = response.read().decode()
    return {name: float(value) for name, _, value in
            (line.rpartition(" ") for line in text.splitlines() if line and not line.startswith("#"))}


def test_segments_tier_to_s3_and_read_back(s3_server: S3Server, s3_bucket: str, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    with BrokerProcess(s3_overrides(s3_server, s3_bucket), log_dir=logs) as b:
        create_tiered(b.bootstrap, **{"local.retention.bytes": "1"})
        produce(b.bootstrap, "tiered")
        wait_until(lambda: len(list((logs / "tiered-0").glob("*.log"))) == 1, timeout=60)
        keys = s3_server.keys(s3_bucket, "tiered/")
        logs_keys = [k for k in keys if k.endswith(".log")]
        assert len(logs_keys) >= 5 and all(k.startswith("tiered/tiered-0-") for k in keys)
        assert consume_all(b.bootstrap, "tiered", RECORDS) == list(range(RECORDS))


def test_an_unavailable_bucket_keeps_local_segments_and_the_tail_served(tmp_path: Path) -> None:
    """Uploads fail (503 SlowDown on every PUT): copies retry with back-off, no local segment
    is deleted, the metrics count the errors, and produce and consume of the local log keep
    working; once the store takes uploads again, the segments tier and go locally."""
    logs = tmp_path / "logs"
    metrics_port = free_port_block(1)
    with S3Server() as s3:
        s3.create_bucket("tiers")
        s3.inject_fault(503, "SlowDown", methods=("PUT", "POST"))
        with BrokerProcess(s3_overrides(s3, "tiers"), log_dir=logs,
                           serve_args=["--metrics-port", str(metrics_port)]) as b:
            create_tiered(b.bootstrap, **{"local.retention.bytes": "1"})
            produce(b.bootstrap, "tiered")
            wait_until(lambda: scrape(metrics_port).get("asyncbroker_remote_copy_errors_total", 0) >= 3, timeout=30,
                       message="no failed copies counted")
            rolled = len(list((logs / "tiered-0").glob("*.log")))
            assert rolled >= 6  # nothing was deleted locally: no copy is confirmed
            assert s3.keys("tiers") == []
            assert any("Error occurred while copying log segments" in line for line in b.log_lines)
            assert scrape(metrics_port)['asyncbroker_remote_copy_lag_segments{topic="tiered"}'] == rolled - 1
            produce(b.bootstrap, "tiered", 10)  # the local tail takes writes
            assert consume_all(b.bootstrap, "tiered", RECORDS) == list(range(RECORDS))

            s3.clear_fault()
            wait_until(lambda: len(list((logs / "tiered-0").glob("*.log"))) == 1, timeout=60,
                       message="segments were not tiered once the store recovered")
            samples = scrape(metrics_port)
            assert samples["asyncbroker_remote_copy_requests_total"] >= 5
            assert samples["asyncbroker_remote_copy_bytes_total"] >= 5 * MIB * 0.9
            assert samples['asyncbroker_remote_copy_lag_segments{topic="tiered"}'] == 0
            assert samples['asyncbroker_remote_log_size_bytes{topic="tiered"}'] >= 5 * MIB * 0.9


REPO = Path(__file__).resolve().parents[2]


def readme_properties(containing: str) -> list[str]:
    """A server.properties snippet of the README's "Tiered storage" section, comments dropped."""
    section = (REPO / "README.md").read_text().split("## Tiered storage", 1)[1].split("\n## ", 1)[0]
    (block,) = [b for b in re.findall(r"```properties\n(.*?)```", section, re.S) if containing in b]
    return [line for line in block.splitlines() if line.strip() and not line.startswith("#")]


@pytest.mark.parametrize("backend", ["LocalTieredStorage", "S3RemoteStorageManager"])
def test_readme_snippets_tier_a_topic(backend: str, tmp_path: Path, s3_server: S3Server, s3_bucket: str) -> None:
    """The README's snippets as written, but for the directory and the bucket (moto's, with its
    endpoint and keys added) and the task intervals (seconds instead of half a minute)."""
    lines = readme_properties(backend)
    if backend == "LocalTieredStorage":
        lines = [f"rsm.config.dir={tmp_path / 'remote'}" if line.startswith("rsm.config.dir=") else line
                 for line in lines]
    else:
        lines = [line for line in lines if not line.startswith("rsm.config.s3.")]
        lines += s3_server.broker_overrides(s3_bucket, prefix="kafka")
    lines += ["remote.log.manager.task.interval.ms=200", "log.retention.check.interval.ms=200",
              "log.initial.task.delay.ms=0"]
    logs = tmp_path / "logs"
    with BrokerProcess(lines, log_dir=logs) as b:
        create_tiered(b.bootstrap, **{"cleanup.policy": "delete", "local.retention.bytes": "1"})
        produce(b.bootstrap, "tiered", 3000)
        wait_until(lambda: len(list((logs / "tiered-0").glob("*.log"))) == 1, timeout=60)
        assert list_offset(b.bootstrap, "tiered", -4) > 0
        assert consume_all(b.bootstrap, "tiered", 3000) == list(range(3000))


def test_a_share_group_reads_a_tiered_topic_from_the_earliest_offset(broker: BrokerProcess, tmp_path: Path) -> None:
    """ShareFetch goes through the same reads: a share group starting at the earliest offset gets
    the records only remote storage still has, each once."""
    admin = create_tiered(broker.bootstrap, **{"local.retention.bytes": "1"})
    produce(broker.bootstrap, "tiered", 3000)
    local = tmp_path / "logs" / "tiered-0"
    wait_until(lambda: len(list(local.glob("*.log"))) == 1, timeout=60)
    assert list_offset(broker.bootstrap, "tiered", -4) > 1000
    resource = ConfigResource(ConfigResource.Type.GROUP, "tiered-share", incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(30)
    consumer = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": "tiered-share"})
    consumer.subscribe(["tiered"])
    seen: list[int] = []
    try:
        def done() -> bool:
            for m in consumer.poll(0.5) or []:
                assert m.error() is None, m.error()
                assert m.value() == (b"%08d" % m.offset()) * (VALUE // 8)
                seen.append(m.offset())
            return len(seen) >= 3000
        wait_until(done, timeout=90, message=lambda: f"the share group got {len(seen)} of 3000")
    finally:
        consumer.close()
    assert sorted(seen) == list(range(3000))


def test_a_restart_without_tiered_storage_is_refused_while_a_topic_is_tiered(tmp_path: Path,
                                                                              remote_dir: Path) -> None:
    """As Kafka 4.4 refuses: the topic's older records would silently disappear."""
    logs = tmp_path / "logs"
    with BrokerProcess(tiered_overrides(remote_dir), log_dir=logs) as b:
        create_tiered(b.bootstrap)
    with pytest.raises(BrokerStartError, match="You have to delete all topics with the property "
                                               "remote.storage.enable=true before disabling tiered storage"):
        BrokerProcess([], log_dir=logs).start()
    with BrokerProcess(tiered_overrides(remote_dir), log_dir=logs) as b:  # and with it, as before
        assert list_offset(b.bootstrap, "tiered", -1) == 0


def test_the_tier_lever_copies_now(tmp_path: Path, remote_dir: Path) -> None:
    """`tier` on the broker's console (BrokerProcess.run_tiering) runs a copy and expiration
    round at once, with the periodic task an hour apart; README "Live levers"."""
    overrides = [o for o in tiered_overrides(remote_dir) if not o.startswith("remote.log.manager.task.interval.ms")]
    with BrokerProcess([*overrides, "remote.log.manager.task.interval.ms=3600000"], log_dir=tmp_path / "logs",
                       monitor=True) as b:
        create_tiered(b.bootstrap, **{"local.retention.bytes": "1"})
        produce(b.bootstrap, "tiered", 3000)
        stats = b.run_tiering()
        assert stats.copied_segments >= 2 and stats.failed_copies == 0
        assert len(remote_start_offsets(remote_dir, "tiered")) == stats.copied_segments
        assert list_offset(b.bootstrap, "tiered", -5) >= 0
