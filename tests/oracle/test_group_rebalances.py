"""Differential scenarios: rebalances that members leave or change midway, and how the group
chooses its protocol; compared with Kafka 4.4."""

from __future__ import annotations

import pytest

import group_steps as gs
from differential import ScenarioRun

pytestmark = pytest.mark.timeout(180)


def leader_leaves_while_completing(run: ScenarioRun) -> None:
    """The leader leaves after the join phase, before it syncs: the follower's parked
    SyncGroup answers REBALANCE_IN_PROGRESS, and the follower leads the next generation."""
    gs.wait_for_coordinator(run)
    ca, cb = run.connect("c1"), run.connect("c2")
    first = gs.form_group(run, "g")
    second = gs.join_new_member(run, "g", conn=cb)
    gs.wait_for_state(run, "g", "PreparingRebalance")
    led = gs.join(run, "g", conn=ca, member_id=first.member_id)
    followed = second.answer()
    parked = gs.sync(run, "g", led.generation_id, followed.member_id, conn=cb)
    gs.wait_for_state(run, "g", "CompletingRebalance")
    gs.leave(run, "g", [(first.member_id, None)], conn=ca)
    parked.answer()
    alone = gs.join(run, "g", conn=cb, member_id=followed.member_id)
    gs.sync(run, "g", alone.generation_id, followed.member_id, conn=cb,
            assignments={followed.member_id: b"all"}).answer()
    gs.describe_groups(run, ["g"])


def test_leader_leaves_while_completing(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(leader_leaves_while_completing)


def member_leaves_while_preparing(run: ScenarioRun) -> None:
    """A member that has not rejoined leaves during PreparingRebalance: the join phase
    completes at once for the members that did."""
    gs.wait_for_coordinator(run)
    ca, cb, cc = run.connect("c1"), run.connect("c2"), run.connect("c3")
    first = gs.form_group(run, "g")
    second = gs.join_new_member(run, "g", conn=cb)
    gs.wait_for_state(run, "g", "PreparingRebalance")
    led = gs.join(run, "g", conn=ca, member_id=first.member_id)
    followed = second.answer()
    follower_sync = gs.sync(run, "g", led.generation_id, followed.member_id, conn=cb)
    gs.sync(run, "g", led.generation_id, first.member_id, conn=ca,
            assignments={first.member_id: b"1", followed.member_id: b"2"}).answer()
    follower_sync.answer()
    third = gs.join_new_member(run, "g", conn=cc)
    gs.wait_for_state(run, "g", "PreparingRebalance")
    rejoin = gs.send_join(run, "g", conn=ca, member_id=first.member_id)
    gs.leave(run, "g", [(followed.member_id, None)], conn=cb)
    rejoin.answer()
    third.answer()
    gs.describe_groups(run, ["g"])


def test_member_leaves_while_preparing(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(member_leaves_while_preparing)


def static_replacement_during_rebalance(run: ScenarioRun) -> None:
    """A static member restarts (same instance id, no member id) while its group prepares a
    rebalance, and again while it completes one (which starts another)."""
    gs.wait_for_coordinator(run)
    ca, cb, cc, cd = run.connect("c1"), run.connect("c2"), run.connect("c3"), run.connect("c4")
    first = gs.join(run, "g", conn=ca, instance_id="s1")
    gs.sync(run, "g", first.generation_id, first.member_id, conn=ca, instance_id="s1",
            assignments={first.member_id: b"a"}).answer()
    second = gs.send_join(run, "g", conn=cb, instance_id="s2")
    gs.wait_for_state(run, "g", "PreparingRebalance")
    replaced = gs.join(run, "g", conn=cc, instance_id="s1")
    followed = second.answer()
    gs.heartbeat(run, "g", first.generation_id, first.member_id, conn=ca, instance_id="s1")
    gs.describe_groups(run, ["g"])
    again = gs.send_join(run, "g", conn=cd, instance_id="s1")
    gs.wait_for_state(run, "g", "PreparingRebalance")
    gs.sync(run, "g", followed.generation_id, followed.member_id, conn=cb, instance_id="s2").answer()
    follow = gs.send_join(run, "g", conn=cb, instance_id="s2", member_id=followed.member_id)
    latest = again.answer()
    follow.answer()
    gs.join(run, "g", conn=cc, instance_id="s1", member_id=replaced.member_id)
    gs.sync(run, "g", latest.generation_id, latest.member_id, conn=cd, instance_id="s1",
            assignments={latest.member_id: b"x", followed.member_id: b"y"}).answer()
    gs.describe_groups(run, ["g"])


def test_static_replacement_during_rebalance(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(static_replacement_during_rebalance)


def protocol_vote(run: ScenarioRun) -> None:
    """The group's protocol is one every member supports, chosen by the members'
    preferences (most votes); a member offering only protocols outside that set is refused."""
    gs.wait_for_coordinator(run)
    ca, cb, cc, cd = run.connect("c1"), run.connect("c2"), run.connect("c3"), run.connect("c4")
    first = gs.form_group(run, "g", offered=(("range", b"1"), ("roundrobin", b"1"), ("sticky", b"1")))
    second = gs.join_new_member(run, "g", conn=cb, offered=(("sticky", b"2"), ("roundrobin", b"2")))
    third = gs.join_new_member(run, "g", conn=cc, offered=(("sticky", b"3"), ("range", b"3"), ("roundrobin", b"3")))
    gs.wait_for_members(run, "g", 3)
    gs.join(run, "g", conn=cd, offered=(("range", b"4"),))
    led = gs.send_join(run, "g", conn=ca, member_id=first.member_id,
                       offered=(("range", b"1"), ("roundrobin", b"1"), ("sticky", b"1")))
    for pending in (led, second, third):
        pending.answer()
    gs.describe_groups(run, ["g"])


def test_protocol_vote(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(protocol_vote)


def leave_in_batches(run: ScenarioRun) -> None:
    """LeaveGroup v3+ with static and dynamic members in one request (one rebalance for all),
    then the members that stayed rejoin."""
    gs.wait_for_coordinator(run)
    ca, cb, cc = run.connect("c1"), run.connect("c2"), run.connect("c3")
    first = gs.form_group(run, "g")
    second = gs.send_join(run, "g", conn=cb, instance_id="s2")
    third = gs.join_new_member(run, "g", conn=cc)
    gs.wait_for_members(run, "g", 3)
    led = gs.join(run, "g", conn=ca, member_id=first.member_id)
    s2, m3 = second.answer(), third.answer()
    gs.leave(run, "g", [("", "s2"), (m3.member_id, None), ("ghost", None)], version=4, reason="scaling down")
    gs.heartbeat(run, "g", led.generation_id, first.member_id, conn=ca)
    alone = gs.join(run, "g", conn=ca, member_id=first.member_id)
    gs.heartbeat(run, "g", s2.generation_id, s2.member_id, conn=cb, instance_id="s2")
    gs.sync(run, "g", alone.generation_id, first.member_id, conn=ca, assignments={first.member_id: b"all"}).answer()
    gs.describe_groups(run, ["g"])


def test_leave_in_batches(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(leave_in_batches)
