"""group.consumer.migration.policy (issue 19): which online conversions between classic and
consumer-protocol groups a broker allows, with the errors Kafka 4.4 gives when it does not
(the differential scenarios run the default, bidirectional). Raw requests, a broker per
policy, real files."""

from __future__ import annotations

import datetime
import struct
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.consumer_group_describe.v1 import request as describe_v1
from kio.schema.consumer_group_heartbeat.v1 import request as heartbeat_v1
from kio.schema.join_group.v9 import request as join_v9
from kio.schema.list_groups.v5 import request as list_v5
from kio.schema.sync_group.v5 import request as sync_v5

from asyncbroker.testing import BrokerProcess
from raw_client import RawClient

pytestmark = pytest.mark.timeout(120)

TOPIC = "migrating"
SUBSCRIPTION = struct.pack(">hih", 1, 1, len(TOPIC)) + TOPIC.encode() + struct.pack(">ii", -1, 0)


def consumer_join(client: RawClient, group: str, member: str) -> Any:
    return client.request(heartbeat_v1.ConsumerGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=0, instance_id=None, rack_id=None,
        rebalance_timeout=datetime.timedelta(milliseconds=30000), subscribed_topic_names=(TOPIC,),
        subscribed_topic_regex=None, server_assignor="range", topic_partitions=()))


def consumer_leave(client: RawClient, group: str, member: str) -> Any:
    return client.request(heartbeat_v1.ConsumerGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=-1, instance_id=None, rack_id=None,
        rebalance_timeout=datetime.timedelta(milliseconds=-1), subscribed_topic_names=None,
        subscribed_topic_regex=None, server_assignor=None, topic_partitions=None))


def classic_join(client: RawClient, group: str, member: str) -> Any:
    return client.request(join_v9.JoinGroupRequest(
        group_id=group, session_timeout=datetime.timedelta(milliseconds=30000),
        rebalance_timeout=datetime.timedelta(milliseconds=30000), member_id=member, group_instance_id=None,
        protocol_type="consumer", protocols=(join_v9.JoinGroupRequestProtocol(name="range", metadata=SUBSCRIPTION),),
        reason=None))


def classic_group(client: RawClient, group: str) -> None:
    """A classic group with one member (the leader), Stable."""
    first = classic_join(client, group, "")
    assert first.error_code.value == 79, first  # MEMBER_ID_REQUIRED, with the id to join with
    joined = classic_join(client, group, first.member_id)
    assert joined.error_code.value == 0, joined
    synced = client.request(sync_v5.SyncGroupRequest(
        group_id=group, generation_id=joined.generation_id, member_id=joined.member_id, group_instance_id=None,
        protocol_type="consumer", protocol_name="range",
        assignments=(sync_v5.SyncGroupRequestAssignment(member_id=joined.member_id, assignment=b""),)))
    assert synced.error_code.value == 0, synced


def group_type(client: RawClient, group: str) -> str:
    listed = client.request(list_v5.ListGroupsRequest(states_filter=(), types_filter=()))
    return next(g.group_type for g in listed.groups if g.group_id == group)


def broker_with(policy: str) -> BrokerProcess:
    return BrokerProcess([f"group.consumer.migration.policy={policy}", "group.initial.rebalance.delay.ms=0",
                          "group.consumer.assignment.interval.ms=0"])


def create_topic(broker: BrokerProcess) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})  # kept until result(): GC would destroy it
    admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(30)


def test_disabled_refuses_both_ways() -> None:
    with broker_with("disabled") as broker:
        create_topic(broker)
        with RawClient(broker.bootstrap) as c:
            classic_group(c, "classic-g")
            refused = consumer_join(c, "classic-g", "m-a")
            assert refused.error_code.value == 69  # GROUP_ID_NOT_FOUND
            assert refused.error_message == ("Cannot upgrade classic group classic-g to consumer group because "
                                             "online upgrade is disabled.")
            assert group_type(c, "classic-g") == "classic"
            assert consumer_join(c, "consumer-g", "m-a").error_code.value == 0
            joined = classic_join(c, "consumer-g", "c-1")
            assert joined.error_code.value == 23  # INCONSISTENT_GROUP_PROTOCOL
            assert group_type(c, "consumer-g") == "consumer"


def test_upgrade_only_keeps_the_group_when_the_last_consumer_member_leaves() -> None:
    with broker_with("upgrade") as broker:
        create_topic(broker)
        with RawClient(broker.bootstrap) as c:
            classic_group(c, "g")
            assert consumer_join(c, "g", "m-a").error_code.value == 0  # upgraded
            assert group_type(c, "g") == "consumer"
            assert consumer_leave(c, "g", "m-a").error_code.value == 0
            assert group_type(c, "g") == "consumer"  # no downgrade: the classic member stays in it
            described = c.request(describe_v1.ConsumerGroupDescribeRequest(
                group_ids=("g",), include_authorized_operations=False)).groups[0]
            assert [m.member_type for m in described.members] == [0]  # the classic member


def test_downgrade_only_refuses_the_upgrade_but_downgrades() -> None:
    with broker_with("downgrade") as broker:
        create_topic(broker)
        with RawClient(broker.bootstrap) as c:
            classic_group(c, "classic-g")
            assert consumer_join(c, "classic-g", "m-a").error_code.value == 69
            assert consumer_join(c, "g", "m-a").error_code.value == 0
            assert classic_join(c, "g", "c-1").error_code.value == 0  # a mixed group
            assert consumer_leave(c, "g", "m-a").error_code.value == 0
            assert group_type(c, "g") == "classic"
