"""ConsumerGroupManager: the consumer-protocol groups (KIP-848) of this broker, as the consumer
side of Kafka's GroupMetadataManager runs them.

A ConsumerGroupHeartbeat is the whole protocol: a member joins with epoch 0, heartbeats with
the epoch it was given and the partitions it holds, and leaves with -1 (or -2 for a static
member that will be back). Each heartbeat, under the group's lock:

1. validates the request and the member's epoch (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID,
   UNRELEASED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED as Kafka sends them);
2. applies the member's new subscription; when what the group must assign changed, bumps the
   group epoch;
3. recomputes the target assignment when the group epoch is ahead of it and
   the group's assignment interval has passed since the last one (KIP-1263's batching).
   Nothing computes it in between: as in Kafka 4.4, the first heartbeat after the interval
   does, and a group with nobody heartbeating stays Assigning;
4. moves the member towards its target (consumer_group.reconcile);
5. writes what changed to `__consumer_offsets` (consumer_group_records.py) and only then
   applies it in memory and answers, so a restart replays exactly what members were told.

Subscription regexes (RE2J syntax, topic_regex.py) are resolved as Kafka resolves them: off
the heartbeat, in a task of their own, for every regex of the group at once, at most every
10 s, and only when a regex is new, a topic was created since, or
`group.consumer.regex.refresh.interval.ms` has passed; a heartbeat that triggers it is
answered first. A resolution that changes a regex's topics bumps the group epoch, and is
written (ConsumerGroupRegularExpression records) so that a restart keeps it. Internal topics
match like any other, as in Kafka; with an authorizer, a regex keeps only the topics the
member that triggered its resolution may describe.

A member that stops heartbeating for `group.consumer.session.timeout.ms`, or that does not
give up revoked partitions within its rebalance timeout, is fenced: removed, and the group
epoch bumped.

Classic consumers may be members too (a mixed group, during a migration): their JoinGroup is
a heartbeat that brings the subscription in the protocol metadata and is answered at once,
with the member epoch as the generation; SyncGroup hands over what the broker assigned, in
the member's own ConsumerProtocol version; Heartbeat answers REBALANCE_IN_PROGRESS when the
member must rejoin to move on. A consumer-protocol member joining a classic group with
members converts it (the online upgrade); when only classic members would be left, the group
becomes a classic group again and rebalances (the online downgrade), both as
`group.consumer.migration.policy` allows.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import uuid
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from storage.clock import Clock
from storage.meta_properties import random_kafka_uuid
from wire.consumer_protocol import SchemaError, decode_assignment, decode_subscription, encode_assignment, version_of
from wire.errors import (
    ErrorCode,
    FencedInstanceIdError,
    FencedMemberEpochError,
    GroupIdNotFoundError,
    GroupMaxSizeReachedError,
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    InvalidRegularExpressionError,
    InvalidRequestError,
    KafkaError,
    RebalanceInProgressError,
    StaleMemberEpochError,
    UnknownMemberIdError,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
    UnsupportedVersionError,
)

from asyncbroker.classic_group import ClassicGroup, ClassicGroupMember, ClassicGroupState

from asyncbroker.consumer_group import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    Assignment,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    ResolvedRegex,
    reconcile,
)
from asyncbroker.consumer_group_assignors import ASSIGNORS, AssignmentSpec, MemberSpec, assign
from asyncbroker.consumer_group_records import (
    ClassicMemberMetadata,
    ConsumerGroupKey,
    ConsumerGroupMemberKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataValue,
    ConsumerGroupRegexKey,
    CurrentMemberAssignmentValue,
    RegularExpressionValue,
    TargetAssignmentMemberValue,
    TargetAssignmentMetadataValue,
    encode_consumer_group_key,
    encode_consumer_group_metadata_value,
    encode_current_member_assignment_value,
    encode_member_metadata_value,
    encode_regular_expression_value,
    encode_target_assignment_member_value,
    encode_target_assignment_metadata_value,
    topic_assignments,
)
from asyncbroker.coordinator_records import CoordinatorRecordType
from asyncbroker.group_configs import GroupConfigManager
from asyncbroker.group_metadata_hash import group_metadata_hash
from asyncbroker.group_metadata_manager import GroupMetadataManager, JoinGroupResult, SyncGroupResult
from asyncbroker.offsets_topic import CoordinatorTopic
from asyncbroker.topic_regex import compile_topic_regex

if TYPE_CHECKING:
    from asyncbroker.config import KafkaConfig

log = logging.getLogger(__name__)

_T = CoordinatorRecordType
Record = tuple[bytes, bytes | None]
Resolutions = Mapping[str, ResolvedRegex]
AuthorizedTopics = Callable[[Iterable[str]], Iterable[str]]
"""The topics, of those given, that the member asking may describe (regexes keep only those)."""

# A group's regexes are resolved at most this often (Kafka's REGEX_BATCH_REFRESH_MIN_INTERVAL_MS).
REGEX_REFRESH_MIN_INTERVAL_MS = 10_000


class RegexChange(enum.Enum):
    """What a heartbeat did to its member's regex (Kafka's UpdateRegularExpressionStatus)."""

    NO_CHANGE = 0
    UPDATED = 1  # changed; what it matches is not known yet (no bump until it is)
    UPDATED_AND_RESOLVED = 2  # changed to a regex already resolved, or dropped: the group epoch moves


class HeartbeatResult(msgspec.Struct, frozen=True):
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: Assignment | None  # None: not sent this time


class DescribedConsumerMember(msgspec.Struct, frozen=True):
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: Assignment
    target_assignment: Assignment
    classic: bool  # joined with JoinGroup


class DescribedConsumerGroup(msgspec.Struct, frozen=True):
    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor_name: str
    members: tuple[DescribedConsumerMember, ...]


def _is_subset(owned: Iterable[tuple[uuid.UUID, Iterable[int]]] | None, assigned: Assignment) -> bool:
    if owned is None:
        return False
    return all(p in assigned.get(t, frozenset()) for t, parts in owned for p in parts)


class ConsumerGroupManager:
    """Every consumer-protocol group of this broker."""

    def __init__(self, config: KafkaConfig, offsets_topic: CoordinatorTopic, clock: Clock,
                 classic: GroupMetadataManager, group_configs: GroupConfigManager) -> None:
        self.offsets_topic = offsets_topic
        self.classic = classic  # the classic groups: converted to and from (mixed groups)
        timer = classic.timer
        self.clock = clock
        self.timer = timer
        self.groups: dict[str, ConsumerGroup] = {}
        # Each group's session timeout, heartbeat and assignment intervals: its group configs
        # over the broker's group.consumer.* keys, read at each use (both may change at runtime).
        self.group_configs = group_configs
        self.assignors: list[str] = [a for a in config.group_consumer_assignors if a in ASSIGNORS]
        self.max_size: int = config.group_consumer_max_size
        self.migration_policy: str = config.group_consumer_migration_policy.lower()
        self._locks: dict[str, asyncio.Lock] = {}
        self.regex_refresh_interval_ms: int = config.group_consumer_regex_refresh_interval_ms
        self._tasks: set[asyncio.Future[None]] = set()  # fencing, assignment and regex tasks under way
        self._resolving: set[str] = set()  # groups whose regexes are being resolved

    def _now(self) -> int:
        now: int = self.clock.milliseconds()
        return now

    def _lock(self, group_id: str) -> asyncio.Lock:
        lock = self._locks.get(group_id)
        if lock is None:
            lock = self._locks[group_id] = asyncio.Lock()
        return lock

    # ================================================================ validation

    def validate_heartbeat(self, *, api_version: int, group_id: str, member_id: str, member_epoch: int,
                           instance_id: str | None, rack_id: str | None, rebalance_timeout_ms: int,
                           subscribed_topic_names: Sequence[str] | None, subscribed_topic_regex: str | None,
                           server_assignor: str | None, owned: Sequence[Any] | None) -> None:
        """Kafka's request checks, in its order (INVALID_REQUEST unless said otherwise)."""
        if (api_version >= 1 or member_id) and not member_id:
            raise InvalidRequestError("MemberId can't be empty.")
        if not group_id:
            raise InvalidRequestError("GroupId can't be empty.")
        if instance_id is not None and not instance_id:
            raise InvalidRequestError("InstanceId can't be empty.")
        if rack_id is not None and not rack_id:
            raise InvalidRequestError("RackId can't be empty.")
        if member_epoch == 0:
            if rebalance_timeout_ms == -1:
                raise InvalidRequestError("RebalanceTimeoutMs must be provided in first request.")
            if owned is None or len(owned) > 0:
                raise InvalidRequestError("TopicPartitions must be empty when (re-)joining.")
            if not subscribed_topic_names and not subscribed_topic_regex:
                raise InvalidRequestError(
                    "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
        elif member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if instance_id is None:
                raise InvalidRequestError("InstanceId can't be null.")
        elif member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise InvalidRequestError("MemberEpoch is invalid.")
        if subscribed_topic_regex:
            compile_topic_regex(subscribed_topic_regex)  # INVALID_REGULAR_EXPRESSION, in RE2J's words
        if server_assignor is not None and server_assignor not in self.assignors:
            raise UnsupportedAssignorError(f"ServerAssignor {server_assignor} is not supported. "
                                           f"Supported assignors: {', '.join(self.assignors)}.")

    # ================================================================ ConsumerGroupHeartbeat

    async def heartbeat(self, *, api_version: int, group_id: str, member_id: str, member_epoch: int,
                        instance_id: str | None, rack_id: str | None, rebalance_timeout_ms: int,
                        subscribed_topic_names: Sequence[str] | None, subscribed_topic_regex: str | None,
                        server_assignor: str | None, owned: Sequence[tuple[uuid.UUID, Sequence[int]]] | None,
                        client_id: str, client_host: str, classic_group: ClassicGroup | None,
                        authorized_topics: AuthorizedTopics | None = None) -> HeartbeatResult:
        """A heartbeat the caller has validated (validate_heartbeat): GroupCoordinator checks it
        before it may replace an empty classic group."""
        async with self._lock(group_id):
            if member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return await self._leave(group_id, member_id, member_epoch, instance_id)
            return await self._heartbeat(
                group_id, member_id or random_kafka_uuid(), member_epoch, instance_id, rack_id, rebalance_timeout_ms,
                subscribed_topic_names, subscribed_topic_regex, server_assignor, owned, client_id, client_host,
                classic_group, authorized_topics)

    async def _heartbeat(self, group_id: str, member_id: str, member_epoch: int, instance_id: str | None,
                         rack_id: str | None, rebalance_timeout_ms: int, subscribed_topic_names: Sequence[str] | None,
                         subscribed_topic_regex: str | None, server_assignor: str | None,
                         owned: Sequence[tuple[uuid.UUID, Sequence[int]]] | None, client_id: str, client_host: str,
                         classic_group: ClassicGroup | None, authorized_topics: AuthorizedTopics | None) -> HeartbeatResult:
        group = self.groups.get(group_id)
        created = False
        records: list[Record] = []
        if group is None:
            if classic_group is not None:
                # A classic group with members: converted online (Kafka's upgrade), if it may be.
                if member_epoch != 0:
                    raise GroupIdNotFoundError(f"Group {group_id} is not a consumer group.")
                group = self._upgrade(classic_group, records)
                created = True
            elif member_epoch != 0:
                raise GroupIdNotFoundError(f"Consumer group {group_id} not found.")
            else:
                group = ConsumerGroup(group_id)
                group.group_epoch = 1  # Kafka 4.4 gives a new group's first member epoch 2
                created = True
        member, is_new = self._member_for(group, member_id, member_epoch, instance_id, owned)
        replaced = self._replaced_static_member(group, instance_id, is_new)
        updated = msgspec.structs.replace(
            member,
            instance_id=instance_id if instance_id is not None else member.instance_id,
            rack_id=rack_id if rack_id is not None else member.rack_id,
            rebalance_timeout_ms=rebalance_timeout_ms if rebalance_timeout_ms != -1 else member.rebalance_timeout_ms,
            server_assignor=server_assignor if server_assignor is not None else member.server_assignor,
            subscribed_topic_names=(tuple(subscribed_topic_names) if subscribed_topic_names is not None
                                    else member.subscribed_topic_names),
            subscribed_topic_regex=((subscribed_topic_regex or None) if subscribed_topic_regex is not None
                                    else member.subscribed_topic_regex),
            client_id=client_id, client_host=client_host, classic=None,
            assigned=dict(member.assigned), pending_revocation=dict(member.pending_revocation),
            assignment_epochs=dict(member.assignment_epochs))
        updated = await self._update_member(group, member, updated, is_new=is_new, replaced=replaced, owned=owned,
                                            install=created, new_group=created and classic_group is None,
                                            records=records, authorized_topics=authorized_topics)
        full = member_epoch == 0 or (rebalance_timeout_ms != -1 and owned is not None and (
            subscribed_topic_names is not None or subscribed_topic_regex is not None))
        changed = updated.assigned != member.assigned
        heartbeat_interval: int = self.group_configs.value(group_id, "consumer.heartbeat.interval.ms")
        return HeartbeatResult(updated.member_id, updated.member_epoch, heartbeat_interval,
                               dict(updated.assigned) if full or changed else None)

    def _replaced_static_member(self, group: ConsumerGroup, instance_id: str | None,
                                is_new: bool) -> ConsumerGroupMember | None:
        """The static member a new member takes the place of (same instance id), if any; a
        member beyond the group's size limit is refused."""
        replaced = None
        if is_new and instance_id is not None and instance_id in group.static_members:
            replaced = group.members[group.static_members[instance_id]]
        if is_new and replaced is None and len(group.members) >= self.max_size:
            raise GroupMaxSizeReachedError(
                f"The consumer group has reached its maximum capacity of {self.max_size} members.")
        return replaced

    async def _update_member(self, group: ConsumerGroup, member: ConsumerGroupMember, updated: ConsumerGroupMember,
                             *, is_new: bool, replaced: ConsumerGroupMember | None,
                             owned: Sequence[tuple[uuid.UUID, Sequence[int]]] | None, install: bool, new_group: bool,
                             records: list[Record], authorized_topics: AuthorizedTopics | None) -> ConsumerGroupMember:
        """The part of a heartbeat (or of a classic member's JoinGroup) after the member is
        known and its request applied to a copy (`updated`): bump the group epoch if what the
        group assigns changed, compute the target if due, move the member towards it, write
        it all (after `records`), then make it the group's state. `install`: the group is not
        in the map yet (new, or converted from a classic group)."""
        group_id, member_id = group.group_id, updated.member_id
        if replaced is not None:
            # A static member back after leaving (-2): the new member id takes over its
            # assignment and epochs; the old one goes.
            updated.assigned, updated.pending_revocation = dict(replaced.assigned), {}
            updated.assignment_epochs = dict(replaced.assignment_epochs)
            updated.state = replaced.state
            records += self._member_tombstones(group_id, replaced.member_id)
        members_after = {k: v for k, v in group.members.items() if replaced is None or k != replaced.member_id}
        members_after[member_id] = updated

        if is_new or updated.metadata_key() != member.metadata_key():
            records.append(self._member_record(group_id, updated))
        names_changed = updated.subscribed_topic_names != member.subscribed_topic_names
        regex_change, dropped_regex, resolve_now = self._regex_change(group, member, updated, records)
        bump = (names_changed or regex_change == RegexChange.UPDATED_AND_RESOLVED
                or self.preferred_assignor(group.members.values()) != self.preferred_assignor(members_after.values()))
        group_epoch = group.group_epoch
        # `subscribed_topics` is what the group's metadata hash was last computed from. It is
        # looked at again when the epoch moves anyway or when a topic it names changed (Kafka's
        # metadata refresh); a regex not resolved yet changes nothing until it is.
        topics = self._subscribed_topics(members_after.values(), group.resolved_regexes)
        subscribed_topics = group.subscribed_topics
        if bump or self._metadata_changed(group):
            if topics != subscribed_topics:
                bump = True  # a subscribed topic appeared, went or changed its partition count
            subscribed_topics = topics
        if bump or new_group:
            group_epoch += 1
            records.append(self._epoch_record(group_id, group_epoch, subscribed_topics))

        target_epoch, target = group.assignment_epoch, group.target
        if replaced is not None and replaced.member_id in target:
            # The replacement inherits the target assignment too (no rebalance for a static rejoin).
            target = {(member_id if k == replaced.member_id else k): v for k, v in target.items()}
            records.append(self._target_member_record(group_id, member_id, target[member_id]))
        now = self._now()
        assignment_timestamp = group.assignment_timestamp
        interval = self._assignment_interval(group_id)
        if group_epoch > group.assignment_epoch and (
                now - group.assignment_timestamp >= interval or not group.members or new_group):
            target, target_records = self._new_target(group, members_after, topics, group_epoch, now)
            target_epoch, assignment_timestamp = group_epoch, now
            records += target_records

        scratch = _group_after(group, members_after, replaced)
        subscribed = self._topic_ids(self._topic_names(updated, group.resolved_regexes))
        nxt = reconcile(scratch, updated, target_epoch, target.get(member_id, {}), owned, subscribed,
                        names_changed or regex_change != RegexChange.NO_CHANGE)
        before = updated.assignment_key()
        scratch.update_assignment(updated, member_epoch=nxt[0], previous_member_epoch=nxt[1], state=nxt[2],
                                  assigned=nxt[3], pending_revocation=nxt[4])
        if is_new or updated.assignment_key() != before or replaced is not None:
            records.append(self._current_assignment_record(group_id, updated))

        # Decided on the group as it was before this heartbeat (its old regex still resolved).
        resolve = self._regexes_to_resolve(group, members_after.values(), resolve_now)
        if records:
            await self.offsets_topic.append(self.offsets_topic.partition_for(group_id), records)
        # Written: now it is the group's state.
        if install:
            self._install(group)
        if replaced is not None:
            group.remove_member(replaced.member_id)
            self._cancel_timeouts(group_id, replaced.member_id)
        group.put_member(updated)
        group.update_assignment(updated, member_epoch=updated.member_epoch,
                                previous_member_epoch=updated.previous_member_epoch, state=updated.state,
                                assigned=updated.assigned, pending_revocation=updated.pending_revocation)
        group.subscribed_topics = subscribed_topics
        if dropped_regex is not None:
            group.resolved_regexes.pop(dropped_regex, None)
        if group_epoch != group.group_epoch:
            group.group_epoch = group_epoch
            log.info("[GroupId %s] Bumped group epoch to %d with metadata hash %d.", group_id, group_epoch,
                     group_metadata_hash(subscribed_topics))
        if target_epoch != group.assignment_epoch or replaced is not None:
            group.target = dict(target)
            group.assignment_epoch, group.assignment_timestamp = target_epoch, assignment_timestamp
        if is_new:
            log.info("[GroupId %s] Member %s joins the consumer group using the %s protocol.", group_id, member_id,
                     "consumer" if updated.classic is None else "classic")
        self._schedule_timeouts(group, updated)
        if resolve:
            self._resolve_later(group.group_id, resolve, authorized_topics)
        return updated

    def _assignment_interval(self, group_id: str) -> int:
        interval: int = self.group_configs.value(group_id, "consumer.assignment.interval.ms")
        return interval

    def _install(self, group: ConsumerGroup) -> None:
        """Put a group whose records are written in the map (a classic one it replaces goes)."""
        if self.classic.groups.get(group.group_id) is not None:
            self.classic.remove_group(group.group_id)
        self.groups[group.group_id] = group
        for m in group.members.values():
            self._schedule_timeouts(group, m)
        log.info("[GroupId %s] Created consumer group", group.group_id)

    def _member_for(self, group: ConsumerGroup, member_id: str, member_epoch: int, instance_id: str | None,
                    owned: Sequence[tuple[uuid.UUID, Sequence[int]]] | None) -> tuple[ConsumerGroupMember, bool]:
        """The member a heartbeat is from, and whether it is new (Kafka's getOrMaybeSubscribe...)."""
        if instance_id is None:
            member = group.members.get(member_id)
            if member_epoch == 0:
                return (member, False) if member is not None else (ConsumerGroupMember(member_id), True)
            if member is None:
                raise UnknownMemberIdError(f"Member {member_id} is not a member of group {group.group_id}.")
            self._check_epoch(member, member_epoch, owned)
            return member, False
        existing_id = group.static_members.get(instance_id)
        existing = group.members.get(existing_id) if existing_id is not None else None
        if member_epoch == 0:
            if existing is None:
                member = group.members.get(member_id)
                return (member, False) if member is not None else (ConsumerGroupMember(member_id), True)
            if existing.member_id == member_id:
                return existing, False
            if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                raise UnreleasedInstanceIdError(
                    f"Static member {member_id} with instance id {instance_id} cannot join the group because the "
                    f"instance id is owned by {existing.member_id} member.")
            # Its replacement starts as a copy of it under the new id (subscription included).
            return msgspec.structs.replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0,
                                           assigned={}, pending_revocation={}, assignment_epochs={}), True
        if existing is None:
            raise UnknownMemberIdError(f"Instance id {instance_id} is unknown.")
        if existing.member_id != member_id:
            raise FencedInstanceIdError(f"Static member {member_id} with instance id {instance_id} was fenced by "
                                        f"member {existing.member_id}.")
        self._check_epoch(existing, member_epoch, owned)
        return existing, False

    @staticmethod
    def _check_epoch(member: ConsumerGroupMember, epoch: int,
                     owned: Sequence[tuple[uuid.UUID, Sequence[int]]] | None) -> None:
        if epoch > member.member_epoch:
            raise FencedMemberEpochError(
                f"The consumer group member has a greater member epoch ({epoch}) than the one known by the group "
                f"coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin.")
        if epoch < member.member_epoch and not (epoch == member.previous_member_epoch
                                                 and _is_subset(owned, member.assigned)):
            # The answer that moved it to its current epoch may be lost: its previous epoch
            # with partitions it was assigned is still fine.
            raise FencedMemberEpochError(
                f"The consumer group member has a smaller member epoch ({epoch}) than the one known by the group "
                f"coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin.")

    # ================================================================ leaving and fencing

    async def _leave(self, group_id: str, member_id: str, member_epoch: int, instance_id: str | None) -> HeartbeatResult:
        group = self.groups.get(group_id)
        if group is None:
            raise GroupIdNotFoundError(f"Group {group_id} not found.")
        member = _member_by_identity(group, member_id, instance_id, f"Instance id {instance_id} is unknown.")
        if instance_id is not None and member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            leaving = msgspec.structs.replace(member, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                                              pending_revocation={})
            await self.offsets_topic.append(self.offsets_topic.partition_for(group_id),
                                            [self._current_assignment_record(group_id, leaving)])
            group.update_assignment(member, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                                    previous_member_epoch=member.previous_member_epoch, state=member.state,
                                    assigned=member.assigned, pending_revocation={})
            self.timer.cancel(("consumer-revocation", group_id, member.member_id))
            log.info("[GroupId %s] Static Member %s with instance id %s temporarily left the consumer group.",
                     group_id, member_id, instance_id)
            return HeartbeatResult(member.member_id, LEAVE_GROUP_STATIC_MEMBER_EPOCH, 0, None)
        await self._fence(group, member, "left the consumer group")
        return HeartbeatResult(member_id, member_epoch, 0, None)

    async def _fence(self, group: ConsumerGroup, member: ConsumerGroupMember, why: str) -> None:
        await self._fence_members(group, [member], why)

    async def _fence_members(self, group: ConsumerGroup, members: Sequence[ConsumerGroupMember], why: str) -> None:
        """Remove `members` (each one's three records tombstoned) and bump the group epoch; the
        group left empty gets its (empty) target assignment at once, as Kafka writes it. When
        only classic members would be left, the group becomes a classic group instead
        (Kafka's online downgrade)."""
        if self._may_downgrade(group, members):
            await self._downgrade(group, members, f"Downgrade group {group.group_id} from consumer to classic "
                                                  f"for member leaving.")
            return
        group_id = group.group_id
        leaving = {m.member_id for m in members}
        epoch = group.group_epoch + 1
        records: list[Record] = []
        for m in members:
            records += self._member_tombstones(group_id, m.member_id)
        # A regex goes with its last users (Kafka's maybeDeleteResolvedRegularExpressions).
        dropped = {r for r in {m.subscribed_topic_regex for m in members if m.subscribed_topic_regex}
                   if group.regex_subscribers(r) == sum(1 for m in members if m.subscribed_topic_regex == r)}
        records += [self._regex_tombstone(group_id, r) for r in sorted(dropped)]
        remaining = [m for m in group.members.values() if m.member_id not in leaving]
        resolved = {r: v for r, v in group.resolved_regexes.items() if r not in dropped}
        topics = self._subscribed_topics(remaining, resolved)
        records.append(self._epoch_record(group_id, epoch, topics))
        now = self._now()
        empty = not remaining
        if empty:
            records.append(self._target_metadata_record(group_id, epoch, 0))
        await self.offsets_topic.append(self.offsets_topic.partition_for(group_id), records)
        for m in members:
            group.remove_member(m.member_id)
            self._cancel_timeouts(group_id, m.member_id)
            log.info("[GroupId %s] Member %s %s.", group_id, m.member_id, why)
        group.resolved_regexes = resolved
        group.group_epoch = epoch
        group.subscribed_topics = topics
        if empty:
            group.assignment_epoch, group.assignment_timestamp, group.target = epoch, now, {}

    def _schedule_timeouts(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        group_id, member_id = group.group_id, member.member_id
        session_ms: int = (self.group_configs.value(group_id, "consumer.session.timeout.ms") if member.classic is None
                           else member.classic.session_timeout_ms)
        self.timer.schedule(("consumer-session", group_id, member_id), session_ms,
                            lambda: self._expire(group_id, member_id, "session"))
        if member.classic is not None:
            return  # a classic member answers revocations by rejoining: its join timeout covers it
        key = ("consumer-revocation", group_id, member_id)
        if member.state == MemberState.UNREVOKED_PARTITIONS:
            if key not in self.timer:
                self.timer.schedule(key, max(member.rebalance_timeout_ms, 0),
                                    lambda: self._expire(group_id, member_id, "revocation"))
        else:
            self.timer.cancel(key)

    def _cancel_timeouts(self, group_id: str, member_id: str) -> None:
        for kind in ("consumer-session", "consumer-revocation", "consumer-join", "consumer-sync"):
            self.timer.cancel((kind, group_id, member_id))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` (a timer's) as a task held until done: the loop keeps only weak references."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _expire(self, group_id: str, member_id: str, what: str) -> None:
        async def fence() -> None:
            async with self._lock(group_id):
                group = self.groups.get(group_id)
                member = group.members.get(member_id) if group is not None else None
                if group is None or member is None:
                    return
                why = {
                    "session": "has been fenced: its session timed out",
                    "revocation": "has been fenced: it did not revoke its partitions within its rebalance timeout",
                    "join": "has been fenced: the classic member failed to join within the rebalance timeout",
                    "sync": "has been fenced: the member failed to sync within timeout",
                }[what]
                try:
                    await self._fence(group, member, why)
                except Exception:  # noqa: BLE001 - the next heartbeat (or timeout) tries again
                    log.exception("[GroupId %s] Could not fence member %s", group_id, member_id)

        self._spawn(fence())

    # ================================================================ classic members (mixed groups)

    async def classic_join(self, *, group_id: str, member_id: str, group_instance_id: str | None, client_id: str,
                           client_host: str, session_timeout_ms: int, rebalance_timeout_ms: int, protocol_type: str,
                           protocols: list[tuple[str, bytes]], require_known_member_id: bool) -> JoinGroupResult:
        """JoinGroup from a classic consumer into a consumer-protocol group with members
        (Kafka's classicGroupJoinToConsumerGroup): the member is one of the group's, its
        subscription read from its first protocol's metadata; it is answered at once, as a
        follower, with its member epoch as the generation. SyncGroup then gives it what the
        broker assigned."""
        async with self._lock(group_id):
            group = self.groups[group_id]
            if self.migration_policy == "disabled":
                raise InconsistentGroupProtocolError(
                    f"Cannot join the consumer group {group_id} with the classic protocol because the group "
                    f"migration is disabled.")
            is_unknown = not member_id
            member_id = member_id or random_kafka_uuid()
            replaced = None
            if group_instance_id is not None and group_instance_id in group.static_members:
                replaced = group.members[group.static_members[group_instance_id]]
            if member_id not in group.members and replaced is None and len(group.members) >= self.max_size:
                raise GroupMaxSizeReachedError(
                    f"The consumer group has reached its maximum capacity of {self.max_size} members.")
            if not group.supports_classic_protocols(protocol_type, [name for name, _ in protocols]):
                raise InconsistentGroupProtocolError(f"Member {member_id}'s protocols are not supported.")
            if require_known_member_id and is_unknown:
                log.info("[GroupId %s] Dynamic member with unknown member id joins the consumer group. Created a new "
                         "member id %s and requesting the member to rejoin with this id.", group_id, member_id)
                return JoinGroupResult(error=ErrorCode.MEMBER_ID_REQUIRED, member_id=member_id)
            try:
                subscription = decode_subscription(protocols[0][1])
            except SchemaError:
                raise InconsistentGroupProtocolError("Malformed embedded consumer protocol in subscription "
                                                     "deserialization.") from None
            if group_instance_id is None:
                # Any member id is taken (the one MEMBER_ID_REQUIRED gave is not remembered).
                existing = group.members.get(member_id)
                member, is_new = (existing, False) if existing is not None else (ConsumerGroupMember(member_id), True)
            elif replaced is not None and replaced.member_id == member_id:
                member, is_new, replaced = replaced, False, None
            elif replaced is not None:
                if not is_unknown:
                    raise FencedInstanceIdError(f"Static member {member_id} with instance id {group_instance_id} "
                                                f"was fenced by member {replaced.member_id}.")
                member = msgspec.structs.replace(replaced, member_id=member_id, member_epoch=0,
                                                 previous_member_epoch=0, assigned={}, pending_revocation={},
                                                 assignment_epochs={})
                is_new = True
            elif is_unknown:
                member, is_new = ConsumerGroupMember(member_id), True
            else:
                raise UnknownMemberIdError(f"Member with instance id {group_instance_id} is not a member of group "
                                           f"{group_id}.")
            updated = msgspec.structs.replace(
                member,
                instance_id=group_instance_id if group_instance_id is not None else member.instance_id,
                rack_id=subscription.rack_id if subscription.rack_id is not None else member.rack_id,
                rebalance_timeout_ms=rebalance_timeout_ms if rebalance_timeout_ms != -1 else member.rebalance_timeout_ms,
                subscribed_topic_names=subscription.topics, subscribed_topic_regex=None,
                client_id=client_id, client_host=client_host,
                classic=ClassicMemberMetadata(session_timeout_ms, tuple(protocols)),
                assigned=dict(member.assigned), pending_revocation=dict(member.pending_revocation),
                assignment_epochs=dict(member.assignment_epochs))
            if replaced is not None and self._may_downgrade(group, [replaced], joining=True):
                # The last consumer-protocol member was this static member: the classic
                # consumer taking its place makes the group classic again (Kafka's
                # validateOnlineDowngradeWithReplacedMember).
                joined = await self._downgrade_replacing(group, replaced, updated)
                return JoinGroupResult(generation_id=joined.member_epoch, protocol_type="consumer",
                                       protocol_name=protocols[0][0], leader="", member_id=member_id)
            owned = self._owned_by_name(subscription.owned_partitions)
            updated = await self._update_member(group, member, updated, is_new=is_new, replaced=replaced, owned=owned,
                                                install=False, new_group=False, records=[], authorized_topics=None)
            self.timer.cancel(("consumer-join", group_id, member_id))
            self.timer.schedule(("consumer-sync", group_id, member_id), max(updated.rebalance_timeout_ms, 0),
                                lambda: self._expire(group_id, member_id, "sync"))
            return JoinGroupResult(generation_id=updated.member_epoch, protocol_type="consumer",
                                   protocol_name=protocols[0][0], leader="", member_id=member_id)

    def _owned_by_name(self, owned: Sequence[tuple[str, Sequence[int]]]) -> list[tuple[uuid.UUID, Sequence[int]]]:
        """A classic member's owned partitions (by topic name) by topic id; unknown topics dropped."""
        out = []
        for name, parts in owned:
            meta = self.offsets_topic.topics.get(name)
            if meta is not None:
                out.append((meta.topic_id, parts))
        return out

    def _classic_member(self, group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerGroupMember:
        """Kafka's validateConsumerGroupMember then throwIfMemberDoesNotUseClassicProtocol."""
        member = _member_by_identity(group, member_id, instance_id, f"Member with instance id {instance_id} is not "
                                                                    f"a member of group {group.group_id}.")
        if member.classic is None:
            raise UnknownMemberIdError(f"Member {member.member_id} does not use the classic protocol.")
        return member

    @staticmethod
    def _check_generation(member: ConsumerGroupMember, generation_id: int) -> None:
        if member.member_epoch != generation_id:
            raise IllegalGenerationError(f"The request generation id {generation_id} is not equal to the member "
                                         f"epoch {member.member_epoch} of member {member.member_id}.")

    async def classic_sync(self, *, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
                           protocol_type: str | None, protocol_name: str | None) -> SyncGroupResult:
        """SyncGroup from a classic member: what the broker assigned it, in its subscription's
        version, unless the group moved on since its join (REBALANCE_IN_PROGRESS: rejoin)."""
        async with self._lock(group_id):
            group = self.groups[group_id]
            member = self._classic_member(group, member_id, group_instance_id)
            self._check_generation(member, generation_id)
            assert member.classic is not None
            name, metadata = member.classic.supported_protocols[0]
            if protocol_type is not None and protocol_type != "consumer":
                raise InconsistentGroupProtocolError(
                    f"The protocol type {protocol_type} from member {member_id} request is not equal to the group "
                    f"protocol type consumer.")
            if protocol_name is not None and protocol_name != name:
                raise InconsistentGroupProtocolError(
                    f"The protocol name {protocol_name} from member {member_id} request is not equal to the protocol "
                    f"name {name} returned in the join response.")
            self._rebalance_check(group, member)
            self.timer.cancel(("consumer-sync", group_id, member.member_id))
            self._schedule_timeouts(group, member)
            return SyncGroupResult(protocol_type=protocol_type, protocol_name=protocol_name,
                                   assignment=self._classic_assignment(member.assigned, version_of(metadata)))

    def _classic_assignment(self, assigned: Assignment, version: int) -> bytes:
        """An assignment by topic id as a ConsumerProtocolAssignment (by topic name)."""
        by_name: dict[str, list[int]] = {}
        for topic_id, parts in assigned.items():
            meta = self.offsets_topic.topics.by_id(topic_id)
            if meta is not None:
                by_name[meta.name] = sorted(parts)
        return encode_assignment(by_name, version)

    def _rebalance_check(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        if group.assignment_epoch > member.member_epoch and member.state != MemberState.UNREVOKED_PARTITIONS:
            self._join_timeout(group, member)
            raise RebalanceInProgressError(f"A new rebalance is triggered in group {group.group_id} and member "
                                           f"{member.member_id} should rejoin to catch up.")

    def _join_timeout(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        """A classic member told to rejoin must within its rebalance timeout, or is fenced."""
        key = ("consumer-join", group.group_id, member.member_id)
        if key not in self.timer:
            group_id, member_id = group.group_id, member.member_id
            self.timer.schedule(key, max(member.rebalance_timeout_ms, 0),
                                lambda: self._expire(group_id, member_id, "join"))

    async def classic_heartbeat(self, *, group_id: str, generation_id: int, member_id: str,
                                group_instance_id: str | None) -> None:
        """Heartbeat from a classic member: its session goes on; REBALANCE_IN_PROGRESS when it
        must rejoin to move towards its target (a newer assignment, partitions to give up, or
        partitions now free for it)."""
        async with self._lock(group_id):
            group = self.groups[group_id]
            member = self._classic_member(group, member_id, group_instance_id)
            self._check_generation(member, generation_id)
            self._schedule_timeouts(group, member)
            if (member.member_epoch < group.assignment_epoch
                    or member.state == MemberState.UNREVOKED_PARTITIONS
                    or (member.state == MemberState.UNRELEASED_PARTITIONS
                        and not group.waiting_on_unreleased_partition(member))):
                self._join_timeout(group, member)
                raise RebalanceInProgressError(f"Group {group_id} is rebalancing.")

    async def classic_leave(self, group_id: str, members: Sequence[tuple[str, str | None, str | None]]) -> list[int]:
        """LeaveGroup into a consumer-protocol group: each named member (either protocol)
        leaves; an error code per member."""
        async with self._lock(group_id):
            group = self.groups[group_id]
            results: list[int] = []
            leaving: list[ConsumerGroupMember] = []
            for member_id, instance_id, reason in members:
                try:
                    member = _member_by_identity(group, member_id, instance_id,
                                                 f"Instance id {instance_id} is unknown.", any_member_id=True)
                except KafkaError as exc:
                    results.append(exc.error_code)
                    continue
                log.info("[GroupId %s] %s has left group through explicit `LeaveGroup` request; client reason: %s",
                         group_id, f"Dynamic member {member_id}" if instance_id is None else
                         f"Static member {member_id} with instance id {instance_id}", reason or "not provided")
                results.append(ErrorCode.NONE)
                if member not in leaving:
                    leaving.append(member)
            if leaving:
                await self._fence_members(group, leaving, "left the consumer group")
            return results

    # -- conversions -----------------------------------------------------------------------------

    def _upgrade(self, classic: ClassicGroup, records: list[Record]) -> ConsumerGroup:
        """The consumer-protocol group a classic group with members becomes when a consumer-
        protocol member joins it (Kafka's convertToConsumerGroup), its records appended to
        `records`: each member keeps its id, the generation as its epoch, and the partitions
        the classic assignment gave it."""
        group_id = classic.group_id
        if self.migration_policy not in ("upgrade", "bidirectional"):
            raise GroupIdNotFoundError(f"Cannot upgrade classic group {group_id} to consumer group because online "
                                       f"upgrade is disabled.")
        if classic.protocol_type != "consumer":
            raise GroupIdNotFoundError(f"Cannot upgrade classic group {group_id} to consumer group because the group "
                                       f"does not use the consumer embedded protocol.")
        if len(classic.members) > self.max_size:
            raise GroupIdNotFoundError(f"Cannot upgrade classic group {group_id} to consumer group because the group "
                                       f"size exceeds the consumer group maximum size.")
        generation = classic.generation_id
        group = ConsumerGroup(group_id)
        group.group_epoch = group.assignment_epoch = generation
        for cm in classic.members.values():
            try:
                assigned: Assignment = {}
                if cm.assignment:
                    partitions, user_data = decode_assignment(cm.assignment)
                    if user_data:
                        raise GroupIdNotFoundError(
                            f"Cannot upgrade classic group {group_id} to consumer group because an unsupported "
                            f"custom assignor is in use. Please refer to the documentation or switch to a default "
                            f"assignor before re-attempting the upgrade.")
                    assigned = {tid: frozenset(parts) for tid, parts in self._owned_by_name(partitions) if parts}
                subscription = decode_subscription(cm.metadata(classic.protocol_name or ""))
            except SchemaError:
                raise GroupIdNotFoundError(f"Cannot upgrade classic group {group_id} to consumer group because the "
                                           f"embedded consumer protocol is malformed.") from None
            member = ConsumerGroupMember(
                cm.member_id, client_id=cm.client_id, client_host=cm.client_host, instance_id=cm.group_instance_id,
                rack_id=subscription.rack_id, rebalance_timeout_ms=cm.rebalance_timeout_ms,
                subscribed_topic_names=subscription.topics,
                classic=ClassicMemberMetadata(cm.session_timeout_ms, tuple(cm.protocols)))
            group.put_member(member)
            group.update_assignment(member, member_epoch=generation, previous_member_epoch=generation,
                                    state=MemberState.STABLE, assigned=assigned, pending_revocation={})
            group.target[member.member_id] = assigned
        group.subscribed_topics = self._subscribed_topics(group.members.values(), {})
        records.append(self.classic.tombstone(group_id))
        records += [self._member_record(group_id, m) for m in group.members.values()]
        records.append(self._epoch_record(group_id, generation, group.subscribed_topics))
        records += [self._target_member_record(group_id, mid, a) for mid, a in group.target.items()]
        records.append(self._target_metadata_record(group_id, generation, 0))
        records += [self._current_assignment_record(group_id, m) for m in group.members.values()]
        self.classic.hand_over(group_id)
        log.info("[GroupId %s] Converted the classic group to a consumer group.", group_id)
        return group

    def _may_downgrade(self, group: ConsumerGroup, leaving: Sequence[ConsumerGroupMember], *,
                       joining: bool = False) -> bool:
        """Kafka's validateOnlineDowngradeWith{Fenced,Replaced}Member(s): only classic members
        would stay (`joining`: a classic member takes the place of the one leaving)."""
        ids = {m.member_id for m in leaving}
        remaining = [m for m in group.members.values() if m.member_id not in ids]
        if joining and all(m.classic is not None for m in leaving):
            return False  # a classic member replacing a classic one changes nothing
        if (not remaining and not joining) or any(m.classic is None for m in remaining):
            return False
        if self.migration_policy not in ("downgrade", "bidirectional"):
            log.info("Cannot downgrade consumer group %s to classic group because the online downgrade is disabled.",
                     group.group_id)
            return False
        if len(remaining) + joining > self.classic.max_group_size:
            log.info("Cannot downgrade consumer group %s to classic group because its group size is greater than "
                     "classic group max size.", group.group_id)
            return False
        return True

    async def _downgrade(self, group: ConsumerGroup, leaving: Sequence[ConsumerGroupMember], reason: str | None,
                         joining: ConsumerGroupMember | None = None) -> None:
        """The classic group the remaining (classic) members form (Kafka's convertToClassicGroup):
        the group epoch as its generation, each member's target as its assignment (`joining`
        takes the place, and the target, of the one member leaving), then a rebalance unless
        `reason` is None, so that they rejoin as a classic group."""
        group_id = group.group_id
        ids = {m.member_id for m in leaving}
        targets = dict(group.target)
        members = [m for m in group.members.values() if m.member_id not in ids]
        if joining is not None:
            targets[joining.member_id] = joining.assigned
            members.append(joining)
        now = self._now()
        classic = ClassicGroup(group_id, ClassicGroupState.STABLE, now_ms=now)
        classic.generation_id = group.group_epoch
        classic.current_state_timestamp_ms = now
        for m in members:
            assert m.classic is not None  # checked by _may_downgrade: only classic members stay
            classic.add(ClassicGroupMember(m.member_id, m.instance_id, m.client_id, m.client_host,
                                           m.rebalance_timeout_ms, m.classic.session_timeout_ms, "consumer",
                                           list(m.classic.supported_protocols)))
        classic.protocol_type = "consumer"
        classic.protocol_name = classic.select_protocol()
        for cm in classic.members.values():
            version = version_of(cm.metadata(classic.protocol_name or "")) if cm.protocols else 0
            cm.assignment = self._classic_assignment(targets.get(cm.member_id, {}), version)
        records = self._conversion_tombstones(group, joining.member_id if joining is not None else None)
        records.append(self.classic.group_record(classic))
        await self.offsets_topic.append(self.offsets_topic.partition_for(group_id), records)
        self.remove_group(group_id)
        self.classic.adopt(classic, reason)
        log.info("[GroupId %s] Converted the consumer group to a classic group.", group_id)

    async def _downgrade_replacing(self, group: ConsumerGroup, replaced: ConsumerGroupMember,
                                   joining: ConsumerGroupMember) -> ConsumerGroupMember:
        """A classic static member takes the place of the last consumer-protocol member: it
        inherits that member's target at the assignment epoch (no rebalance), unless the group
        was still to be reassigned or the subscription changed (then the classic group
        rebalances and the member rejoins from generation 0)."""
        rebalance = (group.assignment_epoch < group.group_epoch
                     or joining.subscribed_topic_names != replaced.subscribed_topic_names)
        if rebalance:
            joining.member_epoch, joining.assigned = 0, {}
        else:
            ids = self._topic_ids(joining.subscribed_topic_names)
            joining.member_epoch = group.assignment_epoch
            joining.assigned = {t: p for t, p in group.target.get(replaced.member_id, {}).items() if t in ids}
        await self._downgrade(group, [replaced], f"Downgrade group {group.group_id} from consumer to classic with "
                                                 f"stale assignment." if rebalance else None, joining)
        return joining

    def _conversion_tombstones(self, group: ConsumerGroup, joining_id: str | None = None) -> list[Record]:
        """Every record of the group, tombstoned in Kafka's order (createGroupTombstoneRecords),
        and those of a member joining in place of another."""
        gid, ids = group.group_id, list(group.members) + ([joining_id] if joining_id else [])
        key = encode_consumer_group_key
        return [
            *((key(ConsumerGroupMemberKey(_T.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, gid, m)), None) for m in ids),
            *((key(ConsumerGroupMemberKey(_T.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER, gid, m)), None) for m in ids),
            (key(ConsumerGroupKey(_T.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, gid)), None),
            *((key(ConsumerGroupMemberKey(_T.CONSUMER_GROUP_MEMBER_METADATA, gid, m)), None) for m in ids),
            *(self._regex_tombstone(gid, r) for r in group.resolved_regexes),
            (key(ConsumerGroupKey(_T.CONSUMER_GROUP_METADATA, gid)), None),
        ]

    # ================================================================ subscription regexes

    def _regex_change(self, group: ConsumerGroup, member: ConsumerGroupMember, updated: ConsumerGroupMember,
                      records: list[Record]) -> tuple[RegexChange, str | None, bool]:
        """What the heartbeat did to the member's regex (Kafka's maybeUpdateRegularExpressions):
        the change, the regex whose resolution goes with it (tombstoned in `records`: this
        member was its last user), and whether a new regex needs resolving."""
        old, new = member.subscribed_topic_regex, updated.subscribed_topic_regex
        if old == new:
            return RegexChange.NO_CHANGE, None, False
        dropped = None
        if old and group.regex_subscribers(old) == 1:
            dropped = old
            records.append(self._regex_tombstone(group.group_id, old))
        if new:
            if group.regex_subscribers(new) == 0:
                return RegexChange.UPDATED, dropped, True
            if new in group.resolved_regexes:
                return RegexChange.UPDATED_AND_RESOLVED, dropped, False
            return RegexChange.UPDATED, dropped, False
        return RegexChange.UPDATED_AND_RESOLVED, dropped, False

    def _regexes_to_resolve(self, group: ConsumerGroup, members_after: Iterable[ConsumerGroupMember],
                            required: bool) -> frozenset[str]:
        """The regexes to resolve now (none: not now). Resolved when one is new or unresolved,
        a topic was created since the last resolution, or the refresh interval passed; never
        twice at once, nor within 10 s of the last resolution. `group` is as it was before
        the heartbeat, `members_after` its members after it."""
        regexes = frozenset(m.subscribed_topic_regex for m in members_after if m.subscribed_topic_regex)
        if (not required and not group.subscribed_regexes()) or group.group_id in self._resolving:
            return frozenset()
        now = self._now()
        last = group.last_regex_refresh()
        if last is not None and now <= last[0] + REGEX_REFRESH_MIN_INTERVAL_MS:
            return frozenset()
        required = (required or last is None or len(regexes) != len(group.resolved_regexes)
                    or last[1] < self.offsets_topic.topics.new_topics_generation
                    or now > last[0] + self.regex_refresh_interval_ms)
        return regexes if required else frozenset()

    def _resolve_later(self, group_id: str, regexes: frozenset[str], authorized_topics: AuthorizedTopics | None) -> None:
        self._resolving.add(group_id)
        self._spawn(self._resolve(group_id, regexes, authorized_topics))

    async def _resolve(self, group_id: str, regexes: frozenset[str], authorized_topics: AuthorizedTopics | None) -> None:
        """Kafka's TopicRegexResolver then handleRegularExpressionsResult: match every topic
        against the group's regexes, then, under the group's lock, write what changed."""
        try:
            started = self._now()
            topics = self.offsets_topic.topics
            version, names = topics.generation, [t.name for t in topics.all()]
            found: dict[str, frozenset[str]] = {}
            for regex in regexes:
                try:
                    found[regex] = compile_topic_regex(regex).matching(names)
                except InvalidRegularExpressionError as exc:
                    log.error("[GroupId %s] Couldn't parse regular expression '%s' due to `%s`. Ignoring it.",
                              group_id, regex, exc)
                    found[regex] = frozenset()
            if authorized_topics is not None:
                allowed = set(authorized_topics(set().union(*found.values())))
                found = {regex: matched & allowed for regex, matched in found.items()}
            log.info("[GroupId %s] Scanned %d topics to refresh regular expressions %s in %dms.", group_id,
                     len(names), sorted(found), self._now() - started)
            resolved = {regex: ResolvedRegex(matched, version, started) for regex, matched in found.items()}
            async with self._lock(group_id):
                group = self.groups.get(group_id)
                if group is None:
                    log.debug("[GroupId %s] Received result of regular expression resolution but it no longer "
                              "exists.", group_id)
                    return
                await self._apply_resolutions(group, resolved)
        except Exception:  # noqa: BLE001 - the next heartbeat allowed to tries again
            log.exception("[GroupId %s] Couldn't update regular expressions", group_id)
        finally:
            self._resolving.discard(group_id)

    async def _apply_resolutions(self, group: ConsumerGroup, resolved: dict[str, ResolvedRegex]) -> None:
        """Write the resolutions of regexes still in use; bump the group epoch when one
        matches other topics than before (a new regex's first match counts when it is not
        empty), so that a target assignment follows."""
        group_id = group.group_id
        records: list[Record] = []
        bump = False
        kept: dict[str, ResolvedRegex] = {}
        for regex, found in resolved.items():
            if group.regex_subscribers(regex) == 0:
                continue
            before = group.resolved_regexes.get(regex)
            if (before.topics if before is not None else frozenset()) != found.topics:
                bump = True
            kept[regex] = found
            records.append(self._regex_record(group_id, regex, found))
        after = {**group.resolved_regexes, **kept}
        topics = self._subscribed_topics(group.members.values(), after)
        if topics != group.subscribed_topics:
            bump = True
        epoch = group.group_epoch + 1 if bump else group.group_epoch
        if bump:
            records.append(self._epoch_record(group_id, epoch, topics))
        if not records:
            return
        await self.offsets_topic.append(self.offsets_topic.partition_for(group_id), records)
        group.resolved_regexes = after
        group.subscribed_topics = topics
        if bump:
            group.group_epoch = epoch
            log.info("[GroupId %s] Bumped group epoch to %d.", group_id, epoch)

    # ================================================================ assignment

    def _subscribed_topics(self, members: Iterable[ConsumerGroupMember],
                           resolved: Resolutions) -> dict[str, tuple[uuid.UUID, int]]:
        """Subscribed topics that exist: name -> (topic id, partitions)."""
        topics = self.offsets_topic.topics
        out: dict[str, tuple[uuid.UUID, int]] = {}
        for m in members:
            for name in self._topic_names(m, resolved):
                meta = topics.get(name)
                if meta is not None:
                    out[name] = (meta.topic_id, meta.partitions)
        return out

    def _metadata_changed(self, group: ConsumerGroup) -> bool:
        """Whether a topic the group subscribes to was created, deleted or given partitions
        since its subscribed topics were last looked at (Kafka's hasMetadataExpired)."""
        topics = self.offsets_topic.topics
        for m in group.members.values():
            for name in self._topic_names(m, group.resolved_regexes):
                meta = topics.get(name)
                if (None if meta is None else (meta.topic_id, meta.partitions)) != group.subscribed_topics.get(name):
                    return True
        return False

    def _topic_ids(self, names: Iterable[str]) -> frozenset[uuid.UUID]:
        """The ids of those of `names` that exist."""
        topics = self.offsets_topic.topics
        return frozenset(meta.topic_id for meta in map(topics.get, names) if meta is not None)

    @staticmethod
    def _topic_names(member: ConsumerGroupMember, resolved: Resolutions) -> Iterable[str]:
        """What `member` subscribes to: its topic names, and what its regex was last resolved
        to (nothing while it has not been)."""
        regex = member.subscribed_topic_regex
        found = resolved.get(regex) if regex else None
        if found is None:
            return member.subscribed_topic_names
        return [*member.subscribed_topic_names, *found.topics]

    def preferred_assignor(self, members: Iterable[ConsumerGroupMember]) -> str:
        """The assignor most members ask for; the first of group.consumer.assignors otherwise."""
        counts: dict[str, int] = {}
        for m in members:
            if m.server_assignor is not None:
                counts[m.server_assignor] = counts.get(m.server_assignor, 0) + 1
        if not counts:
            return self.assignors[0]
        return max(counts, key=lambda a: (counts[a], -self.assignors.index(a)))

    def _new_target(self, group: ConsumerGroup, members: dict[str, ConsumerGroupMember],
                    topics: dict[str, tuple[uuid.UUID, int]], epoch: int,
                    now: int) -> tuple[dict[str, Assignment], list[Record]]:
        """The target assignment for `epoch`, and the records of what changed in it."""
        target = self._compute_target(group, members, topics)
        records = [self._target_member_record(group.group_id, mid, assignment)
                   for mid, assignment in target.items() if group.target.get(mid) != assignment]
        records.append(self._target_metadata_record(group.group_id, epoch, now))
        return target, records

    def _compute_target(self, group: ConsumerGroup, members: dict[str, ConsumerGroupMember],
                        topics: dict[str, tuple[uuid.UUID, int]]) -> dict[str, Assignment]:
        by_name = sorted(topics)
        specs = []
        for m in members.values():
            specs.append(MemberSpec(m.member_id, m.instance_id,
                                    frozenset(topics[n][0] for n in self._topic_names(m, group.resolved_regexes)
                                              if n in topics),
                                    group.target.get(m.member_id, {})))
        spec = AssignmentSpec(tuple(specs), {tid: count for tid, count in topics.values()},
                              tuple(topics[n][0] for n in by_name))
        return assign(self.preferred_assignor(members.values()), spec)

    # ================================================================ records

    @staticmethod
    def _epoch_record(group_id: str, epoch: int, topics: Mapping[str, tuple[uuid.UUID, int]]) -> Record:
        """The group's epoch, with the metadata hash of the topics it subscribes to."""
        return (encode_consumer_group_key(ConsumerGroupKey(_T.CONSUMER_GROUP_METADATA, group_id)),
                encode_consumer_group_metadata_value(ConsumerGroupMetadataValue(epoch, group_metadata_hash(topics))))

    @staticmethod
    def _member_record(group_id: str, m: ConsumerGroupMember) -> Record:
        return (encode_consumer_group_key(ConsumerGroupMemberKey(_T.CONSUMER_GROUP_MEMBER_METADATA, group_id,
                                                                 m.member_id)),
                encode_member_metadata_value(ConsumerGroupMemberMetadataValue(
                    m.instance_id, m.rack_id, m.client_id, m.client_host, m.subscribed_topic_names,
                    m.subscribed_topic_regex, m.rebalance_timeout_ms, m.server_assignor, m.classic)))

    @staticmethod
    def _target_member_record(group_id: str, member_id: str, assignment: Assignment) -> Record:
        return (encode_consumer_group_key(ConsumerGroupMemberKey(_T.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
                                                                 group_id, member_id)),
                encode_target_assignment_member_value(TargetAssignmentMemberValue(topic_assignments(assignment))))

    @staticmethod
    def _target_metadata_record(group_id: str, epoch: int, timestamp: int) -> Record:
        return (encode_consumer_group_key(ConsumerGroupKey(_T.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, group_id)),
                encode_target_assignment_metadata_value(TargetAssignmentMetadataValue(epoch, timestamp)))

    @staticmethod
    def _current_assignment_record(group_id: str, m: ConsumerGroupMember) -> Record:
        return (encode_consumer_group_key(ConsumerGroupMemberKey(_T.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
                                                                 group_id, m.member_id)),
                encode_current_member_assignment_value(CurrentMemberAssignmentValue(
                    m.member_epoch, m.previous_member_epoch, int(m.state),
                    topic_assignments(m.assigned, m.assignment_epochs),
                    topic_assignments(m.pending_revocation, m.assignment_epochs))))

    @staticmethod
    def _regex_record(group_id: str, regex: str, resolved: ResolvedRegex) -> Record:
        return (encode_consumer_group_key(ConsumerGroupRegexKey(_T.CONSUMER_GROUP_REGULAR_EXPRESSION, group_id, regex)),
                encode_regular_expression_value(RegularExpressionValue(
                    tuple(sorted(resolved.topics)), resolved.version, resolved.timestamp)))

    @staticmethod
    def _regex_tombstone(group_id: str, regex: str) -> Record:
        return (encode_consumer_group_key(ConsumerGroupRegexKey(_T.CONSUMER_GROUP_REGULAR_EXPRESSION, group_id, regex)),
                None)

    @staticmethod
    def _member_tombstones(group_id: str, member_id: str) -> list[Record]:
        return [(encode_consumer_group_key(ConsumerGroupMemberKey(t, group_id, member_id)), None)
                for t in (_T.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT, _T.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
                          _T.CONSUMER_GROUP_MEMBER_METADATA)]

    def tombstones(self, group_id: str) -> list[Record]:
        """The records that remove an (empty) group: its regexes' resolutions, its epoch and
        its target-assignment metadata."""
        group = self.groups.get(group_id)
        regexes = sorted(group.resolved_regexes) if group is not None else []
        return [*(self._regex_tombstone(group_id, r) for r in regexes),
                *((encode_consumer_group_key(ConsumerGroupKey(t, group_id)), None)
                  for t in (_T.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, _T.CONSUMER_GROUP_METADATA))]

    def remove_group(self, group_id: str) -> None:
        if self.groups.pop(group_id, None) is not None:
            self.timer.cancel_matching(lambda key: key[1] == group_id and key[0].startswith("consumer-"))

    # ================================================================ replay (loading __consumer_offsets)

    def replay(self, key: ConsumerGroupKey | ConsumerGroupMemberKey | ConsumerGroupRegexKey, value: Any) -> None:
        """Apply one record, in log order (a None value is a tombstone)."""
        group = self.groups.get(key.group)
        if group is None:
            if value is None:
                return
            group = self.groups[key.group] = ConsumerGroup(key.group)
        t = key.record_type
        if isinstance(key, ConsumerGroupRegexKey):
            if value is None:
                group.resolved_regexes.pop(key.regex, None)
            else:
                group.resolved_regexes[key.regex] = ResolvedRegex(frozenset(value.topics), value.version,
                                                                  value.timestamp)
            return
        if isinstance(key, ConsumerGroupKey):
            if t == _T.CONSUMER_GROUP_METADATA:
                if value is None:
                    del self.groups[key.group]
                else:
                    group.group_epoch = value.epoch  # its metadata hash is not kept (recomputed as needed)
            elif value is not None:
                group.assignment_epoch, group.assignment_timestamp = value.assignment_epoch, value.assignment_timestamp
            return
        member = group.members.get(key.member_id)
        if t == _T.CONSUMER_GROUP_MEMBER_METADATA:
            if value is None:
                group.remove_member(key.member_id)
                return
            if member is None:
                member = ConsumerGroupMember(key.member_id)
            member.instance_id, member.rack_id = value.instance_id, value.rack_id
            member.client_id, member.client_host = value.client_id, value.client_host
            member.subscribed_topic_names = value.subscribed_topic_names
            member.subscribed_topic_regex = value.subscribed_topic_regex
            member.rebalance_timeout_ms, member.server_assignor = value.rebalance_timeout_ms, value.server_assignor
            member.classic = value.classic
            group.put_member(member)
        elif t == _T.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER:
            if value is None:
                group.target.pop(key.member_id, None)
            else:
                group.target[key.member_id] = {a.topic_id: frozenset(a.partitions) for a in value.topic_partitions}
        elif t == _T.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT:
            if member is None:
                if value is None:
                    return
                member = ConsumerGroupMember(key.member_id)
                group.put_member(member)
            if value is None:
                group.update_assignment(member, member_epoch=member.member_epoch,
                                        previous_member_epoch=member.previous_member_epoch, state=member.state,
                                        assigned={}, pending_revocation={})
                return
            epochs = {(a.topic_id, p): e for a in (*value.assigned_partitions, *value.partitions_pending_revocation)
                      if a.assignment_epochs is not None for p, e in zip(a.partitions, a.assignment_epochs)}
            group.update_assignment(
                member, member_epoch=value.member_epoch, previous_member_epoch=value.previous_member_epoch,
                state=MemberState(value.state) if value.state in MemberState._value2member_map_ else MemberState.UNKNOWN,
                assigned={a.topic_id: frozenset(a.partitions) for a in value.assigned_partitions},
                pending_revocation={a.topic_id: frozenset(a.partitions) for a in value.partitions_pending_revocation})
            member.assignment_epochs.update(epochs)  # the record's, where it carries them

    def after_load(self) -> None:
        """Every loaded member gets a full session to heartbeat again (as after Kafka's failover).
        What the group subscribes to is taken as it stands (the records do not keep it): a topic
        that changed while the broker was down is not noticed until it changes again. Stored
        regex resolutions are kept, but were made against topics as an earlier run saw them:
        the first heartbeat allowed to resolves them again (Kafka, loading, counts every
        topic as new)."""
        for group in list(self.groups.values()):
            group.resolved_regexes = {regex: msgspec.structs.replace(r, version=-1)
                                      for regex, r in group.resolved_regexes.items()}
            group.subscribed_topics = self._subscribed_topics(group.members.values(), group.resolved_regexes)
            for member in group.members.values():
                self._schedule_timeouts(group, member)

    # ================================================================ describe, list, offsets

    def describe(self, group_id: str) -> DescribedConsumerGroup:
        group = self.groups.get(group_id)
        if group is None:  # (the group coordinator answers ids no group of this kind holds)
            raise GroupIdNotFoundError(f"Group {group_id} not found.")
        members = tuple(DescribedConsumerMember(
            m.member_id, m.instance_id, m.rack_id, m.member_epoch, m.client_id, m.client_host,
            m.subscribed_topic_names, m.subscribed_topic_regex, _union(m.assigned, m.pending_revocation),
            dict(group.target.get(m.member_id, {})), m.classic is not None)
            for m in group.members.values())
        return DescribedConsumerGroup(group_id, group.state.value, group.group_epoch, group.assignment_epoch,
                                      self.preferred_assignor(group.members.values()), members)

    def validate_offset_commit(self, group: ConsumerGroup, member_id: str, member_epoch: int, api_version: int) -> None:
        """Kafka's ConsumerGroup.validateOffsetCommit for a member of the consumer protocol."""
        if member_epoch < 0 and not group.members:
            return  # an admin's commit to an empty group
        member = group.members.get(member_id)
        if member is None:
            raise UnknownMemberIdError(f"Member {member_id} is not a member of group {group.group_id}.")
        if api_version < 9:
            raise UnsupportedVersionError("OffsetCommit version 9 or above must be used by members using the "
                                          "consumer group protocol")
        _check_member_epoch(member, member_epoch)

    def validate_offset_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> None:
        """OffsetFetch v9+ from a consumer-protocol member: its epoch must be current (an
        admin's fetch, without member id and with epoch -1, is not checked)."""
        group = self.groups.get(group_id)
        if group is None or (member_id is None and member_epoch < 0):
            return
        member = group.members.get(member_id or "")
        if member is None:
            raise UnknownMemberIdError(f"Member {member_id} is not a member of group {group_id}.")
        _check_member_epoch(member, member_epoch)

    def is_consumer_group(self, group_id: str) -> bool:
        return group_id in self.groups


def _member_by_identity(group: ConsumerGroup, member_id: str, instance_id: str | None, unknown_instance: str, *,
                        any_member_id: bool = False) -> ConsumerGroupMember:
    """The member a request names: by member id, or by instance id, whose owner must be that
    member id (FENCED_INSTANCE_ID otherwise; LeaveGroup may leave the member id empty:
    `any_member_id`)."""
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            raise UnknownMemberIdError(f"Member {member_id} is not a member of group {group.group_id}.")
        return member
    static_id = group.static_members.get(instance_id)
    if static_id is None:
        raise UnknownMemberIdError(unknown_instance)
    if static_id != member_id and not (any_member_id and not member_id):
        raise FencedInstanceIdError(f"Static member {member_id} with instance id {instance_id} was fenced by member "
                                    f"{static_id}.")
    return group.members[static_id]


def _check_member_epoch(member: ConsumerGroupMember, member_epoch: int) -> None:
    """Offsets committed or fetched by a member at another epoch than its own: STALE_MEMBER_EPOCH."""
    if member_epoch != member.member_epoch:
        raise StaleMemberEpochError(f"The received member epoch {member_epoch} does not match the expected "
                                    f"member epoch {member.member_epoch}.")


def _union(a: Assignment, b: Assignment) -> Assignment:
    """Everything a member holds: its assigned partitions and those it is still to revoke."""
    out = dict(a)
    for topic_id, parts in b.items():
        out[topic_id] = out.get(topic_id, frozenset()) | parts
    return out


def _group_after(group: ConsumerGroup, members: dict[str, ConsumerGroupMember],
                 replaced: ConsumerGroupMember | None) -> ConsumerGroup:
    """The group as it will be once a heartbeat's records are written (its members, and which
    partitions are held), for reconciliation before anything is applied."""
    after = ConsumerGroup(group.group_id)
    after.members = dict(members)
    after.partition_owners = {tp: owner for tp, owner in group.partition_owners.items()
                              if replaced is None or owner[0] != replaced.member_id}
    return after
