"""The classic group coordinator's state machine, driven directly on a real
in-process Broker (real log directory in tmp, real `__consumer_offsets`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from asyncbroker.broker import Broker
from asyncbroker.classic_group import ClassicGroupState
from asyncbroker.config import KafkaConfig
from asyncbroker.group_coordinator import GroupCoordinator
from asyncbroker.group_metadata_manager import JoinGroupResult
from asyncbroker.offsets_topic import GROUP_METADATA_TOPIC_NAME
from storage.clock import MockClock
from wire.errors import (
    ErrorCode,
    FencedInstanceIdError,
    GroupIdNotFoundError,
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    InvalidSessionTimeoutError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)

pytestmark = pytest.mark.timeout(60)

PROTOCOLS = [("range", b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff")]


def make_config(log_dir: Path, *extra: str) -> KafkaConfig:
    return KafkaConfig.load(None, [
        f"log.dirs={log_dir}", "listeners=PLAINTEXT://127.0.0.1:0", "group.initial.rebalance.delay.ms=0",
        "offsets.topic.num.partitions=3", "group.min.session.timeout.ms=10", *extra,
    ], {})


async def start_broker(log_dir: Path, *extra: str, clock: Any = None) -> Broker:
    broker = Broker(make_config(log_dir, *extra), **({"clock": clock} if clock is not None else {}))
    await broker.startup()
    return broker


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    b = await start_broker(tmp_path)
    yield b
    coordinator = getattr(b, "group_coordinator", None)
    if coordinator is not None:
        coordinator.close()
    await b.shutdown()


async def coordinator_of(broker: Broker) -> GroupCoordinator:
    return await broker.loaded_group_coordinator()


def join(c: GroupCoordinator, group: str = "g", member_id: str = "", *, instance: str | None = None,
         session: int = 10_000, rebalance: int = 10_000, protocols: list[tuple[str, bytes]] | None = None,
         protocol_type: str = "consumer", version: int = 9) -> Awaitable[JoinGroupResult]:
    return c.join_group(
        group_id=group, member_id=member_id, group_instance_id=instance, client_id="client",
        client_host="/127.0.0.1", session_timeout_ms=session, rebalance_timeout_ms=rebalance,
        protocol_type=protocol_type, protocols=protocols or PROTOCOLS,
        require_known_member_id=version >= 4 and instance is None, api_version=version,
    )


async def join_new_member(c: GroupCoordinator, group: str = "g", **kwargs: Any) -> JoinGroupResult:
    first = await join(c, group, **kwargs)
    assert first.error == ErrorCode.MEMBER_ID_REQUIRED and first.member_id
    return await join(c, group, first.member_id, **kwargs)


async def wait_for(predicate: Callable[[], Any], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.005)


async def test_first_member_needs_a_member_id_then_leads_generation_one(broker: Broker) -> None:
    c = await coordinator_of(broker)
    res = await join_new_member(c)
    assert res.error == ErrorCode.NONE
    assert res.generation_id == 1 and res.leader == res.member_id
    assert res.protocol_name == "range" and res.protocol_type == "consumer"
    assert [m.member_id for m in res.members] == [res.member_id]
    assert c.groups["g"].state is ClassicGroupState.COMPLETING_REBALANCE
    sync = await c.sync_group(group_id="g", generation_id=1, member_id=res.member_id, group_instance_id=None,
                              protocol_type="consumer", protocol_name="range",
                              assignments={res.member_id: b"assignment"})
    assert sync.error == ErrorCode.NONE and sync.assignment == b"assignment"
    assert c.groups["g"].state is ClassicGroupState.STABLE
    assert broker.topics.get(GROUP_METADATA_TOPIC_NAME).partitions == 3


async def test_describing_a_classic_or_unknown_group_builds_no_other_manager(broker: Broker) -> None:
    """ConsumerGroupDescribe and ShareGroupDescribe of ids that no group of their kind holds are
    answered with Kafka's errors without building the KIP-848 or KIP-932 manager."""
    c = await coordinator_of(broker)
    await join_new_member(c, "classic")
    for describe, kind in ((c.consumer_group_describe, "consumer"), (c.share_group_describe, "share")):
        with pytest.raises(GroupIdNotFoundError, match=f"Group classic is not a {kind} group"):
            describe("classic")
        with pytest.raises(GroupIdNotFoundError, match="Group nobody not found"):
            describe("nobody")
    assert c.consumer_groups.built is None and c.share_groups.built is None


