"""The consumer protocol's building blocks: reconciliation (Kafka's CurrentAssignmentBuilder)
and the range and uniform assignors."""

from __future__ import annotations

import uuid

from asyncbroker.consumer_group import ConsumerGroup, ConsumerGroupMember, MemberState, reconcile
from asyncbroker.consumer_group_assignors import AssignmentSpec, MemberSpec, assign

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)
BOTH = frozenset({T1, T2})


def member(group: ConsumerGroup, member_id: str, epoch: int, assigned: dict[uuid.UUID, set[int]]) -> ConsumerGroupMember:
    m = ConsumerGroupMember(member_id)
    group.put_member(m)
    group.update_assignment(m, member_epoch=epoch, previous_member_epoch=epoch - 1, state=MemberState.STABLE,
                            assigned={t: frozenset(p) for t, p in assigned.items()}, pending_revocation={})
    return m


def test_revocation_comes_before_assignment() -> None:
    group = ConsumerGroup("g")
    a = member(group, "a", 2, {T1: {0, 1, 2}})
    b = member(group, "b", 2, {})
    # Target epoch 3: a keeps 0 and 1, b gets 2. a must give 2 up first.
    nxt = reconcile(group, a, 3, {T1: frozenset({0, 1})}, owned=[(T1, [0, 1, 2])], subscribed=BOTH, subscription_changed=False)
    assert nxt == (2, 2, MemberState.UNREVOKED_PARTITIONS, {T1: frozenset({0, 1})}, {T1: frozenset({2})})
    group.update_assignment(a, member_epoch=nxt[0], previous_member_epoch=nxt[1], state=nxt[2], assigned=nxt[3],
                            pending_revocation=nxt[4])
    # b moves to the target epoch but waits for 2: a still holds it.
    nb = reconcile(group, b, 3, {T1: frozenset({2})}, owned=[], subscribed=BOTH, subscription_changed=False)
    assert nb == (3, 2, MemberState.UNRELEASED_PARTITIONS, {}, {})
    group.update_assignment(b, member_epoch=nb[0], previous_member_epoch=nb[1], state=nb[2], assigned=nb[3],
                            pending_revocation=nb[4])
    # a still reports 2: nothing moves. Then it reports it gone: stable at the target epoch.
    assert reconcile(group, a, 3, {T1: frozenset({0, 1})}, owned=[(T1, [0, 1, 2])], subscribed=BOTH, subscription_changed=False)[2] == MemberState.UNREVOKED_PARTITIONS
    na = reconcile(group, a, 3, {T1: frozenset({0, 1})}, owned=[(T1, [0, 1])], subscribed=BOTH, subscription_changed=False)
    assert na == (3, 2, MemberState.STABLE, {T1: frozenset({0, 1})}, {})
    group.update_assignment(a, member_epoch=na[0], previous_member_epoch=na[1], state=na[2], assigned=na[3],
                            pending_revocation=na[4])
    assert group.current_partition_epoch(T1, 2) == -1
    # Now b gets it.
    assert reconcile(group, b, 3, {T1: frozenset({2})}, owned=[], subscribed=BOTH, subscription_changed=False) == (3, 3, MemberState.STABLE, {T1: frozenset({2})}, {})


def test_a_member_that_did_not_say_what_it_owns_still_owns_it() -> None:
    group = ConsumerGroup("g")
    a = member(group, "a", 2, {T1: {0, 1}})
    nxt = reconcile(group, a, 3, {T1: frozenset({0})}, owned=None, subscribed=BOTH, subscription_changed=False)
    assert nxt[2] == MemberState.UNREVOKED_PARTITIONS
    group.update_assignment(a, member_epoch=nxt[0], previous_member_epoch=nxt[1], state=nxt[2], assigned=nxt[3],
                            pending_revocation=nxt[4])
    assert reconcile(group, a, 3, {T1: frozenset({0})}, owned=None, subscribed=BOTH, subscription_changed=False)[2] == MemberState.UNREVOKED_PARTITIONS


def test_a_topic_left_is_revoked_before_a_new_target_says_so() -> None:
    """The member stops subscribing to T2 (its regex changed, not yet resolved): at its own
    epoch it gives T2 up at once and keeps T1 (Kafka's updateCurrentAssignment)."""
    group = ConsumerGroup("g")
    a = member(group, "a", 3, {T1: {0}, T2: {0, 1}})
    target = {T1: frozenset({0}), T2: frozenset({0, 1})}
    assert reconcile(group, a, 3, target, owned=[(T1, [0]), (T2, [0, 1])], subscribed=frozenset({T1}),
                     subscription_changed=False) == (3, 2, MemberState.STABLE, a.assigned, {})
    nxt = reconcile(group, a, 3, target, owned=[(T1, [0]), (T2, [0, 1])], subscribed=frozenset({T1}),
                    subscription_changed=True)
    assert nxt == (3, 3, MemberState.UNREVOKED_PARTITIONS, {T1: frozenset({0})}, {T2: frozenset({0, 1})})


