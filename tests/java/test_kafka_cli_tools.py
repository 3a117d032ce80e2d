"""Kafka's own command-line tools (the kafka-tools 4.4.0 jar, run as kafka-*.sh runs each
main class) against Kafka 4.4 and asyncbroker alike: every test runs on both, and checks
what the tool printed and what it changed. kafka-topics.sh is compared field by field in
tests/oracle/test_admin_topics.py.

    kafka-console-producer.sh  ConsoleProducer, keys and headers parsed from the lines
    kafka-console-consumer.sh  ConsoleConsumer, keys, headers and offsets printed
    kafka-consumer-groups.sh   ConsumerGroupCommand: --list, --describe, --reset-offsets, --delete
    kafka-share-groups.sh      ShareGroupCommand: --reset-offsets, --list, --describe, --delete-offsets, --delete
    kafka-configs.sh           ConfigCommand: topic, broker and group configs, --alter and --describe
    kafka-delete-records.sh    DeleteRecordsCommand
    kafka-get-offsets.sh       GetOffsetShell
    kafka-log-dirs.sh          LogDirsCommand
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from asyncbroker.testing import BrokerProcess
from jvm.kafka_jvm import KafkaServer, run_tool

pytestmark = pytest.mark.timeout(300)

TOPICS = "org.apache.kafka.tools.TopicCommand"
CONSOLE_PRODUCER = "org.apache.kafka.tools.ConsoleProducer"
CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
CONSUMER_GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
SHARE_GROUPS = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
CONFIGS = "org.apache.kafka.tools.ConfigCommand"
DELETE_RECORDS = "org.apache.kafka.tools.DeleteRecordsCommand"
GET_OFFSETS = "org.apache.kafka.tools.GetOffsetShell"
LOG_DIRS = "org.apache.kafka.tools.LogDirsCommand"


@dataclasses.dataclass(frozen=True)
class Target:
    name: str
    bootstrap: str
    log_dir: Path

    def tool(self, main: str, *args: str, input: str | None = None) -> str:
        """Run `main` with --bootstrap-server; its stdout, after a zero exit."""
        result = run_tool(main, ["--bootstrap-server", self.bootstrap, *args], input=input)
        assert result.returncode == 0, f"{self.name}: {main} {args} exited {result.returncode}:\n{result.stderr[-3000:]}"
        return result.stdout


@pytest.fixture(params=["kafka", "asyncbroker"])
def target(request: pytest.FixtureRequest) -> Target:
    if request.param == "kafka":
        kafka: KafkaServer = request.getfixturevalue("kafka")
        return Target("kafka", kafka.bootstrap, kafka.log_dir)
    ours: BrokerProcess = request.getfixturevalue("java_asyncbroker")
    return Target("asyncbroker", ours.bootstrap, ours.log_dir)


def new_topic(target: Target, partitions: int = 1, configs: dict[str, str] | None = None) -> str:
    name = f"cli-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1, config=configs or {})])[name].result(30)
    wait_until(lambda: _leaders_known(admin, name, partitions), f"{target.name}: leaders of {name}")
    return name


def _leaders_known(admin: AdminClient, topic: str, partitions: int) -> bool:
    t = admin.list_topics(topic, timeout=10).topics.get(topic)
    return t is not None and t.error is None and len(t.partitions) == partitions and \
        all(p.leader >= 0 for p in t.partitions.values())


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def produce(target: Target, topic: str, records: list[tuple[bytes | None, bytes]], partition: int = 0) -> None:
    """One record after the other, stamped a millisecond apart (so the last has the largest)."""
    p = Producer({"bootstrap.servers": target.bootstrap, "linger.ms": 0})
    now = int(time.time() * 1000)
    for i, (key, value) in enumerate(records):
        p.produce(topic, value, key, partition=partition, timestamp=now + i)
    assert p.flush(30) == 0


def consume_all(target: Target, topic: str, count: int) -> list[tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]]:
    c = Consumer({"bootstrap.servers": target.bootstrap, "group.id": f"check-{uuid.uuid4().hex[:8]}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        out = []
        deadline = time.monotonic() + 30
        while len(out) < count and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                out.append((m.key(), m.value(), list(m.headers() or [])))
        return out
    finally:
        c.close()


# -- console producer and consumer -------------------------------------------------------------


def test_console_producer_and_consumer_with_keys_and_headers(target: Target) -> None:
    """kafka-console-producer.sh parses "headers<TAB>key<TAB>value" lines (parse.key,
    parse.headers); kafka-console-consumer.sh prints them back with their offsets and stops
    after --max-messages."""
    topic = new_topic(target)
    lines = ["h1:a,h2:b\tk1\tfirst", "h1:c\tk2\tsecond", "h3:\tk1\tthird"]
    target.tool(CONSOLE_PRODUCER, "--topic", topic, "--reader-property", "parse.key=true",
                "--reader-property", "parse.headers=true", input="\n".join(lines) + "\n")
    assert consume_all(target, topic, 3) == [
        (b"k1", b"first", [("h1", b"a"), ("h2", b"b")]),
        (b"k2", b"second", [("h1", b"c")]),
        (b"k1", b"third", [("h3", b"")]),
    ]
    out = target.tool(CONSOLE_CONSUMER, "--topic", topic, "--from-beginning", "--max-messages", "3",
                      "--formatter-property", "print.key=true", "--formatter-property", "print.headers=true",
                      "--formatter-property", "print.offset=true", "--timeout-ms", "30000")
    assert out.splitlines() == [
        "Offset:0\th1:a,h2:b\tk1\tfirst",
        "Offset:1\th1:c\tk2\tsecond",
        "Offset:2\th3:\tk1\tthird",
    ]


# -- consumer groups ---------------------------------------------------------------------------


def _group_rows(out: str) -> list[dict[str, str]]:
    """The table kafka-consumer-groups.sh --describe prints, as one dict per row."""
    lines = [line for line in out.splitlines() if line.strip()]
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["GROUP", "TOPIC"])
    names = lines[header].split()
    return [dict(zip(names, line.split())) for line in lines[header + 1:]]


def test_consumer_groups_tool(target: Target) -> None:
    """A group made by the console consumer (it commits as it closes) is listed, described
    with its offsets and lag, reset to the earliest offset, and deleted."""
    topic = new_topic(target, partitions=2)
    produce(target, topic, [(b"k%d" % i, b"v%d" % i) for i in range(5)], partition=0)
    produce(target, topic, [(b"k%d" % i, b"v%d" % i) for i in range(3)], partition=1)
    group = f"cli-group-{uuid.uuid4().hex[:8]}"
    target.tool(CONSOLE_CONSUMER, "--topic", topic, "--group", group, "--from-beginning",
                "--max-messages", "8", "--timeout-ms", "30000")

    assert group in target.tool(CONSUMER_GROUPS, "--list").split()
    rows = _group_rows(target.tool(CONSUMER_GROUPS, "--describe", "--group", group))
    got = {(r["PARTITION"], r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"]) for r in rows}
    assert got == {("0", "5", "5", "0"), ("1", "3", "3", "0")}, rows
    assert all(r["TOPIC"] == topic and r["CONSUMER-ID"] == "-" for r in rows), rows

    out = target.tool(CONSUMER_GROUPS, "--reset-offsets", "--group", group, "--topic", f"{topic}:0",
                      "--to-earliest", "--execute")
    assert {(r["PARTITION"], r["NEW-OFFSET"]) for r in _group_rows(out)} == {("0", "0")}, out
    rows = _group_rows(target.tool(CONSUMER_GROUPS, "--describe", "--group", group))
    got = {(r["PARTITION"], r["CURRENT-OFFSET"], r["LAG"]) for r in rows}
    assert got == {("0", "0", "5"), ("1", "3", "0")}, rows

    out = target.tool(CONSUMER_GROUPS, "--delete", "--group", group)
    assert f"Deletion of requested consumer groups ('{group}') was successful." in out, out
    assert group not in target.tool(CONSUMER_GROUPS, "--list").split()


def _share_rows(out: str) -> set[tuple[str, ...]]:
    """The rows of a kafka-share-groups.sh table, without the header."""
    lines = [line.split() for line in out.splitlines() if line.strip()]
    return {tuple(row) for row in lines if row[0] != "GROUP"}


def test_share_groups_tool(target: Target) -> None:
    """A share group made by resetting its offsets (KIP-932's admin APIs): listed, its start
    offsets and lag described, one partition reset to the latest, its state shown, its
    offsets deleted, then the group deleted."""
    topic = new_topic(target, partitions=2)
    produce(target, topic, [(None, b"v%d" % i) for i in range(4)], partition=0)
    produce(target, topic, [(None, b"v%d" % i) for i in range(3)], partition=1)
    group = f"cli-share-{uuid.uuid4().hex[:8]}"
    out = target.tool(SHARE_GROUPS, "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")
    assert _share_rows(out) == {(group, topic, "0", "0"), (group, topic, "1", "0")}, out
    assert group in target.tool(SHARE_GROUPS, "--list").split()
    out = target.tool(SHARE_GROUPS, "--describe", "--group", group, "--offsets")
    assert _share_rows(out) == {(group, topic, "0", "0", "4"), (group, topic, "1", "0", "3")}, out
    target.tool(SHARE_GROUPS, "--reset-offsets", "--group", group, "--topic", f"{topic}:1", "--to-latest", "--execute")
    out = target.tool(SHARE_GROUPS, "--describe", "--group", group, "--offsets")
    assert _share_rows(out) == {(group, topic, "0", "0", "4"), (group, topic, "1", "3", "0")}, out
    out = target.tool(SHARE_GROUPS, "--describe", "--group", group, "--state")
    assert [row[-2:] for row in _share_rows(out)] == [("Empty", "0")], out
    out = target.tool(SHARE_GROUPS, "--delete-offsets", "--group", group, "--topic", topic)
    assert (topic, "Successful") in {tuple(line.split()) for line in out.splitlines()}, out
    out = target.tool(SHARE_GROUPS, "--describe", "--group", group, "--offsets")
    assert f"Share group '{group}' has no offset information." in out, out
    out = target.tool(SHARE_GROUPS, "--delete", "--group", group)
    assert f"Deletion of requested share groups ('{group}') was successful." in out, out
    assert group not in target.tool(SHARE_GROUPS, "--list").split()


# -- configs -----------------------------------------------------------------------------------


def _config_lines(out: str) -> dict[str, str]:
    """`  key=value sensitive=... synonyms={...}` lines of kafka-configs.sh --describe, as key -> rest."""
    found = {}
    for line in out.splitlines():
        m = re.match(r"^  ([a-z0-9.]+)=(.*)$", line)
        if m:
            found[m.group(1)] = m.group(2)
    return found


def test_configs_tool_on_a_topic(target: Target) -> None:
    """kafka-configs.sh adds, describes and deletes a topic's dynamic configs, with their
    synonyms as Kafka lists them."""
    topic = new_topic(target)
    args = ("--entity-type", "topics", "--entity-name", topic)
    out = target.tool(CONFIGS, *args, "--alter", "--add-config", "retention.ms=123456,cleanup.policy=compact")
    assert out.strip() == f"Completed updating config for topic {topic}.", out
    described = target.tool(CONFIGS, *args, "--describe")
    assert described.splitlines()[0] == f"Dynamic configs for topic {topic} are:", described
    assert _config_lines(described) == {
        "cleanup.policy": "compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact, "
                          "DEFAULT_CONFIG:log.cleanup.policy=delete}",
        "retention.ms": "123456 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=123456}",
    }, described
    target.tool(CONFIGS, *args, "--alter", "--delete-config", "retention.ms")
    assert set(_config_lines(target.tool(CONFIGS, *args, "--describe"))) == {"cleanup.policy"}
    everything = _config_lines(target.tool(CONFIGS, *args, "--describe", "--all"))
    # Kafka lists no synonym for retention.ms: its broker default (log.retention.ms) is null.
    assert everything["retention.ms"] == "604800000 sensitive=false synonyms={}", everything
    assert everything["segment.bytes"] == ("1073741824 sensitive=false synonyms="
                                           "{DEFAULT_CONFIG:log.segment.bytes=1073741824}"), everything


def test_configs_tool_on_the_broker(target: Target) -> None:
    """kafka-configs.sh sets a dynamic broker config, for broker 1 and as the cluster
    default, describes both, and removes them."""
    broker = ("--entity-type", "brokers", "--entity-name", "1")
    default = ("--entity-type", "brokers", "--entity-default")
    try:
        target.tool(CONFIGS, *broker, "--alter", "--add-config", "log.cleaner.backoff.ms=1500")
        target.tool(CONFIGS, *default, "--alter", "--add-config", "log.retention.bytes=987654321")
        own = target.tool(CONFIGS, *broker, "--describe")
        assert own.splitlines()[0] == "Dynamic configs for broker 1 are:", own
        assert _config_lines(own)["log.cleaner.backoff.ms"] == (
            "1500 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.backoff.ms=1500, "
            f"STATIC_BROKER_CONFIG:log.cleaner.backoff.ms=200, DEFAULT_CONFIG:log.cleaner.backoff.ms=15000}}"), own
        cluster = target.tool(CONFIGS, *default, "--describe")
        assert cluster.splitlines()[0] == "Default configs for brokers in the cluster are:", cluster
        # Beside the one set here, the default Kafka's controller writes when it formats a cluster.
        assert _config_lines(cluster) == {
            "log.retention.bytes": "987654321 sensitive=false synonyms="
                                   "{DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.bytes=987654321}",
            "min.insync.replicas": "1 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:min.insync.replicas=1}",
        }
        every = _config_lines(target.tool(CONFIGS, *broker, "--describe", "--all"))
        assert every["log.retention.bytes"].startswith("987654321 sensitive=false synonyms="
                                                       "{DYNAMIC_DEFAULT_BROKER_CONFIG:"), every["log.retention.bytes"]
        assert every["num.partitions"].startswith("1 sensitive=false"), every["num.partitions"]
    finally:
        target.tool(CONFIGS, *broker, "--alter", "--delete-config", "log.cleaner.backoff.ms")
        target.tool(CONFIGS, *default, "--alter", "--delete-config", "log.retention.bytes")
    assert _config_lines(target.tool(CONFIGS, *broker, "--describe")) == {}
    assert set(_config_lines(target.tool(CONFIGS, *default, "--describe"))) == {"min.insync.replicas"}


def test_configs_tool_on_a_group(target: Target) -> None:
    """kafka-configs.sh sets a group's own session timeout (a group config, KIP-848) before the
    group exists, describes it over the broker key it overrides, refuses one outside the
    broker's bounds, and removes it."""
    group = ("--entity-type", "groups", "--entity-name", f"cli-{uuid.uuid4().hex[:10]}")
    out = target.tool(CONFIGS, *group, "--alter", "--add-config", "consumer.session.timeout.ms=50000")
    assert out.strip().startswith("Completed updating config for group cli-"), out
    described = _config_lines(target.tool(CONFIGS, *group, "--describe"))
    assert described == {"consumer.session.timeout.ms": (
        "50000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:consumer.session.timeout.ms=50000, "
        "DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000}")}, described
    refused = run_tool(CONFIGS, ["--bootstrap-server", target.bootstrap, *group, "--alter", "--add-config",
                                 "consumer.session.timeout.ms=1000"])
    assert refused.returncode != 0
    assert "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive." in refused.stderr + refused.stdout
    target.tool(CONFIGS, *group, "--alter", "--delete-config", "consumer.session.timeout.ms")
    assert _config_lines(target.tool(CONFIGS, *group, "--describe")) == {}


# -- delete-records, get-offsets, log-dirs -----------------------------------------------------


def test_delete_records_and_get_offsets_tools(target: Target, tmp_path: Path) -> None:
    """kafka-delete-records.sh moves a partition's low watermark; kafka-get-offsets.sh then
    shows the new earliest offset, the latest, and offsets by timestamp."""
    topic = new_topic(target, partitions=2)
    produce(target, topic, [(None, b"r%d" % i) for i in range(6)], partition=0)
    produce(target, topic, [(None, b"s%d" % i) for i in range(2)], partition=1)
    spec = tmp_path / "offsets.json"
    spec.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "offset": 4}]}))
    out = target.tool(DELETE_RECORDS, "--offset-json-file", str(spec))
    assert f"partition: {topic}-0\tlow_watermark: 4" in out, out

    def offsets(*args: str) -> list[str]:
        return sorted(target.tool(GET_OFFSETS, "--topic", topic, *args).split())

    assert offsets("--time", "-2") == [f"{topic}:0:4", f"{topic}:1:0"]
    assert offsets("--time", "-1") == [f"{topic}:0:6", f"{topic}:1:2"]
    assert offsets("--time", "earliest", "--partitions", "0") == [f"{topic}:0:4"]
    # Max timestamp: the offset of the record with the largest timestamp (here the last one).
    assert offsets("--time", "-3") == [f"{topic}:0:5", f"{topic}:1:1"]
    # A timestamp past every record: no offset, and the tool prints no line for the partition.
    far = str(int(time.time() * 1000) + 86_400_000)
    assert offsets("--time", far) == []


