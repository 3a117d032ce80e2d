"""The server-side assignors of the consumer protocol (`group.consumer.assignors`): uniform
and range, as Kafka's.

An assignor sees each member's subscribed topic ids (and its current target assignment, for
stickiness) and the partition count of every subscribed topic, and returns every member's new
target assignment.

- `range` (Kafka's RangeAssignor): per topic, members in order (static members by instance
  id first, then the others by member id) each take a contiguous range; the first
  `partitions % members` take one more. Deterministic, so it matches Kafka partition for
  partition.
- `uniform` (Kafka's UniformAssignor): as balanced as possible across all subscribed
  partitions, keeping what members already hold. When every member subscribes to the same
  topics (Kafka's homogeneous case) this follows Kafka's steps: a quota per member,
  partitions over quota revoked, then free partitions handed out in topic and partition
  order. Kafka walks members and topics in hash-map order; here members go in id order and
  topics in name order, so which member gets an extra partition, and which partitions a
  member over its quota gives up, can differ from Kafka's (the differential scenarios use
  `range`, or a single member, for that reason). With differing subscriptions, each topic's
  partitions go to its least-loaded subscribers, again keeping what members hold; Kafka's
  heterogeneous builder balances differently in its details.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, Sequence

import msgspec

from asyncbroker.consumer_group import Assignment

__all__ = ["ASSIGNORS", "AssignmentSpec", "MemberSpec", "assign"]


class MemberSpec(msgspec.Struct, frozen=True):
    member_id: str
    instance_id: str | None
    subscribed: frozenset[uuid.UUID]
    current: Assignment


class AssignmentSpec(msgspec.Struct, frozen=True):
    members: tuple[MemberSpec, ...]
    partitions: Mapping[uuid.UUID, int]  # subscribed topic id -> partition count
    topic_order: tuple[uuid.UUID, ...]  # subscribed topic ids in name order


def _member_order(members: Sequence[MemberSpec]) -> list[MemberSpec]:
    """Static members by instance id first, then dynamic ones by member id (Kafka's range order)."""
    return sorted(members, key=lambda m: (0, m.instance_id, "") if m.instance_id is not None else (1, "", m.member_id))


def _by_topic(spec: AssignmentSpec, members: list[MemberSpec]) -> Iterator[tuple[uuid.UUID, list[MemberSpec], int]]:
    """Each subscribed topic in order, with its subscribers (in `members` order) and its
    partition count; topics nobody subscribes to are skipped."""
    for topic_id in spec.topic_order:
        subscribers = [m for m in members if topic_id in m.subscribed]
        if subscribers:
            yield topic_id, subscribers, spec.partitions[topic_id]


def _range(spec: AssignmentSpec) -> dict[str, Assignment]:
    members = _member_order(spec.members)
    out: dict[str, dict[uuid.UUID, frozenset[int]]] = {m.member_id: {} for m in members}
    for topic_id, subscribers, count in _by_topic(spec, members):
        quota, extra = divmod(count, len(subscribers))
        start = 0
        for m in subscribers:
            size = quota + (1 if extra > 0 else 0)
            extra -= 1
            end = min(start + size, count)
            if start < end:
                out[m.member_id][topic_id] = frozenset(range(start, end))
            start = end
    return out


def _uniform(spec: AssignmentSpec) -> dict[str, Assignment]:
    members = sorted(spec.members, key=lambda m: m.member_id)
    if not members:
        return {}
    if all(m.subscribed == members[0].subscribed for m in members):
        return _uniform_homogeneous(spec, members)
    return _uniform_heterogeneous(spec, members)


def _uniform_homogeneous(spec: AssignmentSpec, members: list[MemberSpec]) -> dict[str, Assignment]:
    subscribed = members[0].subscribed
    topics = [t for t in spec.topic_order if t in subscribed]
    if not topics:
        return {m.member_id: {} for m in members}
    held = {(t, p) for m in members for t, parts in m.current.items() if t in subscribed for p in parts}
    unassigned = [(t, p) for t in topics for p in range(spec.partitions[t]) if (t, p) not in held]
    total = sum(spec.partitions[t] for t in topics)
    minimum, extra = divmod(total, len(members))
    out: dict[str, dict[uuid.UUID, set[int]]] = {}
    unfilled: list[tuple[str, int]] = []
    for m in members:
        quota = minimum + (1 if extra > 0 else 0)
        extra -= 1 if extra > 0 else 0
        kept: dict[uuid.UUID, set[int]] = {}
        for topic_id in sorted(m.current, key=lambda t: topics.index(t) if t in topics else len(topics)):
            if topic_id not in subscribed:
                continue  # unsubscribed: dropped from the target
            for p in sorted(m.current[topic_id]):
                if p >= spec.partitions[topic_id]:
                    continue  # the topic shrank (recreated): no longer a partition
                if quota > 0:
                    kept.setdefault(topic_id, set()).add(p)
                    quota -= 1
                else:
                    unassigned.append((topic_id, p))
        out[m.member_id] = kept
        if quota > 0:
            unfilled.append((m.member_id, quota))
    i = 0
    for member_id, quota in unfilled:
        for _ in range(quota):
            if i >= len(unassigned):
                break
            topic_id, p = unassigned[i]
            i += 1
            out[member_id].setdefault(topic_id, set()).add(p)
    return {mid: {t: frozenset(ps) for t, ps in a.items()} for mid, a in out.items()}


def _uniform_heterogeneous(spec: AssignmentSpec, members: list[MemberSpec]) -> dict[str, Assignment]:
    out: dict[str, dict[uuid.UUID, set[int]]] = {m.member_id: {} for m in members}
    load = {m.member_id: 0 for m in members}
    for topic_id, subscribers, count in _by_topic(spec, members):
        quota, extra = divmod(count, len(subscribers))
        free = []
        for p in range(count):
            holder = next((m for m in subscribers if p in m.current.get(topic_id, frozenset())), None)
            if holder is None:
                free.append(p)
                continue
            cap = quota + (1 if extra > 0 else 0)
            if len(out[holder.member_id].get(topic_id, ())) < cap:
                out[holder.member_id].setdefault(topic_id, set()).add(p)
                load[holder.member_id] += 1
                if len(out[holder.member_id][topic_id]) == quota + 1:
                    extra -= 1
            else:
                free.append(p)
        for p in free:
            target = min(subscribers, key=lambda m: (len(out[m.member_id].get(topic_id, ())), load[m.member_id],
                                                    m.member_id))
            out[target.member_id].setdefault(topic_id, set()).add(p)
            load[target.member_id] += 1
    return {mid: {t: frozenset(ps) for t, ps in a.items()} for mid, a in out.items()}


ASSIGNORS = {"uniform": _uniform, "range": _range}
"""Kafka's assignor names; `group.consumer.assignors` lists which are offered, the first by default."""


def assign(name: str, spec: AssignmentSpec) -> dict[str, Assignment]:
    return ASSIGNORS[name](spec)
