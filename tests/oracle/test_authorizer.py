"""Differential scenarios: Kafka's StandardAuthorizer (issue 20), on a Kafka 4.4 and an
asyncbroker both started with `authorizer.class.name` set, `super.users=User:ANONYMOUS` (the
PLAINTEXT listener administers: it creates topics and ACLs) and a SASL_PLAINTEXT listener
with PLAIN users alice and bob, who get only what ACLs give them.

The ACL APIs themselves (each resource type, invalid bindings, every filter kind), a
principal with no ACL against every API it could call, ACLs that grant and deny (prefixes,
wildcards, hosts, implied operations, DENY over ALLOW) and the transaction APIs under ACLs.
And, on the same SASL listener, how a failed authentication is answered: late, by
connection.failed.authentication.delay.ms, then closed.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

import group_steps as gs
import txn_steps as ts
from admin_steps import (
    alter_configs,
    create_partitions,
    create_topics,
    creatable,
    delete_topics,
    describe_cluster,
    describe_configs,
    describe_log_dirs,
    incremental_alter_configs,
    metadata_all,
    metadata_topics,
)
from asyncbroker.testing import BrokerProcess
from data_steps import delete_records, fetch_topics, list_offsets_topics, offset_for_leader_epoch, produce_topics
from differential import Connection, ScenarioRun, batch, compare, entity, request_class_name
from jvm.kafka_jvm import ASYNCBROKER_ORACLE_OVERRIDES, KafkaServer
from steps import create_topic, produce

pytestmark = pytest.mark.timeout(300)

DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
DESCRIBE_PRODUCERS, DESCRIBE_SCRAM, ALTER_SCRAM = 61, 50, 51
# ResourceType
ANY_RESOURCE, TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID, DELEGATION_TOKEN, USER = 1, 2, 3, 4, 5, 6, 7
# PatternType
ANY_PATTERN, MATCH, LITERAL, PREFIXED = 1, 2, 3, 4
# AclOperation
ANY_OP, ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 1, 2, 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12
# AclPermissionType
ANY_PERMISSION, DENY, ALLOW = 1, 2, 3
CONFIG_TOPIC, CONFIG_BROKER = 2, 4

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
AUTHORIZER = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
    "allow.everyone.if.no.acl.found": "false",
}


class SecuredBrokers:
    def __init__(self, kafka: KafkaServer, ours: BrokerProcess) -> None:
        self.kafka, self.ours = kafka, ours

    def compare(self, scenario: Any, known: Any = None) -> None:
        def cleaned(run: ScenarioRun) -> None:
            remove_every_acl(run)
            try:
                scenario(run)
            finally:
                remove_every_acl(run)

        compare(cleaned, self.kafka.bootstrap, self.ours.bootstrap, known,
                sasl_bootstraps=(self.kafka.sasl_bootstrap, self.ours.bootstrap_for("SASL_PLAINTEXT")))


@pytest.fixture(scope="module")
def secured() -> Iterator[SecuredBrokers]:
    jaas = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
            + " ".join(f'user_{u}="{p}"' for u, p in USERS.items()) + ";")
    overrides = [
        *ASYNCBROKER_ORACLE_OVERRIDES, *(f"{k}={v}" for k, v in AUTHORIZER.items()),
        "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms=PLAIN",
        f"listener.name.sasl_plaintext.plain.sasl.jaas.config={jaas}",
    ]
    with KafkaServer(AUTHORIZER, sasl_plain_users=USERS, heap="512m") as kafka, BrokerProcess(overrides) as ours:
        yield SecuredBrokers(kafka, ours)


# -- ACL steps ------------------------------------------------------------------------------

Binding = tuple[int, str, int, str, str, int, int]  # type, name, pattern, principal, host, operation, permission
Filter = tuple[int, str | None, int, str | None, str | None, int, int]


def creation(version: int, b: Binding) -> Any:
    return entity(CREATE_ACLS, version, "AclCreation", resource_type=b[0], resource_name=b[1],
                  resource_pattern_type=b[2], principal=b[3], host=b[4], operation=b[5], permission_type=b[6])


def acl_filter(version: int, f: Filter) -> Any:
    return entity(DELETE_ACLS, version, "DeleteAclsFilter", resource_type_filter=f[0], resource_name_filter=f[1],
                  pattern_type_filter=f[2], principal_filter=f[3], host_filter=f[4], operation=f[5],
                  permission_type=f[6])


EVERYTHING: Filter = (ANY_RESOURCE, None, ANY_PATTERN, None, None, ANY_OP, ANY_PERMISSION)


def describe_acls(run: ScenarioRun, f: Filter, *, version: int = 3, record: bool = True, label: str | None = None) -> Any:
    return run.call(DESCRIBE_ACLS, version, _record=record, _label=label, resource_type_filter=f[0],
                    resource_name_filter=f[1], pattern_type_filter=f[2], principal_filter=f[3], host_filter=f[4],
                    operation=f[5], permission_type=f[6])


def acl_count(run: ScenarioRun) -> int:
    answer = describe_acls(run, EVERYTHING, record=False)
    return sum(len(r.acls) for r in answer.resources)


def create_acls(run: ScenarioRun, bindings: Sequence[Binding], *, version: int = 3, record: bool = True) -> Any:
    """CreateAcls, then (unrecorded) wait until the broker's authorizer has them: Kafka's
    controller commits them and its broker learns them from the metadata log a moment later."""
    before = acl_count(run)
    answer = run.call(CREATE_ACLS, version, _record=record, creations=tuple(creation(version, b) for b in bindings))
    created = len({b for b, r in zip(bindings, answer.results) if r.error_code.value == 0})
    run.wait_until(lambda: acl_count(run) >= before + created, "the new ACLs")
    return answer


def delete_acls(run: ScenarioRun, filters: Sequence[Filter], *, version: int = 3, record: bool = True) -> Any:
    before = acl_count(run)
    answer = run.call(DELETE_ACLS, version, _record=record, filters=tuple(acl_filter(version, f) for f in filters))
    gone = len({repr(m) for r in answer.filter_results for m in r.matching_acls})
    run.wait_until(lambda: acl_count(run) <= before - gone, "the ACLs to go")
    return answer


def remove_every_acl(run: ScenarioRun) -> None:
    """Scenarios share the two brokers: each starts and ends with no ACL."""
    delete_acls(run, [EVERYTHING], record=False)


def allow(resource_type: int, name: str, operation: int, principal: str = "User:alice", *,
          pattern: int = LITERAL, host: str = "*") -> Binding:
    return (resource_type, name, pattern, principal, host, operation, ALLOW)


def deny(resource_type: int, name: str, operation: int, principal: str = "User:alice", *,
         pattern: int = LITERAL, host: str = "*") -> Binding:
    return (resource_type, name, pattern, principal, host, operation, DENY)


# -- the ACL APIs ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2, 3])
def test_acl_administration(secured: SecuredBrokers, version: int) -> None:
    """Create ACLs of every resource type (and invalid ones), describe them through each kind
    of filter, delete some by filters (two of which overlap, two of which are unusable),
    describe what is left."""
    def scenario(run: ScenarioRun) -> None:
        orders, pay, group, txn = run.topic("orders"), run.topic("pay"), run.group("g"), run.group("tx")
        create_acls(run, [
            allow(TOPIC, orders, READ), allow(TOPIC, pay, WRITE, pattern=PREFIXED),
            allow(GROUP, group, READ), allow(CLUSTER, "kafka-cluster", DESCRIBE, "User:bob"),
            allow(TRANSACTIONAL_ID, txn, WRITE), deny(TOPIC, orders, WRITE, "User:bob"),
            allow(TOPIC, orders, DESCRIBE, host="10.0.0.1"), allow(TOPIC, orders, READ),  # the same ACL twice
            allow(TOPIC, pay, ALL, "User:*", pattern=PREFIXED),
            # The resource types no API here checks are stored and listed all the same.
            allow(DELEGATION_TOKEN, run.topic("token"), DESCRIBE), allow(USER, "User:bob", 13),  # CREATE_TOKENS
            # Refused, each with its reason: a cluster not named kafka-cluster, an empty name,
            # codes Kafka does not know (99), a principal with no type, an empty host.
            allow(CLUSTER, "my-cluster", ALTER), allow(TOPIC, "", READ), (99, orders, LITERAL, "User:a", "*", READ, ALLOW),
            (TOPIC, orders, 99, "User:a", "*", READ, ALLOW), (TOPIC, orders, LITERAL, "User:a", "*", 99, ALLOW),
            (TOPIC, orders, LITERAL, "User:a", "*", READ, 99), allow(TOPIC, orders, READ, "alice"),
            allow(TOPIC, orders, READ, host=""),
            # Accepted as they are: an operation the resource type has no use for, any host text.
            allow(TOPIC, orders, IDEMPOTENT_WRITE), allow(TOPIC, orders, READ, host="10.0.0.0/8"),
        ], version=version)
        # A value only filters may hold (ANY, MATCH) fails the whole request, the valid ACL too.
        for unspecific in [(ANY_RESOURCE, orders, LITERAL, "User:a", "*", READ, ALLOW),
                           (TOPIC, orders, MATCH, "User:a", "*", READ, ALLOW),
                           (TOPIC, orders, LITERAL, "User:a", "*", ANY_OP, ALLOW)]:
            create_acls(run, [allow(TOPIC, run.topic("never"), READ), unspecific], version=version)
        # A code 0 (UNKNOWN) anywhere: Kafka cannot parse the request and closes the connection.
        for api_key, fields in [
                (CREATE_ACLS, {"creations": (creation(version, (0, orders, LITERAL, "User:a", "*", READ, ALLOW)),)}),
                (DESCRIBE_ACLS, dict(zip(("resource_type_filter", "resource_name_filter", "pattern_type_filter",
                                          "principal_filter", "host_filter", "operation", "permission_type"),
                                         (TOPIC, None, 0, None, None, ANY_OP, ANY_PERMISSION)))),
                (DELETE_ACLS, {"filters": (acl_filter(version, (TOPIC, None, ANY_PATTERN, None, None, 0, ALLOW)),)})]:
            conn = run.connect()
            conn.send(entity(api_key, version, request_class_name(api_key, version), **fields))
            run.note(f"api {api_key} with a code 0: connection closed", conn.closed_by_peer())
        for f in [EVERYTHING, (TOPIC, orders, LITERAL, None, None, ANY_OP, ANY_PERMISSION),
                  (TOPIC, pay, ANY_PATTERN, None, None, ANY_OP, ANY_PERMISSION),
                  (TOPIC, pay + ".x", MATCH, None, None, ANY_OP, ANY_PERMISSION),
                  (TOPIC, None, PREFIXED, None, None, ANY_OP, ANY_PERMISSION),
                  (ANY_RESOURCE, None, ANY_PATTERN, "User:bob", None, ANY_OP, ANY_PERMISSION),
                  (ANY_RESOURCE, None, ANY_PATTERN, None, "10.0.0.1", ANY_OP, ANY_PERMISSION),
                  (ANY_RESOURCE, None, ANY_PATTERN, None, None, WRITE, ANY_PERMISSION),
                  (ANY_RESOURCE, None, ANY_PATTERN, None, None, ANY_OP, DENY),
                  (GROUP, None, ANY_PATTERN, None, None, ANY_OP, ANY_PERMISSION),
                  (USER, None, ANY_PATTERN, None, None, ANY_OP, ANY_PERMISSION)]:
            describe_acls(run, f, version=version)
        delete_acls(run, [(TOPIC, orders, LITERAL, "User:bob", None, ANY_OP, ANY_PERMISSION),
                          (ANY_RESOURCE, None, ANY_PATTERN, None, None, ANY_OP, DENY),  # overlaps the first
                          (GROUP, None, ANY_PATTERN, None, None, ANY_OP, ANY_PERMISSION),
                          (TOPIC, "nothing-here", LITERAL, None, None, ANY_OP, ANY_PERMISSION),
                          (99, None, ANY_PATTERN, None, None, ANY_OP, ANY_PERMISSION),
                          (TOPIC, None, ANY_PATTERN, None, None, 99, ANY_PERMISSION)], version=version)
        describe_acls(run, EVERYTHING, version=version)

    secured.compare(scenario)


# -- a principal with no ACL -------------------------------------------------------------


def test_a_principal_with_no_acl(secured: SecuredBrokers) -> None:
    """alice, with no ACL anywhere, against every API she might call: each answers Kafka's
    authorization error in Kafka's place, and says nothing of what exists."""
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t", 2)
        produce(run, "t", {0: batch(2)})
        gs.wait_for_coordinator(run)
        member = gs.form_group(run, "g")
        gs.commit(run, "g", {"t": {0: 1}}, generation=member.generation, member_id=member.member_id)
        with run.as_user("alice"):
            metadata_all(run, 12, topic_ops=True)
            metadata_topics(run, ["t", "missing"], auto_create=True, topic_ops=True)
            metadata_topics(run, ["t"], version=10, cluster_ops=True, topic_ops=True)
            produce_topics(run, {"t": {0: batch(1)}, "missing": {0: batch(1)}})
            fetch_topics(run, {"t": {0: 0, 1: 0}}, version=12)
            list_offsets_topics(run, {"t": [(0, -1)]})
            offset_for_leader_epoch(run, {"t": [(0, -1, 0)]})
            create_topics(run, [creatable(run, "new")])
            delete_topics(run, ["t", "missing"])
            create_partitions(run, [("t", 3, None)])
            delete_records(run, {"t": {0: 1}})
            describe_configs(run, [(CONFIG_TOPIC, "t", None), (CONFIG_BROKER, "=1", None)])
            alter_configs(run, [(CONFIG_TOPIC, "t", {"retention.ms": "1000"}), (CONFIG_BROKER, "=", {})])
            incremental_alter_configs(run, [(CONFIG_TOPIC, "t", [("retention.ms", 0, "1000")]),
                                            (CONFIG_BROKER, "=", [("log.cleaner.backoff.ms", 0, "300")])])
            describe_cluster(run, 1, cluster_ops=True)
            describe_log_dirs(run, 4, None)
            gs.find_coordinator(run, [run.group("g"), run.group("other")])
            gs.find_coordinator(run, [run.group("g")], version=3)
            gs.find_coordinator(run, [run.group("tx")], key_type=1)
            gs.find_coordinator(run, [f"{run.group('g')}:AAAAAAAAAAAAAAAAAAAAAA:0"], key_type=2)
            gs.join(run, "g")
            gs.sync(run, "g", member.generation, member.member_id).answer()
            gs.heartbeat(run, "g", member.generation, member.member_id)
            gs.leave(run, "g", [(member.member_id, None)])
            gs.commit(run, "g", {"t": {0: 2}})
            gs.fetch_offsets(run, [("g", {"t": [0]}), ("g", None)])
            gs.fetch_offsets(run, [("g", {"t": [0]})], version=1)
            gs.describe_groups(run, ["g", "other"], authorized_operations=True)
            gs.list_groups(run)
            gs.delete_offsets(run, "g", {"t": [0]})
            gs.delete_groups(run, ["g"])
            gs.init_producer_id(run)
            gs.init_producer_id(run, transactional_id=run.group("tx"))
            ts.describe(run, ["tx"])
            ts.list_transactions(run)
            run.call(DESCRIBE_PRODUCERS, 0, topics=(entity(DESCRIBE_PRODUCERS, 0, "TopicRequest", name=run.topic("t"),
                                                           partition_indexes=(0,)),))
            describe_acls(run, EVERYTHING)
            create_acls(run, [allow(TOPIC, run.topic("t"), READ)], record=True)
            run.call(DELETE_ACLS, 3, filters=(acl_filter(3, EVERYTHING),))
            # (For all users, users=null, Kafka 4.4 never answers: test_describing_every_scram_user.)
            run.call(DESCRIBE_SCRAM, 0, users=(entity(DESCRIBE_SCRAM, 0, "UserName", name="carol"),))
            run.call(48, 1, components=(), strict=False)  # DescribeClientQuotas
            run.call(49, 1, validate_only=False, entries=(entity(49, 1, "EntryData", entity=(
                entity(49, 1, "EntityData", entity_type="user", entity_name="carol"),), ops=(
                entity(49, 1, "OpData", key="producer_byte_rate", value=1024.0, remove=False),)),))
            run.call(ALTER_SCRAM, 0, deletions=(entity(ALTER_SCRAM, 0, "ScramCredentialDeletion", name="carol",
                                                       mechanism=1),), upsertions=())
        # Nothing alice asked for happened.
        metadata_topics(run, ["t", "new"])
        gs.describe_groups(run, ["g"])

    secured.compare(scenario)