def test_log_dirs_tool(target: Target) -> None:
    """kafka-log-dirs.sh --describe reports the broker's log dir with each partition's size
    (what is on disk) and no lag."""
    topic = new_topic(target, partitions=2)
    produce(target, topic, [(b"k", b"x" * 1000) for _ in range(10)], partition=1)
    out = target.tool(LOG_DIRS, "--describe", "--topic-list", topic)
    answer = json.loads(next(line for line in out.splitlines() if line.startswith("{")))
    (broker,) = answer["brokers"]
    assert broker["broker"] == 1
    (log_dir,) = broker["logDirs"]
    assert Path(log_dir["logDir"]).resolve() == target.log_dir.resolve()
    assert log_dir["error"] is None
    partitions = {p["partition"]: p for p in log_dir["partitions"]}
    assert set(partitions) == {f"{topic}-0", f"{topic}-1"}
    on_disk = {name: sum(f.stat().st_size for f in (target.log_dir / name).glob("*.log")) for name in partitions}
    assert {name: p["size"] for name, p in partitions.items()} == on_disk
    assert on_disk[f"{topic}-0"] == 0 and on_disk[f"{topic}-1"] > 10_000
    assert all(p["offsetLag"] == 0 and p["isFuture"] is False for p in partitions.values())


def test_tools_on_a_missing_topic(target: Target) -> None:
    """An unknown topic: kafka-topics.sh --describe fails with Kafka's message, and
    kafka-configs.sh --describe says so and exits 0 (as it does on Kafka)."""
    missing = f"missing-{uuid.uuid4().hex[:8]}"
    result = run_tool(TOPICS, ["--bootstrap-server", target.bootstrap, "--describe", "--topic", missing])
    assert result.returncode == 1
    assert f"Topic '{missing}' does not exist as expected" in result.stdout + result.stderr
    out = target.tool(CONFIGS, "--describe", "--entity-type", "topics", "--entity-name", missing)
    assert out.strip() == f"The topic '{missing}' doesn't exist and doesn't have dynamic config."
