"""ACLs with real clients (issue 20): a broker with `authorizer.class.name` set, an admin
(a super user) and alice on a SASL_PLAINTEXT listener.

confluent-kafka's AdminClient manages ACLs; alice's producer, consumer and kcat see Kafka's
authorization errors until an ACL lets them through, and then work; Kafka's own kafka-acls.sh
adds and lists ACLs; ACLs survive a restart. Kafka's answers request by request are compared
in tests/oracle/test_authorizer.py.
"""
from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from asyncbroker.testing import BrokerProcess
from jvm.kafka_jvm import run_tool

pytestmark = pytest.mark.timeout(240)

ACL_COMMAND = "org.apache.kafka.tools.AclCommand"
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_admin="admin-secret" user_alice="alice-secret";')


def overrides() -> list[str]:
    return ["listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms=PLAIN",
            f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}",
            "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users=User:admin", "num.partitions=1"]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with BrokerProcess(overrides(), log_dir=tmp_path_factory.mktemp("acl-data")) as b:
        yield b


def sasl(broker: BrokerProcess, user: str, **extra: Any) -> dict[str, Any]:
    return {"bootstrap.servers": broker.bootstrap_for("SASL_PLAINTEXT"), "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": f"{user}-secret", **extra}


def admin_of(broker: BrokerProcess, user: str = "admin") -> AdminClient:
    return AdminClient(sasl(broker, user))


def new_topic(admin: AdminClient) -> str:
    name = f"acl-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(name, 1)])[name].result(30)
    return name


def grant(admin: AdminClient, *bindings: AclBinding) -> None:
    for future in admin.create_acls(list(bindings)).values():
        future.result(30)


def allow(resource: ResourceType, name: str, operation: AclOperation, user: str = "alice",
          pattern: ResourcePatternType = ResourcePatternType.LITERAL) -> AclBinding:
    return AclBinding(resource, name, pattern, f"User:{user}", "*", operation, AclPermissionType.ALLOW)


def produce_one(broker: BrokerProcess, user: str, topic: str) -> KafkaError | None:
    """Produce one record as `user`; the error its delivery reports (None: delivered)."""
    outcome: list[KafkaError | None] = []
    producer = Producer(sasl(broker, user, **{"message.timeout.ms": 10000, "enable.idempotence": False}))
    producer.produce(topic, b"v", on_delivery=lambda err, _msg: outcome.append(err))
    producer.flush(30)
    assert outcome, "no delivery report"
    return outcome[0]


def test_admin_client_manages_acls(broker: BrokerProcess) -> None:
    admin = admin_of(broker)
    topic = f"acl-admin-{uuid.uuid4().hex[:6]}"
    bindings = [allow(ResourceType.TOPIC, topic, AclOperation.READ),
                allow(ResourceType.TOPIC, topic + "-", AclOperation.WRITE, pattern=ResourcePatternType.PREFIXED),
                allow(ResourceType.GROUP, topic, AclOperation.READ)]
    grant(admin, *bindings)
    by_topic = AclBindingFilter(ResourceType.TOPIC, topic, ResourcePatternType.MATCH, None, None,
                                AclOperation.ANY, AclPermissionType.ANY)
    described = admin.describe_acls(by_topic).result(30)
    assert sorted((b.name, b.resource_pattern_type, b.operation) for b in described) == [
        (topic, ResourcePatternType.LITERAL, AclOperation.READ)]
    all_of_them = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, "User:alice", None,
                                   AclOperation.ANY, AclPermissionType.ANY)
    assert set(bindings) <= set(admin.describe_acls(all_of_them).result(30))
    deleted = admin.delete_acls([AclBindingFilter(ResourceType.GROUP, topic, ResourcePatternType.LITERAL, None, None,
                                                  AclOperation.ANY, AclPermissionType.ANY)])
    assert [list(f.result(30)) for f in deleted.values()] == [[bindings[2]]]
    # alice may not manage ACLs: CLUSTER_AUTHORIZATION_FAILED. (librdkafka reads no top-level
    # error in a DescribeAcls answer, so alice sees no ACL there, from Kafka 4.4 as from us.)
    alice = admin_of(broker, "alice")
    assert list(alice.describe_acls(all_of_them).result(30)) == []
    with pytest.raises(KafkaException) as refused:
        for future in alice.create_acls([allow(ResourceType.TOPIC, topic, AclOperation.ALL)]).values():
            future.result(30)
    assert refused.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    assert list(admin.describe_acls(by_topic).result(30)) == [bindings[0]]