def test_a_connection_replaced_inside_as_user_is_that_users_again(secured: SecuredBrokers) -> None:
    """The harness itself: when a run replaces its connection inside `as_user` (as its retry of a
    Fetch that Kafka dropped does), the new one is authenticated as the same user, not the plain
    listener's super user, and later blocks for that user use it."""
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t")
        create_acls(run, [allow(TOPIC, run.topic("t"), DESCRIBE)])
        with run.as_user("alice"):
            before = metadata_topics(run, ["t"], topic_ops=True, label="Metadata v12 as alice")
            run.reconnect()
            replaced = run.conn
            after = metadata_topics(run, ["t"], topic_ops=True, label="Metadata v12 as alice, reconnected")
        assert after.topics[0].topic_authorized_operations == before.topics[0].topic_authorized_operations
        assert run.conn is not replaced
        with run.as_user("alice") as again:
            assert again is replaced

    secured.compare(scenario)


def test_describing_every_scram_user_without_acls(secured: SecuredBrokers) -> None:
    """alice asks for every SCRAM user (users=null) with no ACL: Kafka 4.4 never answers
    (KD-209); asyncbroker refuses, as it refuses named users. On a connection of its own,
    given 3 seconds."""
    def scenario(run: ScenarioRun) -> None:
        with run.as_user("alice") as conn:
            run.note_answer_within("DescribeUserScramCredentials v0, every user, as alice: the answer within 3 s",
                                   entity(DESCRIBE_SCRAM, 0, request_class_name(DESCRIBE_SCRAM, 0), users=None),
                                   conn, 3.0)

    secured.compare(scenario, known={"KD-209": {"0:"}})


