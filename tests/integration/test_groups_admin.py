"""Group administration with confluent-kafka's AdminClient: list, describe,
list offsets, alter offsets, delete offsets and delete groups; and what
`__consumer_offsets` looks like in Metadata."""

from __future__ import annotations

import time
from typing import Any

import pytest

from asyncbroker.testing import BrokerProcess
from wait_for import wait_until

pytestmark = pytest.mark.timeout(90)


@pytest.fixture(scope="module")
def broker() -> Any:
    with BrokerProcess(["group.initial.rebalance.delay.ms=0", "offsets.topic.num.partitions=4",
                        "num.partitions=2"]) as b:
        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": b.bootstrap})
        for i in range(10):
            p.produce("admin-t", value=str(i).encode(), partition=i % 2)
        assert p.flush(20) == 0
        yield b


def admin(broker: Any) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": broker.bootstrap})


def stable_consumer(broker: Any, group: str) -> Any:
    from confluent_kafka import Consumer

    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "client.id": "admin-test-consumer"})
    c.subscribe(["admin-t"])
    got = 0
    deadline = time.monotonic() + 30
    while got < 10 and time.monotonic() < deadline:
        m = c.poll(0.1)
        if m is not None and not m.error():
            got += 1
    assert got == 10
    c.commit(asynchronous=False)
    return c


def test_list_describe_offsets_and_delete(broker: Any) -> None:
    from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, TopicPartition

    a = admin(broker)
    c = stable_consumer(broker, "g-admin")
    try:
        listed = a.list_consumer_groups(request_timeout=10).result()
        by_id = {g.group_id: g for g in listed.valid}
        assert by_id["g-admin"].state == ConsumerGroupState.STABLE
        assert not by_id["g-admin"].is_simple_consumer_group

        desc = a.describe_consumer_groups(["g-admin"], request_timeout=10)["g-admin"].result()
        assert desc.state == ConsumerGroupState.STABLE
        assert desc.partition_assignor in ("range", "roundrobin")
        assert len(desc.members) == 1
        member = desc.members[0]
        assert member.client_id == "admin-test-consumer"
        assert sorted(tp.partition for tp in member.assignment.topic_partitions) == [0, 1]

        offsets = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions("g-admin")])["g-admin"].result()
        assert sorted((tp.topic, tp.partition, tp.offset) for tp in offsets.topic_partitions) == [
            ("admin-t", 0, 5), ("admin-t", 1, 5)]

        # A live group cannot be deleted.
        with pytest.raises(Exception) as err:
            a.delete_consumer_groups(["g-admin"], request_timeout=10)["g-admin"].result()
        assert "NON_EMPTY_GROUP" in str(err.value) or "not empty" in str(err.value).lower()
    finally:
        c.close()

    wait_until(lambda: a.describe_consumer_groups(["g-admin"])["g-admin"].result().state
               == ConsumerGroupState.EMPTY, 10, message="the group to become empty")
    # Offsets can be rewritten while the group is empty.
    a.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(
        "g-admin", [TopicPartition("admin-t", 0, 1)])])["g-admin"].result()
    offsets = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions("g-admin")])["g-admin"].result()
    assert sorted((tp.partition, tp.offset) for tp in offsets.topic_partitions) == [(0, 1), (1, 5)]

    a.delete_consumer_groups(["g-admin"], request_timeout=10)["g-admin"].result()
    listed = a.list_consumer_groups(request_timeout=10).result()
    assert "g-admin" not in {g.group_id for g in listed.valid}
    offsets = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions(
        "g-admin", [TopicPartition("admin-t", 0)])])["g-admin"].result()
    assert [tp.offset for tp in offsets.topic_partitions] == [-1001]  # OFFSET_INVALID: nothing committed

    with pytest.raises(Exception) as err:
        a.delete_consumer_groups(["g-admin"], request_timeout=10)["g-admin"].result()
    assert "GROUP_ID_NOT_FOUND" in str(err.value) or "not found" in str(err.value).lower()


def test_offsets_of_a_simple_group_survive_restart_and_can_be_deleted(broker: Any) -> None:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-simple"})
    try:
        c.commit(offsets=[TopicPartition("admin-t", 0, 3), TopicPartition("admin-t", 1, 4)], asynchronous=False)
    finally:
        c.close()
    a = admin(broker)
    listed = {g.group_id: g for g in a.list_consumer_groups(request_timeout=10).result().valid}
    assert listed["g-simple"].is_simple_consumer_group

    broker.restart()
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-simple"})
    try:
        got = c.committed([TopicPartition("admin-t", 0), TopicPartition("admin-t", 1)], timeout=20)
        assert [tp.offset for tp in got] == [3, 4]
    finally:
        c.close()

    # OffsetDelete (kafka-python's admin client has it): partition 0's offset goes.
    from kafka import TopicPartition as KTopicPartition
    from kafka.admin import KafkaAdminClient
    from kafka.errors import NoError

    ka = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        result = ka.delete_group_offsets("g-simple", [KTopicPartition("admin-t", 0)])
        assert result == {KTopicPartition("admin-t", 0): NoError}
        offsets = ka.list_group_offsets("g-simple")["g-simple"]
        assert {tp.partition: om.offset for tp, om in offsets.items()} == {1: 4}
    finally:
        ka.close()


