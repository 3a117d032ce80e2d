"""Differential scenarios: DescribeConfigs, IncrementalAlterConfigs and AlterConfigs for topics,
this broker and the cluster-wide defaults, compared with Kafka 4.4."""

from __future__ import annotations

import pytest

from admin_steps import ALTER_CONFIGS, APPEND, BROKER, BROKER_LOGGER, DELETE, SET, SUBTRACT, TOPIC, \
    alter_configs, describe_configs, incremental_alter_configs, wait_for_topic_config
from differential import ScenarioRun, entity
from steps import DESCRIBE_CONFIGS, create_topic
from storage.config_def import BROKER_KEYS, TOPIC_KEYS

pytestmark = pytest.mark.timeout(180)

# Broker keys that both brokers know and that the two fixtures set alike (the rest are the
# oracle's KRaft, listener and log-dir set-up, or a path or port, so they must differ).
FIXTURE_SPECIFIC = frozenset({
    "listeners", "advertised.listeners", "listener.security.protocol.map", "controller.listener.names",
    "controller.quorum.voters", "controller.quorum.bootstrap.servers", "process.roles", "inter.broker.listener.name",
    "log.dirs", "log.dir", "offsets.topic.replication.factor", "transaction.state.log.replication.factor",
    "transaction.state.log.min.isr", "share.coordinator.state.topic.replication.factor",
    "share.coordinator.state.topic.min.isr",
})
KNOWN_BROKER_KEYS = frozenset(BROKER_KEYS) - FIXTURE_SPECIFIC
# Kafka never describes its internal keys; asking for one by name returns nothing on both.
SHARED_BROKER_KEYS = tuple(sorted(k for k in KNOWN_BROKER_KEYS if not BROKER_KEYS[k].internal))
# The topic keys a DescribeConfigs of every key lists (internal ones only when set, as Kafka does).
TOPIC_KEYS = tuple(sorted(name for name, key in TOPIC_KEYS.items() if not key.internal))
CHANGED = ("cleanup.policy", "retention.ms", "segment.bytes", "min.insync.replicas", "max.message.bytes",
           "follower.replication.throttled.replicas")


def documentation_paths(step: int, keys: tuple[str, ...], result: int = 0) -> set[str]:
    """KD-204: documentation is asyncbroker's own text."""
    return {f"{step}:.results[{result}].configs[{key}].documentation" for key in keys}


# -- DescribeConfigs: topics -------------------------------------------------------------


@pytest.mark.parametrize("version", range(1, 5))
def test_describe_topic_configs_defaults_and_overrides(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    """Every key of a topic with overrides (list, long, int, double, boolean and a key whose
    default is a cluster-wide dynamic default), with and without synonyms."""
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "described", configs={"cleanup.policy": "compact,delete", "retention.ms": "5000",
                                                "min.insync.replicas": "1", "min.cleanable.dirty.ratio": "0.25",
                                                "preallocate": "true"}, record=False)
        describe_configs(run, [(TOPIC, "described", None)], version=version, synonyms=True, label="synonyms")
        describe_configs(run, [(TOPIC, "described", None)], version=version, synonyms=False, label="no synonyms")

    brokers.compare(scenario)


@pytest.mark.parametrize("version", [3, 4])
def test_describe_topic_configs_documentation(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "documented", record=False)
        describe_configs(run, [(TOPIC, "documented", None)], version=version, documentation=True)

    brokers.compare(scenario, known={"KD-204": documentation_paths(0, TOPIC_KEYS)})


@pytest.mark.parametrize("version", range(1, 5))
def test_describe_topic_configs_by_key_and_errors(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "keyed", configs={"segment.bytes": "2097152"}, record=False)
        describe_configs(run, [(TOPIC, "keyed", ("segment.bytes", "retention.ms", "no.such.key",
                                                 "min.insync.replicas"))], version=version, label="some keys")
        describe_configs(run, [(TOPIC, "keyed", ())], version=version, label="empty key list")
        describe_configs(run, [(TOPIC, "absent", None), (TOPIC, "=bad name", None), (TOPIC, "=", None)],
                         version=version, label="unknown and invalid topics")

    brokers.compare(scenario)


def test_describe_configs_unknown_resource_type(brokers) -> None:  # type: ignore[no-untyped-def]
    """A resource type Kafka does not know fails the request with INVALID_REQUEST's own text."""
    def scenario(run: ScenarioRun) -> None:
        describe_configs(run, [(1, "x", None)], label="type 1")
        describe_configs(run, [(64, "x", None)], label="type 64")

    brokers.compare(scenario)