# -- ACLs that grant and deny ------------------------------------------------------------


def test_acls_grant_and_deny(secured: SecuredBrokers) -> None:
    """alice may READ every topic under a prefix (which implies DESCRIBE), WRITE one of them,
    ALTER_CONFIGS another (which implies DESCRIBE_CONFIGS), is DENYed READ on a third (a DENY
    of READ does not deny DESCRIBE) and WRITE from any host on all of them; an ALLOW for
    another host does not apply; everyone may DESCRIBE a public topic."""
    def scenario(run: ScenarioRun) -> None:
        for name in ("feed.a", "feed.b", "feed.secret", "public", "other"):
            create_topic(run, name)
        produce(run, "feed.a", {0: batch(3)})
        produce(run, "feed.secret", {0: batch(1)})
        gs.wait_for_coordinator(run)
        gs.wait_for_producer_ids(run)
        a, b_, secret = run.topic("feed.a"), run.topic("feed.b"), run.topic("feed.secret")
        create_acls(run, [
            # Only this scenario names topics "feed.*" (and every scenario starts with no ACL).
            allow(TOPIC, "feed.", READ, pattern=PREFIXED),
            allow(TOPIC, a, WRITE), allow(TOPIC, b_, ALTER_CONFIGS), deny(TOPIC, secret, READ),
            allow(TOPIC, b_, WRITE, host="10.9.9.9"), allow(TOPIC, run.topic("public"), DESCRIBE, "User:*"),
            allow(GROUP, run.group("readers"), READ), deny(TOPIC, "feed.", WRITE, "User:bob", pattern=PREFIXED),
            # Hosts as CIDR blocks (Kafka 4.4 matches them as ranges): loopback may write, 10/8 may not.
            allow(TOPIC, run.topic("public"), WRITE, host="127.0.0.0/8"),
            deny(TOPIC, run.topic("other"), WRITE, host="127.0.0.0/8"), allow(TOPIC, run.topic("other"), WRITE),
        ])
        with run.as_user("alice"):
            metadata_all(run, 12, topic_ops=True)
            metadata_topics(run, ["feed.a", "feed.b", "feed.secret", "public", "other"], version=10,
                            topic_ops=True, cluster_ops=True)
            produce_topics(run, {"feed.a": {0: batch(1)}, "feed.b": {0: batch(1)}, "public": {0: batch(1)},
                                 "other": {0: batch(1)}})
            fetch_topics(run, {"feed.a": {0: 0}, "feed.secret": {0: 0}})
            list_offsets_topics(run, {"feed.a": [(0, -1)], "feed.secret": [(0, -1)], "other": [(0, -1)]})
            describe_configs(run, [(CONFIG_TOPIC, "feed.a", ["retention.ms"]), (CONFIG_TOPIC, "feed.b", ["retention.ms"])])
            gs.init_producer_id(run)  # WRITE on some topic is enough for an idempotent producer
            gs.find_coordinator(run, [run.group("readers"), run.group("writers")])
            member = gs.form_group(run, "readers")
            gs.commit(run, "readers", {"feed.a": {0: 2}, "other": {0: 1}}, generation=member.generation,
                      member_id=member.member_id)
            gs.fetch_offsets(run, [("readers", {"feed.a": [0], "other": [0]}), ("readers", None)])
            gs.describe_groups(run, ["readers"], authorized_operations=True)
            gs.list_groups(run)
        with run.as_user("bob"):
            metadata_topics(run, ["feed.a", "public"])
            produce_topics(run, {"feed.a": {0: batch(1)}})

    secured.compare(scenario)


