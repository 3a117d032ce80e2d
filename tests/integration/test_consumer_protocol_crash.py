"""SIGKILL in the middle of a consumer-protocol rebalance (issue 19): the broker is killed while
a member still has to revoke partitions, and after the restart the group is where its records
left it: the same epochs, the member still holding what it must give up, the newcomer still
waiting, the committed offset intact. Then the rebalance finishes as if nothing had happened.

Raw ConsumerGroupHeartbeat requests (a client library would move on by itself and hide the
state in between), against a broker subprocess on real files.
"""

from __future__ import annotations

import datetime
import struct
import uuid
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.consumer_group_describe.v1 import request as describe_v1
from kio.schema.consumer_group_heartbeat.v1 import request as heartbeat_v1
from kio.schema.offset_commit.v9 import request as commit_v9
from kio.schema.offset_fetch.v9 import request as fetch_v9

from asyncbroker.testing import BrokerProcess
from raw_client import RawClient

pytestmark = pytest.mark.timeout(120)

GROUP, TOPIC = "crash-group", "crash-topic"


def heartbeat(client: RawClient, member: str, epoch: int, owned: Any = None, *, join: bool = False) -> Any:
    request = heartbeat_v1.ConsumerGroupHeartbeatRequest(
        group_id=GROUP, member_id=member, member_epoch=epoch, instance_id=None, rack_id=None,
        rebalance_timeout=datetime.timedelta(milliseconds=30000 if join else -1),
        subscribed_topic_names=(TOPIC,) if join else None, subscribed_topic_regex=None,
        server_assignor="range" if join else None,
        topic_partitions=None if owned is None else tuple(
            heartbeat_v1.TopicPartitions(topic_id=t, partitions=tuple(p)) for t, p in owned))
    answer = client.request(request)
    assert answer.error_code.value == 0, answer
    return answer


def owned(answer: Any) -> list[tuple[uuid.UUID, list[int]]]:
    return [(tp.topic_id, list(tp.partitions)) for tp in answer.assignment.topic_partitions]


def describe(client: RawClient) -> tuple[str, int, int, dict[str, tuple[int, list[int], list[int]]]]:
    g = client.request(describe_v1.ConsumerGroupDescribeRequest(group_ids=(GROUP,),
                                                                include_authorized_operations=False)).groups[0]
    assert g.error_code.value == 0, g
    return (g.group_state, g.group_epoch, g.assignment_epoch,
            {m.member_id: (m.member_epoch, sorted(p for tp in m.assignment.topic_partitions for p in tp.partitions),
                           sorted(p for tp in m.target_assignment.topic_partitions for p in tp.partitions))
             for m in g.members})


def commit(client: RawClient, member: str, epoch: int, offset: int) -> int:
    answer = client.request(commit_v9.OffsetCommitRequest(
        group_id=GROUP, generation_id_or_member_epoch=epoch, member_id=member, group_instance_id=None,
        topics=(commit_v9.OffsetCommitRequestTopic(name=TOPIC, partitions=(
            commit_v9.OffsetCommitRequestPartition(partition_index=0, committed_offset=offset,
                                                   committed_leader_epoch=-1, committed_metadata=""),)),)))
    return int(answer.topics[0].partitions[0].error_code.value)


def fetched(client: RawClient, member: str, epoch: int) -> int:
    answer = client.request(fetch_v9.OffsetFetchRequest(groups=(fetch_v9.OffsetFetchRequestGroup(
        group_id=GROUP, member_id=member, member_epoch=epoch, topics=(
            fetch_v9.OffsetFetchRequestTopics(name=TOPIC, partition_indexes=(0,)),)),), require_stable=False))
    group = answer.groups[0]
    assert group.error_code.value == 0, group
    return int(group.topics[0].partitions[0].committed_offset)


def test_sigkill_while_a_member_must_revoke() -> None:
    with BrokerProcess(["group.consumer.assignment.interval.ms=0"]) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 4, 1)])[TOPIC].result(30)
        with RawClient(broker.bootstrap) as c:
            a = heartbeat(c, "m-a", 0, [], join=True)
            ((topic_id, partitions),) = owned(a)
            assert sorted(partitions) == [0, 1, 2, 3]
            a = heartbeat(c, "m-a", a.member_epoch, [(topic_id, [0, 1, 2, 3])])
            assert commit(c, "m-a", a.member_epoch, 42) == 0
            b = heartbeat(c, "m-b", 0, [], join=True)
            told = heartbeat(c, "m-a", a.member_epoch, [(topic_id, [0, 1, 2, 3])])
            assert sorted(p for _, ps in owned(told) for p in ps) == [0, 1]  # keep 0-1, give up 2-3
            before = describe(c)
        assert before[0] == "Reconciling"
        assert before[3]["m-a"] == (a.member_epoch, [0, 1, 2, 3], [0, 1])  # still holds 2-3
        assert before[3]["m-b"][1] == []  # waiting for them

        broker.restart(kill=True)

        with RawClient(broker.bootstrap) as c:
            assert describe(c) == before
            assert fetched(c, "m-a", a.member_epoch) == 42
            # m-a lets 2-3 go: it moves to the new epoch; m-b then gets them.
            done = heartbeat(c, "m-a", told.member_epoch, owned(told))
            assert done.member_epoch > a.member_epoch
            got = heartbeat(c, "m-b", b.member_epoch)
            assert sorted(p for _, ps in owned(got) for p in ps) == [2, 3]
            state, group_epoch, assignment_epoch, members = describe(c)
            assert (state, group_epoch, assignment_epoch) == ("Stable", before[1], before[2])
            assert members == {"m-a": (done.member_epoch, [0, 1], [0, 1]), "m-b": (got.member_epoch, [2, 3], [2, 3])}
            assert fetched(c, "m-a", done.member_epoch) == 42