def test_subscribing_to_nothing_revokes_everything() -> None:
    group = ConsumerGroup("g")
    a = member(group, "a", 3, {T1: {0, 1}})
    nxt = reconcile(group, a, 3, {T1: frozenset({0, 1})}, owned=[(T1, [0, 1])], subscribed=frozenset(),
                    subscription_changed=True)
    assert nxt == (3, 3, MemberState.UNREVOKED_PARTITIONS, {}, {T1: frozenset({0, 1})})


def test_a_new_target_is_reached_only_for_subscribed_topics() -> None:
    """A target computed before the subscription changed still names T2: the member is not
    given it, and what it holds of T2 is revoked."""
    group = ConsumerGroup("g")
    a = member(group, "a", 2, {T2: {0}})
    nxt = reconcile(group, a, 3, {T1: frozenset({0}), T2: frozenset({0})}, owned=[(T2, [0])],
                    subscribed=frozenset({T1}), subscription_changed=False)
    assert nxt == (2, 2, MemberState.UNREVOKED_PARTITIONS, {}, {T2: frozenset({0})})
    group.update_assignment(a, member_epoch=nxt[0], previous_member_epoch=nxt[1], state=nxt[2], assigned=nxt[3],
                            pending_revocation=nxt[4])
    assert reconcile(group, a, 3, {T1: frozenset({0}), T2: frozenset({0})}, owned=[], subscribed=frozenset({T1}),
                     subscription_changed=False) == (3, 2, MemberState.STABLE, {T1: frozenset({0})}, {})


def test_assignment_epochs_follow_each_partition() -> None:
    """A partition held on keeps the epoch it was assigned at; a new one gets the new epoch."""
    group = ConsumerGroup("g")
    a = member(group, "a", 2, {T1: {0}})
    group.update_assignment(a, member_epoch=4, previous_member_epoch=2, state=MemberState.STABLE,
                            assigned={T1: frozenset({0, 1})}, pending_revocation={})
    assert a.assignment_epochs == {(T1, 0): 2, (T1, 1): 4}


def spec(members: list[tuple[str, str | None, set[uuid.UUID], dict[uuid.UUID, set[int]]]],
         partitions: dict[uuid.UUID, int]) -> AssignmentSpec:
    return AssignmentSpec(
        tuple(MemberSpec(mid, iid, frozenset(subs), {t: frozenset(p) for t, p in cur.items()})
              for mid, iid, subs, cur in members),
        partitions, tuple(sorted(partitions)))


def test_range_gives_contiguous_ranges_static_members_first() -> None:
    out = assign("range", spec([("m-b", None, {T1, T2}, {}), ("m-a", None, {T1, T2}, {}),
                                ("m-z", "i-0", {T1, T2}, {})], {T1: 7, T2: 2}))
    assert out["m-z"] == {T1: frozenset({0, 1, 2}), T2: frozenset({0})}
    assert out["m-a"] == {T1: frozenset({3, 4}), T2: frozenset({1})}
    assert out["m-b"] == {T1: frozenset({5, 6})}


def test_uniform_is_balanced_and_sticky() -> None:
    current = {T1: {0, 1, 2}, T2: {0, 1}}
    out = assign("uniform", spec([("a", None, {T1, T2}, current), ("b", None, {T1, T2}, {})], {T1: 3, T2: 2}))
    sizes = sorted(sum(len(p) for p in a.values()) for a in out.values())
    assert sizes == [2, 3]
    kept = {(t, p) for t, ps in out["a"].items() for p in ps}
    assert kept <= {(t, p) for t, ps in current.items() for p in ps}  # a only gives partitions up
    everything = [(t, p) for a in out.values() for t, ps in a.items() for p in ps]
    assert sorted(everything) == sorted((t, p) for t, n in ((T1, 3), (T2, 2)) for p in range(n))


def test_uniform_with_different_subscriptions_assigns_each_topic_to_its_subscribers() -> None:
    out = assign("uniform", spec([("a", None, {T1}, {}), ("b", None, {T1, T2}, {})], {T1: 4, T2: 2}))
    assert T2 not in out["a"]
    assert out["b"][T2] == frozenset({0, 1})
    assert len(out["a"][T1]) + len(out["b"].get(T1, frozenset())) == 4
    assert len(out["a"][T1]) >= 2