def test_a_fetch_session_after_its_read_acl_is_removed(secured: SecuredBrokers) -> None:
    """alice's session over two idle partitions has no news while she may READ them; once the
    ACL is gone, her next incremental fetch answers both TOPIC_AUTHORIZATION_FAILED."""
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "idle", 2)
        create_acls(run, [allow(TOPIC, run.topic("idle"), READ)])
        with run.as_user("alice"):
            opened = fetch_topics(run, {"idle": {0: 0, 1: 0}}, session_epoch=0, record=False)
            run.alias_session(opened.session_id, "<session A>")
            run.note("alice's full fetch opening <session A>", opened)
            fetch_topics(run, {}, session_id=opened.session_id, session_epoch=1, label="both idle: no news")
        delete_acls(run, [(TOPIC, run.topic("idle"), LITERAL, "User:alice", "*", READ, ALLOW)])
        with run.as_user("alice"):
            fetch_topics(run, {}, session_id=opened.session_id, session_epoch=2, label="READ taken away")

    secured.compare(scenario)


# -- transactions ------------------------------------------------------------------------------


def test_transactions_under_acls(secured: SecuredBrokers) -> None:
    """A transactional producer needs WRITE on its transactional id (DESCRIBE follows), WRITE on
    each topic it adds (one refused topic fails the whole AddPartitionsToTxn) and READ on the
    group whose offsets it commits."""
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "out")
        create_topic(run, "closed")
        gs.wait_for_coordinator(run)
        ts.wait_for_coordinator(run)
        create_acls(run, [allow(TRANSACTIONAL_ID, run.group("tx"), WRITE), allow(TOPIC, run.topic("out"), WRITE),
                          allow(GROUP, run.group("g"), READ), allow(TOPIC, run.topic("out"), READ)])
        with run.as_user("alice"):
            gs.find_coordinator(run, [run.group("tx"), run.group("not-mine")], key_type=1)
            ts.init(run, "not-mine")
            answer = ts.init(run, "tx")
            pid, epoch = answer.producer_id, answer.producer_epoch
            ts.add_partitions(run, "tx", pid, epoch, {"out": [0], "closed": [0]})
            ts.add_partitions(run, "tx", pid, epoch, {"out": [0]})
            ts.add_partitions(run, "tx", pid, epoch, {"out": [0]}, version=4)
            ts.add_offsets(run, "tx", pid, epoch, "other-group")
            ts.add_offsets(run, "tx", pid, epoch, "g")
            ts.txn_offset_commit(run, "tx", pid, epoch, "g", {"out": {0: 1}, "closed": {0: 1}})
            ts.end_txn(run, "not-mine", pid, epoch, False)
            ts.end_txn(run, "tx", pid, epoch, False)

    secured.compare(scenario)


