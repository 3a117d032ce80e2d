"""Differential scenarios: share group membership (KIP-932). ShareGroupHeartbeat v1 and
ShareGroupDescribe v1 compared with Kafka 4.4: request validation, joining, the partitions
assigned once their share state is initialized (Kafka asks its share coordinator; the
heartbeats in between are not compared), members sharing a topic, fencing by epoch, leaving,
and the group seen through ListGroups, DescribeGroups and DeleteGroups.

Both brokers run with group.share.assignment.interval.ms=0 (ORACLE_SETTINGS), so a target
assignment is computed in the heartbeat that needs it.
"""

from __future__ import annotations

from typing import Any

import pytest

import group_steps
from differential import ScenarioRun
from test_consumer_group_protocol import topics

pytestmark = pytest.mark.timeout(180)

HEARTBEAT, DESCRIBE = 76, 77


def hb(run: ScenarioRun, label: str, member: str, epoch: int = 0, *, group: str = "g",
       topics_: list[str] | None = None, raw_group: bool = False, rack: str | None = None,
       record: bool = True) -> Any:
    return run.call(HEARTBEAT, 1, _label=label, _record=record, group_id=group if raw_group else run.group(group),
                    member_id=member, member_epoch=epoch, rack_id=rack,
                    subscribed_topic_names=None if topics_ is None else [run.topic(t) for t in topics_])


def describe(run: ScenarioRun, label: str, *groups: str) -> Any:
    return run.call(DESCRIBE, 1, _label=label, group_ids=[run.group(g) for g in groups],
                    include_authorized_operations=False)


def until_assigned(run: ScenarioRun, label: str, member: str, epoch: int) -> Any:
    """Heartbeats (unrecorded) until the member is given partitions, then that answer is
    recorded: the partitions' share state is initialized in between."""
    def assigned() -> Any:
        answer = hb(run, label, member, epoch, record=False)
        return answer if answer.assignment is not None and answer.assignment.topic_partitions else None
    answer = run.wait_until(assigned, label, timeout=30)
    run.record(label, None, answer)
    return answer


def validation(run: ScenarioRun) -> None:
    topics(run)
    hb(run, "empty member id", "", topics_=["t1"])
    hb(run, "empty group id", "m-a", group="", raw_group=True, topics_=["t1"])
    hb(run, "empty rack id", "m-a", topics_=["t1"], rack="")
    hb(run, "no topics on joining", "m-a")
    hb(run, "epoch below -1", "m-a", -2)
    hb(run, "an unknown group", "m-a", 1)
    hb(run, "leave an unknown group", "m-a", -1)


def test_heartbeat_validation(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(validation)


def one_member(run: ScenarioRun) -> None:
    """A member joins: nothing is assigned until the partitions' share state is set up, then
    everything is; fencing by epoch; an unknown member; leaving; delete."""
    topics(run)
    a = hb(run, "a joins", "m-a", topics_=["t1"])
    a2 = until_assigned(run, "a is given t1", "m-a", a.member_epoch)
    describe(run, "a alone", "g")
    hb(run, "a with a future epoch", "m-a", a2.member_epoch + 5)
    hb(run, "a with its previous epoch", "m-a", a.member_epoch)
    hb(run, "a with an older epoch", "m-a", a.member_epoch - 1)
    hb(run, "unknown member", "m-x", a2.member_epoch)
    hb(run, "a rejoins with epoch 0", "m-a", 0, topics_=["t1"])
    group_steps.list_groups(run, label="list groups")
    group_steps.list_groups(run, types=["share"], label="list share groups")
    group_steps.list_groups(run, types=["consumer"], label="list consumer groups")
    group_steps.describe_groups(run, ["g"], label="DescribeGroups of a share group")
    run.call(42, 2, _label="delete a share group with members", groups_names=[run.group("g")])
    hb(run, "a leaves", "m-a", -1)
    hb(run, "a leaves again", "m-a", -1)
    describe(run, "empty", "g", "never")
    run.call(42, 2, _label="delete the empty share group", groups_names=[run.group("g")])
    describe(run, "deleted", "g")


def test_one_member(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(one_member)


def members_share_a_partition(run: ScenarioRun) -> None:
    """More members than partitions: each partition goes to ceil(members / partitions) of
    them (one topic of 3 partitions, members a and b join one after the other)."""
    from admin_steps import create_topics, creatable, metadata_topics
    group_steps.wait_for_coordinator(run)
    create_topics(run, [creatable(run, "solo", 1)])
    metadata_topics(run, ["solo"], record=False)
    a = hb(run, "a joins", "m-a", topics_=["solo"])
    a2 = until_assigned(run, "a is given solo-0", "m-a", a.member_epoch)
    b = hb(run, "b joins and shares solo-0", "m-b", topics_=["solo"])
    hb(run, "a keeps solo-0", "m-a", a2.member_epoch)
    describe(run, "both hold solo-0", "g")
    hb(run, "b leaves", "m-b", -1)
    describe(run, "a alone again", "g")
    del b


def test_members_share_a_partition(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(members_share_a_partition)


def other_group_types(run: ScenarioRun) -> None:
    """A share group's id is not a consumer group's, nor the reverse."""
    from test_consumer_group_protocol import hb as consumer_hb
    from test_consumer_group_protocol import join as consumer_join

    topics(run)
    hb(run, "share member joins", "m-a", topics_=["t1"], group="s")
    consumer_join(run, "a consumer-protocol member into the share group", "m-b", ["t1"], group="s")
    group_steps.join(run, "s", label="a classic JoinGroup into the share group")
    consumer_join(run, "a consumer-protocol group", "m-c", ["t1"], group="c")
    hb(run, "a share member into the consumer group", "m-d", topics_=["t1"], group="c")
    run.call(69, 1, _label="ConsumerGroupDescribe of a share group", group_ids=[run.group("s")],
             include_authorized_operations=False)
    describe(run, "ShareGroupDescribe of a consumer group", "c")
    hb(run, "a share leave from the consumer group", "m-c", -1, group="c")
    hb(run, "share member leaves", "m-a", -1, group="s")
    consumer_hb(run, "consumer member leaves", "m-c", -1, group="c")


def test_other_group_types(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(other_group_types)