def test_producer_and_consumer_are_refused_then_let_through(broker: BrokerProcess) -> None:
    admin = admin_of(broker)
    topic = new_topic(admin)
    refused = produce_one(broker, "alice", topic)
    assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, refused
    grant(admin, allow(ResourceType.TOPIC, topic, AclOperation.WRITE))
    assert produce_one(broker, "alice", topic) is None

    group = f"g-{topic}"
    consumer = Consumer(sasl(broker, "alice", **{"group.id": group, "auto.offset.reset": "earliest"}))
    try:
        consumer.subscribe([topic])
        error = None
        for _ in range(100):  # bounded: each poll waits at most 0.2 s
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is not None:
                error = msg.error()
                break
        assert error is not None and error.code() in (KafkaError.TOPIC_AUTHORIZATION_FAILED,
                                                      KafkaError.GROUP_AUTHORIZATION_FAILED), error
    finally:
        consumer.close()
    grant(admin, allow(ResourceType.TOPIC, topic, AclOperation.READ), allow(ResourceType.GROUP, group, AclOperation.READ))
    consumer = Consumer(sasl(broker, "alice", **{"group.id": group, "auto.offset.reset": "earliest"}))
    try:
        consumer.subscribe([topic])
        values = []
        for _ in range(300):  # bounded: each poll waits at most 0.2 s
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                values.append(msg.value())
                break
        assert values == [b"v"]
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()


def test_metadata_hides_what_may_not_be_described(broker: BrokerProcess) -> None:
    admin = admin_of(broker)
    hidden, shown = new_topic(admin), new_topic(admin)
    grant(admin, allow(ResourceType.TOPIC, shown, AclOperation.DESCRIBE))
    alice = admin_of(broker, "alice")
    listed = alice.list_topics(timeout=30).topics
    assert shown in listed and hidden not in listed
    kcat = subprocess.run(["kcat", "-b", broker.bootstrap_for("SASL_PLAINTEXT"), "-X", "security.protocol=SASL_PLAINTEXT",
                           "-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username=alice", "-X", "sasl.password=alice-secret",
                           "-L", "-J"], capture_output=True, text=True, timeout=60, check=False)
    assert kcat.returncode == 0, kcat.stderr
    assert f'"{shown}"' in kcat.stdout and f'"{hidden}"' not in kcat.stdout


def test_kafka_acls_tool(broker: BrokerProcess, tmp_path: Path) -> None:
    """kafka-acls.sh, Kafka's own tool, adds, lists and removes ACLs through our admin APIs."""
    config = tmp_path / "admin.properties"
    config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                      'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required '
                      'username="admin" password="admin-secret";\n')
    topic = f"acl-tool-{uuid.uuid4().hex[:6]}"
    common = ["--bootstrap-server", broker.bootstrap_for("SASL_PLAINTEXT"), "--command-config", str(config)]
    added = run_tool(ACL_COMMAND, [*common, "--add", "--allow-principal", "User:bob", "--operation", "Read",
                                   "--operation", "Describe", "--topic", topic, "--group", "bobs"])
    assert added.returncode == 0, added.stderr[-2000:]
    listed = run_tool(ACL_COMMAND, [*common, "--list", "--topic", topic])
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert "principal=User:bob, host=*, operation=READ, permissionType=ALLOW" in listed.stdout, listed.stdout
    assert "principal=User:bob, host=*, operation=DESCRIBE, permissionType=ALLOW" in listed.stdout, listed.stdout
    removed = run_tool(ACL_COMMAND, [*common, "--remove", "--force", "--allow-principal", "User:bob",
                                     "--operation", "Read", "--topic", topic])
    assert removed.returncode == 0, removed.stderr[-2000:]
    left = run_tool(ACL_COMMAND, [*common, "--list", "--topic", topic])
    assert "operation=READ" not in left.stdout and "operation=DESCRIBE" in left.stdout, left.stdout


def test_acls_survive_a_restart(tmp_path: Path) -> None:
    with BrokerProcess(overrides(), log_dir=tmp_path / "data") as b:
        admin = admin_of(b)
        topic = new_topic(admin)
        grant(admin, allow(ResourceType.TOPIC, topic, AclOperation.WRITE))
        b.restart()
        everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                      AclOperation.ANY, AclPermissionType.ANY)
        admin = admin_of(b)
        assert list(admin.describe_acls(everything).result(30)) == [
            allow(ResourceType.TOPIC, topic, AclOperation.WRITE)]
        assert produce_one(b, "alice", topic) is None
        b.restart(kill=True)  # durable before the answer: a crash keeps them too
        assert produce_one(b, "alice", topic) is None
