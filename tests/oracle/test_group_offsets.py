"""Differential scenarios: committed offsets (OffsetCommit v2-v10, OffsetFetch v1-v10,
OffsetDelete v0; v10 names topics by id), for simple consumers (generation -1) and live group members, compared
with Kafka 4.4."""

from __future__ import annotations

import pytest

import group_steps as gs
from differential import ScenarioRun
from group_steps import subscription
from steps import create_topic

pytestmark = pytest.mark.timeout(180)


def topics(run: ScenarioRun) -> None:
    gs.wait_for_coordinator(run)
    create_topic(run, "t", 3, record=False)
    create_topic(run, "u", 1, record=False)


def simple_commit(version: int):  # type: ignore[no-untyped-def]
    """Generation -1 (a consumer that assigns itself): offsets with leader epochs and
    metadata, unknown topics and partitions, metadata over offset.metadata.max.bytes,
    negative offsets, retention (v2-v4), member ids of groups that do not exist, an empty
    commit; then the offsets read back."""
    def scenario(run: ScenarioRun) -> None:
        topics(run)
        gs.commit(run, "g", {"t": {0: 10, 1: (20, 5, "meta"), 2: (30, -1, None)}, "u": {0: 0}}, version=version)
        gs.commit(run, "g", {"unknown": {0: 1}, "t": {7: 1, -1: 2, 0: 11}}, version=version)
        # Refused partitions are answered first, then the committed ones merged in.
        gs.commit(run, "g", {"t": {0: 11, 7: 1, 1: 21}, "u": {0: 1}, "unknown": {0: 1}}, version=version)
        gs.commit(run, "g", {"t": {0: (12, 1, "x" * 4097)}}, version=version)
        gs.commit(run, "g", {"t": {0: (12, 1, "x" * 4096)}}, version=version)
        gs.commit(run, "g", {"t": {1: -5}}, version=version)
        if version <= 4:
            gs.commit(run, "g", {"u": {0: 1}}, version=version, retention_ms=3_600_000)
        gs.commit(run, "g", {"t": {0: 13}}, version=version, generation=3, member_id="m")
        gs.commit(run, "g", {"t": {0: 14}}, version=version, generation=-1, member_id="m")
        gs.commit(run, "none", {"t": {0: 1}}, version=version, generation=3, member_id="m")
        gs.commit(run, "none", {"t": {0: 1}}, version=version, generation=-1, member_id="m")
        gs.commit(run, "static", {"t": {0: 1}}, version=version, instance_id="i")
        gs.commit(run, "g", {}, version=version)
        gs.fetch_offsets(run, [("g", {"t": [0, 1, 2], "u": [0]})])
        gs.fetch_offsets(run, [("none", None)])
        gs.fetch_offsets(run, [("static", None)])
    return scenario