def test_consumer_offsets_topic_is_internal_in_metadata(broker: Any) -> None:
    a = admin(broker)
    stable_consumer(broker, "g-meta").close()
    md = a.list_topics(timeout=10)
    assert "__consumer_offsets" in md.topics
    assert len(md.topics["__consumer_offsets"].partitions) == 4
    from kafka import KafkaConsumer

    kc = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    try:
        # Clients that exclude internal topics (the default) do not list it.
        assert "__consumer_offsets" not in kc.topics()
    finally:
        kc.close()



def test_metadata_auto_creation_of_consumer_offsets_uses_the_coordinator_settings() -> None:
    from confluent_kafka.admin import AdminClient, ConfigResource

    with BrokerProcess(["offsets.topic.num.partitions=3"]) as b:
        a = AdminClient({"bootstrap.servers": b.bootstrap})
        from kio.schema.metadata.v12 import request as meta12

        from raw_client import RawClient

        with RawClient(b.bootstrap) as c:
            # A Metadata request naming the topic, auto-creation allowed, creates it.
            c.request(meta12.MetadataRequest(
                topics=(meta12.MetadataRequestTopic(topic_id=None, name="__consumer_offsets"),),
                allow_auto_topic_creation=True, include_topic_authorized_operations=False))
        md = wait_until(lambda: (m := a.list_topics(timeout=10)).topics.get("__consumer_offsets") and m, 10,
                        message="__consumer_offsets to exist")
        assert len(md.topics["__consumer_offsets"].partitions) == 3
        res = ConfigResource(ConfigResource.Type.TOPIC, "__consumer_offsets")
        configs = a.describe_configs([res])[res].result()
        assert configs["cleanup.policy"].value == "compact"


def test_clients_cannot_produce_to_consumer_offsets(broker: Any) -> None:
    """Only the group coordinator writes `__consumer_offsets`: a client's produce is INVALID_TOPIC_EXCEPTION."""
    from confluent_kafka import KafkaError, Producer

    stable_consumer(broker, "internal-topic-guard").close()  # makes sure the offsets topic exists
    errors: list[Any] = []
    p = Producer({"bootstrap.servers": broker.bootstrap, "message.send.max.retries": 0})
    p.produce("__consumer_offsets", key=b"k", value=b"v", partition=0,
              on_delivery=lambda err, msg: errors.append(err))
    assert p.flush(20) == 0
    assert len(errors) == 1 and errors[0] is not None
    assert errors[0].code() == KafkaError.TOPIC_EXCEPTION


def test_describe_groups_reports_each_members_client_host(broker: Any) -> None:
    """DescribeGroups shows the member's address as Kafka does ("/<ip>"), taken from its connection."""
    a = admin(broker)  # kept alive: a collected AdminClient never completes its futures
    c = stable_consumer(broker, "g-host")
    try:
        desc = a.describe_consumer_groups(["g-host"], request_timeout=10)["g-host"].result()
        assert [m.host for m in desc.members] == ["/127.0.0.1"]
    finally:
        c.close()


def test_deleting_a_topic_removes_its_committed_offsets(broker: Any) -> None:
    """Kafka's onPartitionsDeleted: every group's offsets on the deleted partitions are
    tombstoned (gone after a restart too), and a group left empty without offsets is removed,
    so a topic recreated under the same name starts with no committed position."""
    from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import NewTopic

    a = admin(broker)
    a.create_topics([NewTopic("doomed", num_partitions=2)])["doomed"].result(20)
    for group, offsets in (("g-mixed", [TopicPartition("doomed", 0, 5), TopicPartition("doomed", 1, 6),
                                        TopicPartition("admin-t", 0, 2)]),
                           ("g-doomed-only", [TopicPartition("doomed", 1, 7)])):
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
        try:
            c.commit(offsets=offsets, asynchronous=False)
        finally:
            c.close()

    a.delete_topics(["doomed"])["doomed"].result(20)

    def offsets_of(group: str) -> dict[tuple[str, int], int]:
        listed = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(20)
        return {(tp.topic, tp.partition): tp.offset for tp in listed.topic_partitions}

    def groups() -> set[str]:
        return {g.group_id for g in a.list_consumer_groups(request_timeout=10).result().valid}

    assert offsets_of("g-mixed") == {("admin-t", 0): 2}
    assert "g-doomed-only" not in groups() and "g-mixed" in groups()

    broker.restart()  # the tombstones are in __consumer_offsets: nothing comes back on load
    a = admin(broker)
    assert offsets_of("g-mixed") == {("admin-t", 0): 2}
    assert "g-doomed-only" not in groups()
    a.create_topics([NewTopic("doomed", num_partitions=2)])["doomed"].result(20)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-mixed"})
    try:
        got = c.committed([TopicPartition("doomed", 0), TopicPartition("doomed", 1)], timeout=20)
        assert [tp.offset for tp in got] == [-1001, -1001]  # OFFSET_INVALID: no committed offset
    finally:
        c.close()