# -- consumer-protocol groups ----------------------------------------------------------------


def test_a_regex_matches_only_topics_the_member_may_describe(secured: SecuredBrokers) -> None:
    """A consumer-protocol member (KIP-848) may READ its group and DESCRIBE one of two topics
    its regex matches: the regex is resolved to that one, and the member is assigned it alone;
    a subscription by name to a topic it may not describe is refused."""
    from test_consumer_group_protocol import hb, wait_for_group_epoch_above

    def scenario(run: ScenarioRun) -> None:
        for name in ("seen", "unseen"):
            create_topic(run, name)
        gs.wait_for_coordinator(run)
        create_acls(run, [allow(GROUP, run.group("g"), READ), allow(TOPIC, run.topic("seen"), DESCRIBE)])
        metadata_topics(run, ["seen", "unseen"], record=False)  # learn the topic ids
        with run.as_user("alice"):
            hb(run, "by name, a topic alice may not describe", "m-a", 0, topics=["unseen"], owned=[],
               timeout=30000)
            a = hb(run, "joins by regex", "m-a", 0, regex=f"{run.topic('seen')}|{run.topic('unseen')}", owned=[],
                   timeout=30000, assignor="range")
        wait_for_group_epoch_above(run, "g", a.member_epoch)
        with run.as_user("alice"):
            assigned = hb(run, "assigned what it may describe", "m-a", a.member_epoch).assignment
            assert [tp.topic_id for tp in assigned.topic_partitions] == [run.topic_id("seen")], run.broker
            hb(run, "leaves", "m-a", -1)

    secured.compare(scenario)