async def test_old_join_versions_join_without_member_id_round_trip(broker: Broker) -> None:
    c = await coordinator_of(broker)
    res = await join(c, version=3)
    assert res.error == ErrorCode.NONE and res.member_id.startswith("client-")


async def test_second_member_triggers_rebalance_and_leader_gets_all_metadata(broker: Broker) -> None:
    c = await coordinator_of(broker)
    a = await join_new_member(c)
    await c.sync_group(group_id="g", generation_id=1, member_id=a.member_id, group_instance_id=None,
                       protocol_type=None, protocol_name=None, assignments={a.member_id: b"all"})
    first_b = await join(c)
    b_join = asyncio.ensure_future(join(c, member_id=first_b.member_id))
    await wait_for(lambda: c.groups["g"].state is ClassicGroupState.PREPARING_REBALANCE)
    with pytest.raises(RebalanceInProgressError):
        await c.heartbeat(group_id="g", generation_id=1, member_id=a.member_id, group_instance_id=None)
    with pytest.raises(RebalanceInProgressError):
        await c.sync_group(group_id="g", generation_id=1, member_id=a.member_id, group_instance_id=None,
                           protocol_type=None, protocol_name=None, assignments={})
    a_join = await join(c, member_id=a.member_id)
    b_res = await b_join
    assert a_join.generation_id == b_res.generation_id == 2
    assert a_join.leader == a.member_id
    assert sorted(m.member_id for m in a_join.members) == sorted([a.member_id, b_res.member_id])
    assert b_res.members == []
    # The follower waits for the leader's assignment.
    follower = asyncio.ensure_future(c.sync_group(group_id="g", generation_id=2, member_id=b_res.member_id,
                                                  group_instance_id=None, protocol_type="consumer",
                                                  protocol_name="range", assignments={}))
    # Parked: its SyncGroup reached the coordinator and waits on the member, unanswered.
    await wait_for(lambda: c.groups["g"].members[b_res.member_id].sync_future is not None)
    assert not follower.done()
    leader = await c.sync_group(group_id="g", generation_id=2, member_id=a.member_id, group_instance_id=None,
                                protocol_type="consumer", protocol_name="range",
                                assignments={a.member_id: b"A", b_res.member_id: b"B"})
    assert leader.assignment == b"A" and (await follower).assignment == b"B"
    assert c.describe_group("g").state == "Stable"
    assert [m.assignment for m in c.describe_group("g").members] == [b"A", b"B"]


async def test_validation_errors(broker: Broker) -> None:
    c = await coordinator_of(broker)
    with pytest.raises(InvalidSessionTimeoutError):
        await join(c, session=5)
    with pytest.raises(UnknownMemberIdError):
        await join(c, member_id="nobody")
    a = await join_new_member(c)
    with pytest.raises(InconsistentGroupProtocolError):
        await join(c, protocol_type="connect")
    with pytest.raises(InconsistentGroupProtocolError):
        await join(c, protocols=[("sticky", b"")])
    with pytest.raises(IllegalGenerationError):
        await c.heartbeat(group_id="g", generation_id=7, member_id=a.member_id, group_instance_id=None)
    with pytest.raises(UnknownMemberIdError):
        await c.heartbeat(group_id="g", generation_id=1, member_id="ghost", group_instance_id=None)
    with pytest.raises(UnknownMemberIdError):
        await c.heartbeat(group_id="other", generation_id=1, member_id=a.member_id, group_instance_id=None)
    with pytest.raises(InconsistentGroupProtocolError):
        await c.sync_group(group_id="g", generation_id=1, member_id=a.member_id, group_instance_id=None,
                           protocol_type="consumer", protocol_name="roundrobin", assignments={})
    # Commits from a member that is completing a rebalance are refused until it syncs.
    with pytest.raises(RebalanceInProgressError):
        await c.commit_offsets(group_id="g", member_id=a.member_id, group_instance_id=None, generation_id=1,
                               retention_time_ms=-1, offsets=[("t", 0, 1, -1, "")], api_version=8)
    with pytest.raises(IllegalGenerationError):
        await c.commit_offsets(group_id="new", member_id="x", group_instance_id=None, generation_id=3,
                               retention_time_ms=-1, offsets=[("t", 0, 1, -1, "")], api_version=8)
    with pytest.raises(GroupIdNotFoundError):
        await c.commit_offsets(group_id="new", member_id="x", group_instance_id=None, generation_id=3,
                               retention_time_ms=-1, offsets=[("t", 0, 1, -1, "")], api_version=9)