def test_sigkill_with_a_deferred_assignment() -> None:
    """group.consumer.assignment.interval.ms (1 s by default): a member joining right after an
    assignment leaves the group Assigning, its target deferred. Killed then, the broker comes
    back Assigning at the same epochs; the first heartbeat after the interval computes the
    target (as in Kafka 4.4, nothing computes it without a heartbeat) and answers with it."""
    from wait_for import wait_until

    with BrokerProcess([]) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 4, 1)])[TOPIC].result(30)
        with RawClient(broker.bootstrap) as c:
            a = heartbeat(c, "m-a", 0, [], join=True)
            b = heartbeat(c, "m-b", 0, [], join=True)
            before = describe(c)
        assert before[:3] == ("Assigning", 3, 2)
        assert {m: target for m, (_, _, target) in before[3].items()} == {"m-a": [0, 1, 2, 3], "m-b": []}

        broker.restart(kill=True)

        with RawClient(broker.bootstrap) as c:
            assert describe(c) == before

            def told_to_revoke() -> Any:
                answer = heartbeat(c, "m-a", a.member_epoch)
                return answer if answer.assignment is not None else None  # None: nothing new

            told = wait_until(told_to_revoke, timeout=10, message="a heartbeat after the interval computing the target")
            assert sorted(p for _, ps in owned(told) for p in ps) == [0, 1]  # keep 0-1, give up 2-3
            state, group_epoch, assignment_epoch, members = describe(c)
            assert (state, group_epoch, assignment_epoch) == ("Reconciling", 3, 3)
            assert {m: target for m, (_, _, target) in members.items()} == {"m-a": [0, 1], "m-b": [2, 3]}
            done = heartbeat(c, "m-a", told.member_epoch, owned(told))
            got = heartbeat(c, "m-b", b.member_epoch)
            assert sorted(p for _, ps in owned(got) for p in ps) == [2, 3]
            assert describe(c)[:3] == ("Stable", 3, 3)
            assert done.member_epoch == got.member_epoch == 3


def test_sigkill_with_a_classic_member_in_the_group() -> None:
    """A mixed group (a classic consumer inside a consumer-protocol group) survives SIGKILL:
    the classic member comes back a classic member (its session timeout and protocols are in
    its member record), keeps its partitions and generation, syncs and heartbeats as before;
    when the consumer-protocol member then leaves, the group turns classic."""
    from kio.schema.heartbeat.v4 import request as classic_heartbeat_v4
    from kio.schema.join_group.v9 import request as join_v9
    from kio.schema.sync_group.v5 import request as sync_v5
    from wire.consumer_protocol import decode_assignment

    # ConsumerProtocolSubscription v1: the topic, no user data, no owned partitions.
    subscription = struct.pack(">hih", 1, 1, len(TOPIC)) + TOPIC.encode() + struct.pack(">ii", -1, 0)

    def classic_join(client: RawClient) -> Any:
        answer = client.request(join_v9.JoinGroupRequest(
            group_id=GROUP, session_timeout=datetime.timedelta(milliseconds=30000),
            rebalance_timeout=datetime.timedelta(milliseconds=30000), member_id="c-1", group_instance_id=None,
            protocol_type="consumer", protocols=(join_v9.JoinGroupRequestProtocol(name="range", metadata=subscription),),
            reason=None))
        assert answer.error_code.value == 0, answer
        return answer

    def classic_sync(client: RawClient, generation: int) -> list[int]:
        answer = client.request(sync_v5.SyncGroupRequest(
            group_id=GROUP, generation_id=generation, member_id="c-1", group_instance_id=None,
            protocol_type="consumer", protocol_name="range", assignments=()))
        assert answer.error_code.value == 0, answer
        return sorted(p for _, parts in decode_assignment(bytes(answer.assignment))[0] for p in parts)

    def classic_heartbeat(client: RawClient, generation: int) -> int:
        return int(client.request(classic_heartbeat_v4.HeartbeatRequest(
            group_id=GROUP, generation_id=generation, member_id="c-1", group_instance_id=None)).error_code.value)

    with BrokerProcess(["group.consumer.assignment.interval.ms=0"]) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 4, 1)])[TOPIC].result(30)
        with RawClient(broker.bootstrap) as c:
            a = heartbeat(c, "m-a", 0, [], join=True)
            joined = classic_join(c)
            told = heartbeat(c, "m-a", a.member_epoch, owned(a))
            a = heartbeat(c, "m-a", told.member_epoch, owned(told))
            assert classic_heartbeat(c, joined.generation_id) == 27  # REBALANCE_IN_PROGRESS: its partitions are free
            joined = classic_join(c)
            assert classic_sync(c, joined.generation_id) == [0, 1]
            before = describe(c)
        assert before[0] == "Stable" and before[3]["c-1"][1] == [0, 1] and before[3]["m-a"][1] == [2, 3]

        broker.restart(kill=True)

        with RawClient(broker.bootstrap) as c:
            assert describe(c) == before
            assert classic_heartbeat(c, joined.generation_id) == 0
            assert classic_sync(c, joined.generation_id) == [0, 1]
            heartbeat(c, "m-a", -1)
            assert classic_heartbeat(c, joined.generation_id) == 27  # a classic group now, rebalancing