# -- DescribeConfigs: the broker and the cluster-wide defaults ---------------------------


@pytest.mark.parametrize("version", range(1, 5))
def test_describe_broker_configs(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    """Every broker key both brokers know and set alike: value, source, read-only (Kafka's
    dynamic keys are not), synonyms (families like log.retention.*), type (v3+)."""
    def scenario(run: ScenarioRun) -> None:
        describe_configs(run, [(BROKER, "1", SHARED_BROKER_KEYS)], version=version, label="this broker")
        describe_configs(run, [(BROKER, "1", ("log.retention.ms", "log.retention.minutes", "log.retention.hours",
                                              "log.roll.ms", "log.flush.interval.ms"))],
                         version=version, synonyms=False, label="families without synonyms")

    brokers.compare(scenario)


def test_describe_broker_configs_documentation(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        describe_configs(run, [(BROKER, "1", SHARED_BROKER_KEYS)], documentation=True)

    brokers.compare(scenario, known={"KD-204": documentation_paths(0, SHARED_BROKER_KEYS)})


def test_describe_all_broker_configs(brokers) -> None:  # type: ignore[no-untyped-def]
    """Every key: recorded as a view of the keys asyncbroker knows, so a key asyncbroker
    describes that Kafka 4.4 does not, or describes otherwise, shows. Kafka's other keys
    (SSL, SASL, quotas, replication, KRaft, ...) belong to features asyncbroker has not."""
    def scenario(run: ScenarioRun) -> None:
        response = run.call(DESCRIBE_CONFIGS, 4, _record=False, resources=(
            _resource(BROKER, "1", None),), include_synonyms=True, include_documentation=False)
        view = run.normalise(response)
        view["results"][0]["configs"] = sorted(
            (c for c in view["results"][0]["configs"] if c["name"] in KNOWN_BROKER_KEYS), key=lambda c: c["name"])
        run.note("DescribeConfigs v4 (this broker, every key asyncbroker knows)", view)

    brokers.compare(scenario)


def _resource(resource_type: int, name: str, keys: tuple[str, ...] | None):  # type: ignore[no-untyped-def]
    from differential import entity

    return entity(DESCRIBE_CONFIGS, 4, "DescribeConfigsResource", resource_type=resource_type, resource_name=name,
                  configuration_keys=keys)


@pytest.mark.parametrize("version", range(1, 5))
def test_describe_cluster_default_configs(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    """The BROKER resource "" holds the cluster-wide dynamic defaults: min.insync.replicas,
    which Kafka's controller writes when it formats a cluster with eligible leader replicas."""
    def scenario(run: ScenarioRun) -> None:
        describe_configs(run, [(BROKER, "", None)], version=version, label="all")
        describe_configs(run, [(BROKER, "", ("min.insync.replicas", "num.partitions"))], version=version,
                         label="by key")

    brokers.compare(scenario)


def test_describe_broker_configs_bad_ids(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        for name in ("7", "x", "-1", "1 "):
            describe_configs(run, [(BROKER, name, None)], label=f"broker {name!r}")

    brokers.compare(scenario)


def test_describe_broker_logger_configs(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        describe_configs(run, [(BROKER_LOGGER, "1", ("root",))], label="root logger")
        describe_configs(run, [(BROKER_LOGGER, "7", None)], label="another broker")

    brokers.compare(scenario, known={"KD-205": {"0:.results[0].error_code", "0:.results[0].error_message",
                                                "0:.results[0].configs[names]"}})


# -- IncrementalAlterConfigs: topics -----------------------------------------------------


@pytest.mark.parametrize("version", [0, 1])
def test_incremental_alter_topic_configs(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    """SET, DELETE, APPEND and SUBTRACT (list keys), validate_only, and what DescribeConfigs
    shows after each."""
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "altered", record=False)

        def show(label: str) -> None:
            describe_configs(run, [(TOPIC, "altered", CHANGED)], label=label)

        incremental_alter_configs(run, [(TOPIC, "altered", [("retention.ms", SET, "1000"),
                                                            ("cleanup.policy", APPEND, "compact"),
                                                            ("min.insync.replicas", SET, "1")])],
                                  version=version, label="set and append")
        wait_for_topic_config(run, "altered", "retention.ms", "1000")
        show("after set and append")
        incremental_alter_configs(run, [(TOPIC, "altered", [("cleanup.policy", SUBTRACT, "delete"),
                                                            ("retention.ms", DELETE, None),
                                                            ("follower.replication.throttled.replicas", APPEND, "0:1")])],
                                  version=version, label="subtract, delete, append to an empty list")
        wait_for_topic_config(run, "altered", "retention.ms", None)
        show("after subtract and delete")
        incremental_alter_configs(run, [(TOPIC, "altered", [("cleanup.policy", SUBTRACT, "compact"),
                                                            ("follower.replication.throttled.replicas", APPEND, "1:1,0:1")])],
                                  version=version, label="subtract the last item")
        wait_for_topic_config(run, "altered", "cleanup.policy", "")
        show("after emptying cleanup.policy")
        incremental_alter_configs(run, [(TOPIC, "altered", [("segment.bytes", SET, "2097152")])],
                                  version=version, validate_only=True, label="validate only")
        show("validate only changed nothing")
        incremental_alter_configs(run, [(TOPIC, "altered", [("no.such.key", DELETE, None)])],
                                  version=version, label="delete an unknown key")
        incremental_alter_configs(run, [(TOPIC, "altered", [("segment.bytes", DELETE, None)])],
                                  version=version, label="delete a key that has no override")

    brokers.compare(scenario)


def test_incremental_alter_topic_configs_errors(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "refused", record=False)
        cases = [
            ("unknown key", [("no.such.key", SET, "1")]),
            ("not a number", [("retention.ms", SET, "x")]),
            ("out of range", [("segment.bytes", SET, "100")]),
            ("not in the list", [("cleanup.policy", SET, "compact,wat")]),
            ("append to a long", [("retention.ms", APPEND, "5")]),
            ("subtract from an int", [("segment.bytes", SUBTRACT, "5")]),
            ("null SET", [("retention.ms", SET, None)]),
            ("null APPEND", [("cleanup.policy", APPEND, None)]),
            ("duplicate key", [("retention.ms", SET, "7"), ("retention.ms", DELETE, None)]),
            ("unknown operation", [("retention.ms", 7, "1")]),
            # Refused by a broker without remote.log.storage.system.enable, as this pair is (Kafka's
            # default); test_tiered_storage.py has a pair with it on.
            ("tiered storage", [("remote.storage.enable", SET, "true")]),
            ("cross-key rule", [("min.compaction.lag.ms", SET, "10"), ("max.compaction.lag.ms", SET, "5")]),
        ]
        for label, ops in cases:
            incremental_alter_configs(run, [(TOPIC, "refused", ops)], label=label)
        incremental_alter_configs(run, [(TOPIC, "refused", [("retention.ms", SET, "1")]),
                                        (TOPIC, "refused", [("retention.ms", SET, "2")])], label="duplicate resource")
        incremental_alter_configs(run, [(TOPIC, "refused", [("retention.ms", SET, "9000")]),
                                        (TOPIC, "absent", [("retention.ms", SET, "1")]),
                                        (TOPIC, "=bad name", [("retention.ms", SET, "1")]),
                                        (TOPIC, "=", [("retention.ms", SET, "1")])],
                                  label="one good, unknown and invalid topics")
        incremental_alter_configs(run, [(1, "x", [("retention.ms", SET, "1")])], label="unknown resource type")
        wait_for_topic_config(run, "refused", "retention.ms", "9000")
        describe_configs(run, [(TOPIC, "refused", ("retention.ms", "min.compaction.lag.ms"))], label="after")

    brokers.compare(scenario)


# -- IncrementalAlterConfigs: the broker -------------------------------------------------


def test_incremental_alter_broker_configs_validate_only(brokers) -> None:  # type: ignore[no-untyped-def]
    """What Kafka lets change at runtime on a broker ("1") and cluster-wide (""), and what it
    refuses: static keys, bad values, per-broker keys at cluster level, a per-broker
    min.insync.replicas while eligible leader replicas are on. Keys it does not know are
    custom configs and pass."""
    def scenario(run: ScenarioRun) -> None:
        cases = [
            ("dynamic topic default", [("log.retention.ms", SET, "100000000")]),
            ("dynamic cleaner key", [("log.cleaner.threads", SET, "2")]),
            ("dynamic thread pool", [("num.io.threads", SET, "4")]),
            ("delete a dynamic key", [("message.max.bytes", DELETE, None)]),
            ("static key", [("num.partitions", SET, "3")]),
            ("static key among dynamic ones", [("log.segment.bytes", SET, "2097152"),
                                               ("auto.create.topics.enable", SET, "false")]),
            ("unknown key", [("no.such.key", SET, "3")]),
            ("not a number", [("message.max.bytes", SET, "x")]),
            ("below the minimum", [("log.segment.bytes", SET, "10")]),
            ("min.insync.replicas", [("min.insync.replicas", SET, "1")]),
            ("per-broker key", [("listener.security.protocol.map", SET, "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT")]),
            ("duplicate key", [("log.retention.ms", SET, "1"), ("log.retention.ms", DELETE, None)]),
            ("delete min.insync.replicas", [("min.insync.replicas", DELETE, None)]),
            ("append to a long", [("log.retention.ms", APPEND, "5")]),
            ("append to a list", [("log.cleanup.policy", APPEND, "compact")]),
        ]
        for label, ops in cases:
            for name in ("1", ""):
                incremental_alter_configs(run, [(BROKER, name, ops)], validate_only=True,
                                          label=f"{label} on {name or 'the cluster'}")
        for name in ("2", "x"):
            incremental_alter_configs(run, [(BROKER, name, [("log.retention.ms", SET, "1")])], validate_only=True,
                                      label=f"broker {name!r}")

    brokers.compare(scenario)


def test_incremental_alter_broker_configs_applied(brokers) -> None:  # type: ignore[no-untyped-def]
    """Topic defaults changed at runtime, on this broker and cluster-wide: what the broker,
    the cluster defaults and a topic then describe; put back at the end (also on failure, as
    the brokers are shared by the session)."""
    keys = ("compression.zstd.level", "compression.gzip.level", "message.max.bytes")
    topic_keys = ("compression.zstd.level", "compression.gzip.level", "max.message.bytes")

    def broker_values(run: ScenarioRun) -> dict[str, str | None]:
        entries = describe_configs(run, [(BROKER, "1", keys)], record=False).results[0].configs
        return {e.name: e.value for e in entries}

    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "dynamic", configs={"compression.gzip.level": "5"}, record=False)
        try:
            incremental_alter_configs(run, [(BROKER, "1", [("compression.zstd.level", SET, "7"),
                                                           ("message.max.bytes", SET, "2000000")])],
                                      label="on this broker")
            incremental_alter_configs(run, [(BROKER, "", [("compression.zstd.level", SET, "9"),
                                                          ("compression.gzip.level", SET, "3")])],
                                      label="cluster-wide")
            run.wait_until(lambda: broker_values(run) == {"compression.zstd.level": "7", "compression.gzip.level": "3",
                                                          "message.max.bytes": "2000000"}, "dynamic broker configs")
            describe_configs(run, [(BROKER, "1", keys)], label="this broker")
            describe_configs(run, [(BROKER, "", None)], label="cluster defaults")
            describe_configs(run, [(TOPIC, "dynamic", topic_keys)], label="a topic")
        finally:
            incremental_alter_configs(run, [(BROKER, "1", [("compression.zstd.level", DELETE, None),
                                                           ("message.max.bytes", DELETE, None)])], label="put back")
            incremental_alter_configs(run, [(BROKER, "", [("compression.zstd.level", DELETE, None),
                                                          ("compression.gzip.level", DELETE, None)])],
                                      label="put back cluster-wide")
            run.wait_until(lambda: broker_values(run) == {"compression.zstd.level": "3", "compression.gzip.level": "-1",
                                                          "message.max.bytes": "1048588"}, "static broker configs")
        describe_configs(run, [(BROKER, "1", keys)], label="this broker again")
        describe_configs(run, [(TOPIC, "dynamic", topic_keys)], label="the topic again")

    brokers.compare(scenario)


def test_incremental_alter_cleaner_backoff(brokers) -> None:  # type: ignore[no-untyped-def]
    """log.cleaner.backoff.ms is reconfigured at runtime on both: set, described with its
    dynamic source, and put back."""
    def scenario(run: ScenarioRun) -> None:
        incremental_alter_configs(run, [(BROKER, "1", [("log.cleaner.backoff.ms", SET, "250")])], label="set")
        _wait_until_source(run, "log.cleaner.backoff.ms", (2,))  # Kafka applies it through its metadata log
        describe_configs(run, [(BROKER, "1", ("log.cleaner.backoff.ms",))], label="after set")
        incremental_alter_configs(run, [(BROKER, "1", [("log.cleaner.backoff.ms", DELETE, None)])], label="delete")
        _wait_until_source(run, "log.cleaner.backoff.ms", (4, 5))

    brokers.compare(scenario)


def _wait_until_source(run: ScenarioRun, key: str, sources: tuple[int, ...]) -> None:
    """Until DescribeConfigs shows broker key `key` from one of `sources` (2 DYNAMIC_BROKER_CONFIG,
    4 STATIC_BROKER_CONFIG, 5 DEFAULT_CONFIG), unrecorded."""
    def there() -> bool:
        entries = describe_configs(run, [(BROKER, "1", (key,))], record=False).results[0]
        return int(entries.configs[0].config_source) in sources

    run.wait_until(there, f"{key} from config source {sources}")


def test_incremental_alter_broker_configs_not_applied(brokers) -> None:  # type: ignore[no-untyped-def]
    """A valid change of a key Kafka reconfigures at runtime but asyncbroker does not (the
    cleaner's thread count): Kafka applies it, asyncbroker refuses it (KD-206). Put back on both."""
    def scenario(run: ScenarioRun) -> None:
        incremental_alter_configs(run, [(BROKER, "1", [("log.cleaner.threads", SET, "1")])], label="set")
        incremental_alter_configs(run, [(BROKER, "1", [("log.cleaner.threads", DELETE, None)])], label="delete")
        _wait_until_source(run, "log.cleaner.threads", (4, 5))

    brokers.compare(scenario, known={"KD-206": {"0:.responses[0].error_code", "0:.responses[0].error_message",
                                                "1:.responses[0].error_code", "1:.responses[0].error_message"}})


def test_incremental_alter_broker_logger(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        incremental_alter_configs(run, [(BROKER_LOGGER, "1", [("root", SET, "WARN")])], validate_only=True,
                                  label="root logger")

    brokers.compare(scenario, known={"KD-205": {"0:.responses[0].error_code", "0:.responses[0].error_message"}})


# -- AlterConfigs ------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(0, 3))
def test_alter_configs_replaces_overrides(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    """AlterConfigs makes the given keys a topic's whole override set."""
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "replaced", configs={"retention.ms": "5000", "segment.bytes": "2097152"}, record=False)

        def show(label: str) -> None:
            describe_configs(run, [(TOPIC, "replaced", CHANGED)], label=label)

        alter_configs(run, [(TOPIC, "replaced", {"cleanup.policy": "compact", "max.message.bytes": "2000"})],
                      version=version, label="replace")
        wait_for_topic_config(run, "replaced", "retention.ms", None)
        show("after replace")
        alter_configs(run, [(TOPIC, "replaced", {"retention.ms": "1"})], version=version, validate_only=True,
                      label="validate only")
        show("validate only changed nothing")
        alter_configs(run, [(TOPIC, "replaced", {})], version=version, label="clear")
        wait_for_topic_config(run, "replaced", "cleanup.policy", None)
        show("after clear")

    brokers.compare(scenario)


def test_alter_configs_errors(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "alter-refused", configs={"retention.ms": "5000"}, record=False)
        for label, configs in [("unknown key", {"no.such.key": "1"}), ("bad value", {"retention.ms": "x"}),
                               ("out of range", {"segment.bytes": "100"}), ("null value", {"retention.ms": None})]:
            alter_configs(run, [(TOPIC, "alter-refused", configs)], label=label)
        alter_configs(run, [(TOPIC, "absent", {"retention.ms": "1"}), (TOPIC, "=bad name", {"retention.ms": "1"})],
                      label="unknown and invalid topics")
        for name in ("1", ""):
            alter_configs(run, [(BROKER, name, {"log.retention.ms": "100000000"})], validate_only=True,
                          label=f"dynamic key on {name or 'the cluster'}")
            alter_configs(run, [(BROKER, name, {"num.partitions": "2"})], validate_only=True,
                          label=f"static key on {name or 'the cluster'}")
        alter_configs(run, [(BROKER, "2", {})], validate_only=True, label="another broker")
        describe_configs(run, [(TOPIC, "alter-refused", ("retention.ms",))], label="unchanged")

    brokers.compare(scenario)


def test_alter_configs_duplicate_resource(brokers) -> None:  # type: ignore[no-untyped-def]
    """A resource named twice: Kafka 4.4 never answers this AlterConfigs request (KD-207),
    asyncbroker answers INVALID_REQUEST for each entry, as IncrementalAlterConfigs does.
    Sent on a connection of its own, given 3 seconds."""
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "twice-named", record=False)
        conn = run.connect()
        resource = entity(ALTER_CONFIGS, 2, "AlterConfigsResource", resource_type=TOPIC,
                          resource_name=run.topic("twice-named"), configs=())
        request = entity(ALTER_CONFIGS, 2, "AlterConfigsRequest", resources=(resource, resource), validate_only=True)
        run.note_answer_within("AlterConfigs v2 naming a resource twice: the answer within 3 s", request, conn, 3.0)

    brokers.compare(scenario, known={"KD-207": {"0:"}})


def test_describe_internal_topic_configs(brokers) -> None:  # type: ignore[no-untyped-def]
    """__consumer_offsets carries the coordinator's overrides (compacted, its segment size,
    producer compression) as topic configs."""
    from admin_steps import find_coordinator, metadata_topics

    def scenario(run: ScenarioRun) -> None:
        find_coordinator(run, "g")

        def ready() -> bool:
            t = metadata_topics(run, ["=__consumer_offsets"], record=False).topics[0]
            return t.error_code.value == 0 and len(t.partitions) == 50

        run.wait_until(ready, "__consumer_offsets")
        describe_configs(run, [(TOPIC, "=__consumer_offsets", None)])

    brokers.compare(scenario)


def test_incremental_alter_list_edge_cases(brokers) -> None:  # type: ignore[no-untyped-def]
    """APPEND of items already there, SUBTRACT of items that are not, SET of an empty list."""
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "lists", configs={"cleanup.policy": "delete"}, record=False)
        # Kafka answers the alter before its metadata applies it: each step that changes a value
        # waits for it (key, value) before describing; "subtract absent" changes nothing.
        for label, ops, expected in [
            ("append present and new", [("cleanup.policy", APPEND, "delete,compact,compact")],
             ("cleanup.policy", "delete,compact")),
            ("subtract absent", [("cleanup.policy", SUBTRACT, "nothing")], None),
            ("set empty", [("cleanup.policy", SET, "")], ("cleanup.policy", "")),
            ("append to empty", [("leader.replication.throttled.replicas", APPEND, "*")],
             ("leader.replication.throttled.replicas", "*")),
        ]:
            incremental_alter_configs(run, [(TOPIC, "lists", ops)], label=label)
            if expected is not None:
                wait_for_topic_config(run, "lists", *expected)
            describe_configs(run, [(TOPIC, "lists", ("cleanup.policy", "leader.replication.throttled.replicas"))],
                             label=f"after {label}")

    brokers.compare(scenario)


def test_describe_broker_keys_of_features_not_built(brokers) -> None:  # type: ignore[no-untyped-def]
    """Kafka describes keys of features asyncbroker has not built (replication between
    brokers); asyncbroker lists none of them (KD-208). The keys both have are answered alike:
    quotas, tiered storage, the TLS and SASL ones too (a sensitive one with no value)."""
    def scenario(run: ScenarioRun) -> None:
        describe_configs(run, [(BROKER, "1", ("quota.window.num", "remote.log.storage.system.enable",
                                              "num.replica.fetchers", "ssl.keystore.password",
                                              "sasl.enabled.mechanisms", "num.partitions"))])

    brokers.compare(scenario, known={"KD-208": {"0:.results[0].configs[names]"}})


def test_alter_configs_broker_replaces_dynamic_set(brokers) -> None:  # type: ignore[no-untyped-def]
    """AlterConfigs on this broker: the named keys become its whole dynamic set; an empty set
    clears it. Put back at the end."""
    def zstd_level(run: ScenarioRun) -> str | None:
        entries = describe_configs(run, [(BROKER, "1", ("compression.zstd.level",))], record=False).results[0].configs
        return entries[0].value

    def scenario(run: ScenarioRun) -> None:
        try:
            alter_configs(run, [(BROKER, "1", {"compression.zstd.level": "4"})], label="set")
            run.wait_until(lambda: zstd_level(run) == "4", "compression.zstd.level=4")
            describe_configs(run, [(BROKER, "1", ("compression.zstd.level", "compression.lz4.level"))], label="after set")
            alter_configs(run, [(BROKER, "1", {"compression.lz4.level": "5"})], label="replace")
            run.wait_until(lambda: zstd_level(run) == "3", "compression.zstd.level back to 3")
            describe_configs(run, [(BROKER, "1", ("compression.zstd.level", "compression.lz4.level"))],
                             label="after replace")
        finally:
            alter_configs(run, [(BROKER, "1", {})], label="clear")
        run.wait_until(lambda: _lz4_level(run) == "9", "compression.lz4.level back to 9")
        describe_configs(run, [(BROKER, "1", ("compression.zstd.level", "compression.lz4.level"))], label="after clear")

    brokers.compare(scenario)


def _lz4_level(run: ScenarioRun) -> str | None:
    entries = describe_configs(run, [(BROKER, "1", ("compression.lz4.level",))], record=False).results[0].configs
    return entries[0].value


LISTENER_LIMITS = ("listener.name.plaintext.max.connections", "listener.name.plaintext.max.connection.creation.rate")


def test_listener_connection_limits_at_runtime(brokers) -> None:  # type: ignore[no-untyped-def]
    """A listener's own max.connections and max.connection.creation.rate, which Kafka
    reconfigures at runtime on a broker and cluster-wide: what it takes, what it refuses, how
    the set ones are described; put back at the end (the brokers are the session's)."""
    def scenario(run: ScenarioRun) -> None:
        cases = [
            ("a listener's max.connections", [(LISTENER_LIMITS[0], SET, "5")]),
            ("a listener's creation rate", [(LISTENER_LIMITS[1], SET, "10")]),
            ("a listener not served", [("listener.name.nosuch.max.connections", SET, "5")]),
            ("zero", [(LISTENER_LIMITS[0], SET, "0")]),
            ("negative", [(LISTENER_LIMITS[1], SET, "-1")]),
            ("negative connections", [(LISTENER_LIMITS[0], SET, "-1")]),
            ("zero rate", [(LISTENER_LIMITS[1], SET, "0")]),
            ("append", [(LISTENER_LIMITS[0], APPEND, "5")]),
            ("append to an unknown key", [("no.such.key", APPEND, "5")]),
            ("subtract from an unknown key", [("no.such.key", SUBTRACT, "5")]),
            ("not a number", [(LISTENER_LIMITS[0], SET, "x")]),
            ("delete", [(LISTENER_LIMITS[0], DELETE, None)]),
        ]
        for label, ops in cases:
            for name in ("1", ""):
                incremental_alter_configs(run, [(BROKER, name, ops)], validate_only=True,
                                          label=f"{label} on {name or 'the cluster'}")
        try:
            incremental_alter_configs(run, [(BROKER, "1", [(LISTENER_LIMITS[0], SET, "1000")])], label="on this broker")
            incremental_alter_configs(run, [(BROKER, "", [(LISTENER_LIMITS[0], SET, "2000"),
                                                          (LISTENER_LIMITS[1], SET, "3000")])], label="cluster-wide")
            run.wait_until(lambda: len(describe_configs(run, [(BROKER, "1", LISTENER_LIMITS)], record=False)
                                       .results[0].configs) == 2, "the listener's limits described")
            describe_configs(run, [(BROKER, "1", LISTENER_LIMITS)], label="this broker, by name")
            describe_configs(run, [(BROKER, "", LISTENER_LIMITS)], label="cluster defaults, by name")
            describe_configs(run, [(BROKER, "", None)], label="cluster defaults, every key")
            response = run.call(DESCRIBE_CONFIGS, 4, _record=False, resources=(_resource(BROKER, "1", None),),
                                include_synonyms=True, include_documentation=False)
            view = run.normalise(response)
            view["results"][0]["configs"] = [c for c in view["results"][0]["configs"]
                                             if c["name"].startswith("listener.name.")]
            run.note("DescribeConfigs v4 (this broker, every key: the listeners' own)", view)
        finally:
            incremental_alter_configs(run, [(BROKER, "1", [(LISTENER_LIMITS[0], DELETE, None)])], label="put back")
            incremental_alter_configs(run, [(BROKER, "", [(LISTENER_LIMITS[0], DELETE, None),
                                                          (LISTENER_LIMITS[1], DELETE, None)])],
                                      label="put back cluster-wide")
            run.wait_until(lambda: not describe_configs(run, [(BROKER, "1", LISTENER_LIMITS)], record=False)
                           .results[0].configs, "the listener's limits gone")

    brokers.compare(scenario)
