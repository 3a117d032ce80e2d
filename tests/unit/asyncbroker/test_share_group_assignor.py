"""The share groups' `simple` assignor: every assignable partition shared by ceil(members /
partitions) members, every member given its fair part, and what a member holds kept when
the balance allows."""

from __future__ import annotations

import math
import uuid

from hypothesis import given
from hypothesis import strategies as st

from asyncbroker.consumer_group_assignors import MemberSpec
from asyncbroker.share_group_assignor import simple_assign

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def spec(member_id: str, current: dict[uuid.UUID, set[int]] | None = None,
         subscribed: frozenset[uuid.UUID] = frozenset({T1})) -> MemberSpec:
    return MemberSpec(member_id, None, subscribed, {t: frozenset(p) for t, p in (current or {}).items()})


def test_one_member_takes_every_partition() -> None:
    assert simple_assign([spec("a")], {T1: frozenset({0, 1, 2})}, [T1]) == {"a": {T1: frozenset({0, 1, 2})}}


def test_more_members_than_partitions_share_them() -> None:
    got = simple_assign([spec("a", {T1: {0}}), spec("b")], {T1: frozenset({0})}, [T1])
    assert got == {"a": {T1: frozenset({0})}, "b": {T1: frozenset({0})}}


def test_partitions_not_yet_initialized_are_not_assigned() -> None:
    assert simple_assign([spec("a")], {}, [T1]) == {"a": {}}


def test_a_member_keeps_what_it_held_when_the_balance_allows() -> None:
    got = simple_assign([spec("a", {T1: {2, 3}}), spec("b")], {T1: frozenset({0, 1, 2, 3})}, [T1])
    assert got["a"] == {T1: frozenset({2, 3})} and got["b"] == {T1: frozenset({0, 1})}


def test_differing_subscriptions_share_each_topic_among_its_subscribers() -> None:
    both = frozenset({T1, T2})
    got = simple_assign([spec("a", subscribed=both), spec("b", subscribed=frozenset({T2}))],
                        {T1: frozenset({0, 1}), T2: frozenset({0, 1})}, [T1, T2])
    assert got["a"].get(T1) == frozenset({0, 1}) and T1 not in got["b"]
    assert got["a"].get(T2, frozenset()) | got["b"].get(T2, frozenset()) == {0, 1}


def test_a_kept_partition_can_leave_another_short_of_its_sharing_as_in_kafka() -> None:
    got = simple_assign([spec("m0"), spec("m1", {T1: {0}}), spec("m2", {T1: {0}})], {T1: frozenset({0, 1})}, [T1])
    assert got == {"m0": {T1: frozenset({1})}, "m1": {T1: frozenset({0})}, "m2": {T1: frozenset({0})}}


@given(members=st.integers(1, 9), partitions=st.integers(0, 9), seed=st.randoms(use_true_random=False))
def test_every_partition_is_shared_evenly(members: int, partitions: int, seed: object) -> None:
    rng = seed  # type: ignore[assignment]
    specs = [spec(f"m{i}", {T1: {p for p in range(partitions) if rng.random() < 0.3}})  # type: ignore[attr-defined]
             for i in range(members)]
    got = simple_assign(specs, {T1: frozenset(range(partitions))}, [T1])
    counts = [len(a.get(T1, ())) for a in got.values()]
    if partitions == 0:
        assert counts == [0] * members
        return
    # Kafka's greedy fill can leave a partition short of its sharing when members keep what
    # they hold (3 members, 2 partitions, two holding partition 0): never unheld, never over.
    sharing = math.ceil(members / partitions)
    holders = {p: sum(p in a.get(T1, ()) for a in got.values()) for p in range(partitions)}
    assert all(1 <= n <= sharing for n in holders.values()), holders
    assert max(counts) <= math.ceil(sharing * partitions / members)
