"""Admin APIs through confluent-kafka's AdminClient (librdkafka) against a real broker subprocess.

CreateTopics (configs, validate_only, every error), DescribeConfigs /
IncrementalAlterConfigs (taking effect without a restart, persisting across
one), CreatePartitions, DeleteTopics (then recreate), DescribeCluster.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    ResourceType,
)

from kafka.admin import KafkaAdminClient
from kafka.admin import NewTopic as KpNewTopic

from asyncbroker.testing import BrokerProcess
from wait_for import wait_until

pytestmark = pytest.mark.timeout(90)

TIMEOUT = 15.0


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    # log.retention.hours is set statically so DescribeConfigs can show STATIC_BROKER_CONFIG.
    with BrokerProcess(["log.retention.hours=72", "num.partitions=2"]) as b:
        yield b


@pytest.fixture(scope="module")
def admin(broker: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def create(admin: AdminClient, *topics: NewTopic, validate_only: bool = False) -> dict[str, BaseException | None]:
    futures = admin.create_topics(list(topics), validate_only=validate_only, operation_timeout=10,
                                  request_timeout=TIMEOUT)
    out: dict[str, BaseException | None] = {}
    for name, fut in futures.items():
        try:
            fut.result(TIMEOUT)
            out[name] = None
        except KafkaException as exc:
            out[name] = exc
    return out


def error_code(exc: BaseException | None) -> int | None:
    assert isinstance(exc, KafkaException), exc
    return exc.args[0].code()


def topic_partitions(admin: AdminClient, name: str) -> int | None:
    md = admin.list_topics(timeout=TIMEOUT)
    t = md.topics.get(name)
    return None if t is None or t.error is not None else len(t.partitions)


def describe_topic_configs(admin: AdminClient, name: str) -> dict[str, Any]:
    fut = admin.describe_configs([ConfigResource(ResourceType.TOPIC, name)], request_timeout=TIMEOUT)
    return next(iter(fut.values())).result(TIMEOUT)


def test_create_with_configs(admin: AdminClient) -> None:
    result = create(admin, NewTopic("adm-configs", num_partitions=3, replication_factor=1,
                                    config={"cleanup.policy": "compact", "retention.ms": "3600000"}))
    assert result == {"adm-configs": None}
    assert wait_until(lambda: topic_partitions(admin, "adm-configs") == 3, message="topic in metadata", timeout=TIMEOUT)
    configs = describe_topic_configs(admin, "adm-configs")
    assert configs["cleanup.policy"].value == "compact"
    assert configs["cleanup.policy"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["retention.ms"].value == "3600000"


def test_create_default_partitions(admin: AdminClient) -> None:
    assert create(admin, NewTopic("adm-defaults")) == {"adm-defaults": None}
    assert wait_until(lambda: topic_partitions(admin, "adm-defaults") == 2, timeout=TIMEOUT)  # num.partitions=2


def test_validate_only_creates_nothing(admin: AdminClient) -> None:
    assert create(admin, NewTopic("adm-validate", 4, 1, config={"segment.ms": "60000"}), validate_only=True) == {
        "adm-validate": None
    }
    assert topic_partitions(admin, "adm-validate") is None
    # and validate_only still reports errors
    res = create(admin, NewTopic("adm-validate", 4, 1, config={"segment.ms": "soon"}), validate_only=True)
    assert error_code(res["adm-validate"]) == KafkaError.INVALID_CONFIG


def test_existing_topic(admin: AdminClient) -> None:
    assert create(admin, NewTopic("adm-exists", 1, 1)) == {"adm-exists": None}
    res = create(admin, NewTopic("adm-exists", 1, 1))
    assert error_code(res["adm-exists"]) == KafkaError.TOPIC_ALREADY_EXISTS


@pytest.mark.parametrize("name", ["../x", "..", ".", "bad/name", "a" * 250, "bad name", "star*"])
def test_bad_names(admin: AdminClient, broker: BrokerProcess, name: str) -> None:
    before = sorted(p.name for p in broker.log_dir.parent.iterdir())
    res = create(admin, NewTopic(name, 1, 1))
    assert error_code(res[name]) == KafkaError.TOPIC_EXCEPTION  # INVALID_TOPIC_EXCEPTION (17)
    # Nothing was created next to (or inside) the log dir.
    assert sorted(p.name for p in broker.log_dir.parent.iterdir()) == before
    assert not any(p.name.startswith(("x-", "..")) for p in broker.log_dir.iterdir())


def test_non_positive_partitions(admin: AdminClient, broker: BrokerProcess) -> None:
    res = create(admin, NewTopic("adm-parts0", num_partitions=0, replication_factor=1))
    assert error_code(res["adm-parts0"]) == KafkaError.INVALID_PARTITIONS
    # librdkafka refuses negative counts other than -1 itself; kafka-python sends them.
    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=int(TIMEOUT * 1000))
    try:
        result = kp.create_topics([KpNewTopic("adm-parts-neg", -2, 1)], raise_errors=False)
        assert [t["error_code"] for t in result["topics"]] == [KafkaError.INVALID_PARTITIONS]
    finally:
        kp.close()
    assert topic_partitions(admin, "adm-parts-neg") is None


def test_replication_factor_above_one(admin: AdminClient) -> None:
    res = create(admin, NewTopic("adm-rf", num_partitions=1, replication_factor=3))
    assert error_code(res["adm-rf"]) == KafkaError.INVALID_REPLICATION_FACTOR


@pytest.mark.parametrize(
    "config",
    [{"no.such.key": "1"}, {"cleanup.policy": "shred"}, {"retention.ms": "forever"}, {"min.cleanable.dirty.ratio": "7"}],
)
def test_bad_configs(admin: AdminClient, config: dict[str, str]) -> None:
    res = create(admin, NewTopic("adm-badcfg", 1, 1, config=config))
    assert error_code(res["adm-badcfg"]) == KafkaError.INVALID_CONFIG
    assert topic_partitions(admin, "adm-badcfg") is None


def test_one_bad_topic_does_not_fail_the_others(admin: AdminClient) -> None:
    res = create(admin, NewTopic("adm-good", 1, 1), NewTopic("adm-bad", 0, 1))
    assert res["adm-good"] is None
    assert error_code(res["adm-bad"]) == KafkaError.INVALID_PARTITIONS


def _produce_one(bootstrap: str, topic: str, size: int) -> KafkaError | None:
    errors: list[KafkaError | None] = []
    p = Producer({"bootstrap.servers": bootstrap, "message.max.bytes": 2_000_000, "retries": 0,
                  "compression.type": "none"})
    p.produce(topic, key=b"k", value=b"x" * size, on_delivery=lambda err, msg: errors.append(err))
    assert p.flush(TIMEOUT) == 0
    return errors[0]


def test_incremental_alter_takes_effect_without_restart(admin: AdminClient, broker: BrokerProcess) -> None:
    assert create(admin, NewTopic("adm-alter", 1, 1, config={"max.message.bytes": "10000"})) == {"adm-alter": None}
    wait_until(lambda: topic_partitions(admin, "adm-alter") == 1, timeout=TIMEOUT)
    err = _produce_one(broker.bootstrap, "adm-alter", 50_000)
    assert err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE

    resource = ConfigResource(
        ResourceType.TOPIC, "adm-alter",
        incremental_configs=[
            ConfigEntry("max.message.bytes", "200000", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
        ],
    )
    for fut in admin.incremental_alter_configs([resource], request_timeout=TIMEOUT).values():
        fut.result(TIMEOUT)
    configs = describe_topic_configs(admin, "adm-alter")
    assert configs["max.message.bytes"].value == "200000"
    assert configs["cleanup.policy"].value == "delete,compact"
    assert _produce_one(broker.bootstrap, "adm-alter", 50_000) is None

    # DELETE reverts to the broker default.
    resource = ConfigResource(
        ResourceType.TOPIC, "adm-alter",
        incremental_configs=[ConfigEntry("cleanup.policy", None, incremental_operation=AlterConfigOpType.DELETE)],
    )
    for fut in admin.incremental_alter_configs([resource], request_timeout=TIMEOUT).values():
        fut.result(TIMEOUT)
    entry = describe_topic_configs(admin, "adm-alter")["cleanup.policy"]
    assert entry.value == "delete" and entry.source == ConfigSource.DEFAULT_CONFIG.value


def test_incremental_alter_errors(admin: AdminClient) -> None:
    create(admin, NewTopic("adm-alter-bad", 1, 1))
    cases = [
        (ConfigEntry("retention.ms", "soon", incremental_operation=AlterConfigOpType.SET), KafkaError.INVALID_CONFIG),
        (ConfigEntry("no.such.key", "1", incremental_operation=AlterConfigOpType.SET), KafkaError.INVALID_CONFIG),
        (ConfigEntry("retention.ms", "5", incremental_operation=AlterConfigOpType.APPEND), KafkaError.INVALID_CONFIG),
    ]
    for entry, code in cases:
        resource = ConfigResource(ResourceType.TOPIC, "adm-alter-bad", incremental_configs=[entry])
        fut = next(iter(admin.incremental_alter_configs([resource], request_timeout=TIMEOUT).values()))
        with pytest.raises(KafkaException) as info:
            fut.result(TIMEOUT)
        assert info.value.args[0].code() == code, entry
    resource = ConfigResource(ResourceType.TOPIC, "adm-missing", incremental_configs=[
        ConfigEntry("retention.ms", "5", incremental_operation=AlterConfigOpType.SET)])
    fut = next(iter(admin.incremental_alter_configs([resource], request_timeout=TIMEOUT).values()))
    with pytest.raises(KafkaException) as info:
        fut.result(TIMEOUT)
    assert info.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_describe_configs_sources(admin: AdminClient) -> None:
    create(admin, NewTopic("adm-describe", 1, 1, config={"segment.bytes": "1048576"}))
    fut = admin.describe_configs([ConfigResource(ResourceType.TOPIC, "adm-describe")], request_timeout=TIMEOUT)
    configs = next(iter(fut.values())).result(TIMEOUT)
    seg = configs["segment.bytes"]
    assert seg.value == "1048576" and seg.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert not seg.is_read_only and not seg.is_default
    assert [s.name for s in seg.synonyms.values()][:2] == ["segment.bytes", "log.segment.bytes"]
    # log.retention.hours supplies the value, but Kafka 4.4 lists only log.retention.ms's own
    # values as retention.ms's synonyms (none here), so it reports DEFAULT_CONFIG.
    ret = configs["retention.ms"]
    assert ret.value == str(72 * 3600 * 1000) and ret.source == ConfigSource.DEFAULT_CONFIG.value
    pol = configs["cleanup.policy"]
    assert pol.value == "delete" and pol.source == ConfigSource.DEFAULT_CONFIG.value and pol.is_default
    # unknown topic
    fut = admin.describe_configs([ConfigResource(ResourceType.TOPIC, "adm-nope")], request_timeout=TIMEOUT)
    with pytest.raises(KafkaException) as info:
        next(iter(fut.values())).result(TIMEOUT)
    assert info.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_describe_broker_configs(admin: AdminClient) -> None:
    cluster = admin.describe_cluster(request_timeout=TIMEOUT).result(TIMEOUT)
    node_id = cluster.nodes[0].id
    fut = admin.describe_configs([ConfigResource(ResourceType.BROKER, str(node_id))], request_timeout=TIMEOUT)
    configs = next(iter(fut.values())).result(TIMEOUT)
    hours = configs["log.retention.hours"]
    assert hours.value == "72" and hours.source == ConfigSource.STATIC_BROKER_CONFIG.value and hours.is_read_only
    assert configs["num.partitions"].value == "2"
    assert configs["message.max.bytes"].value == "1048588"
    assert configs["message.max.bytes"].source == ConfigSource.DEFAULT_CONFIG.value


def test_create_partitions(admin: AdminClient) -> None:
    create(admin, NewTopic("adm-grow", 2, 1))
    for fut in admin.create_partitions([NewPartitions("adm-grow", 5)], request_timeout=TIMEOUT).values():
        fut.result(TIMEOUT)
    assert wait_until(lambda: topic_partitions(admin, "adm-grow") == 5, message="5 partitions", timeout=TIMEOUT)
    fut = next(iter(admin.create_partitions([NewPartitions("adm-grow", 3)], request_timeout=TIMEOUT).values()))
    with pytest.raises(KafkaException) as info:
        fut.result(TIMEOUT)
    assert info.value.args[0].code() == KafkaError.INVALID_PARTITIONS
    fut = next(iter(admin.create_partitions([NewPartitions("adm-grow", 9)], validate_only=True,
                                            request_timeout=TIMEOUT).values()))
    fut.result(TIMEOUT)
    assert topic_partitions(admin, "adm-grow") == 5


def test_delete_then_recreate(admin: AdminClient, broker: BrokerProcess) -> None:
    create(admin, NewTopic("adm-delete", 2, 1, config={"retention.ms": "1000"}))
    wait_until(lambda: topic_partitions(admin, "adm-delete") == 2, timeout=TIMEOUT)
    assert _produce_one(broker.bootstrap, "adm-delete", 10) is None
    for fut in admin.delete_topics(["adm-delete"], operation_timeout=10, request_timeout=TIMEOUT).values():
        fut.result(TIMEOUT)
    assert wait_until(lambda: topic_partitions(admin, "adm-delete") is None, message="topic gone", timeout=TIMEOUT)
    assert create(admin, NewTopic("adm-delete", 3, 1)) == {"adm-delete": None}
    assert wait_until(lambda: topic_partitions(admin, "adm-delete") == 3, timeout=TIMEOUT)
    assert describe_topic_configs(admin, "adm-delete")["retention.ms"].source != ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    fut = next(iter(admin.delete_topics(["adm-never-was"], request_timeout=TIMEOUT).values()))
    with pytest.raises(KafkaException) as info:
        fut.result(TIMEOUT)
    assert info.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_describe_cluster(admin: AdminClient, broker: BrokerProcess) -> None:
    cluster = admin.describe_cluster(request_timeout=TIMEOUT).result(TIMEOUT)
    assert cluster.cluster_id
    assert len(cluster.nodes) == 1
    node = cluster.nodes[0]
    assert (node.host, node.port) == ("127.0.0.1", broker.port)
    assert cluster.controller is not None and cluster.controller.id == node.id
