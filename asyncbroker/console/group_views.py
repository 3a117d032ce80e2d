"""Consumer groups as the console shows them: state, protocol, members with their
assignments, and per partition the committed offset and the lag (high watermark minus
committed offset), all read from the group coordinator (as DescribeGroups, ConsumerGroupDescribe
and OffsetFetch answer) and the partitions' Logs (as ListOffsets answers)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec

from storage.topic_partition import TopicPartition
from wire.errors import GroupIdNotFoundError

if TYPE_CHECKING:
    from asyncbroker.broker import Broker
    from asyncbroker.group_coordinator import GroupCoordinator


class GroupRow(msgspec.Struct, frozen=True):
    group_id: str
    group_type: str  # classic, consumer, share
    protocol_type: str
    state: str
    members: int
    total_lag: int  # -1: no committed offsets


class MemberRow(msgspec.Struct, frozen=True):
    member_id: str
    client_id: str
    client_host: str
    instance_id: str | None
    assignment: str  # "orders: 0, 1; payments: 2"


class OffsetRow(msgspec.Struct, frozen=True):
    topic: str
    partition: int
    committed: int
    high_watermark: int  # -1: the partition is gone
    lag: int  # -1: unknown


class GroupDetail(msgspec.Struct, frozen=True):
    row: GroupRow
    protocol: str
    members: list[MemberRow]
    offsets: list[OffsetRow]


NameFilter = Callable[[str], bool]


def _every(name: str) -> bool:
    return True


def _offsets(broker: Broker, coordinator: GroupCoordinator, group_id: str,
             topic_filter: NameFilter = _every) -> list[OffsetRow]:
    try:
        fetched = coordinator.fetch_offsets(group_id, None)
    except GroupIdNotFoundError:
        return []
    rows = []
    for f in fetched:
        if f.offset < 0 or not topic_filter(f.topic):
            continue
        log_ = broker.replica_manager.log_of(TopicPartition(f.topic, f.partition))
        hw = log_.high_watermark if log_ is not None else -1
        rows.append(OffsetRow(f.topic, f.partition, f.offset, hw,
                              max(0, hw - f.offset) if hw >= 0 else -1))
    return rows


def _format_assignment(by_topic: dict[str, list[int]]) -> str:
    return "; ".join(f"{t}: {', '.join(str(p) for p in sorted(ps))}" for t, ps in sorted(by_topic.items()))


def _total_lag(offsets: list[OffsetRow]) -> int:
    lags = [o.lag for o in offsets if o.lag >= 0]
    return sum(lags) if lags else -1


def _summed_lag(broker: Broker, coordinator: GroupCoordinator, group_id: str,
                high_watermarks: dict[tuple[str, int], int], topic_filter: NameFilter = _every) -> int:
    """A group's total lag from its committed offsets (the state OffsetFetch answers from),
    each partition's high watermark looked up once per page."""
    total, any_known = 0, False
    for (topic, partition), committed in coordinator.offsets.get(group_id, {}).items():
        hw = high_watermarks.get((topic, partition))
        if hw is None and not topic_filter(topic):
            hw = high_watermarks[(topic, partition)] = -1
        if hw is None:
            log_ = broker.replica_manager.log_of(TopicPartition(topic, partition))
            hw = high_watermarks[(topic, partition)] = log_.high_watermark if log_ is not None else -1
        if hw >= 0 and committed.committed_offset >= 0:
            total += max(0, hw - committed.committed_offset)
            any_known = True
    return total if any_known else -1


async def group_rows(broker: Broker, group_filter: NameFilter = _every,
                     topic_filter: NameFilter = _every) -> list[GroupRow]:
    """The groups `group_filter` lets through; their lag summed over the topics of `topic_filter`."""
    coordinator = await broker.loaded_group_coordinator()
    rows = []
    high_watermarks: dict[tuple[str, int], int] = {}
    for listed in sorted(coordinator.list_groups(), key=lambda g: g.group_id):
        if not group_filter(listed.group_id):
            continue
        members = _member_count(coordinator, listed.group_id, listed.group_type)
        rows.append(GroupRow(listed.group_id, listed.group_type, listed.protocol_type, listed.state, members,
                             _summed_lag(broker, coordinator, listed.group_id, high_watermarks, topic_filter)))
    return rows


def _member_count(coordinator: GroupCoordinator, group_id: str, group_type: str) -> int:
    if group_type == "consumer":
        consumer = coordinator.consumer_groups.groups.get(group_id)
        return len(consumer.members) if consumer is not None else 0
    if group_type == "share":
        share = coordinator.share_groups.groups.get(group_id)
        return len(share.members) if share is not None else 0
    group = coordinator.groups.get(group_id)
    return len(group.members) if group is not None else 0


async def group_detail(broker: Broker, group_id: str, topic_filter: NameFilter = _every) -> GroupDetail:
    from wire.consumer_protocol import SchemaError, decode_assignment

    coordinator = await broker.loaded_group_coordinator()
    listed = next((g for g in coordinator.list_groups() if g.group_id == group_id), None)
    if listed is None:
        raise GroupIdNotFoundError(f"Group {group_id} does not exist.")
    members: list[MemberRow] = []
    protocol = ""
    consumer = coordinator.consumer_groups.groups.get(group_id)
    if listed.group_type == "consumer" and consumer is not None:
        protocol = "consumer (KIP-848)"
        for m in consumer.members.values():
            by_topic: dict[str, list[int]] = {}
            for topic_id, partitions in m.assigned.items():
                meta = broker.topics.by_id(topic_id)
                by_topic[meta.name if meta is not None else str(topic_id)] = list(partitions)
            members.append(MemberRow(m.member_id, m.client_id, m.client_host, m.instance_id,
                                     _format_assignment(by_topic)))
    elif listed.group_type == "classic":
        described = coordinator.describe_group(group_id)
        protocol = described.protocol_data
        for dm in described.members:
            try:
                topics, _ = decode_assignment(dm.assignment) if dm.assignment else ((), None)
                text = _format_assignment({t: list(ps) for t, ps in topics})
            except (SchemaError, ValueError):
                text = f"({len(dm.assignment)} bytes, not the consumer protocol's)"
            members.append(MemberRow(dm.member_id, dm.client_id, dm.client_host, dm.group_instance_id, text))
    offsets = _offsets(broker, coordinator, group_id, topic_filter)
    row = GroupRow(group_id, listed.group_type, listed.protocol_type, listed.state,
                   _member_count(coordinator, group_id, listed.group_type), _total_lag(offsets))
    return GroupDetail(row, protocol, members, offsets)