async def test_session_timeout_removes_member_and_rebalances(broker: Broker) -> None:
    c = await coordinator_of(broker)
    a = await join_new_member(c, session=10_000)
    await c.sync_group(group_id="g", generation_id=1, member_id=a.member_id, group_instance_id=None,
                       protocol_type=None, protocol_name=None, assignments={})
    first_b = await join(c, session=10_000, rebalance=10_000)
    b_join = asyncio.ensure_future(join(c, member_id=first_b.member_id, session=10_000))
    a_join = await join(c, member_id=a.member_id)
    b_res = await b_join
    assert a_join.generation_id == 2
    await c.sync_group(group_id="g", generation_id=2, member_id=a.member_id, group_instance_id=None,
                       protocol_type=None, protocol_name=None, assignments={})
    await c.sync_group(group_id="g", generation_id=2, member_id=b_res.member_id, group_instance_id=None,
                       protocol_type=None, protocol_name=None, assignments={})
    # b stops heartbeating; a keeps going. Just before b's session ends nothing has happened...
    broker.clock.advance(9_000)
    c.timer.poll()
    await c.heartbeat(group_id="g", generation_id=2, member_id=a.member_id, group_instance_id=None)
    assert b_res.member_id in c.groups["g"].members
    # ...and once the clock passes it, b is removed and a learns of the rebalance.
    broker.clock.advance(1_100)
    c.timer.poll()
    with pytest.raises(RebalanceInProgressError):
        await c.heartbeat(group_id="g", generation_id=2, member_id=a.member_id, group_instance_id=None)
    assert b_res.member_id not in c.groups["g"].members
    again = await join(c, member_id=a.member_id)
    assert again.generation_id == 3 and [m.member_id for m in again.members] == [a.member_id]


async def test_pending_member_that_never_rejoins_expires(broker: Broker) -> None:
    c = await coordinator_of(broker)
    first = await join(c, session=5_000)
    assert first.member_id in c.groups["g"].pending_join_members
    broker.clock.advance(4_900)
    c.timer.poll()
    assert first.member_id in c.groups["g"].pending_join_members
    broker.clock.advance(200)
    c.timer.poll()
    assert first.member_id not in c.groups["g"].pending_join_members


async def test_rebalance_timeout_drops_members_that_do_not_rejoin(broker: Broker) -> None:
    c = await coordinator_of(broker)
    a = await join_new_member(c, rebalance=200)
    await c.sync_group(group_id="g", generation_id=1, member_id=a.member_id, group_instance_id=None,
                       protocol_type=None, protocol_name=None, assignments={})
    first_b = await join(c, rebalance=200)
    b_join = asyncio.ensure_future(join(c, member_id=first_b.member_id, rebalance=200))  # a never rejoins
    await wait_for(lambda: first_b.member_id in c.groups["g"].members)
    broker.clock.advance(150)
    c.timer.poll()
    await asyncio.sleep(0)
    assert not b_join.done()  # the rebalance waits for a until the rebalance timeout
    broker.clock.advance(100)
    c.timer.poll()
    b_res = await asyncio.wait_for(b_join, 5)
    assert b_res.generation_id == 2 and b_res.leader == b_res.member_id
    assert list(c.groups["g"].members) == [b_res.member_id]


async def test_initial_rebalance_delay_collects_members(tmp_path: Path) -> None:
    broker = await start_broker(tmp_path, "group.initial.rebalance.delay.ms=300")
    try:
        c = await coordinator_of(broker)
        ids = [(await join(c)).member_id for _ in range(3)]
        joins = [asyncio.ensure_future(join(c, member_id=ids[0]))]
        await wait_for(lambda: ids[0] in c.groups["g"].members)
        broker.clock.advance(250)  # within the delay the others still join the first generation
        c.timer.poll()
        joins += [asyncio.ensure_future(join(c, member_id=m)) for m in ids[1:]]
        await wait_for(lambda: all(m in c.groups["g"].members for m in ids))
        assert not any(j.done() for j in joins)
        broker.clock.advance(3 * 300)  # the delay (extended by each join, as Kafka's) ends
        c.timer.poll()
        results = await asyncio.wait_for(asyncio.gather(*joins), 5)
        assert {r.generation_id for r in results} == {1}
        leader = [r for r in results if r.members]
        assert len(leader) == 1 and len(leader[0].members) == 3
    finally:
        (await coordinator_of(broker)).close()
        await broker.shutdown()


