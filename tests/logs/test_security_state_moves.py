"""ACLs, SCRAM users and client quotas move with the log directories (issue 20 with issue 16),
both ways: `asyncbroker migrate --to-kafka` writes them into the bootstrap metadata
(AccessControlEntryRecord, UserScramCredentialRecord, ClientQuotaRecord), Kafka 4.4 with its
StandardAuthorizer enforces them and lets the SCRAM user in; Kafka changes them; asyncbroker,
opening the directory Kafka wrote, reads them from Kafka's metadata log."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from asyncbroker.testing import BrokerProcess
from jvm.kafka_jvm import KafkaServer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "oracle"))
from differential import Connection, entity, request_class_name  # noqa: E402

pytestmark = pytest.mark.timeout(300)

STANDARD = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
EVERY_ACL = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                             AclPermissionType.ANY)
JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'


def ours(log_dir: Path) -> BrokerProcess:
    return BrokerProcess(["listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                          "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256", f"authorizer.class.name={STANDARD}",
                          "super.users=User:ANONYMOUS", f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}"],
                         log_dir=log_dir)


def allow(name: str, operation: AclOperation, user: str = "erin",
          pattern: ResourcePatternType = ResourcePatternType.LITERAL) -> AclBinding:
    return AclBinding(ResourceType.TOPIC, name, pattern, f"User:{user}", "*", operation, AclPermissionType.ALLOW)


def quotas(bootstrap: str) -> list[tuple[tuple[tuple[str, str], ...], tuple[tuple[str, float], ...]]]:
    conn = Connection(bootstrap)
    try:
        r = conn.receive(48, 1, conn.send(entity(48, 1, request_class_name(48, 1), components=(), strict=False)))
    finally:
        conn.close()
    return sorted(((tuple(sorted((e.entity_type, e.entity_name or "<default>") for e in x.entity)),
                    tuple(sorted((v.key, v.value) for v in x.values))) for x in r.entries), key=repr)


def set_quota(bootstrap: str, entity_type: str, name: str | None, key: str, value: float) -> None:
    conn = Connection(bootstrap)
    try:
        r = conn.receive(49, 1, conn.send(entity(49, 1, request_class_name(49, 1), validate_only=False, entries=(
            entity(49, 1, "EntryData", entity=(entity(49, 1, "EntityData", entity_type=entity_type, entity_name=name),),
                   ops=(entity(49, 1, "OpData", key=key, value=value, remove=False),)),))))
        assert r.entries[0].error_code.value == 0, r
    finally:
        conn.close()


def scram_users(admin: AdminClient) -> dict[str, list[tuple[Any, int]]]:
    described = admin.describe_user_scram_credentials().result(30)
    return {u: sorted((i.mechanism, i.iterations) for i in d.scram_credential_infos) for u, d in described.items()}


def produce_as_erin(bootstrap: str, topic: str) -> KafkaError | None:
    outcome: list[KafkaError | None] = []
    p = Producer({"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
                  "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "erin", "sasl.password": "erin-secret",
                  "message.timeout.ms": 15000, "enable.idempotence": False})
    p.produce(topic, b"v", on_delivery=lambda err, _m: outcome.append(err))
    p.flush(30)
    return outcome[0] if outcome else KafkaError(KafkaError._MSG_TIMED_OUT)


def test_acls_scram_users_and_quotas_move_both_ways(tmp_path: Path) -> None:
    data = tmp_path / "data"
    topic = f"moves-{uuid.uuid4().hex[:6]}"
    acls = [allow(topic, AclOperation.WRITE), allow(topic, AclOperation.DESCRIBE),
            allow("moves-", AclOperation.READ, "alice", ResourcePatternType.PREFIXED)]
    with ours(data) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
        for f in admin.create_acls(acls).values():
            f.result(30)
        for f in admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
                "erin", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"erin-secret")]).values():
            f.result(30)
        set_quota(b.bootstrap, "user", "erin", "producer_byte_rate", 1048576)
        set_quota(b.bootstrap, "client-id", None, "consumer_byte_rate", 1e12)
        assert produce_as_erin(b.bootstrap_for("SASL_PLAINTEXT"), topic) is None
        before = (sorted(map(str, admin.describe_acls(EVERY_ACL).result(30))), scram_users(admin), quotas(b.bootstrap))
    migrated = subprocess.run([sys.executable, "-m", "asyncbroker", "migrate", str(data), "--to-kafka"],
                              capture_output=True, text=True, timeout=120, check=False)
    assert migrated.returncode == 0, migrated.stderr

    kafka = KafkaServer({"authorizer.class.name": STANDARD, "super.users": "User:ANONYMOUS",
                         "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
                         "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config":
                             "org.apache.kafka.common.security.scram.ScramLoginModule required;"},
                        sasl_plain_users={"alice": "alice-secret"})
    try:
        kafka.start_unformatted(data)
        admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
        assert (sorted(map(str, admin.describe_acls(EVERY_ACL).result(30))), scram_users(admin),
                quotas(kafka.bootstrap)) == before
        # Kafka's authorizer lets erin (a SCRAM user asyncbroker made) write where the ACLs say.
        assert produce_as_erin(kafka.sasl_bootstrap, topic) is None
        refused = produce_as_erin(kafka.sasl_bootstrap, f"other-{topic}")
        assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, refused
        # Kafka changes the state: a new ACL and a new quota.
        added = allow(f"other-{topic}", AclOperation.WRITE)
        for f in admin.create_acls([added]).values():
            f.result(30)
        set_quota(kafka.bootstrap, "client-id", "kafka-made", "producer_byte_rate", 2048)
        after = (sorted(map(str, admin.describe_acls(EVERY_ACL).result(30))), scram_users(admin),
                 quotas(kafka.bootstrap))
        assert str(added) in after[0]
    finally:
        kafka.shutdown()

    with ours(data) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        assert (sorted(map(str, admin.describe_acls(EVERY_ACL).result(30))), scram_users(admin),
                quotas(b.bootstrap)) == after
        # The ACL Kafka added lets erin write the topic (made now: she may not create it).
        admin.create_topics([NewTopic(f"other-{topic}", 1)])[f"other-{topic}"].result(30)
        assert produce_as_erin(b.bootstrap_for("SASL_PLAINTEXT"), f"other-{topic}") is None
    kafka.stop()
