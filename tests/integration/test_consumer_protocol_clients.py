"""The consumer group protocol (KIP-848) with confluent-kafka's consumer (librdkafka 2.16,
`group.protocol=consumer`) against a broker subprocess: members share a topic and take over
when one leaves, a regex subscription picks up a topic created later, committed offsets and
the group itself survive a restart and a SIGKILL, and the group reads back as Kafka's tools
see it (ConsumerGroupDescribe, ListGroups).

Heartbeats every 300 ms (Kafka's default is 5 s; the bounds are lowered with it) so that a
rebalance takes a fraction of a second; the broker's logic is the same.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from asyncbroker.testing import BrokerProcess
from wait_for import wait_until

pytestmark = pytest.mark.timeout(180)

SETTINGS = [
    "group.consumer.heartbeat.interval.ms=300", "group.consumer.min.heartbeat.interval.ms=300",
    "group.consumer.session.timeout.ms=6000", "group.consumer.min.session.timeout.ms=6000",
]


@pytest.fixture
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess(SETTINGS) as b:
        yield b


def create(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def produce(bootstrap: str, topic: str, count: int, partitions: int, round_: int = 1) -> None:
    """`count` records round-robin over the partitions, valued "<topic>-<round>-<i>"."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(count):
        p.produce(topic, f"{topic}-{round_}-{i}".encode(), partition=i % partitions)
    assert p.flush(30) == 0


def consumer(bootstrap: str, group: str, **extra: Any) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                     "auto.offset.reset": "earliest", "enable.auto.commit": False, **extra})


class Member:
    """One consumer, polled by the test; keeps every value it got and commits as it goes."""

    def __init__(self, bootstrap: str, group: str, topics: list[str], **extra: Any) -> None:
        self.consumer = consumer(bootstrap, group, **extra)
        self.consumer.subscribe(topics)
        self.values: list[bytes] = []

    def poll(self) -> None:
        for m in self.consumer.consume(num_messages=100, timeout=0.05):
            if m.error() is not None:
                continue
            try:
                self.consumer.commit(message=m, asynchronous=False)
            except KafkaException as exc:
                # Fenced meanwhile (session timeout): the commit is refused and the record will
                # be read again after the rejoin, so it does not count as read yet.
                if exc.args[0].code() not in (KafkaError.UNKNOWN_MEMBER_ID, KafkaError.FENCED_MEMBER_EPOCH,
                                              KafkaError.STALE_MEMBER_EPOCH):
                    raise
                continue
            self.values.append(m.value())

    def assignment(self) -> set[tuple[str, int]]:
        return {(tp.topic, tp.partition) for tp in self.consumer.assignment()}

    def close(self) -> None:
        self.consumer.close()


def poll_until(members: list[Member], condition: Any, timeout: float = 30.0, message: str = "") -> None:
    def step() -> bool:
        for m in members:
            m.poll()
        return bool(condition())
    wait_until(step, timeout=timeout, interval=0, message=message)


def test_members_share_a_topic_and_take_over_when_one_leaves(broker: BrokerProcess) -> None:
    b, group, topic = broker.bootstrap, f"g-{uuid.uuid4().hex[:6]}", "shared"
    create(b, topic, 4)
    produce(b, topic, 40, 4)
    a = Member(b, group, [topic])
    poll_until([a], lambda: len(a.assignment()) == 4, message="a alone holds all four partitions")
    c = Member(b, group, [topic])
    poll_until([a, c], lambda: len(a.assignment()) == 2 and len(c.assignment()) == 2,
               message="two partitions each")
    assert not a.assignment() & c.assignment()
    poll_until([a, c], lambda: set(a.values) | set(c.values) == {f"{topic}-1-{i}".encode() for i in range(40)},
               message="every record read")
    c.close()
    produce(b, topic, 40, 4, round_=2)  # ten more a partition: a reads the ones c held as well
    poll_until([a], lambda: len(a.assignment()) == 4, message="a takes c's partitions back")
    poll_until([a], lambda: {f"{topic}-2-{i}".encode() for i in range(40)} <= set(a.values),
               message="the second round read")
    a.close()