def test_share_group_offsets_under_acls(secured: SecuredBrokers) -> None:
    """The share group offset admin APIs (KIP-932) as alice: with no ACL every one fails on the
    group (DESCRIBE, READ, DELETE); with the group's ACLs and a topic she may READ but another
    she may not, DescribeShareGroupOffsets answers that one TOPIC_AUTHORIZATION_FAILED when
    named and leaves it out of "all", AlterShareGroupOffsets answers its partitions
    TOPIC_AUTHORIZATION_FAILED first, DeleteShareGroupOffsets the topic first."""
    from test_share_group_offsets import alter_offsets, delete_offsets, describe_offsets, wait_for_share_coordinator

    def scenario(run: ScenarioRun) -> None:
        gs.wait_for_coordinator(run)
        create_topics(run, [creatable(run, "mine", 1), creatable(run, "theirs", 1)])
        metadata_topics(run, ["mine", "theirs"], record=False)
        wait_for_share_coordinator(run, "mine")
        alter_offsets(run, "set up by the super user", "g", {"mine": {0: 1}, "theirs": {0: 1}})
        with run.as_user("alice"):
            describe_offsets(run, "describe, no ACL", [("g", {"mine": [0]}), ("g", None)])
            alter_offsets(run, "alter, no ACL", "g", {"mine": {0: 2}})
            delete_offsets(run, "delete, no ACL", "g", ["mine"])
        create_acls(run, [allow(GROUP, run.group("g"), DESCRIBE), allow(GROUP, run.group("g"), READ),
                          allow(GROUP, run.group("g"), DELETE), allow(TOPIC, run.topic("mine"), READ)])
        with run.as_user("alice"):
            describe_offsets(run, "describe both", {"g": {"theirs": [0], "mine": [0]}})
            describe_offsets(run, "describe all", {"g": None})
            alter_offsets(run, "alter both", "g", {"mine": {0: 2}, "theirs": {0: 2}})
            describe_offsets(run, "after the alter", {"g": None})
            delete_offsets(run, "delete both", "g", ["mine", "theirs"])
        describe_offsets(run, "what is left, seen by the super user", {"g": None})

    secured.compare(scenario)


