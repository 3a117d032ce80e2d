"""Differential scenarios: CreateTopics, DeleteTopics, CreatePartitions and DescribeLogDirs,
compared with Kafka 4.4."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from admin_steps import create_partitions, create_topics, creatable, delete_topics, describe_log_dirs, \
    metadata_topics, wait_for_partitions, wait_until_gone
from differential import ScenarioRun, batch
from steps import create_topic, produce

pytestmark = pytest.mark.timeout(180)

# -- CreateTopics ------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(2, 8))
def test_create_topics_then_exists(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    """Defaults (-1), explicit counts and configs; v5+ echo partitions, replication and every
    config with its source; a second create answers TOPIC_ALREADY_EXISTS."""
    def scenario(run: ScenarioRun) -> None:
        create_topics(run, [creatable(run, "defaults", -1, version=version),
                            creatable(run, "three", 3, 1, configs={"retention.ms": "3600000",
                                                                   "cleanup.policy": "compact,delete"},
                                      version=version)], version=version, label="create")
        create_topics(run, [creatable(run, "three", 3, version=version)], version=version, label="again")
        metadata_topics(run, ["defaults", "three"])

    brokers.compare(scenario)


@pytest.mark.parametrize("version", [2, 4, 5, 7])
def test_create_topics_validate_only(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    """validate_only answers as a creation would (v7: with a topic id) and creates nothing."""
    def scenario(run: ScenarioRun) -> None:
        create_topics(run, [creatable(run, "dry", 4, configs={"segment.bytes": "2097152"}, version=version),
                            creatable(run, "dry-bad", 0, version=version)],
                      version=version, validate_only=True, label="validate")
        metadata_topics(run, ["dry"], label="still absent")
        create_topics(run, [creatable(run, "dry", 4, version=version)], version=version, label="create for real")
        create_topics(run, [creatable(run, "dry", 4, version=version)], version=version, validate_only=True,
                      label="validate an existing name")

    brokers.compare(scenario)


def test_create_topics_bad_names(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topics(run, [creatable(run, n, raw_name=True) for n in
                            ("x" * 250, "bad/name", "bad name", "ünïcode", ".", "..", "")], label="illegal")
        create_topics(run, [creatable(run, "dot.ted")], label="dotted")
        # '.' and '_' collide in metric names: a name differing only by them is refused.
        create_topics(run, [creatable(run, "dot_ted")], label="collides with dot.ted")
        create_topics(run, [creatable(run, "x" * (249 - len(run.suffix)))], label="longest legal name")

    brokers.compare(scenario)


def test_create_topics_bad_partitions_and_replication(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topics(run, [creatable(run, "p0", 0), creatable(run, "pneg", -5), creatable(run, "r0", 1, 0),
                            creatable(run, "r2", 1, 2), creatable(run, "r3", 1, 3), creatable(run, "rneg", 1, -7)],
                      label="bad counts")

    brokers.compare(scenario)


def test_create_topics_duplicate_names(brokers) -> None:  # type: ignore[no-untyped-def]
    """A name given twice gets one INVALID_REQUEST, after the other topics' results."""
    def scenario(run: ScenarioRun) -> None:
        create_topics(run, [creatable(run, "twice"), creatable(run, "once"), creatable(run, "twice", 2)],
                      label="duplicates")
        metadata_topics(run, ["twice", "once"])

    brokers.compare(scenario)