async def test_static_member_rejoin_keeps_generation_and_fences_old_id(broker: Broker) -> None:
    c = await coordinator_of(broker)
    a = await join(c, instance="i-1")  # static: no MEMBER_ID_REQUIRED round trip
    assert a.error == ErrorCode.NONE and a.member_id.startswith("i-1-")
    await c.sync_group(group_id="g", generation_id=1, member_id=a.member_id, group_instance_id="i-1",
                       protocol_type=None, protocol_name=None, assignments={a.member_id: b"mine"})
    # The same instance restarts: new member id, same generation, no rebalance.
    again = await join(c, instance="i-1")
    assert again.error == ErrorCode.NONE and again.member_id != a.member_id
    assert again.generation_id == 1 and again.leader == again.member_id and again.skip_assignment
    assert c.groups["g"].state is ClassicGroupState.STABLE
    sync = await c.sync_group(group_id="g", generation_id=1, member_id=again.member_id, group_instance_id="i-1",
                              protocol_type=None, protocol_name=None, assignments={})
    assert sync.assignment == b"mine"
    with pytest.raises(FencedInstanceIdError):
        await c.heartbeat(group_id="g", generation_id=1, member_id=a.member_id, group_instance_id="i-1")
    # LeaveGroup by instance id with the stale member id is fenced; with no member id it works.
    assert await c.leave_group("g", [(a.member_id, "i-1", None)]) == [ErrorCode.FENCED_INSTANCE_ID]
    assert await c.leave_group("g", [("", "i-1", "bye")]) == [ErrorCode.NONE]
    assert c.groups["g"].state is ClassicGroupState.EMPTY


async def test_leave_group_results_and_empty_group_generation(broker: Broker) -> None:
    c = await coordinator_of(broker)
    a = await join_new_member(c)
    assert await c.leave_group("g", [("ghost", None, None), (a.member_id, None, None)]) == [
        ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.NONE]
    group = c.groups["g"]
    assert group.state is ClassicGroupState.EMPTY and group.generation_id == 2
    # An unknown group answers each leaving member UNKNOWN_MEMBER_ID (Kafka 4.4).
    assert await c.leave_group("nope", [("x", None, None), ("", "i", None)]) == [
        ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.UNKNOWN_MEMBER_ID]


async def test_offsets_commit_fetch_delete_and_reload(tmp_path: Path) -> None:
    broker = await start_broker(tmp_path)
    c = await coordinator_of(broker)
    # A "simple" group: no members, generation -1 commits.
    res = await c.commit_offsets(group_id="simple", member_id="", group_instance_id=None, generation_id=-1,
                                 retention_time_ms=-1, offsets=[("t", 0, 10, 2, "m"), ("t", 1, 20, -1, None)],
                                 api_version=8)
    assert res == {("t", 0): 0, ("t", 1): 0}
    too_big = await c.commit_offsets(group_id="simple", member_id="", group_instance_id=None, generation_id=-1,
                                     retention_time_ms=-1, offsets=[("t", 2, 1, -1, "x" * 5000)], api_version=8)
    assert too_big == {("t", 2): ErrorCode.OFFSET_METADATA_TOO_LARGE}
    a = await join_new_member(c, group="live")
    await c.sync_group(group_id="live", generation_id=1, member_id=a.member_id, group_instance_id=None,
                       protocol_type=None, protocol_name=None, assignments={a.member_id: b"x"})
    await c.commit_offsets(group_id="live", member_id=a.member_id, group_instance_id=None, generation_id=1,
                           retention_time_ms=-1, offsets=[("t", 0, 5, 0, "")], api_version=8)
    fetched = c.fetch_offsets("simple", [("t", 0), ("t", 1), ("t", 9)])
    assert [(f.partition, f.offset, f.leader_epoch, f.metadata) for f in fetched] == [
        (0, 10, 2, "m"), (1, 20, -1, ""), (9, -1, -1, "")]
    assert [f.offset for f in c.fetch_offsets("nobody", None)] == []
    assert {g.group_id: g.state for g in c.list_groups()} == {"simple": "Empty", "live": "Stable"}
    assert [g.group_id for g in c.list_groups(states=["stable"])] == ["live"]
    assert c.list_groups(types=["consumer"]) == []
    assert await c.delete_groups(["live", "simple", "missing"]) == {
        "live": ErrorCode.NON_EMPTY_GROUP, "simple": ErrorCode.NONE, "missing": ErrorCode.GROUP_ID_NOT_FOUND}
    assert c.fetch_offsets("simple", None) == []
    c.close()
    await broker.shutdown()

    # A new broker on the same directory loads the groups and offsets back.
    broker = await start_broker(tmp_path)
    try:
        c = await coordinator_of(broker)
        assert "simple" not in c.groups
        live = c.groups["live"]
        assert live.state is ClassicGroupState.STABLE and live.generation_id == 1
        assert live.members[a.member_id].assignment == b"x" and live.leader_id == a.member_id
        assert [(f.topic, f.partition, f.offset) for f in c.fetch_offsets("live", None)] == [("t", 0, 5)]
    finally:
        c.close()
        await broker.shutdown()