# -- failed authentication ------------------------------------------------------------------------

FAILED_AUTHENTICATION_DELAY_S = 0.1  # connection.failed.authentication.delay.ms, Kafka's default


def _failed_authentications(sasl_bootstrap: str) -> list[tuple[str, int | None, bool, bool]]:
    """Each way to fail authenticating: (what, the answer's error code or None when there is
    none, whether the answer or close took at least the delay, whether the connection then closed)."""
    def closed(sock: socket.socket) -> bool:
        sock.settimeout(10)
        return sock.recv(1) == b""

    out: list[tuple[str, int | None, bool, bool]] = []
    c = Connection(sasl_bootstrap)
    sent = time.monotonic()
    answer = c.receive(17, 1, c.send(entity(17, 1, "SaslHandshakeRequest", mechanism="NOPE")))
    out.append(("unsupported mechanism", answer.error_code, time.monotonic() - sent >= FAILED_AUTHENTICATION_DELAY_S,
                closed(c.sock)))
    c.close()
    c = Connection(sasl_bootstrap)
    c.receive(17, 1, c.send(entity(17, 1, "SaslHandshakeRequest", mechanism="PLAIN")))
    sent = time.monotonic()
    answer = c.receive(36, 2, c.send(entity(36, 2, "SaslAuthenticateRequest", auth_bytes=b"\0alice\0wrong")))
    out.append(("wrong password", answer.error_code, time.monotonic() - sent >= FAILED_AUTHENTICATION_DELAY_S,
                closed(c.sock)))
    c.close()
    c = Connection(sasl_bootstrap)
    c.receive(17, 0, c.send(entity(17, 0, "SaslHandshakeRequest", mechanism="PLAIN")))
    token = b"\0alice\0wrong"
    sent = time.monotonic()
    c.sock.sendall(struct.pack(">i", len(token)) + token)  # after a v0 handshake: a bare token
    gone = closed(c.sock)  # no answer to carry the error: the close is all there is
    out.append(("wrong password, bare token", None, time.monotonic() - sent >= FAILED_AUTHENTICATION_DELAY_S, gone))
    c.close()
    return out


def test_a_failed_authentication_is_answered_late_then_closed(secured: SecuredBrokers) -> None:
    kafka = _failed_authentications(secured.kafka.sasl_bootstrap)
    assert kafka == [("unsupported mechanism", 33, True, True), ("wrong password", 58, True, True),
                     ("wrong password, bare token", None, True, True)]
    assert _failed_authentications(secured.ours.bootstrap_for("SASL_PLAINTEXT")) == kafka