def test_create_topics_manual_assignments(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topics(run, [
            creatable(run, "as-ok", -1, assignments=[[1], [1]]),
            creatable(run, "as-gap", -1, assignments=[(0, [1]), (2, [1])]),
            creatable(run, "as-order", -1, assignments=[(1, [1]), (0, [1])]),
            creatable(run, "as-other-broker", -1, assignments=[[2]]),
            creatable(run, "as-twice", -1, assignments=[[1, 1]]),
            creatable(run, "as-two-brokers", -1, assignments=[[1, 2]]),
            creatable(run, "as-empty", -1, assignments=[[]]),
            creatable(run, "as-with-count", 2, assignments=[[1]]),
            creatable(run, "as-with-rf", -1, 1, assignments=[[1]]),
        ], label="assignments")
        metadata_topics(run, ["as-ok"])

    brokers.compare(scenario)


def test_create_topics_bad_configs(brokers) -> None:  # type: ignore[no-untyped-def]
    """Unknown keys, values that do not parse, out of range, not in the list, null, and a
    cross-key rule; every message as Kafka words it."""
    def scenario(run: ScenarioRun) -> None:
        create_topics(run, [
            creatable(run, "unknown-key", configs={"no.such.key": "1"}),
            creatable(run, "not-a-long", configs={"retention.ms": "abc"}),
            creatable(run, "not-an-int", configs={"segment.bytes": "1.5"}),
            creatable(run, "not-a-bool", configs={"preallocate": " yes "}),
            creatable(run, "ratio-high", configs={"min.cleanable.dirty.ratio": "2"}),
            creatable(run, "ratio-low", configs={"min.cleanable.dirty.ratio": "-99999999999"}),
            creatable(run, "policy", configs={"cleanup.policy": "compact,wat"}),
            creatable(run, "segment-small", configs={"segment.bytes": "100"}),
            creatable(run, "gzip-level", configs={"compression.gzip.level": "0"}),
            creatable(run, "codec", configs={"compression.type": "brotli"}),
            creatable(run, "throttled", configs={"leader.replication.throttled.replicas": "0:1,x"}),
            creatable(run, "null-value", configs={"retention.ms": None}),
            creatable(run, "lag-conflict", configs={"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}),
            creatable(run, "out-of-int", configs={"max.message.bytes": "99999999999"}),
        ], label="bad configs")

    brokers.compare(scenario)


@pytest.mark.parametrize("value", ["-3", "abc", "1.5", "0", "99999999999", "2147483647", "-1", "9223372036854775807", " 7 ", "", "true", "nan", "0x1p-2", "1_0", "5.", "0.5d"])
def test_create_topics_validates_every_topic_key(brokers, value: str) -> None:  # type: ignore[no-untyped-def]
    """One value, set on every topic key Kafka 4.4 has (validate_only): parsing, ranges and
    messages key by key."""
    from storage.config_def import TOPIC_KEYS

    def scenario(run: ScenarioRun) -> None:
        create_topics(run, [creatable(run, f"k{i}", configs={key: value}) for i, key in enumerate(sorted(TOPIC_KEYS))],
                      validate_only=True, label=f"value {value!r}")

    brokers.compare(scenario)


def test_create_topics_new_keys_accepted(brokers) -> None:  # type: ignore[no-untyped-def]
    """Keys whose behaviour asyncbroker does not build are still accepted, stored and echoed."""
    def scenario(run: ScenarioRun) -> None:
        create_topics(run, [creatable(run, "newer-keys", configs={
            "errors.deadletterqueue.group.enable": "true", "max.decompressed.message.bytes": "1048576",
            "remote.copy.lag.bytes": "0", "remote.copy.lag.ms": "-1", "follower.replication.throttled.replicas": "*",
            "leader.replication.throttled.replicas": "0:1", "unclean.leader.election.enable": "true"})],
            label="create")

    brokers.compare(scenario)


# -- DeleteTopics ------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(1, 7))
def test_delete_topics_by_name(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "del", partitions=2, record=False)
        produce(run, "del", {0: batch(3)}, record=False)
        delete_topics(run, ["del", "absent", "=bad name"], version=version, label="delete")
        wait_until_gone(run, "del")
        metadata_topics(run, ["del"], label="gone")
        delete_topics(run, ["del"], version=version, label="delete again")
        create_topic(run, "del", partitions=1, record=False)  # the name is free at once
        metadata_topics(run, ["del"], label="recreated")

    brokers.compare(scenario)


@pytest.mark.parametrize("version", [5, 6])
def test_delete_topics_duplicate_names(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "dup", record=False)
        create_topic(run, "single", record=False)
        delete_topics(run, ["dup", "single", "dup"], version=version, label="duplicates")
        wait_until_gone(run, "single")
        metadata_topics(run, ["dup", "single"], label="only the single one went")

    brokers.compare(scenario)


def test_delete_topics_by_id(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        for symbol in ("id-a", "id-b", "id-c", "id-d"):
            create_topic(run, symbol, record=False)
        delete_topics(run, ["zz"], [run.topic_id("id-a"), uuid.UUID(int=0x5EED), run.topic_id("id-d"),
                                    run.topic_id("id-d")],
                      both=[(run.topic("id-b"), run.topic_id("id-b"))], label="by id, name, both, twice")
        delete_topics(run, [None], label="neither name nor id")
        wait_until_gone(run, "id-a")
        metadata_topics(run, ["id-a", "id-b", "id-c", "id-d"], label="after")

    brokers.compare(scenario)


# -- CreatePartitions --------------------------------------------------------------------


@pytest.mark.parametrize("version", range(0, 4))
def test_create_partitions(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "grow", partitions=2, record=False)
        create_partitions(run, [("grow", 5, None)], version=version, validate_only=True, label="validate only")
        metadata_topics(run, ["grow"], label="unchanged")
        create_partitions(run, [("grow", 4, None)], version=version, label="increase")
        wait_for_partitions(run, "grow", 4)
        metadata_topics(run, ["grow"], label="grown")
        create_partitions(run, [("grow", 4, None), ("absent", 2, None), ("=bad name", 2, None)], version=version,
                          label="same count, unknown, invalid")
        create_partitions(run, [("grow", 3, None)], version=version, label="decrease")
        create_partitions(run, [("grow", 0, None)], version=version, label="zero")
        create_partitions(run, [("grow", 6, None), ("grow", 7, None)], version=version, label="duplicates")

    brokers.compare(scenario)


def test_create_partitions_assignments(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "placed", partitions=1, record=False)
        for label, count, assignments in [
            ("too few", 3, [[1]]),
            ("too many", 2, [[1], [1]]),
            ("other broker", 2, [[2]]),
            ("twice", 2, [[1, 1]]),
            ("two brokers", 2, [[1, 2]]),
            ("empty", 2, [[]]),
            ("more replicas than the topic's", 2, [[1, 1, 1]]),
        ]:
            create_partitions(run, [("placed", count, assignments)], label=label)
        create_partitions(run, [("placed", 3, [[1], [1]])], label="valid")
        wait_for_partitions(run, "placed", 3)
        metadata_topics(run, ["placed"], label="grown")

    brokers.compare(scenario)


# -- DescribeLogDirs ---------------------------------------------------------------------


@pytest.mark.parametrize("version", range(1, 6))
def test_describe_log_dirs_sizes(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    """The same bytes produced give the same partition sizes; named partitions, unknown ones
    and all topics."""
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "sized", partitions=3, record=False)
        produce(run, "sized", {0: batch(5), 1: batch([(b"k", b"v" * 300)])}, record=False)
        produce(run, "sized", {0: batch(2, value_size=40)}, record=False)
        describe_log_dirs(run, version, {"sized": [0, 1, 2, 9], "absent": [0]})
        describe_log_dirs(run, version, {"sized": []})
        describe_log_dirs(run, version, None)

    brokers.compare(scenario)


def test_create_internal_topic_that_exists(brokers) -> None:  # type: ignore[no-untyped-def]
    from admin_steps import find_coordinator

    def scenario(run: ScenarioRun) -> None:
        find_coordinator(run, "g")

        def ready() -> bool:
            t = metadata_topics(run, ["=__consumer_offsets"], record=False).topics[0]
            return t.error_code.value == 0 and len(t.partitions) == 50

        run.wait_until(ready, "__consumer_offsets")
        create_topics(run, [creatable(run, "__consumer_offsets", 1, raw_name=True)], validate_only=True,
                      label="validate")
        create_topics(run, [creatable(run, "__consumer_offsets", 1, raw_name=True)], label="create")

    brokers.compare(scenario)


# -- kafka-topics.sh ---------------------------------------------------------------------


def test_kafka_topics_tool(brokers) -> None:  # type: ignore[no-untyped-def]
    """Kafka's own kafka-topics.sh (TopicCommand) creates, grows, describes and deletes a topic
    on both brokers, and prints the same. Its describe asks DescribeTopicPartitions, which
    asyncbroker does not serve (KD-200), so it falls back to Metadata and prints the eligible
    leader replicas as N/A: those fields are recorded apart."""
    import re

    from jvm.kafka_jvm import run_tool

    def tool(run: ScenarioRun, label: str, *args: str) -> None:
        result = run_tool("org.apache.kafka.tools.TopicCommand", ["--bootstrap-server", run.bootstrap, *args])
        # Topic ids are random per broker; names carry the run's suffix (note() leaves dicts as given).
        text = re.sub(r"TopicId: \S+", "TopicId: <id>", result.stdout).replace(run.suffix, "")
        elr = re.findall(r"\t(Elr: [^\t\n]*\tLastKnownElr: [^\t\n]*)", text)
        text = re.sub(r"\tElr: [^\t\n]*\tLastKnownElr: [^\t\n]*", "", text)
        run.note(label, {"exit": result.returncode, "out": text.strip(), "elr": elr})

    def scenario(run: ScenarioRun) -> None:
        name = run.topic("tool")
        tool(run, "create", "--create", "--topic", name, "--partitions", "2", "--config", "retention.ms=1000",
             "--config", "cleanup.policy=compact")
        wait_for_partitions(run, "tool", 2)
        tool(run, "alter", "--alter", "--topic", name, "--partitions", "3")
        wait_for_partitions(run, "tool", 3)
        tool(run, "describe", "--describe", "--topic", name)
        tool(run, "delete", "--delete", "--topic", name)

    brokers.compare(scenario, known={"KD-200": {"2:.elr[0]", "2:.elr[1]", "2:.elr[2]"}})


def leader_epoch_checkpoints(log_dirs: dict[str, Path]):  # type: ignore[no-untyped-def]
    """What a partition's leader-epoch-checkpoint says once the topic exists, after its first
    batch, and after CreatePartitions: Kafka's leader writes epoch 0 from offset 0 when it
    becomes leader, before any append."""
    def checkpoints(run: ScenarioRun, label: str, partitions: int) -> None:
        def read() -> list[str] | None:
            files = [log_dirs[run.broker] / f"{run.topic('t')}-{p}" / "leader-epoch-checkpoint"
                     for p in range(partitions)]
            return [f.read_text() for f in files] if all(f.exists() for f in files) else None

        run.note(label, run.wait_until(read, f"leader-epoch-checkpoint of {partitions} partitions", 30))

    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t", 2)
        checkpoints(run, "created", 2)
        produce(run, "t", {0: batch([(b"k", b"v")] * 3)})
        checkpoints(run, "after the first batch", 2)
        create_partitions(run, [("t", 3, None)])
        wait_for_partitions(run, "t", 3)
        checkpoints(run, "grown", 3)
    return scenario


def test_leader_epoch_checkpoints(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(leader_epoch_checkpoints({"kafka": brokers.kafka.log_dir, "asyncbroker": brokers.ours.log_dir}))