async def test_offset_delete_refuses_subscribed_topics_of_live_consumer_group(broker: Broker) -> None:
    c = await coordinator_of(broker)
    a = await join_new_member(c)  # PROTOCOLS subscribes to topic "t"
    await c.sync_group(group_id="g", generation_id=1, member_id=a.member_id, group_instance_id=None,
                       protocol_type=None, protocol_name=None, assignments={})
    await c.commit_offsets(group_id="g", member_id=a.member_id, group_instance_id=None, generation_id=1,
                           retention_time_ms=-1, offsets=[("t", 0, 1, -1, ""), ("u", 0, 2, -1, "")],
                           api_version=8)
    result = await c.delete_offsets("g", [("t", 0), ("u", 0)])
    assert result == {("t", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ("u", 0): ErrorCode.NONE}
    assert [f.topic for f in c.fetch_offsets("g", None)] == ["t"]
    with pytest.raises(GroupIdNotFoundError):
        await c.delete_offsets("missing", [("t", 0)])


async def test_offsets_expire_after_retention_and_empty_group_is_removed(tmp_path: Path) -> None:
    clock = MockClock()
    broker = await start_broker(tmp_path, "offsets.retention.minutes=1", clock=clock)
    try:
        c = await coordinator_of(broker)
        a = await join_new_member(c)
        await c.sync_group(group_id="g", generation_id=1, member_id=a.member_id, group_instance_id=None,
                           protocol_type=None, protocol_name=None, assignments={})
        await c.commit_offsets(group_id="g", member_id=a.member_id, group_instance_id=None, generation_id=1,
                               retention_time_ms=-1, offsets=[("t", 0, 1, -1, ""), ("x", 0, 1, -1, "")],
                               api_version=8)
        await c.commit_offsets(group_id="s", member_id="", group_instance_id=None, generation_id=-1,
                               retention_time_ms=-1, offsets=[("t", 0, 7, -1, "")], api_version=8)
        clock.advance(61_000)
        # A Stable consumer group keeps the offsets of topics it subscribes to ("t"), not the others.
        assert await c.cleanup_group_metadata() == 2
        assert [f.topic for f in c.fetch_offsets("g", None)] == ["t"]
        assert "s" not in c.groups
        await c.leave_group("g", [(a.member_id, None, None)])
        assert await c.cleanup_group_metadata() == 0  # retention counts from when the group became empty
        clock.advance(61_000)
        assert await c.cleanup_group_metadata() == 1
        assert "g" not in c.groups
        c.close()
        await broker.shutdown()
        broker = await start_broker(tmp_path, "offsets.retention.minutes=1", clock=clock)
        c = await coordinator_of(broker)
        assert c.groups == {} and c.offsets == {}  # the tombstones are what the log says now
    finally:
        (await coordinator_of(broker)).close()
        await broker.shutdown()


async def test_a_protocol_offered_twice_leaves_the_group_preparing_without_a_timer_failure(
        broker: Broker, caplog: pytest.LogCaptureFixture) -> None:
    """As Kafka: a member listing one protocol name twice supports no protocol (each listing
    counts), so the join phase cannot complete and the group stays in PreparingRebalance. It
    must say so, not fail inside a timer callback."""
    c = await coordinator_of(broker)
    twice = [("range", b"a"), ("range", b"b")]
    first = await join(c, "d", protocols=twice)
    pending = asyncio.ensure_future(join(c, "d", first.member_id, protocols=twice))
    await wait_for(lambda: first.member_id in c.groups["d"].members)
    broker.clock.advance(5_000)
    c.timer.poll()
    await asyncio.sleep(0)
    assert not pending.done() and c.describe_group("d").state == "PreparingRebalance"
    assert "no protocol is supported by every member" in caplog.text
    assert "Timer callback" not in caplog.text
    pending.cancel()


async def test_consumer_protocol_group_offsets_expire_and_the_empty_group_goes(tmp_path: Path) -> None:
    """A consumer-protocol group: an offset expires retention after its commit unless a member
    subscribes to its topic; once empty and without offsets, the group is removed for good."""
    clock = MockClock()
    settings = ("offsets.retention.minutes=1", "group.consumer.session.timeout.ms=600000",
                "group.consumer.max.session.timeout.ms=600000")
    broker = await start_broker(tmp_path, *settings, clock=clock)
    try:
        for topic in ("t", "x"):
            await broker.topics.create_topic(topic, 1, 1)
        c = await coordinator_of(broker)
        joined = await c.consumer_group_heartbeat(
            api_version=1, group_id="cg", member_id="m-a", member_epoch=0, instance_id=None, rack_id=None,
            rebalance_timeout_ms=30_000, subscribed_topic_names=("t",), subscribed_topic_regex=None,
            server_assignor=None, owned=(), client_id="client", client_host="/127.0.0.1")
        await c.commit_offsets(group_id="cg", member_id="m-a", group_instance_id=None,
                               generation_id=joined.member_epoch, retention_time_ms=-1,
                               offsets=[("t", 0, 1, -1, ""), ("x", 0, 1, -1, "")], api_version=9)
        clock.advance(61_000)
        assert await c.cleanup_group_metadata() == 1  # "x"; "t" is subscribed
        assert [f.topic for f in c.fetch_offsets("cg", None)] == ["t"]
        await c.consumer_group_heartbeat(
            api_version=1, group_id="cg", member_id="m-a", member_epoch=-1, instance_id=None, rack_id=None,
            rebalance_timeout_ms=-1, subscribed_topic_names=None, subscribed_topic_regex=None,
            server_assignor=None, owned=None, client_id="client", client_host="/127.0.0.1")
        assert await c.cleanup_group_metadata() == 1  # from its commit, 61 s ago: not from the leave
        assert "cg" not in c.consumer_groups.groups and "cg" not in c.offsets
        c.close()
        await broker.shutdown()
        broker = await start_broker(tmp_path, *settings, clock=clock)
        c = await coordinator_of(broker)
        assert "cg" not in c.consumer_groups.groups and c.offsets == {}
    finally:
        (await coordinator_of(broker)).close()
        await broker.shutdown()


async def test_a_group_config_sets_its_members_session_timeout(tmp_path: Path) -> None:
    """consumer.session.timeout.ms of one group (its group config) over the broker's 45 s: its
    member is fenced when that runs out, a member of another group is not."""
    clock = MockClock()
    broker = await start_broker(tmp_path, clock=clock)
    try:
        await broker.topics.create_topic("t", 1, 1)
        c = await coordinator_of(broker)
        await c.group_configs.incremental_alter("short", [("consumer.session.timeout.ms", 0, "50000")], False)
        await c.group_configs.incremental_alter("short", [("consumer.heartbeat.interval.ms", 0, "6000")], False)
        for group in ("short", "default"):
            joined = await c.consumer_group_heartbeat(
                api_version=1, group_id=group, member_id="m-a", member_epoch=0, instance_id=None, rack_id=None,
                rebalance_timeout_ms=30_000, subscribed_topic_names=("t",), subscribed_topic_regex=None,
                server_assignor=None, owned=(), client_id="client", client_host="/127.0.0.1")
            assert joined.heartbeat_interval_ms == (6000 if group == "short" else 5000)

        async def fenced(group: str) -> bool:
            """Whether the group's member is gone once the fencing task (a write) has run."""
            deadline = asyncio.get_running_loop().time() + 5
            while "m-a" in c.consumer_groups.groups[group].members:
                if asyncio.get_running_loop().time() > deadline:
                    return False
                await asyncio.sleep(0.01)  # a condition polled with a deadline
            return True

        clock.advance(46_000)  # past the broker's 45 s, short of the group's 50 s
        c.timer.poll()
        assert await fenced("default")
        assert "m-a" in c.consumer_groups.groups["short"].members
        clock.advance(5_000)
        c.timer.poll()
        assert await fenced("short")
    finally:
        (await coordinator_of(broker)).close()
        await broker.shutdown()