@pytest.mark.parametrize("version", range(2, 11))
def test_simple_commit(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(simple_commit(version))


def member_commits(run: ScenarioRun) -> None:
    """Commits from members: the live generation (Stable, PreparingRebalance), stale and
    future generations, unknown and fenced members, generation -1 while the group has
    members, and REBALANCE_IN_PROGRESS while it completes a rebalance."""
    topics(run)
    ca, cb = run.connect("c1"), run.connect("c2")
    first = gs.form_group(run, "g")
    gen, m1 = first.generation, first.member_id
    for version in (2, 5, 9, 10):
        gs.commit(run, "g", {"t": {0: version}}, version=version, generation=gen, member_id=m1)
        gs.commit(run, "g", {"t": {0: 1}}, version=version, generation=gen + 1, member_id=m1)
        gs.commit(run, "g", {"t": {0: 1}}, version=version, generation=gen, member_id="stranger")
        gs.commit(run, "g", {"t": {0: 1}}, version=version)
    gs.commit(run, "g", {"t": {0: 1}}, generation=gen, member_id=m1, instance_id="i")
    second = gs.join_new_member(run, "g", conn=cb)
    gs.wait_for_state(run, "g", "PreparingRebalance")
    gs.commit(run, "g", {"t": {1: 21}}, generation=gen, member_id=m1)
    led = gs.join(run, "g", conn=ca, member_id=m1)
    followed = second.answer()
    gs.commit(run, "g", {"t": {1: 22}}, generation=led.generation_id, member_id=followed.member_id)
    gs.commit(run, "g", {"t": {1: 23}}, generation=gen, member_id=m1)
    gs.fetch_offsets(run, [("g", None)])
    gs.leave(run, "g", [(m1, None), (followed.member_id, None)])
    gs.commit(run, "g", {"t": {2: 5}}, generation=led.generation_id, member_id=m1)
    gs.commit(run, "g", {"t": {2: 6}})
    gs.fetch_offsets(run, [("g", None)])


def test_member_commits(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(member_commits)


def fetch_version(version: int):  # type: ignore[no-untyped-def]
    """OffsetFetch of named partitions (committed, never committed, unknown topic), of all
    a group's offsets (v2+), of an unknown group, of no partitions, require_stable (v7+)."""
    def scenario(run: ScenarioRun) -> None:
        topics(run)
        gs.commit(run, "g", {"t": {0: 10, 1: (20, 5, "meta")}, "u": {0: 3}})
        gs.fetch_offsets(run, [("g", {"t": [0, 1, 2, 9], "u": [0], "unknown": [0]})], version=version)
        if version >= 10:
            gs.fetch_offsets(run, [("g", {"zero": [0], "t": [1]})], version=version)
        gs.fetch_offsets(run, [("unknown", {"t": [0]})], version=version)
        gs.fetch_offsets(run, [("g", {})], version=version)
        gs.fetch_offsets(run, [("", {"t": [0]})], version=version)
        if version >= 2:
            gs.fetch_offsets(run, [("g", None)], version=version)
            gs.fetch_offsets(run, [("unknown", None)], version=version)
        if version >= 7:
            gs.fetch_offsets(run, [("g", {"t": [0]})], version=version, require_stable=True)
            gs.fetch_offsets(run, [("g", None)], version=version, require_stable=True)
    return scenario


@pytest.mark.parametrize("version", range(1, 11))
def test_offset_fetch(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(fetch_version(version))


def fetch_several_groups(version: int):  # type: ignore[no-untyped-def]
    """v8+: several groups in one request, each with its own partitions or all of them."""
    def scenario(run: ScenarioRun) -> None:
        topics(run)
        gs.commit(run, "a", {"t": {0: 1, 2: 3}})
        gs.commit(run, "b", {"u": {0: 7}})
        gs.fetch_offsets(run, [("a", {"t": [0, 1]}), ("b", None), ("unknown", None), ("a", None),
                               ("b", {"u": [0], "unknown": [1]})], version=version)
        gs.fetch_offsets(run, [("a", None)], version=version, require_stable=True)
        gs.fetch_offsets(run, [], version=version)
        if version >= 9:
            # The member id and epoch (KIP-848) are not checked for classic groups.
            member = gs.form_group(run, "live")
            for member_id, epoch in ((member.member_id, member.generation), ("x", 5), (None, 3)):
                gs.fetch_offsets(run, [("live", {"t": [0]}), ("a", None)], version=version,
                                 member_id=member_id, member_epoch=epoch)
    return scenario


@pytest.mark.parametrize("version", [8, 9, 10])
def test_offset_fetch_several_groups(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(fetch_several_groups(version))


def empty_group_id(run: ScenarioRun) -> None:
    """The empty group id: offsets accept it (old simple consumers), the group APIs refuse
    it, and it exists as a group once committed to until deleted."""
    topics(run)
    # The empty group id is shared by every run: start without one an earlier run may have left.
    gs.delete_groups(run, [""], record=False)
    gs.describe_groups(run, [""])
    gs.delete_groups(run, [""])
    gs.fetch_offsets(run, [("", None)], version=7)
    gs.commit(run, "", {"t": {0: 1}})
    gs.commit(run, "", {"t": {0: 1}}, version=2, generation=1, member_id="x")
    gs.fetch_offsets(run, [("", {"t": [0]})], version=1)
    gs.fetch_offsets(run, [("", None)], version=8)
    gs.describe_groups(run, [""])
    gs.delete_offsets(run, "", {"t": [0]})
    for version in (0, 4, 9):
        gs.join(run, "", version=version)
    for version in (0, 5):
        gs.sync(run, "", 1, "x", version=version).answer()
    gs.heartbeat(run, "", 1, "x")
    gs.leave(run, "", [("x", None)])
    gs.delete_groups(run, ["", ""])
    gs.describe_groups(run, [""])


def test_empty_group_id(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(empty_group_id)


def offset_delete(run: ScenarioRun) -> None:
    """OffsetDelete: offsets of topics a Stable consumer group subscribes to are kept
    (GROUP_SUBSCRIBED_TO_TOPIC), others go; an empty group loses any; a group of another
    protocol type is NON_EMPTY_GROUP; unknown groups, topics and partitions."""
    topics(run)
    t = run.topic("t")
    live = gs.form_group(run, "live", offered=(("range", subscription([t])),))
    gs.commit(run, "live", {"t": {0: 1, 1: 2}, "u": {0: 3}}, generation=live.generation, member_id=live.member_id)
    gs.commit(run, "empty", {"t": {0: 5}, "u": {0: 6}})
    c = run.connect("connect")
    joined = gs.join_new_member(run, "connect", conn=c, protocol_type="connect", offered=(("default", b"x"),)).answer()
    gs.sync(run, "connect", joined.generation_id, joined.member_id, conn=c, protocol_type="connect",
            protocol_name="default", assignments={joined.member_id: b"a"}).answer()
    gs.commit(run, "connect", {"t": {0: 1}}, generation=joined.generation_id, member_id=joined.member_id)
    gs.delete_offsets(run, "live", {"t": [0], "u": [0], "unknown": [0]})
    gs.delete_offsets(run, "live", {"u": [0, 5]})
    gs.delete_offsets(run, "empty", {"t": [0, 2], "u": [0]})
    gs.delete_offsets(run, "connect", {"t": [0]})
    gs.delete_offsets(run, "unknown", {"t": [0]})
    gs.delete_offsets(run, "live", {})
    gs.fetch_offsets(run, [("live", None), ("empty", None), ("connect", None)], version=8)


def test_offset_delete(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(offset_delete)
