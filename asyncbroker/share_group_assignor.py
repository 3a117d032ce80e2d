"""The `simple` assignor of share groups (Kafka's SimpleAssignor, KIP-932).

Members of a share group may share partitions. With P assignable partitions and M members,
each partition goes to ceil(M / P) members (the desired sharing) and each member gets its
fair part of the P * sharing slots; a member keeps what it had as far as that allows, then
free slots go round the members still short of their part.

When every member subscribes to the same topics (Kafka's homogeneous case) this follows
Kafka's steps: drop partitions of topics no longer subscribed, revoke beyond a member's part,
revoke beyond a partition's sharing, then fill. Kafka walks members and partitions in
hash-map order; here members go in id order and partitions in topic-name, then partition
order, so which member gets which partition can differ from Kafka's when there is a choice.
With differing subscriptions each topic is shared the same way among its own subscribers
(Kafka's heterogeneous builder balances across topics).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence

from asyncbroker.consumer_group import Assignment
from asyncbroker.consumer_group_assignors import MemberSpec

__all__ = ["simple_assign"]

TopicPartitionId = tuple[uuid.UUID, int]


def simple_assign(members: Sequence[MemberSpec], assignable: Mapping[uuid.UUID, frozenset[int]],
                  topic_order: Sequence[uuid.UUID]) -> dict[str, Assignment]:
    """Every member's target: `assignable` holds the partitions that may be assigned (their
    share state initialized), `topic_order` the subscribed topics in name order."""
    ordered = sorted(members, key=lambda m: m.member_id)
    if not ordered:
        return {}
    subscriptions = {m.subscribed for m in ordered}
    out: dict[str, dict[uuid.UUID, set[int]]] = {m.member_id: {} for m in ordered}
    if len(subscriptions) == 1:
        groups = [(ordered, [t for t in topic_order if t in next(iter(subscriptions))])]
    else:
        groups = [([m for m in ordered if t in m.subscribed], [t]) for t in topic_order]
    for subscribers, topics in groups:
        if not subscribers:
            continue
        targets = [(t, p) for t in topics for p in sorted(assignable.get(t, ()))]
        for member_id, parts in _share(subscribers, targets, set(topics)).items():
            for t, p in parts:
                out[member_id].setdefault(t, set()).add(p)
    return {m: {t: frozenset(p) for t, p in a.items()} for m, a in out.items()}


def _share(members: Sequence[MemberSpec], targets: list[TopicPartitionId],
           topics: set[uuid.UUID]) -> dict[str, list[TopicPartitionId]]:
    """Kafka's SimpleHomogeneousAssignmentBuilder over `targets` among `members`."""
    n, p = len(members), len(targets)
    if p == 0:
        return {m.member_id: [] for m in members}
    sharing = (n + p - 1) // p
    precise = sharing * p / n
    desired = [math.ceil(precise * (i + 1)) - math.ceil(precise * i) for i in range(n)]
    assignable = set(targets)
    by_member: list[list[TopicPartitionId]] = []
    by_partition: dict[TopicPartitionId, list[int]] = {tp: [] for tp in targets}
    # Keep what each member holds of the subscribed, assignable partitions.
    for i, m in enumerate(members):
        kept = [(t, q) for t in sorted(m.current, key=str) if t in topics for q in sorted(m.current[t])
                if (t, q) in assignable]
        by_member.append(kept)
        for tp in kept:
            by_partition[tp].append(i)
    # Beyond a member's part: revoked, last first.
    for i, held in enumerate(by_member):
        while len(held) > desired[i]:
            tp = held.pop()
            by_partition[tp].remove(i)
    # Beyond a partition's sharing: revoked from its first holders.
    for tp, holders in by_partition.items():
        while len(holders) > sharing:
            i = holders.pop(0)
            by_member[i].remove(tp)
    # Fill: each partition short of its sharing, round the members short of their part.
    unfilled = [i for i in range(n) if len(by_member[i]) < desired[i]]
    cursor = 0
    for tp in targets:
        holders = by_partition[tp]
        tried = 0
        while len(holders) < sharing and unfilled and tried < len(unfilled):
            i = unfilled[cursor % len(unfilled)]
            if i in holders:
                cursor += 1
                tried += 1
                continue
            holders.append(i)
            by_member[i].append(tp)
            tried = 0
            if len(by_member[i]) >= desired[i]:
                unfilled.remove(i)
            else:
                cursor += 1
        if not unfilled:
            break
    return {m.member_id: sorted(by_member[i], key=lambda tp: (str(tp[0]), tp[1])) for i, m in enumerate(members)}
