"""ShareGroupManager: the share groups (KIP-932) of this broker, their membership half, as the
share side of Kafka's GroupMetadataManager runs it.

A ShareGroupHeartbeat is the whole membership protocol: a member joins with epoch 0 and the
topics it subscribes to, heartbeats with the epoch it was given, and leaves with -1. Each
heartbeat, under the group's lock:

1. validates the member and its epoch (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID,
   GROUP_MAX_SIZE_REACHED as Kafka sends them);
2. applies the member's subscription; when what the group must assign changed (or partitions
   became assignable), bumps the group epoch;
3. recomputes the target assignment (share_group_assignor.py) when the group epoch is ahead
   of it and the group's share.assignment.interval.ms has passed;
4. gives the member its target at once (members share partitions: nothing to revoke first);
5. writes what changed to `__consumer_offsets` (consumer_group_records.py types 10-15) and only
   then applies it in memory and answers.

A topic the group newly subscribes to is not assigned at once: its partitions' share state is
first initialized (written to the share coordinator, share_coordinator.py, at start offset -1,
or 0 for partitions added to a topic the group knew; share_group.py), which happens right
after the heartbeat that subscribed to it, and the following heartbeat assigns them. A member
that stops heartbeating for share.session.timeout.ms is removed.

The share group offset admin APIs' group side is here too: AlterShareGroupOffsets records
the partitions it sets as initializing, then initialized; DeleteShareGroupOffsets moves
topics from initialized to deleting, then forgets them (ShareGroupStatePartitionMetadata);
both only for an empty group. GroupCoordinator writes the share state in between.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from storage.clock import Clock
from wire.errors import (
    FencedMemberEpochError,
    GroupIdNotFoundError,
    GroupMaxSizeReachedError,
    InvalidRequestError,
    NonEmptyGroupError,
    UnknownMemberIdError,
)

from asyncbroker.consumer_group import Assignment
from asyncbroker.consumer_group_assignors import MemberSpec
from asyncbroker.consumer_group_records import (
    ConsumerGroupKey,
    ConsumerGroupMemberKey,
    ShareGroupCurrentMemberAssignmentValue,
    ShareGroupMemberMetadataValue,
    ShareGroupMetadataValue,
    ShareGroupStatePartitionMetadataValue,
    ShareTopicPartitions,
    TargetAssignmentMemberValue,
    TargetAssignmentMetadataValue,
    encode_consumer_group_key,
    encode_share_current_member_assignment_value,
    encode_share_group_metadata_value,
    encode_share_member_metadata_value,
    encode_share_state_partition_metadata_value,
    encode_target_assignment_member_value,
    encode_target_assignment_metadata_value,
    topic_assignments,
)
from asyncbroker.coordinator_records import CoordinatorRecordType
from asyncbroker.group_configs import GroupConfigManager
from asyncbroker.group_metadata_hash import group_metadata_hash
from asyncbroker.offsets_topic import CoordinatorTopic
from asyncbroker.share_group import LEAVE_GROUP_MEMBER_EPOCH, ShareGroup, ShareGroupMember
from asyncbroker.share_group_assignor import simple_assign

if TYPE_CHECKING:
    from asyncbroker.config import KafkaConfig
    from asyncbroker.coordinator_timer import CoordinatorTimer
    from asyncbroker.share_coordinator import ShareCoordinator

log = logging.getLogger(__name__)

_T = CoordinatorRecordType
Record = tuple[bytes, bytes | None]
Topics = dict[str, tuple[uuid.UUID, int]]
InitMap = dict[uuid.UUID, tuple[str, frozenset[int]]]  # topic id -> (topic name, partitions)


class ShareHeartbeatResult(msgspec.Struct, frozen=True):
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: Assignment | None  # None: not sent this time


class DescribedShareMember(msgspec.Struct, frozen=True):
    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    assignment: Assignment


class DescribedShareGroup(msgspec.Struct, frozen=True):
    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor_name: str
    members: tuple[DescribedShareMember, ...]


class ShareGroupManager:
    """Every share group of this broker: membership, assignment, records."""

    def __init__(self, config: KafkaConfig, offsets_topic: CoordinatorTopic, clock: Clock,
                 timer: CoordinatorTimer[tuple[str, str, str]], group_configs: GroupConfigManager) -> None:
        self.offsets_topic = offsets_topic
        self.clock = clock
        self.timer = timer
        self.group_configs = group_configs
        self.max_size: int = config.group_share_max_size
        # Share partitions' durable state (Kafka's persister), given by the broker.
        self.share_coordinator: ShareCoordinator | None = None
        self.groups: dict[str, ShareGroup] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._tasks: set[asyncio.Future[None]] = set()

    def _lock(self, group_id: str) -> asyncio.Lock:
        lock = self._locks.get(group_id)
        if lock is None:
            lock = self._locks[group_id] = asyncio.Lock()
        return lock

    def _now(self) -> int:
        now: int = self.clock.milliseconds()
        return now

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ================================================================ ShareGroupHeartbeat

    @staticmethod
    def validate_heartbeat(*, group_id: str, member_id: str, member_epoch: int, rack_id: str | None,
                           subscribed_topic_names: Sequence[str] | None) -> None:
        """Kafka's request checks, in its order (INVALID_REQUEST)."""
        if not member_id:
            raise InvalidRequestError("MemberId can't be empty.", wire_message=None)  # Kafka sends no text
        if not group_id:
            raise InvalidRequestError("GroupId can't be empty.")
        if rack_id is not None and not rack_id:
            raise InvalidRequestError("RackId can't be empty.")
        if member_epoch == 0:
            if not subscribed_topic_names:
                raise InvalidRequestError("SubscribedTopicNames must be set in first request.")
        elif member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
            raise InvalidRequestError("MemberEpoch is invalid.")

    async def heartbeat(self, *, group_id: str, member_id: str, member_epoch: int, rack_id: str | None,
                        subscribed_topic_names: Sequence[str] | None, client_id: str, client_host: str,
                        other_group_exists: bool) -> ShareHeartbeatResult:
        """A heartbeat the caller has validated; `other_group_exists`: the id is another kind of group's."""
        async with self._lock(group_id):
            if other_group_exists:
                raise GroupIdNotFoundError(f"Group {group_id} is not a share group.")
            if member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
                return await self._leave(group_id, member_id)
            return await self._heartbeat(group_id, member_id, member_epoch, rack_id, subscribed_topic_names,
                                         client_id, client_host)

    async def _heartbeat(self, group_id: str, member_id: str, member_epoch: int, rack_id: str | None,
                         subscribed_topic_names: Sequence[str] | None, client_id: str,
                         client_host: str) -> ShareHeartbeatResult:
        group = self.groups.get(group_id)
        created = False
        if group is None:
            if member_epoch != 0:
                raise GroupIdNotFoundError(f"Share group {group_id} not found.")
            group = ShareGroup(group_id)
            group.group_epoch = 1  # as a consumer-protocol group's: its first member gets epoch 2
            created = True
        if member_id not in group.members and len(group.members) >= self.max_size:
            raise GroupMaxSizeReachedError(f"The share group has reached its maximum capacity of "
                                           f"{self.max_size} members.")
        member = group.members.get(member_id)
        is_new = member is None
        if member is None:
            if member_epoch != 0:
                raise UnknownMemberIdError(f"Member {member_id} is not a member of group {group_id}.")
            member = ShareGroupMember(member_id)
        elif member_epoch != 0 and member_epoch > member.member_epoch:
            raise FencedMemberEpochError(
                f"The share group member has a greater member epoch ({member_epoch}) than the one known by the group "
                f"coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin.")
        elif member_epoch != 0 and member_epoch < member.member_epoch and member_epoch != member.previous_member_epoch:
            raise FencedMemberEpochError(
                f"The share group member has a smaller member epoch ({member_epoch}) than the one known by the group "
                f"coordinator ({member.member_epoch}), and it does not match the previous member epoch "
                f"({member.previous_member_epoch}). The member must abandon all its partitions and rejoin.")
        updated = msgspec.structs.replace(
            member, rack_id=rack_id if rack_id is not None else member.rack_id,
            subscribed_topic_names=(tuple(subscribed_topic_names) if subscribed_topic_names is not None
                                    else member.subscribed_topic_names),
            client_id=client_id, client_host=client_host, assigned=dict(member.assigned))
        members_after = {**group.members, member_id: updated}

        records: list[Record] = []
        if is_new or updated.metadata_key() != member.metadata_key():
            records.append(self._member_record(group_id, updated))
        bump = updated.subscribed_topic_names != member.subscribed_topic_names
        topics = self._subscribed_topics(members_after.values())
        if group.assignment_epoch >= group.group_epoch and self._initialized_unassigned(group, topics):
            bump = True  # partitions became assignable since the last target
        subscribed_topics = group.subscribed_topics
        if bump or self._metadata_changed(group):
            if topics != subscribed_topics:
                bump = True
            subscribed_topics = topics
        group_epoch = group.group_epoch
        if bump or created:
            group_epoch += 1
            records.append(self._epoch_record(group_id, group_epoch, subscribed_topics))

        target_epoch, target = group.assignment_epoch, group.target
        now = self._now()
        assignment_timestamp = group.assignment_timestamp
        interval: int = self.group_configs.value(group_id, "share.assignment.interval.ms")
        if group_epoch > group.assignment_epoch and (
                now - group.assignment_timestamp >= interval or not group.members or created):
            target = self._compute_target(group, members_after, topics)
            records += [self._target_member_record(group_id, mid, a)
                        for mid, a in target.items() if group.target.get(mid) != a]
            records.append(self._target_metadata_record(group_id, group_epoch, now))
            target_epoch, assignment_timestamp = group_epoch, now

        # No revocation in a share group: the member takes its target, of the topics it still
        # subscribes to, at once (Kafka's ShareGroupAssignmentBuilder).
        if updated.member_epoch != target_epoch or bump:
            ids = {topics[n][0] for n in updated.subscribed_topic_names if n in topics}
            assigned = {t: p for t, p in target.get(member_id, {}).items() if t in ids}
            if updated.member_epoch != target_epoch:
                updated.previous_member_epoch, updated.member_epoch = updated.member_epoch, target_epoch
            updated.assigned = assigned
        if is_new or (updated.member_epoch, updated.previous_member_epoch, updated.assigned) != (
                member.member_epoch, member.previous_member_epoch, member.assigned):
            records.append(self._current_assignment_record(group_id, updated))

        initializing = self._to_initialize(group, topics)
        # Kafka's share coordinator starts a new topic's partitions at -1 (share.auto.offset.reset
        # decides at the first fetch), partitions added to a topic it knew at 0.
        known = set(group.initialized) | set(group.initializing)
        if initializing:
            records.append(self._state_partition_record(group_id, _combine(group.initializing, initializing),
                                                        group.initialized, group.deleting))
        if records:
            await self.offsets_topic.append(self.offsets_topic.partition_for(group_id), records)
        # Written: now it is the group's state.
        if created:
            self.groups[group_id] = group
            log.info("[GroupId %s] Created share group", group_id)
        if is_new:
            log.info("[GroupId %s] Member %s joins the share group using the share protocol.", group_id, member_id)
        group.members[member_id] = updated
        group.subscribed_topics = subscribed_topics
        if group_epoch != group.group_epoch:
            group.group_epoch = group_epoch
            log.info("[GroupId %s] Bumped group epoch to %d with metadata hash %d.", group_id, group_epoch,
                     group_metadata_hash(subscribed_topics))
        if target_epoch != group.assignment_epoch:
            group.target = dict(target)
            group.assignment_epoch, group.assignment_timestamp = target_epoch, assignment_timestamp
        if initializing:
            group.has_state_metadata = True
            group.initializing = _combine(group.initializing, initializing)
            self._spawn(self._initialize(group_id, initializing,
                                         {t: 0 if t in known else -1 for t in initializing}, group_epoch))
        self._schedule_session_timeout(group_id, member_id)
        heartbeat_interval: int = self.group_configs.value(group_id, "share.heartbeat.interval.ms")
        full = member_epoch == 0 or subscribed_topic_names is not None
        return ShareHeartbeatResult(member_id, updated.member_epoch, heartbeat_interval,
                                    dict(updated.assigned) if full or updated.assigned != member.assigned else None)

    # ================================================================ share state initialization

    def _to_initialize(self, group: ShareGroup, topics: Topics) -> dict[uuid.UUID, tuple[str, frozenset[int]]]:
        """Subscribed partitions whose share state is neither ready nor being set up."""
        out = {}
        for name, (topic_id, count) in topics.items():
            known = group.initialized.get(topic_id, (name, frozenset()))[1] | \
                group.initializing.get(topic_id, (name, frozenset()))[1]
            missing = frozenset(range(count)) - known
            if missing:
                out[topic_id] = (name, missing)
        return out

    @staticmethod
    def _initialized_unassigned(group: ShareGroup, topics: Topics) -> bool:
        """Kafka's initializedAssignmentPending: a subscribed, initialized partition no member's
        target holds yet."""
        if not group.members:
            return False
        targeted = {(t, p) for a in group.target.values() for t, parts in a.items() for p in parts}
        ids = {topic_id for topic_id, _ in topics.values()}
        return any((t, p) not in targeted for t, (_, parts) in group.initialized.items() if t in ids for p in parts)

    async def _initialize(self, group_id: str, todo: InitMap, starts: Mapping[uuid.UUID, int], state_epoch: int,
                          *, keep_existing: bool = False) -> None:
        """Set up the share state of these initializing partitions (Kafka's
        InitializeShareGroupState: start offset -1, decided at the first fetch by
        share.auto.offset.reset, or as `starts` says), then record them as initialized: the
        next heartbeat assigns them. `keep_existing`: a state already written stays (the
        initialization resumed after a restart)."""
        async with self._lock(group_id):
            group = self.groups.get(group_id)
            if group is None:
                return
            # (a negative partition an AlterShareGroupOffsets left initializing has no state to set up)
            mine = {t: (name, frozenset(p for p in parts & group.initializing.get(t, (name, frozenset()))[1] if p >= 0))
                    for t, (name, parts) in todo.items()}
            mine = {t: v for t, v in mine.items() if v[1]}
            if not mine:
                return
            try:
                if self.share_coordinator is not None:
                    await self.share_coordinator.load()
                    now = self._now()
                    for topic_id, (_, parts) in mine.items():
                        for p in sorted(parts):
                            if keep_existing and (group_id, topic_id, p) in self.share_coordinator.states:
                                continue
                            await self.share_coordinator.initialize(group_id, topic_id, p, starts.get(topic_id, -1),
                                                                    state_epoch, now)
                initialized = _combine(group.initialized, mine)
                initializing: InitMap = {}
                for topic_id, (name, parts) in group.initializing.items():
                    left = parts - mine[topic_id][1] if topic_id in mine else parts
                    if left:
                        initializing[topic_id] = (name, left)
                await self.offsets_topic.append(self.offsets_topic.partition_for(group_id), [
                    self._state_partition_record(group_id, initializing, initialized, group.deleting)])
            except Exception:  # noqa: BLE001 - a later heartbeat asks again
                log.exception("[GroupId %s] Could not initialize the share partitions' state", group_id)
                return
            group.initialized, group.initializing = initialized, initializing

    # ================================================================ offsets (the admin APIs)

    async def begin_alter_offsets(self, group_id: str, topics: InitMap, *, other_group_exists: bool) -> int:
        """AlterShareGroupOffsets, its first step (Kafka's alterShareGroupOffsets): the group,
        created if unknown, must be empty; the partitions to set are recorded as initializing
        (which, for an unknown group, creates it). Returns the group epoch, the state epoch of
        the states about to be written."""
        async with self._lock(group_id):
            if other_group_exists:
                raise GroupIdNotFoundError(f"Group {group_id} is not a share group.")
            group = self.groups.get(group_id)
            if group is not None and group.members:
                raise NonEmptyGroupError("The group is not empty.")
            if not topics:
                return group.group_epoch if group is not None else ShareGroup(group_id).group_epoch
            current = group if group is not None else ShareGroup(group_id)
            initializing = _combine(current.initializing, topics)
            deleting = {t: name for t, name in current.deleting.items() if t not in initializing}
            await self.offsets_topic.append(self.offsets_topic.partition_for(group_id), [
                self._state_partition_record(group_id, initializing, current.initialized, deleting)])
            if group is None:
                self.groups[group_id] = current
                log.info("[GroupId %s] Created share group (its offsets altered)", group_id)
            current.initializing, current.deleting = initializing, deleting
            current.has_state_metadata = True
            return current.group_epoch

    async def finish_initializing(self, group_id: str, done: InitMap) -> None:
        """Partitions whose share state was written: initializing no more, initialized (Kafka's
        initializeShareGroupState)."""
        async with self._lock(group_id):
            group = self.groups.get(group_id)
            if group is None or not done:
                return
            initialized = _combine(group.initialized, done)
            initializing: InitMap = {}
            for topic_id, (name, parts) in group.initializing.items():
                left = parts - done[topic_id][1] if topic_id in done else parts
                if left:
                    initializing[topic_id] = (name, left)
            await self.offsets_topic.append(self.offsets_topic.partition_for(group_id), [
                self._state_partition_record(group_id, initializing, initialized, group.deleting)])
            group.initialized, group.initializing = initialized, initializing

    def initialized_partitions(self, group_id: str) -> InitMap:
        """The partitions with initialized share state (all a DescribeShareGroupOffsets with
        null topics shows)."""
        group = self.groups.get(group_id)
        return dict(group.initialized) if group is not None else {}

    async def begin_delete_offsets(self, group_id: str, topics: Sequence[tuple[str, uuid.UUID | None, int]], *,
                                   other_group_exists: bool) -> tuple[InitMap, list[tuple[str, str]]]:
        """DeleteShareGroupOffsets, its first step (Kafka's initiateDeleteShareGroupOffsets): the
        group must exist and be empty; each named topic with share state moves from initialized
        to deleting. `topics`: (name, id or None when unknown, partition count). Returns the
        partitions whose state to delete, and (topic name, message) for each topic refused with
        UNKNOWN_TOPIC_OR_PARTITION."""
        async with self._lock(group_id):
            group = self.groups.get(group_id)
            if other_group_exists:
                raise GroupIdNotFoundError(f"Group {group_id} is not a share group.")
            if group is None:
                raise GroupIdNotFoundError(f"Group {group_id} not found.")
            if group.members:
                raise NonEmptyGroupError("The group is not empty.")
            to_delete: InitMap = {}
            refused: list[tuple[str, str]] = []
            if not group.has_state_metadata:
                return to_delete, refused  # no ShareGroupStatePartitionMetadata: nothing to say
            initialized = dict(group.initialized)
            deleting = dict(group.deleting)
            for name, topic_id, count in topics:
                if topic_id is None:
                    refused.append((name, "This server does not host this topic-partition."))
                elif topic_id in initialized:
                    to_delete[topic_id] = (name, initialized.pop(topic_id)[1])
                    deleting[topic_id] = name
                elif topic_id in deleting:
                    to_delete[topic_id] = (name, frozenset(range(count)))
                else:
                    refused.append((name, "There is no offset information to delete."))
            await self.offsets_topic.append(self.offsets_topic.partition_for(group_id), [
                self._state_partition_record(group_id, group.initializing, initialized, deleting)])
            group.initialized, group.deleting = initialized, deleting
            return to_delete, refused

    async def finish_deleting(self, group_id: str, topic_ids: Iterable[uuid.UUID]) -> None:
        """Topics whose share state is deleted: no longer deleting (Kafka's
        completeDeleteShareGroupOffsets)."""
        async with self._lock(group_id):
            group = self.groups.get(group_id)
            if group is None:
                return
            gone = set(topic_ids)
            deleting = {t: name for t, name in group.deleting.items() if t not in gone}
            await self.offsets_topic.append(self.offsets_topic.partition_for(group_id), [
                self._state_partition_record(group_id, group.initializing, group.initialized, deleting)])
            group.deleting = deleting

    # ================================================================ leaving and fencing

    async def _leave(self, group_id: str, member_id: str) -> ShareHeartbeatResult:
        group = self.groups.get(group_id)
        if group is None:
            raise GroupIdNotFoundError(f"Group {group_id} not found.")
        member = group.members.get(member_id)
        if member is None:
            raise UnknownMemberIdError(f"Member {member_id} is not a member of group {group_id}.")
        log.info("[GroupId %s] Member %s left the share group.", group_id, member_id)
        await self._fence(group, member)
        return ShareHeartbeatResult(member_id, LEAVE_GROUP_MEMBER_EPOCH, 0, None)

    async def _fence(self, group: ShareGroup, member: ShareGroupMember) -> None:
        """Remove `member` (its three records tombstoned) and bump the group epoch; the group
        left empty gets its (empty) target assignment at once."""
        group_id = group.group_id
        epoch = group.group_epoch + 1
        remaining = [m for m in group.members.values() if m.member_id != member.member_id]
        topics = self._subscribed_topics(remaining)
        records = [*self._member_tombstones(group_id, member.member_id), self._epoch_record(group_id, epoch, topics)]
        if not remaining:
            records.append(self._target_metadata_record(group_id, epoch, 0))
        await self.offsets_topic.append(self.offsets_topic.partition_for(group_id), records)
        del group.members[member.member_id]
        group.target.pop(member.member_id, None)
        group.group_epoch, group.subscribed_topics = epoch, topics
        if not remaining:
            group.assignment_epoch, group.assignment_timestamp, group.target = epoch, 0, {}
        # The member's share session and its records are not touched: the session ends with
        # its final epoch or its connection (SharePartitionManager.connection_closed), as in Kafka.
        self.timer.cancel(("share-session", group_id, member.member_id))

    def _schedule_session_timeout(self, group_id: str, member_id: str) -> None:
        timeout: int = self.group_configs.value(group_id, "share.session.timeout.ms")

        def expire() -> None:
            async def fence() -> None:
                async with self._lock(group_id):
                    group = self.groups.get(group_id)
                    member = group.members.get(member_id) if group is not None else None
                    if group is None or member is None:
                        return
                    log.info("[GroupId %s] Member %s has been fenced: its session timed out.", group_id, member_id)
                    try:
                        await self._fence(group, member)
                    except Exception:  # noqa: BLE001 - its next session timeout tries again
                        log.exception("[GroupId %s] Could not fence member %s", group_id, member_id)
            self._spawn(fence())

        self.timer.schedule(("share-session", group_id, member_id), timeout, expire)

    # ================================================================ assignment

    def _subscribed_topics(self, members: Iterable[ShareGroupMember]) -> Topics:
        topics = self.offsets_topic.topics
        out: Topics = {}
        for m in members:
            for name in m.subscribed_topic_names:
                meta = topics.get(name)
                if meta is not None:
                    out[name] = (meta.topic_id, meta.partitions)
        return out

    def _metadata_changed(self, group: ShareGroup) -> bool:
        topics = self.offsets_topic.topics
        for m in group.members.values():
            for name in m.subscribed_topic_names:
                meta = topics.get(name)
                if (None if meta is None else (meta.topic_id, meta.partitions)) != group.subscribed_topics.get(name):
                    return True
        return False

    def _compute_target(self, group: ShareGroup, members: Mapping[str, ShareGroupMember],
                        topics: Topics) -> dict[str, Assignment]:
        specs = [MemberSpec(m.member_id, None, frozenset(topics[n][0] for n in m.subscribed_topic_names if n in topics),
                            group.target.get(m.member_id, {})) for m in members.values()]
        assignable = {t: parts for t, parts in group.assignable().items()
                      if t in {tid for tid, _ in topics.values()}}
        return simple_assign(specs, assignable, [topics[n][0] for n in sorted(topics)])

    # ================================================================ records

    @staticmethod
    def _key(record_type: int, group_id: str, member_id: str | None = None) -> bytes:
        if member_id is None:
            return encode_consumer_group_key(ConsumerGroupKey(record_type, group_id))
        return encode_consumer_group_key(ConsumerGroupMemberKey(record_type, group_id, member_id))

    def _epoch_record(self, group_id: str, epoch: int, topics: Topics) -> Record:
        return (self._key(_T.SHARE_GROUP_METADATA, group_id),
                encode_share_group_metadata_value(ShareGroupMetadataValue(epoch, group_metadata_hash(topics))))

    def _member_record(self, group_id: str, m: ShareGroupMember) -> Record:
        return (self._key(_T.SHARE_GROUP_MEMBER_METADATA, group_id, m.member_id),
                encode_share_member_metadata_value(ShareGroupMemberMetadataValue(
                    m.rack_id, m.client_id, m.client_host, m.subscribed_topic_names)))

    def _target_member_record(self, group_id: str, member_id: str, assignment: Assignment) -> Record:
        return (self._key(_T.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER, group_id, member_id),
                encode_target_assignment_member_value(TargetAssignmentMemberValue(topic_assignments(assignment))))

    def _target_metadata_record(self, group_id: str, epoch: int, timestamp: int) -> Record:
        return (self._key(_T.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA, group_id),
                encode_target_assignment_metadata_value(TargetAssignmentMetadataValue(epoch, timestamp)))

    def _current_assignment_record(self, group_id: str, m: ShareGroupMember) -> Record:
        return (self._key(_T.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT, group_id, m.member_id),
                encode_share_current_member_assignment_value(ShareGroupCurrentMemberAssignmentValue(
                    m.member_epoch, m.previous_member_epoch, 0, topic_assignments(m.assigned))))

    def _state_partition_record(self, group_id: str, initializing: Mapping[uuid.UUID, tuple[str, frozenset[int]]],
                                initialized: Mapping[uuid.UUID, tuple[str, frozenset[int]]],
                                deleting: Mapping[uuid.UUID, str]) -> Record:
        def topics(state: Mapping[uuid.UUID, tuple[str, frozenset[int]]]) -> tuple[ShareTopicPartitions, ...]:
            return tuple(ShareTopicPartitions(t, name, tuple(sorted(parts))) for t, (name, parts) in state.items())
        return (self._key(_T.SHARE_GROUP_STATE_PARTITION_METADATA, group_id),
                encode_share_state_partition_metadata_value(ShareGroupStatePartitionMetadataValue(
                    topics(initializing), topics(initialized),
                    tuple(ShareTopicPartitions(t, name) for t, name in deleting.items()))))

    def _member_tombstones(self, group_id: str, member_id: str) -> list[Record]:
        return [(self._key(t, group_id, member_id), None)
                for t in (_T.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT, _T.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER,
                          _T.SHARE_GROUP_MEMBER_METADATA)]

    def tombstones(self, group_id: str) -> list[Record]:
        """The records that remove an (empty) share group."""
        return [(self._key(t, group_id), None)
                for t in (_T.SHARE_GROUP_STATE_PARTITION_METADATA, _T.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA,
                          _T.SHARE_GROUP_METADATA)]

    def remove_group(self, group_id: str) -> None:
        if self.groups.pop(group_id, None) is not None:
            self.timer.cancel_matching(lambda key: key[1] == group_id and key[0].startswith("share-"))

    # ================================================================ replay (loading __consumer_offsets)

    def replay(self, key: ConsumerGroupKey | ConsumerGroupMemberKey, value: Any) -> None:
        """Apply one share-group record, in log order (a None value is a tombstone)."""
        group = self.groups.get(key.group)
        if group is None:
            if value is None:
                return
            group = self.groups[key.group] = ShareGroup(key.group)
        t = key.record_type
        if isinstance(key, ConsumerGroupKey):
            if t == _T.SHARE_GROUP_METADATA:
                if value is None:
                    del self.groups[key.group]
                else:
                    group.group_epoch = value.epoch
            elif t == _T.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA:
                if value is not None:
                    group.assignment_epoch, group.assignment_timestamp = value.assignment_epoch, value.assignment_timestamp
            elif t == _T.SHARE_GROUP_STATE_PARTITION_METADATA:
                def state(topics: Iterable[ShareTopicPartitions]) -> dict[uuid.UUID, tuple[str, frozenset[int]]]:
                    return {x.topic_id: (x.topic_name, frozenset(x.partitions)) for x in topics}
                group.initializing = {} if value is None else state(value.initializing_topics)
                group.initialized = {} if value is None else state(value.initialized_topics)
                group.deleting = {} if value is None else {x.topic_id: x.topic_name for x in value.deleting_topics}
                group.has_state_metadata = value is not None
            return
        member = group.members.get(key.member_id)
        if t == _T.SHARE_GROUP_MEMBER_METADATA:
            if value is None:
                group.members.pop(key.member_id, None)
                return
            if member is None:
                member = group.members[key.member_id] = ShareGroupMember(key.member_id)
            member.rack_id, member.client_id, member.client_host = value.rack_id, value.client_id, value.client_host
            member.subscribed_topic_names = value.subscribed_topic_names
        elif t == _T.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER:
            if value is None:
                group.target.pop(key.member_id, None)
            else:
                group.target[key.member_id] = {a.topic_id: frozenset(a.partitions) for a in value.topic_partitions}
        elif t == _T.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT:
            if value is None:
                if member is not None:
                    member.assigned = {}
                return
            if member is None:
                member = group.members[key.member_id] = ShareGroupMember(key.member_id)
            member.member_epoch, member.previous_member_epoch = value.member_epoch, value.previous_member_epoch
            member.assigned = {a.topic_id: frozenset(a.partitions) for a in value.assigned_partitions}

    def after_load(self) -> None:
        """Every loaded member gets a full session; initializations cut short are finished."""
        for group in self.groups.values():
            group.subscribed_topics = self._subscribed_topics(group.members.values())
            for member_id in group.members:
                self._schedule_session_timeout(group.group_id, member_id)
            if group.initializing:
                self._spawn(self._initialize(group.group_id, dict(group.initializing),
                                             {t: 0 for t in group.initialized}, group.group_epoch,
                                             keep_existing=True))

    # ================================================================ describe

    def describe(self, group_id: str) -> DescribedShareGroup:
        group = self.groups.get(group_id)
        if group is None:
            raise GroupIdNotFoundError(f"Group {group_id} not found.")
        members = tuple(DescribedShareMember(m.member_id, m.rack_id, m.member_epoch, m.client_id, m.client_host,
                                             m.subscribed_topic_names, dict(m.assigned))
                        for m in group.members.values())
        return DescribedShareGroup(group_id, group.state.value, group.group_epoch, group.assignment_epoch, "simple",
                                   members)

    def is_share_group(self, group_id: str) -> bool:
        return group_id in self.groups


def _combine(before: Mapping[uuid.UUID, tuple[str, frozenset[int]]], added: InitMap) -> InitMap:
    """Kafka's combineInitMaps: partitions of both, by topic (the added side's name)."""
    out = dict(before)
    for topic_id, (name, parts) in added.items():
        out[topic_id] = (name, out.get(topic_id, (name, frozenset()))[1] | parts)
    return out