def test_regex_subscription_picks_up_a_topic_created_later(broker: BrokerProcess) -> None:
    b, group = broker.bootstrap, f"g-{uuid.uuid4().hex[:6]}"
    create(b, "orders-eu", 2)
    a = Member(b, group, ["^orders-.*"])
    poll_until([a], lambda: a.assignment() == {("orders-eu", 0), ("orders-eu", 1)}, message="the first topic")
    create(b, "orders-us", 1)
    create(b, "payments", 1)  # does not match
    poll_until([a], lambda: ("orders-us", 0) in a.assignment(), message="the topic created later")
    assert a.assignment() == {("orders-eu", 0), ("orders-eu", 1), ("orders-us", 0)}
    admin = AdminClient({"bootstrap.servers": b})  # kept: the answer needs the client alive
    admin.create_partitions([NewPartitions("orders-us", 3)])["orders-us"].result(30)
    poll_until([a], lambda: len(a.assignment()) == 5, message="partitions added to a subscribed topic")
    a.close()


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> list[int]:
    c = consumer(bootstrap, group)
    try:
        return [tp.offset for tp in c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)]
    finally:
        c.close()


@pytest.mark.parametrize("kill", [False, True], ids=["restart", "sigkill"])
def test_group_and_offsets_survive_a_restart(broker: BrokerProcess, kill: bool) -> None:
    b, group, topic = broker.bootstrap, f"g-{uuid.uuid4().hex[:6]}", "durable"
    create(b, topic, 2)
    produce(b, topic, 20, 2)
    a, c = Member(b, group, [topic]), Member(b, group, [topic])
    poll_until([a, c], lambda: len(a.assignment()) == 1 and len(c.assignment()) == 1 and
               len(a.values) + len(c.values) >= 20, message="both members reading")
    before = describe(b, group)
    broker.restart(kill=kill)
    b = broker.bootstrap
    after = describe(b, group)
    assert after == before  # the group as its records left it: epochs, members, assignments
    produce(b, topic, 20, 2, round_=2)
    poll_until([a, c], lambda: {f"{topic}-2-{i}".encode() for i in range(20)} <= set(a.values) | set(c.values),
               message="reading on after the restart")
    assert len(a.assignment()) == 1 and len(c.assignment()) == 1
    a.close()
    c.close()
    assert committed(b, group, topic, 2) == [20, 20]


def describe(bootstrap: str, group: str) -> Any:
    """ConsumerGroupDescribe through the raw protocol: (state, group epoch, assignment epoch,
    {member id: (member epoch, assigned partitions)})."""
    from kio.schema.consumer_group_describe.v1 import request as describe_v1

    from raw_client import RawClient

    with RawClient(bootstrap) as client:
        answer = client.request(describe_v1.ConsumerGroupDescribeRequest(group_ids=(group,),
                                                                         include_authorized_operations=False))
    g = answer.groups[0]
    assert g.error_code.value == 0, g
    return (g.group_state, g.group_epoch, g.assignment_epoch,
            {m.member_id: (m.member_epoch, sorted((tp.topic_name, p) for tp in m.assignment.topic_partitions
                                                   for p in tp.partitions)) for m in g.members})


def test_a_member_fenced_by_its_session_rejoins(tmp_path: Any) -> None:
    """A member the coordinator stops hearing from for group.consumer.session.timeout.ms is
    fenced (the broker's clock is moved past it, aiomonitor's advance-clock): its next heartbeat
    gets FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID, and librdkafka rejoins on its own (epoch 0)
    and reads on from its committed offset."""
    with BrokerProcess(SETTINGS, monitor=True) as broker:
        b, group, topic = broker.bootstrap, f"g-{uuid.uuid4().hex[:6]}", "fenced"
        create(b, topic, 1)
        produce(b, topic, 5, 1)
        a = Member(b, group, [topic])
        poll_until([a], lambda: len(a.values) == 5, message="first read")
        (member_id, (epoch, _)), = describe(b, group)[3].items()
        broker.advance_clock(7000)  # past the session timeout, without a heartbeat in between
        wait_until(lambda: describe(b, group)[3].get(member_id, (None,))[0] != epoch, timeout=30,
                   message="the member fenced")
        produce(b, topic, 5, 1, round_=2)
        poll_until([a], lambda: len(a.values) == 10, message="read on after rejoining")
        assert sorted(a.values) == sorted(f"{topic}-{r}-{i}".encode() for r in (1, 2) for i in range(5))
        a.close()
