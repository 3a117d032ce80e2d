"""Differential scenarios: the consumer rebalance protocol (KIP-848). ConsumerGroupHeartbeat
v0-v1 and ConsumerGroupDescribe v0-v1 compared with Kafka 4.4: request validation, joining,
the range assignor's assignments, revocation before assignment, fencing by epoch, static
members, leaving, offsets committed and fetched with member epochs, and the group seen
through ListGroups, DescribeGroups and DeleteGroups.

Mixed groups: a classic consumer's JoinGroup, SyncGroup, Heartbeat and LeaveGroup inside a
consumer-protocol group, the online upgrade and the online downgrade.

Both brokers run with group.consumer.assignment.interval.ms=0 (ORACLE_SETTINGS), so a
target assignment is computed in the heartbeat that needs it and epochs do not depend on
timing. Member ids are the scenario's own (v1), or aliased where the broker makes them (v0).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

import admin_steps
import group_steps
from differential import ScenarioRun, entity

pytestmark = pytest.mark.timeout(180)

HEARTBEAT, DESCRIBE = 68, 69


def hb(run: ScenarioRun, label: str, member: str, epoch: int = 0, *, version: int = 1, group: str = "g",
       topics: list[str] | None = None, regex: str | None = None, owned: Any = None, timeout: int = -1,
       assignor: str | None = None, instance: str | None = None, raw_group: bool = False,
       _record: bool = True) -> Any:
    if owned is not None:
        owned = [entity(HEARTBEAT, version, "TopicPartitions", topic_id=t, partitions=list(p)) for t, p in owned]
    return run.call(HEARTBEAT, version, _label=label, _record=_record, group_id=group if raw_group else run.group(group),
                    member_id=member, member_epoch=epoch, instance_id=instance, rack_id=None,
                    rebalance_timeout=timeout, subscribed_topic_names=None if topics is None else [run.topic(t) for t in topics],
                    subscribed_topic_regex=regex, server_assignor=assignor, topic_partitions=owned)


def join(run: ScenarioRun, label: str, member: str, topics: list[str], **kw: Any) -> Any:
    return hb(run, label, member, 0, topics=topics, owned=[], timeout=30000, **kw)


def owned_of(answer: Any) -> list[tuple[Any, list[int]]]:
    return [(tp.topic_id, list(tp.partitions)) for tp in answer.assignment.topic_partitions]


def describe(run: ScenarioRun, label: str, *groups: str, _record: bool = True) -> Any:
    return run.call(DESCRIBE, 1, _label=label, _record=_record, group_ids=[run.group(g) for g in groups],
                    include_authorized_operations=False)


def topics(run: ScenarioRun) -> None:
    group_steps.wait_for_coordinator(run)
    admin_steps.create_topics(run, [admin_steps.creatable(run, "t1", 3), admin_steps.creatable(run, "t2", 2)])
    admin_steps.metadata_topics(run, ["t1", "t2"], record=False)  # learn the topic ids


def validation(version: int):  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        topics(run)
        hb(run, "empty group and member", "", version=version, group="", raw_group=True)
        hb(run, "empty group", "m", version=version, group="", raw_group=True)
        hb(run, "empty member", "", version=version)
        hb(run, "no rebalance timeout", "m", version=version, topics=["t1"], owned=[])
        hb(run, "owned partitions missing", "m", version=version, topics=["t1"], timeout=30000)
        hb(run, "owned partitions not empty", "m", version=version, topics=["t1"], timeout=30000,
           owned=[(run.topic_id("t1"), [0])])
        hb(run, "no subscription", "m", version=version, timeout=30000, owned=[])
        hb(run, "empty instance id", "m", version=version, topics=["t1"], timeout=30000, owned=[], instance="")
        hb(run, "unknown assignor", "m", version=version, topics=["t1"], timeout=30000, owned=[], assignor="nope")
        hb(run, "epoch below -2", "m", -3, version=version)
        hb(run, "static leave without instance id", "m", -2, version=version)
        hb(run, "heartbeat to an unknown group", "m", 3, version=version)
        hb(run, "leave an unknown group", "m", -1, version=version)
    return scenario


@pytest.mark.parametrize("version", [0, 1])
def test_heartbeat_validation(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(validation(version))


def two_members(run: ScenarioRun) -> None:
    """Range: m-a alone holds everything; m-b joins, m-a revokes first, then m-b gets its
    share; fencing by stale and future epochs; leaving; delete."""
    topics(run)
    a = join(run, "a joins", "m-a", ["t1", "t2"], assignor="range")
    hb(run, "a heartbeats", "m-a", a.member_epoch)
    describe(run, "a alone", "g")
    b = join(run, "b joins", "m-b", ["t1", "t2"], assignor="range")
    a2 = hb(run, "a told to revoke", "m-a", a.member_epoch)
    b2 = hb(run, "b waits for unreleased partitions", "m-b", b.member_epoch)
    describe(run, "reconciling", "g")
    hb(run, "a with a stale epoch", "m-a", a.member_epoch - 1)
    hb(run, "a with a future epoch", "m-a", a.member_epoch + 5)
    hb(run, "unknown member", "m-x", a.member_epoch)
    a3 = hb(run, "a has revoked", "m-a", a2.member_epoch, owned=owned_of(a2))
    b3 = hb(run, "b gets the released partitions", "m-b", b2.member_epoch)
    describe(run, "stable", "g")
    group_steps.list_groups(run, label="list groups")
    group_steps.list_groups(run, types=["consumer"], label="list consumer groups")
    group_steps.list_groups(run, types=["classic"], label="list classic groups")
    group_steps.list_groups(run, states=["stable"], label="list stable groups")
    run.call(15, 5, _label="describe groups v5", groups=[run.group("g")], include_authorized_operations=False)
    run.call(42, 2, _label="delete a group with members", groups_names=[run.group("g")])
    hb(run, "b leaves", "m-b", -1)
    hb(run, "b leaves again", "m-b", -1)
    a4 = hb(run, "a takes everything back", "m-a", a3.member_epoch)
    hb(run, "a heartbeats at its new epoch", "m-a", a4.member_epoch)
    del b3
    hb(run, "a leaves", "m-a", -1)
    describe(run, "empty", "g", "never")
    run.call(42, 2, _label="delete the empty group", groups_names=[run.group("g")])
    describe(run, "deleted", "g")


def test_two_members_range(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(two_members)


def v0_joins(run: ScenarioRun) -> None:
    """v0: the coordinator makes the member id."""
    topics(run)
    request = entity(HEARTBEAT, 0, "ConsumerGroupHeartbeatRequest", group_id=run.group("g"), member_id="",
                     member_epoch=0, instance_id=None, rack_id=None, rebalance_timeout=30000,
                     subscribed_topic_names=[run.topic("t1")], server_assignor=None, topic_partitions=[])
    a = run.send(request, record=False)
    run.alias(a.member_id, "<member-a>")  # before it is recorded: both brokers make their own
    run.record("v0 join", request, a)
    hb(run, "v0 heartbeat", a.member_id, a.member_epoch, version=0)
    describe(run, "v0 member", "g")
    hb(run, "v0 leave", a.member_id, -1, version=0)


def test_v0_member_ids(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(v0_joins)


def static_members(run: ScenarioRun) -> None:
    topics(run)
    a = join(run, "static a joins", "m-a", ["t1"], instance="i-1", assignor="range")
    join(run, "another member with the same instance id", "m-b", ["t1"], instance="i-1", assignor="range")
    hb(run, "instance id of a stranger", "m-b", a.member_epoch, instance="i-1")
    hb(run, "unknown instance id", "m-a", a.member_epoch, instance="i-9")
    hb(run, "static a leaves for now", "m-a", -2, instance="i-1")
    describe(run, "a away", "g")
    join(run, "a comes back as m-c", "m-c", ["t1"], instance="i-1", assignor="range")
    describe(run, "m-c holds a's partitions", "g")
    hb(run, "the old member id is fenced", "m-a", a.member_epoch, instance="i-1")


def test_static_members(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(static_members)


def offsets_with_member_epochs(run: ScenarioRun) -> None:
    topics(run)
    a = join(run, "a joins", "m-a", ["t1"], assignor="range")

    def commit(label: str, member: str, epoch: int, version: int = 9) -> Any:
        return run.call(8, version, _label=label, group_id=run.group("g"), generation_id_or_member_epoch=epoch,
                        member_id=member, group_instance_id=None, retention_time=-1, topics=[
                            entity(8, version, "OffsetCommitRequestTopic", name=run.topic("t1"),
                                   topic_id=run.topic_id("t1"), partitions=[
                                       entity(8, version, "OffsetCommitRequestPartition", partition_index=0,
                                              committed_offset=5, committed_leader_epoch=-1,
                                              committed_metadata="")])])

    def fetch(label: str, member: str | None, epoch: int) -> Any:
        return run.call(9, 9, _label=label, groups=[entity(9, 9, "OffsetFetchRequestGroup", group_id=run.group("g"),
                                                           member_id=member, member_epoch=epoch, topics=None)],
                        require_stable=False)

    commit("commit at the member's epoch", "m-a", a.member_epoch)
    commit("commit with a stale epoch", "m-a", a.member_epoch - 1)
    commit("commit from an unknown member", "m-x", a.member_epoch)
    commit("admin commit to a group with members", "", -1)
    commit("commit v8 from a consumer-protocol member", "m-a", a.member_epoch, version=8)
    fetch("fetch at the member's epoch", "m-a", a.member_epoch)
    fetch("fetch with a stale epoch", "m-a", a.member_epoch - 1)
    fetch("fetch by an admin", None, -1)
    hb(run, "a leaves", "m-a", -1)
    commit("admin commit to the empty group", "", -1)
    fetch("fetch after", None, -1)


def test_offsets_with_member_epochs(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(offsets_with_member_epochs)


def classic_join(run: ScenarioRun, label: str, conn: Any, member_id: str, topics_: list[str], *,
                 alias: str | None = None, version: int = 9, owned: dict[str, list[int]] | None = None) -> Any:
    """JoinGroup of a classic consumer (range, then cooperative-sticky) into group g; a member
    id the broker makes is shown as `alias`."""
    sub = group_steps.subscription([run.topic(t) for t in topics_], version=1,
                                   owned={run.topic(t): p for t, p in (owned or {}).items()})
    pending = group_steps.send_join(run, "g", version=version, conn=conn, member_id=member_id, record=False,
                                    offered=(("range", sub), ("cooperative-sticky", sub)))
    answer = pending.answer()
    if alias is not None:
        run.alias(answer.member_id, alias)
    run.record(label, pending.request, answer)
    return answer


def classic_sync(run: ScenarioRun, label: str, conn: Any, joined: Any, assignments: Any = None) -> Any:
    return group_steps.sync(run, "g", joined.generation_id, joined.member_id, version=5, conn=conn, label=label,
                            assignments=assignments).answer()


def classic_member_joins_a_consumer_group(run: ScenarioRun) -> None:
    """A classic consumer joins a group of the consumer protocol (Kafka's mixed group): it is a
    follower whose generation is its member epoch, its assignment comes from the broker in
    SyncGroup, its heartbeats say when to rejoin; when the last consumer-protocol member
    leaves, the group becomes a classic group and rebalances (the online downgrade)."""
    topics(run)
    a = join(run, "a joins (consumer protocol)", "m-a", ["t1"], assignor="range")
    c = run.connect("classic")
    classic_join(run, "classic member, no id yet", c, "", ["t1"], alias="<generated>")
    # A classic member may bring an id of its own (the one MEMBER_ID_REQUIRED gave is not
    # remembered); "c-1" sorts before "m-a", so the range assignor's split is the same on both.
    j = classic_join(run, "classic member joins", c, "c-1", ["t1"])
    describe(run, "mixed, reconciling", "g")
    classic_sync(run, "classic sync: nothing free yet", c, j)
    group_steps.heartbeat(run, "g", j.generation_id, j.member_id, conn=c, label="classic heartbeat, still waiting")
    group_steps.heartbeat(run, "g", j.generation_id + 1, j.member_id, conn=c, label="classic heartbeat, bad generation")
    a2 = hb(run, "a told to revoke", "m-a", a.member_epoch)
    hb(run, "a has revoked", "m-a", a2.member_epoch, owned=owned_of(a2))
    group_steps.heartbeat(run, "g", j.generation_id, j.member_id, conn=c, label="classic heartbeat: rejoin")
    j2 = classic_join(run, "classic member rejoins", c, j.member_id, ["t1"])
    classic_sync(run, "classic sync: its partitions", c, j2)
    describe(run, "mixed, stable", "g")
    group_steps.list_groups(run, label="listed as a consumer group")
    group_steps.describe_groups(run, ["g"], label="DescribeGroups of a mixed group")
    hb(run, "the last consumer-protocol member leaves", "m-a", -1)
    group_steps.describe_groups(run, ["g"], label="a classic group now, rebalancing")
    describe(run, "no longer a consumer group", "g")
    group_steps.list_groups(run, label="listed as a classic group")
    group_steps.heartbeat(run, "g", j2.generation_id, j2.member_id, conn=c, label="classic heartbeat after the downgrade")
    j3 = classic_join(run, "classic member rejoins the classic group", c, j2.member_id, ["t1"])
    classic_sync(run, "the leader syncs", c, j3,
                 assignments={j3.member_id: group_steps.assignment({run.topic("t1"): [0, 1, 2]})})
    group_steps.describe_groups(run, ["g"], label="classic and stable")


def test_classic_member_joins_a_consumer_group(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(classic_member_joins_a_consumer_group)


def consumer_member_upgrades_a_classic_group(run: ScenarioRun) -> None:
    """A consumer-protocol member joins a classic group with a member (Kafka's online upgrade):
    the group becomes a consumer group at the classic generation, the classic member keeps
    its partitions until it rejoins and gives some up; a classic protocol error or leave
    along the way."""
    topics(run)
    c = run.connect("classic")
    first = classic_join(run, "classic member, no id yet", c, "", ["t1"], alias="<classic>")
    j = classic_join(run, "classic member forms a classic group", c, first.member_id, ["t1"])
    classic_sync(run, "the leader assigns itself everything", c, j,
                 assignments={j.member_id: group_steps.assignment({run.topic("t1"): [0, 1, 2]})})
    a = join(run, "consumer-protocol member upgrades the group", "m-a", ["t1"], assignor="range")
    describe(run, "upgraded", "g")
    group_steps.list_groups(run, label="listed as a consumer group")
    group_steps.heartbeat(run, "g", j.generation_id, j.member_id, conn=c, label="classic heartbeat: rejoin")
    j2 = classic_join(run, "classic member rejoins, still owning all", c, j.member_id, ["t1"],
                      owned={"t1": [0, 1, 2]})
    j3 = classic_join(run, "classic member rejoins, having revoked", c, j2.member_id, ["t1"])
    classic_sync(run, "classic member's share", c, j3)
    a2 = hb(run, "a gets the freed partition", "m-a", a.member_epoch)
    describe(run, "both stable", "g")
    group_steps.leave(run, "g", [(j3.member_id, None)], conn=c, label="classic member leaves")
    describe(run, "a alone", "g")
    del a2


def test_consumer_member_upgrades_a_classic_group(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(consumer_member_upgrades_a_classic_group)



def classic_static_member_replaces_the_last_consumer_member(run: ScenarioRun) -> None:
    """The group's one consumer-protocol member is static and steps away (-2); a classic
    consumer with its instance id takes its place: the group turns classic at once, keeping
    the partitions where they were (no rebalance)."""
    topics(run)
    a = join(run, "static consumer-protocol member", "m-a", ["t1"], instance="i-1", assignor="range")
    c = run.connect("classic")
    j = classic_join(run, "classic member joins", c, "c-1", ["t1"])
    a2 = hb(run, "a told to revoke", "m-a", a.member_epoch, instance="i-1")
    hb(run, "a has revoked", "m-a", a2.member_epoch, owned=owned_of(a2), instance="i-1")
    hb(run, "a steps away for now", "m-a", -2, instance="i-1")
    sub = group_steps.subscription([run.topic("t1")], version=1)
    pending = group_steps.send_join(run, "g", version=9, conn=run.connect("classic-static"), member_id="",
                                    instance_id="i-1", record=False, offered=(("range", sub),))
    answer = pending.answer()
    run.alias(answer.member_id, "<classic static>")
    run.record("a classic consumer takes instance i-1", pending.request, answer)
    group_steps.list_groups(run, label="now a classic group")
    group_steps.describe_groups(run, ["g"], label="classic, stable")
    describe(run, "no longer a consumer group", "g")
    del j


def test_classic_static_member_replaces_the_last_consumer_member(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(classic_static_member_replaces_the_last_consumer_member)


def empty_classic_group_replaced(run: ScenarioRun) -> None:
    """An empty classic group (committed offsets, no members) becomes a consumer group when a
    consumer-protocol member joins, keeping its offsets."""
    topics(run)
    run.call(8, 9, _label="admin commit makes a classic group", group_id=run.group("g"),
             generation_id_or_member_epoch=-1, member_id="", group_instance_id=None, retention_time=-1, topics=[
                 entity(8, 9, "OffsetCommitRequestTopic", name=run.topic("t1"), partitions=[
                     entity(8, 9, "OffsetCommitRequestPartition", partition_index=0, committed_offset=7,
                            committed_leader_epoch=-1, committed_metadata="")])])
    group_steps.list_groups(run, label="listed as classic")
    hb(run, "a bad join changes nothing", "m-b", 0, topics=["t1"], owned=[])  # no rebalance timeout
    group_steps.list_groups(run, label="still classic")
    join(run, "consumer member joins the empty classic group", "m-b", ["t1"], assignor="range")
    group_steps.list_groups(run, label="listed as consumer")
    run.call(9, 9, _label="offsets kept", groups=[entity(9, 9, "OffsetFetchRequestGroup", group_id=run.group("g"),
                                                         member_id="m-b", member_epoch=2, topics=None)],
             require_stable=False)


def test_empty_classic_group_replaced(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(empty_classic_group_replaced)


def wait_for_group_epoch_above(run: ScenarioRun, group: str, epoch: int) -> None:
    """Until the group's epoch passes `epoch` (a regex resolved in the background bumps it):
    describing changes nothing, so both brokers' transcripts stay comparable."""
    def bumped() -> bool:
        answer = run.call(DESCRIBE, 1, _record=False, group_ids=[run.group(group)], include_authorized_operations=False)
        return bool(answer.groups[0].group_epoch > epoch)
    run.wait_until(bumped, f"group {group} past epoch {epoch}", timeout=30)


def regex_subscriptions(run: ScenarioRun) -> None:
    """Subscriptions by regex (RE2J syntax): refused patterns and RE2J's words for them; a
    regex is resolved after the heartbeat that brings it, internal topics included; a member
    sharing a resolved regex is assigned at once; a member that changes its regex within 10 s
    of the last resolution gives up what it held and waits; the last member using a regex
    takes its resolution with it."""
    topics(run)
    t1, t2 = run.topic("t1"), run.topic("t2")
    for label, regex in (("look-ahead", "(?=x)"), ("unbalanced", "("), ("stray paren", "a)"),
                         ("nested repetition", "a**"), ("\\C", "a\\C")):
        hb(run, f"regex refused: {label}", "m-x", 0, regex=regex, owned=[], timeout=30000)
    both = f"{t1}|__consumer_offsets"
    a = hb(run, "a joins by regex", "m-a", 0, regex=both, owned=[], timeout=30000, assignor="range")
    wait_for_group_epoch_above(run, "g", a.member_epoch)
    a2 = hb(run, "a after its regex is resolved", "m-a", a.member_epoch)
    describe(run, "resolved", "g")
    b = hb(run, "b joins by names and the same regex", "m-b", 0, topics=["t2"], regex=both, owned=[],
           timeout=30000, assignor="range")
    a3 = hb(run, "a changes its regex", "m-a", a2.member_epoch, regex=t2)
    describe(run, "a's new regex waits", "g")
    a4 = hb(run, "a has let everything go", "m-a", a3.member_epoch, owned=[])
    hb(run, "b takes what a let go", "m-b", b.member_epoch)
    del a4
    hb(run, "b leaves", "m-b", -1)
    describe(run, "b's regex is gone with b", "g")
    hb(run, "a leaves", "m-a", -1)


def test_regex_subscriptions(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(regex_subscriptions)


def regex_refreshed_after_the_minimum_interval(run: ScenarioRun) -> None:
    """A regex that changes within 10 s of the group's last resolution is resolved by the
    first heartbeat after those 10 s; a topic created later is found the same way."""
    topics(run)
    t1, t2 = run.topic("t1"), run.topic("t2")
    a = hb(run, "a joins by regex", "m-a", 0, regex=t1, owned=[], timeout=30000, assignor="range")
    wait_for_group_epoch_above(run, "g", a.member_epoch)
    a2 = hb(run, "a holds t1", "m-a", a.member_epoch)
    a3 = hb(run, "a widens its regex", "m-a", a2.member_epoch, regex=f"{t1}|{t2}|{run.topic('t3')}")
    hb(run, "a has let t1 go", "m-a", a3.member_epoch, owned=[])

    def resolved() -> Any:  # a gave t1 up when its regex changed (unresolved, it matches nothing yet)
        answer = hb(run, "", "m-a", a3.member_epoch, owned=[], _record=False)
        return answer if answer.member_epoch > a3.member_epoch else None
    a4 = run.wait_until(resolved, "the widened regex to be resolved", timeout=40)
    run.note("a's epoch moved on once resolved", a4.member_epoch - a3.member_epoch)
    describe(run, "widened", "g")
    admin_steps.create_topics(run, [admin_steps.creatable(run, "t3", 1)])
    admin_steps.metadata_topics(run, ["t3"], record=False)

    def found() -> Any:
        answer = hb(run, "", "m-a", a4.member_epoch, _record=False)
        return answer if answer.member_epoch > a4.member_epoch else None
    a5 = run.wait_until(found, "the topic created later to be found", timeout=40)
    run.note("a's epoch moved on once t3 was found", a5.member_epoch - a4.member_epoch)
    describe(run, "t3 found", "g")
    hb(run, "a leaves", "m-a", -1)


def test_regex_refreshed_after_the_minimum_interval(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(regex_refreshed_after_the_minimum_interval)


def wait_until_assignable(run: ScenarioRun, topic_symbols: list[str], partitions: int) -> None:
    """Unrecorded: a probe member of a group of its own joins (and leaves) until its join is
    assigned all `partitions` of the topics. Kafka's group coordinator learns new topics from its
    metadata log a moment after CreateTopics and Metadata answered; in a loaded CI run, one
    group's first join came before it and was assigned nothing."""
    def assigned() -> bool:
        answer = join(run, "probe joins", "m-probe", topic_symbols, group="probe", _record=False)
        hb(run, "probe leaves", "m-probe", -1, group="probe", _record=False)
        got = answer.assignment.topic_partitions if answer.assignment is not None else ()
        return sum(len(tp.partitions) for tp in got) == partitions

    run.wait_until(assigned, f"the group coordinator to assign {', '.join(topic_symbols)}", timeout=30)


def topics_change_under_a_group(run: ScenarioRun) -> None:
    """The group's subscribed topics change without any member asking: partitions are added
    to one, then the other is deleted. Each time the next heartbeat bumps the group epoch; the
    member is given the new partitions, gives up the deleted topic's first, and its committed
    offsets of the deleted topic go."""
    topics(run)
    wait_until_assignable(run, ["t1", "t2"], 5)
    joined = join(run, "a joins", "m-a", ["t1", "t2"], assignor="range")
    held = owned_of(joined)
    a = hb(run, "a holds both", "m-a", joined.member_epoch, owned=held)
    run.call(8, 9, _label="commit both", group_id=run.group("g"), generation_id_or_member_epoch=a.member_epoch,
             member_id="m-a", group_instance_id=None, retention_time=-1, topics=tuple(
                 entity(8, 9, "OffsetCommitRequestTopic", name=run.topic(t), topic_id=run.topic_id(t), partitions=(
                     entity(8, 9, "OffsetCommitRequestPartition", partition_index=0, committed_offset=1,
                            committed_leader_epoch=-1, committed_metadata=""),)) for t in ("t1", "t2")))

    def first_change(label: str, epoch: int, owned: Any) -> Any:
        """Heartbeats (unrecorded, each the same) until the answer changes, which is recorded:
        Kafka's coordinator learns a topic change from its metadata log a moment after the
        request that made it returned."""
        def changed() -> Any:
            answer = hb(run, label, "m-a", epoch, owned=owned, _record=False)
            return answer if answer.assignment is not None else None
        answer = run.wait_until(changed, label, timeout=30)
        run.note(label, {"member_epoch": answer.member_epoch, "assignment": {
            run.normalise.topic_ids.get(tp.topic_id, "?"): sorted(tp.partitions)
            for tp in answer.assignment.topic_partitions}})
        return answer

    admin_steps.create_partitions(run, [("t1", 4, None)], label="t1 grows to 4 partitions")
    grown = first_change("a is given t1's new partition", a.member_epoch, held)
    held = owned_of(grown)
    admin_steps.delete_topics(run, ["t2"], label="t2 deleted")
    revoke = first_change("a must give t2 up", grown.member_epoch, held)
    hb(run, "a gave t2 up", "m-a", revoke.member_epoch, owned=owned_of(revoke))
    describe(run, "after the topic changes", "g")
    run.call(9, 9, _label="offsets after t2 went", groups=[entity(9, 9, "OffsetFetchRequestGroup",
             group_id=run.group("g"), member_id=None, member_epoch=-1, topics=None)], require_stable=False)
    hb(run, "a leaves", "m-a", -1)


def test_topics_change_under_a_group(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(topics_change_under_a_group)


def assignment_interval(run: ScenarioRun) -> None:
    """KIP-1263's batching at a group's own consumer.assignment.interval.ms (the oracle's brokers
    assign at once): a new group's first member is assigned in its join; a member joining
    within the interval waits; once the interval has passed nothing computes the target until
    a member heartbeats (no background run), and that heartbeat's answer carries it."""
    from admin_steps import incremental_alter_configs
    from test_group_configs import GROUP, SET, name, wait_for_group_config

    interval_s = 0.5
    topics(run)
    incremental_alter_configs(run, [(GROUP, name(run, "g"), [("consumer.assignment.interval.ms", SET,
                                                               str(int(interval_s * 1000)))])],
                              label="a 500 ms assignment interval")
    wait_for_group_config(run, "g", "consumer.assignment.interval.ms", str(int(interval_s * 1000)))
    a = join(run, "a joins a new group: assigned at once", "m-a", ["t1"])
    assigned_at = time.monotonic()
    b = join(run, "b joins within the interval", "m-b", ["t1"])
    describe(run, "group epoch ahead of the assignment epoch", "g")
    # What is checked here is that nothing happens for a while: the wait is the interval, twice.
    run.wait_until(lambda: time.monotonic() >= assigned_at + 2 * interval_s, "twice the interval")
    describe(run, "after the interval, before any heartbeat: still assigning", "g")
    a2 = hb(run, "a's heartbeat computes the target: revoke", "m-a", a.member_epoch)
    describe(run, "target computed", "g")
    hb(run, "b waits for a's revocation", "m-b", b.member_epoch)
    hb(run, "a has revoked", "m-a", a2.member_epoch, owned=owned_of(a2))
    hb(run, "b gets the released partitions", "m-b", b.member_epoch)
    describe(run, "stable", "g")
    hb(run, "a leaves", "m-a", -1)
    hb(run, "b leaves", "m-b", -1)


def test_assignment_interval(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(assignment_interval)
