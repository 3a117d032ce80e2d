"""Differential scenarios: group administration (DescribeGroups v0-v6, ListGroups v0-v5 with
states_filter (v4) and types_filter (v5), DeleteGroups v0-v2) over live, empty, dead and
unknown groups, and the versions of the group APIs each broker serves; compared with Kafka 4.4."""

from __future__ import annotations

import pytest

import group_steps as gs
from differential import ScenarioRun
from group_steps import subscription
from steps import create_topic

pytestmark = pytest.mark.timeout(180)


def some_groups(run: ScenarioRun) -> gs.Member:
    """A Stable consumer group ("live") with offsets, an Empty group with offsets only
    ("empty"), a Stable group of another protocol type ("connect"), a group whose only
    member left ("left")."""
    gs.wait_for_coordinator(run)
    create_topic(run, "t", 2, record=False)
    live = gs.form_group(run, "live", offered=(("range", subscription([run.topic("t")])),))
    gs.commit(run, "live", {"t": {0: 1}}, generation=live.generation, member_id=live.member_id)
    gs.commit(run, "empty", {"t": {0: 5}})
    c = run.connect("connect")
    joined = gs.join_new_member(run, "connect", conn=c, protocol_type="connect", offered=(("default", b"x"),)).answer()
    gs.sync(run, "connect", joined.generation_id, joined.member_id, conn=c, protocol_type="connect",
            protocol_name="default", assignments={joined.member_id: b"a"}).answer()
    left = gs.form_group(run, "left", version=3)
    gs.leave(run, "left", [(left.member_id, None)], version=1)
    return live


def describe_version(version: int):  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        some_groups(run)
        gs.describe_groups(run, ["live", "empty", "connect", "left", "unknown", "live", ""], version=version)
        gs.describe_groups(run, [], version=version)
        if version >= 3:
            gs.describe_groups(run, ["live", "unknown"], version=version, authorized_operations=True)
        gs.delete_groups(run, ["left"])
        gs.describe_groups(run, ["left"], version=version)
    return scenario


@pytest.mark.parametrize("version", range(0, 7))
def test_describe_groups(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(describe_version(version))


def describe_during_rebalance(run: ScenarioRun) -> None:
    """PreparingRebalance and CompletingRebalance: members without metadata, each with the
    assignment it holds; Dead once deleted."""
    live = some_groups(run)
    c = run.connect("c2")
    second = gs.join_new_member(run, "live", conn=c)
    gs.wait_for_state(run, "live", "PreparingRebalance")
    gs.describe_groups(run, ["live"])
    led = gs.join(run, "live", conn=live.conn, member_id=live.member_id)
    followed = second.answer()
    gs.describe_groups(run, ["live"])
    gs.list_groups(run)
    gs.leave(run, "live", [(live.member_id, None), (followed.member_id, None)])
    gs.describe_groups(run, ["live"])
    gs.delete_groups(run, ["live"])
    gs.describe_groups(run, ["live"])
    gs.heartbeat(run, "live", led.generation_id, live.member_id)


def test_describe_during_rebalance(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(describe_during_rebalance)


def list_version(version: int):  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        some_groups(run)
        gs.list_groups(run, version=version)
    return scenario


@pytest.mark.parametrize("version", range(0, 6))
def test_list_groups(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(list_version(version))


def list_filters(run: ScenarioRun) -> None:
    """states_filter (v4+, case-insensitive, unknown states match nothing) and types_filter
    (v5: classic; consumer, share and unknown types)."""
    some_groups(run)
    for states in (["Stable"], ["empty", "STABLE"], ["Bogus"], ["PreparingRebalance", "Dead"]):
        gs.list_groups(run, version=4, states=states)
    for types in (["classic"], ["Classic", "share"], ["consumer"], ["bogus"], ["streams"]):
        gs.list_groups(run, version=5, types=types)
    gs.list_groups(run, version=5, states=["Empty"], types=["classic"])
    gs.list_groups(run, version=5, states=["Stable"], types=["consumer"])


def test_list_groups_filters(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(list_filters)


def delete_version(version: int):  # type: ignore[no-untyped-def]
    """DeleteGroups of non-empty, empty, unknown and repeated groups; a deleted group is
    gone with its offsets and can be formed again from generation 1."""
    def scenario(run: ScenarioRun) -> None:
        some_groups(run)
        gs.delete_groups(run, ["live", "unknown", "connect", "empty", "left", "empty"], version=version)
        gs.delete_groups(run, ["empty"], version=version)
        gs.delete_groups(run, [], version=version)
        gs.fetch_offsets(run, [("empty", None)])
        gs.describe_groups(run, ["empty", "left"])
        gs.list_groups(run)
        gs.form_group(run, "empty")
    return scenario


@pytest.mark.parametrize("version", range(0, 3))
def test_delete_groups(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(delete_version(version))


GROUP_APIS = (gs.OFFSET_COMMIT, gs.OFFSET_FETCH, gs.FIND_COORDINATOR, gs.JOIN_GROUP, gs.HEARTBEAT,
              gs.LEAVE_GROUP, gs.SYNC_GROUP, gs.DESCRIBE_GROUPS, gs.LIST_GROUPS, gs.INIT_PRODUCER_ID,
              gs.DELETE_GROUPS, gs.OFFSET_DELETE)


def group_api_versions(run: ScenarioRun) -> None:
    """The version ranges of the group APIs in ApiVersions (the rest of ApiVersions is not
    this scenario's)."""
    r = run.call(18, 3, _record=False, client_software_name="oracle", client_software_version="1")
    run.note("group API versions", {str(k.api_key): [k.min_version, k.max_version]
                                    for k in r.api_keys if k.api_key in GROUP_APIS})


def test_group_api_versions(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(group_api_versions, known={"KD-201": {"0:.42[1]"}})
