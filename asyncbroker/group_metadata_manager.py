"""GroupMetadataManager: the classic groups of this broker and their rebalances, as Kafka's
classic group coordinator runs them.

- JoinGroup: a new dynamic member first gets MEMBER_ID_REQUIRED with its id
  (v4+) and joins again with it. The first join of an Empty group waits
  `group.initial.rebalance.delay.ms` (extended while new members keep
  arriving, up to the rebalance timeout); later rebalances complete as soon
  as every known member has rejoined, or at the rebalance timeout, when
  members that did not rejoin are removed. All members then get the new
  generation; the leader also gets every member's metadata.
- SyncGroup: the leader's assignment is written to `__consumer_offsets`,
  then every member gets its part and the group is Stable. Members that do
  not sync within the rebalance timeout are removed and the group rebalances.
- Heartbeats keep a member alive for its session timeout; a member that
  stops is removed and the group rebalances. Static members
  (`group.instance.id`) keep their place across restarts: a rejoin without
  a member id replaces the old one (fencing it) without a rebalance unless
  the group's selected protocol changes, and a static member that sits out
  a rebalance keeps its place (a member that rejoined leads instead).

A group is written to `__consumer_offsets` as one GroupMetadata record (its
generation, protocol, leader and every member with its assignment) when a
generation's assignment is stored; the last record of a group is what a
reload sees (`replay`). Validation problems raise typed KafkaErrors (mapped by
the handlers); parked JoinGroup/SyncGroup requests are answered with result
structs carrying the error code Kafka would put in the response.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from storage.clock import Clock
from wire.errors import (
    CoordinatorNotAvailableError,
    ErrorCode,
    FencedInstanceIdError,
    GroupMaxSizeReachedError,
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    InvalidGroupIdError,
    InvalidSessionTimeoutError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)

from asyncbroker.classic_group import (
    NO_GENERATION,
    ClassicGroup,
    ClassicGroupMember,
    ClassicGroupState,
)
from asyncbroker.coordinator_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    encode_group_metadata_key,
    encode_group_metadata_value,
)
from asyncbroker.coordinator_timer import CoordinatorTimer
from asyncbroker.offsets_topic import CoordinatorTopic, append_error_code

if TYPE_CHECKING:
    from asyncbroker.config import KafkaConfig

log = logging.getLogger(__name__)

UNKNOWN_MEMBER_ID = ""
# Kafka's classic.group.new.member.join.timeout.ms (KIP-394): how long a new
# member may take to rejoin after MEMBER_ID_REQUIRED / during a rebalance.
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000

_S = ClassicGroupState


class JoinGroupMember(msgspec.Struct, frozen=True):
    member_id: str
    group_instance_id: str | None
    metadata: bytes


class JoinGroupResult(msgspec.Struct):
    error: int = ErrorCode.NONE
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    member_id: str = UNKNOWN_MEMBER_ID
    members: list[JoinGroupMember] = msgspec.field(default_factory=list)


class SyncGroupResult(msgspec.Struct):
    error: int = ErrorCode.NONE
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


class DescribedMember(msgspec.Struct, frozen=True):
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


class DescribedGroup(msgspec.Struct, frozen=True):
    group_id: str
    state: str
    protocol_type: str
    protocol_data: str
    members: list[DescribedMember]


class ListedGroup(msgspec.Struct, frozen=True):
    group_id: str
    protocol_type: str
    state: str
    group_type: str = "classic"


class JoinArgs(msgspec.Struct, frozen=True):
    """A JoinGroup request's member fields, carried through the join paths."""
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    reason: str
    api_version: int


def require_group_id(group_id: str) -> None:
    """Kafka's check before the group APIs that need a real group (JoinGroup, SyncGroup,
    Heartbeat, LeaveGroup, OffsetDelete); offsets and admin APIs accept the empty id."""
    if not group_id:
        raise InvalidGroupIdError(f"Group id {group_id!r} is invalid")


class GroupMetadataManager:
    """Every classic group of this broker, their members' timers, and their records."""

    def __init__(self, config: KafkaConfig, offsets_topic: CoordinatorTopic, clock: Clock) -> None:
        self.offsets_topic = offsets_topic
        self.clock = clock
        self.groups: dict[str, ClassicGroup] = {}
        # Session, join and sync deadlines on the broker's clock (tests move it, not sleep).
        self.timer: CoordinatorTimer[tuple[str, str, str]] = CoordinatorTimer(clock)
        self._closed = False
        # The group.* settings, read from the broker config (its table holds their defaults).
        self.initial_rebalance_delay_ms: int = config.group_initial_rebalance_delay_ms
        self.min_session_timeout_ms: int = config.group_min_session_timeout_ms
        self.max_session_timeout_ms: int = config.group_max_session_timeout_ms
        self.max_group_size: int = config.group_max_size

    def _now(self) -> int:
        now: int = self.clock.milliseconds()
        return now

    def replay(self, group_id: str, value: GroupMetadataValue, now: int) -> None:
        """A group's last record, read back at load: the group as it was stored, every member's
        session running again from now."""
        group = ClassicGroup(group_id, _S.STABLE if value.members else _S.EMPTY, now_ms=now)
        group.generation_id = value.generation
        group.protocol_type = value.protocol_type or None
        group.protocol_name = value.protocol
        group.current_state_timestamp_ms = value.current_state_timestamp if value.current_state_timestamp >= 0 else None
        for m in value.members:
            protocols = [(value.protocol or "", m.subscription)]
            member = ClassicGroupMember(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                        m.rebalance_timeout, m.session_timeout, value.protocol_type,
                                        protocols, m.assignment)
            group.add(member)
            self._schedule_heartbeat(group, member, member.session_timeout_ms)
        group.leader_id = value.leader if value.leader in group.members else group.leader_id
        self.groups[group_id] = group

    def close(self) -> None:
        """Stop the timers and answer parked requests with NOT_COORDINATOR (broker shutdown)."""
        self._closed = True
        self.timer.close()
        for group in self.groups.values():
            for member in list(group.members.values()):
                self._complete_join(group, member, JoinGroupResult(error=ErrorCode.NOT_COORDINATOR,
                                                                   member_id=member.member_id))
                self._complete_sync(member, SyncGroupResult(error=ErrorCode.NOT_COORDINATOR))

    # ================================================================ timers

    def _schedule(self, kind: str, group_id: str, member_id: str, delay_ms: int, fn: Any, *args: Any) -> None:
        if self._closed:
            return
        self.timer.schedule((kind, group_id, member_id), delay_ms, lambda: fn(*args))

    def _cancel(self, kind: str, group_id: str, member_id: str = "") -> None:
        self.timer.cancel((kind, group_id, member_id))

    def _schedule_heartbeat(self, group: ClassicGroup, member: ClassicGroupMember, timeout_ms: int) -> None:
        self._schedule("heartbeat", group.group_id, member.member_id, timeout_ms,
                       self._on_heartbeat_expired, group, member.member_id)

    def complete_and_schedule_next_heartbeat(self, group: ClassicGroup, member: ClassicGroupMember) -> None:
        member.is_new = False
        self._schedule_heartbeat(group, member, member.session_timeout_ms)

    def _on_heartbeat_expired(self, group: ClassicGroup, member_id: str) -> None:
        if self.groups.get(group.group_id) is not group or group.is_in_state(_S.DEAD):
            return
        member = group.members.get(member_id)
        if member is None:
            return
        # Members parked in a rebalance satisfy the heartbeat, except new ones (KIP-394).
        if not member.is_new and (member.is_awaiting_join or member.is_awaiting_sync):
            return
        log.info("Member %s in group %s has failed, removing it from the group", member_id, group.group_id)
        self._remove_member_and_update_group(group, member, f"removing member {member_id} on heartbeat expiration")

    def _on_pending_member_expired(self, group: ClassicGroup, member_id: str) -> None:
        if member_id in group.pending_join_members:
            log.info("Pending member %s in group %s has been removed after session timeout expiration",
                     member_id, group.group_id)
            group.pending_join_members.discard(member_id)
            if group.is_in_state(_S.PREPARING_REBALANCE):
                self._maybe_complete_join_phase(group)

    # ================================================================ JoinGroup

    async def join_group(
        self,
        *,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        require_known_member_id: bool,
        reason: str | None = None,
        api_version: int = 9,
    ) -> JoinGroupResult:
        require_group_id(group_id)
        self.check_session_timeout(session_timeout_ms)
        is_unknown = member_id == UNKNOWN_MEMBER_ID
        group = self.groups.get(group_id)
        if group is None:
            if not is_unknown:
                raise UnknownMemberIdError(f"Group {group_id} does not exist; member {member_id} is unknown")
            group = self.groups[group_id] = ClassicGroup(group_id, now_ms=self._now())
        if group.is_in_state(_S.DEAD):
            # Being deleted: the client retries and finds a new group.
            raise CoordinatorNotAvailableError(f"Group {group_id} is being removed")
        names = [name for name, _ in protocols]
        if not group.supports_protocols(protocol_type, names):
            raise InconsistentGroupProtocolError(
                f"The group member's supported protocols are incompatible with those of existing members "
                f"or first group member tried to join with empty protocol type or empty protocol list."
            )
        joining_new = is_unknown or member_id in group.pending_join_members
        if joining_new and group_instance_id is None and len(group.members) >= self.max_group_size:
            raise GroupMaxSizeReachedError(f"The group {group_id} has reached its maximum size")
        fut: asyncio.Future[JoinGroupResult] = asyncio.get_running_loop().create_future()
        args = JoinArgs(member_id, group_instance_id, client_id, client_host, session_timeout_ms,
                         rebalance_timeout_ms, protocol_type, protocols, reason or "", api_version)
        if is_unknown:
            await self._join_unknown_member(group, args, require_known_member_id, fut)
        else:
            self._join_known_member(group, args, fut)
        return await fut

    def check_session_timeout(self, session_timeout_ms: int) -> None:
        """A joining member's session timeout must lie within the group.*.session.timeout.ms bounds."""
        if not self.min_session_timeout_ms <= session_timeout_ms <= self.max_session_timeout_ms:
            raise InvalidSessionTimeoutError(
                f"The session timeout {session_timeout_ms} is not within [{self.min_session_timeout_ms}, "
                f"{self.max_session_timeout_ms}]"
            )

    async def _join_unknown_member(self, group: ClassicGroup, a: JoinArgs, require_known_member_id: bool,
                                   fut: asyncio.Future[JoinGroupResult]) -> None:
        new_member_id = group.generate_member_id(a.client_id, a.group_instance_id)
        if a.group_instance_id is not None:
            existing = group.static_member_id(a.group_instance_id)
            if existing is not None:
                await self._update_static_member_then_rebalance_or_complete_join(group, existing, new_member_id, a, fut)
            else:
                self._add_member_then_rebalance_or_complete_join(group, new_member_id, a, fut)
        elif require_known_member_id:
            # KIP-394: the member must come back with this id, so a client that
            # times out and retries does not leave a ghost member behind.
            group.pending_join_members.add(new_member_id)
            self._schedule("pending", group.group_id, new_member_id, a.session_timeout_ms,
                           self._on_pending_member_expired, group, new_member_id)
            fut.set_result(JoinGroupResult(error=ErrorCode.MEMBER_ID_REQUIRED, member_id=new_member_id))
        else:
            self._add_member_then_rebalance_or_complete_join(group, new_member_id, a, fut)

    def _join_known_member(self, group: ClassicGroup, a: JoinArgs, fut: asyncio.Future[JoinGroupResult]) -> None:
        member_id = a.member_id
        if member_id in group.pending_join_members:
            if a.group_instance_id is None:
                self._cancel("pending", group.group_id, member_id)
                self._add_member_then_rebalance_or_complete_join(group, member_id, a, fut)
                return
        if a.group_instance_id is not None:
            existing = group.static_member_id(a.group_instance_id)
            if existing is not None and existing != member_id:
                log.info("Static member %s of group %s with unknown member id %s rejoins; fencing it",
                         a.group_instance_id, group.group_id, member_id)
                raise FencedInstanceIdError(f"Member {member_id} is fenced by {existing}")
        member = group.members.get(member_id)
        if member is None:
            raise UnknownMemberIdError(f"Member {member_id} is not in group {group.group_id}")
        state = group.state
        if state is _S.PREPARING_REBALANCE:
            self._update_member_then_rebalance_or_complete_join(group, member, a, fut)
        elif state is _S.COMPLETING_REBALANCE:
            if member.matches(a.protocols):
                # The member lost the join response: give it the same answer again.
                fut.set_result(self._join_result(group, member, include_members=group.is_leader(member_id)))
            else:
                self._update_member_then_rebalance_or_complete_join(group, member, a, fut)
        elif state is _S.STABLE:
            if group.is_leader(member_id) or not member.matches(a.protocols):
                # The leader rejoining (e.g. metadata changed) or a changed
                # subscription triggers a rebalance.
                self._update_member_then_rebalance_or_complete_join(group, member, a, fut)
            else:
                fut.set_result(self._join_result(group, member, include_members=False))
        else:
            raise UnknownMemberIdError(f"Member {member_id} is not in group {group.group_id} ({state.value})")

    def _join_result(self, group: ClassicGroup, member: ClassicGroupMember, *, include_members: bool,
                     skip_assignment: bool = False) -> JoinGroupResult:
        members: list[JoinGroupMember] = []
        if include_members:
            members = [JoinGroupMember(m.member_id, m.group_instance_id, m.metadata(group.protocol_name))
                       for m in group.members.values()]
        return JoinGroupResult(
            error=ErrorCode.NONE, generation_id=group.generation_id, protocol_type=group.protocol_type,
            protocol_name=group.protocol_name, leader=group.leader_id or "", skip_assignment=skip_assignment,
            member_id=member.member_id, members=members,
        )

    def _add_member_then_rebalance_or_complete_join(self, group: ClassicGroup, member_id: str, a: JoinArgs,
                                                    fut: asyncio.Future[JoinGroupResult]) -> None:
        member = ClassicGroupMember(member_id, a.group_instance_id, a.client_id, a.client_host,
                                    a.rebalance_timeout_ms, a.session_timeout_ms, a.protocol_type, a.protocols)
        member.is_new = True
        # Tells the initial delayed join that new members are still arriving.
        if group.is_in_state(_S.PREPARING_REBALANCE) and group.previous_state is _S.EMPTY:
            group.new_member_added = True
        group.add(member, fut)
        self._schedule_heartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        if group.is_in_state(_S.PREPARING_REBALANCE):
            self._maybe_complete_join_phase(group)
        else:
            self._prepare_rebalance(group, f"Adding new member {member_id} with group instance id "
                                           f"{a.group_instance_id}; client reason: {a.reason or 'not provided'}")

    def _update_member_then_rebalance_or_complete_join(self, group: ClassicGroup, member: ClassicGroupMember,
                                                       a: JoinArgs, fut: asyncio.Future[JoinGroupResult]) -> None:
        group.update_member(member, a.protocols, a.rebalance_timeout_ms, a.session_timeout_ms, fut)
        if group.is_in_state(_S.PREPARING_REBALANCE):
            self._maybe_complete_join_phase(group)
        else:
            self._prepare_rebalance(group, f"Updating metadata for member {member.member_id} during "
                                           f"{group.state.value}; client reason: {a.reason or 'not provided'}")

    async def _update_static_member_then_rebalance_or_complete_join(
        self, group: ClassicGroup, old_member_id: str, new_member_id: str, a: JoinArgs,
        fut: asyncio.Future[JoinGroupResult],
    ) -> None:
        old = group.members[old_member_id]
        current_leader = group.leader_id or ""
        # Fence whoever still waits under the old id.
        self._complete_join(group, old, JoinGroupResult(error=ErrorCode.FENCED_INSTANCE_ID, member_id=old_member_id))
        self._complete_sync(old, SyncGroupResult(error=ErrorCode.FENCED_INSTANCE_ID))
        self._cancel("heartbeat", group.group_id, old_member_id)
        # The member keeps its client id and host: Kafka replaces only the member id.
        member = group.replace_static_member(a.group_instance_id or "", old_member_id, new_member_id)
        self.complete_and_schedule_next_heartbeat(group, member)
        state = group.state
        if state is _S.STABLE:
            group.update_member(member, a.protocols, a.rebalance_timeout_ms, a.session_timeout_ms, None)
            if group.select_protocol() != group.protocol_name:
                group.update_member(member, a.protocols, a.rebalance_timeout_ms, a.session_timeout_ms, fut)
                self._prepare_rebalance(group, f"Group's selectedProtocol will change because static member "
                                               f"{new_member_id} with instance id {a.group_instance_id} joined "
                                               f"with change of protocol; client reason: {a.reason or 'not provided'}")
                return
            # The selected protocol stays: no rebalance, even if the member's metadata changed
            # (Kafka keeps the assignment and only persists the new member id).
            log.info("Static member %s of group %s rejoined as %s without changing the selected protocol; "
                     "no rebalance", a.group_instance_id, group.group_id, new_member_id)
            generation = group.generation_id
            try:
                await self._store_group(group, group.assignments())
            except Exception as exc:  # noqa: BLE001 - reported in the response
                fut.set_result(JoinGroupResult(error=append_error_code(exc), generation_id=group.generation_id,
                                               protocol_type=group.protocol_type,
                                               protocol_name=group.protocol_name, leader=current_leader,
                                               member_id=UNKNOWN_MEMBER_ID))
                return
            if group.generation_id != generation or not group.has_member(new_member_id):
                fut.set_result(JoinGroupResult(error=ErrorCode.REBALANCE_IN_PROGRESS, member_id=new_member_id))
                return
            if a.api_version >= 9:
                # KIP-814: a static leader learns it leads but may skip assigning again.
                is_leader = group.is_leader(new_member_id)
                fut.set_result(self._join_result(group, member, include_members=is_leader, skip_assignment=is_leader))
            else:
                # Older clients would reassign if told they lead: they see the leader as it was.
                result = self._join_result(group, member, include_members=False)
                result.leader = current_leader
                fut.set_result(result)
        elif state in (_S.COMPLETING_REBALANCE, _S.PREPARING_REBALANCE):
            self._update_member_then_rebalance_or_complete_join(group, member, a, fut)
        else:
            fut.set_result(JoinGroupResult(error=ErrorCode.UNKNOWN_MEMBER_ID, member_id=new_member_id))

    # ---------------------------------------------------------------- rebalance

    def _prepare_rebalance(self, group: ClassicGroup, reason: str) -> None:
        if not group.can_rebalance():
            return
        if group.is_in_state(_S.COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS)
        self._cancel("sync", group.group_id)
        is_initial = group.is_in_state(_S.EMPTY)
        log.info("Preparing to rebalance group %s in state %s with old generation %d (reason: %s)",
                 group.group_id, group.state.value, group.generation_id, reason)
        group.transition_to(_S.PREPARING_REBALANCE, self._now())
        if is_initial:
            delay = self.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            group.new_member_added = False
            self._schedule("join", group.group_id, "", delay, self._on_initial_join_delay_expired,
                           group, delay, remaining)
        else:
            self._schedule("join", group.group_id, "", group.rebalance_timeout_ms(),
                           self._complete_join_phase, group)
            self._maybe_complete_join_phase(group)

    def _on_initial_join_delay_expired(self, group: ClassicGroup, delay: int, remaining: int) -> None:
        if not group.is_in_state(_S.PREPARING_REBALANCE):
            return
        if group.new_member_added and remaining > 0:
            group.new_member_added = False
            next_delay = min(delay, remaining)
            self._schedule("join", group.group_id, "", next_delay, self._on_initial_join_delay_expired,
                           group, delay, max(remaining - delay, 0))
            return
        self._complete_join_phase(group)

    def _maybe_complete_join_phase(self, group: ClassicGroup) -> None:
        # The initial delayed join (previous state Empty) only ends on its timer.
        if (group.is_in_state(_S.PREPARING_REBALANCE) and group.has_all_members_joined()
                and group.previous_state is not _S.EMPTY):
            self._complete_join_phase(group)

    def _complete_join_phase(self, group: ClassicGroup) -> None:
        if not group.is_in_state(_S.PREPARING_REBALANCE) or self.groups.get(group.group_id) is not group:
            return
        self._cancel("join", group.group_id)
        # Dynamic members that did not rejoin in time are removed; static members keep their
        # place (KIP-345) until their session expires.
        for member in group.not_yet_rejoined_members():
            if member.is_static:
                continue
            log.info("Group %s removes member %s: it did not rejoin before the rebalance timeout",
                     group.group_id, member.member_id)
            self._cancel("heartbeat", group.group_id, member.member_id)
            group.remove(member.member_id)
        if group.members and not group.maybe_elect_new_joined_leader():
            # Only static members that have not rejoined are left: wait for them (or for their
            # sessions to expire) another rebalance timeout.
            log.error("Group %s could not complete rebalance because no members rejoined.", group.group_id)
            self._schedule("join", group.group_id, "", group.rebalance_timeout_ms(), self._complete_join_phase, group)
            return
        now = self._now()
        if group.members and group.select_protocol() is None:
            # Kafka's coordinator fails this completion too and the group stays in
            # PreparingRebalance, its members' joins unanswered until their sessions end.
            log.error("Group %s could not complete rebalance: no protocol is supported by every member",
                      group.group_id)
            return
        group.init_next_generation(now)
        if group.is_in_state(_S.EMPTY):
            log.info("Group %s with generation %d is now empty", group.group_id, group.generation_id)
            self._store_in_background(group, {})
            return
        log.info("Stabilized group %s generation %d with %d member(s)", group.group_id,
                 group.generation_id, len(group.members))
        for member in group.members.values():
            self._complete_join(group, member, self._join_result(group, member,
                                                                 include_members=group.is_leader(member.member_id)))
            self.complete_and_schedule_next_heartbeat(group, member)
            group.pending_sync_members.add(member.member_id)
        self._schedule("sync", group.group_id, "", group.rebalance_timeout_ms(),
                       self._on_sync_expired, group, group.generation_id)

    def _on_sync_expired(self, group: ClassicGroup, generation: int) -> None:
        if group.generation_id != generation or not group.pending_sync_members:
            return
        if group.state not in (_S.COMPLETING_REBALANCE, _S.STABLE):
            return
        pending = list(group.pending_sync_members)
        log.info("Group %s removes member(s) %s: no SyncGroup before the rebalance timeout",
                 group.group_id, pending)
        for member_id in pending:
            member = group.members.get(member_id)
            group.pending_sync_members.discard(member_id)
            if member is not None:
                self._cancel("heartbeat", group.group_id, member_id)
                group.remove(member_id)
        self._prepare_rebalance(group, f"Removing {pending} on pending sync request expiration")

    def _complete_join(self, group: ClassicGroup, member: ClassicGroupMember, result: JoinGroupResult) -> None:
        fut = member.join_future
        if fut is None:
            return
        member.join_future = None
        group.num_awaiting_join -= 1
        if not fut.done():
            fut.set_result(result)

    def _complete_sync(self, member: ClassicGroupMember, result: SyncGroupResult) -> None:
        fut = member.sync_future
        member.sync_future = None
        if fut is not None and not fut.done():
            fut.set_result(result)

    def _reset_and_propagate_assignment_error(self, group: ClassicGroup, error: int) -> None:
        for member in group.members.values():
            member.assignment = b""
            self._complete_sync(member, SyncGroupResult(error=error))

    def _remove_member_and_update_group(self, group: ClassicGroup, member: ClassicGroupMember, reason: str) -> None:
        self._complete_join(group, member, JoinGroupResult(error=ErrorCode.UNKNOWN_MEMBER_ID,
                                                           member_id=member.member_id))
        self._complete_sync(member, SyncGroupResult(error=ErrorCode.UNKNOWN_MEMBER_ID))
        self._cancel("heartbeat", group.group_id, member.member_id)
        group.remove(member.member_id)
        if group.state in (_S.STABLE, _S.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, reason)
        elif group.is_in_state(_S.PREPARING_REBALANCE):
            self._maybe_complete_join_phase(group)

    # ================================================================ SyncGroup

    async def sync_group(self, *, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
                         protocol_type: str | None, protocol_name: str | None,
                         assignments: dict[str, bytes]) -> SyncGroupResult:
        require_group_id(group_id)
        group = self._member_group(group_id, generation_id, member_id, group_instance_id)
        if protocol_type is not None and protocol_type != group.protocol_type:
            raise InconsistentGroupProtocolError(f"Protocol type {protocol_type} does not match {group.protocol_type}")
        if protocol_name is not None and protocol_name != group.protocol_name:
            raise InconsistentGroupProtocolError(f"Protocol {protocol_name} does not match {group.protocol_name}")
        member = group.members[member_id]
        state = group.state
        if state is _S.EMPTY:
            raise UnknownMemberIdError(f"Group {group_id} is empty")
        if state is _S.PREPARING_REBALANCE:
            raise RebalanceInProgressError(f"Group {group_id} is rebalancing")
        if state is _S.STABLE:
            group.pending_sync_members.discard(member_id)
            self.complete_and_schedule_next_heartbeat(group, member)
            return SyncGroupResult(protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                                   assignment=member.assignment)
        # CompletingRebalance: park until the leader's assignment is stored.
        fut: asyncio.Future[SyncGroupResult] = asyncio.get_running_loop().create_future()
        self._complete_sync(member, SyncGroupResult(error=ErrorCode.REBALANCE_IN_PROGRESS))
        member.sync_future = fut
        group.pending_sync_members.discard(member_id)
        self.complete_and_schedule_next_heartbeat(group, member)
        if group.is_leader(member_id):
            log.info("Assignment received from leader %s for group %s for generation %d", member_id,
                     group_id, group.generation_id)
            assignment = {mid: assignments.get(mid, b"") for mid in group.members}
            generation = group.generation_id
            try:
                await self._store_group(group, assignment)
            except Exception as exc:  # noqa: BLE001 - every member gets the error
                if group.generation_id == generation and group.is_in_state(_S.COMPLETING_REBALANCE):
                    self._reset_and_propagate_assignment_error(group, append_error_code(exc))
                    self._prepare_rebalance(group, f"Error {exc!r} when storing group assignment during SyncGroup")
            else:
                if group.generation_id == generation and group.is_in_state(_S.COMPLETING_REBALANCE):
                    for mid, m in group.members.items():
                        m.assignment = assignment.get(mid, b"")
                        self._complete_sync(m, SyncGroupResult(protocol_type=group.protocol_type,
                                                               protocol_name=group.protocol_name,
                                                               assignment=m.assignment))
                    group.transition_to(_S.STABLE, self._now())
                    log.info("Group %s generation %d is now Stable", group_id, generation)
        return await fut

    def _member_group(self, group_id: str, generation_id: int, member_id: str,
                      group_instance_id: str | None) -> ClassicGroup:
        """The live group in which `member_id` belongs to the current generation: the checks
        SyncGroup and Heartbeat both make first, in Kafka's order."""
        group = self.groups.get(group_id)
        if group is None:
            raise UnknownMemberIdError(f"Group {group_id} does not exist")
        if group.is_in_state(_S.DEAD):
            raise CoordinatorNotAvailableError(f"Group {group_id} is being removed")
        self.validate_member(group, member_id, group_instance_id)
        if generation_id != group.generation_id:
            raise IllegalGenerationError(f"Generation {generation_id} is not the group's {group.generation_id}")
        return group

    def validate_member(self, group: ClassicGroup, member_id: str, group_instance_id: str | None) -> None:
        if group_instance_id is not None:
            existing = group.static_member_id(group_instance_id)
            if existing is None:
                raise UnknownMemberIdError(f"Static member {group_instance_id} is not in group {group.group_id}")
            if existing != member_id:
                raise FencedInstanceIdError(f"Member {member_id} with instance id {group_instance_id} is fenced "
                                            f"by {existing}")
        if member_id not in group.members:
            raise UnknownMemberIdError(f"Member {member_id} is not in group {group.group_id}")

    # ================================================================ Heartbeat

    async def heartbeat(self, *, group_id: str, generation_id: int, member_id: str,
                        group_instance_id: str | None) -> None:
        require_group_id(group_id)
        group = self._member_group(group_id, generation_id, member_id, group_instance_id)
        member = group.members[member_id]
        if group.is_in_state(_S.EMPTY):
            raise UnknownMemberIdError(f"Group {group_id} is empty")
        self.complete_and_schedule_next_heartbeat(group, member)
        if group.is_in_state(_S.PREPARING_REBALANCE):
            raise RebalanceInProgressError(f"Group {group_id} is rebalancing")

    # ================================================================ LeaveGroup

    async def leave_group(self, group_id: str, members: Sequence[tuple[str, str | None, str | None]]) -> list[int]:
        """(member id, group instance id, reason) per leaving member; an error code each."""
        require_group_id(group_id)
        group = self.groups.get(group_id)
        if group is None:
            # Kafka answers each member of an unknown group on its own.
            return [ErrorCode.UNKNOWN_MEMBER_ID for _ in members]
        if group.is_in_state(_S.DEAD):
            raise CoordinatorNotAvailableError(f"Group {group_id} is being removed")
        results: list[int] = []
        for member_id, instance_id, reason in members:
            why = f"leaving group (reason: {reason or 'not provided'})"
            if instance_id is not None:
                existing = group.static_member_id(instance_id)
                if existing is None:
                    results.append(ErrorCode.UNKNOWN_MEMBER_ID)
                elif member_id != UNKNOWN_MEMBER_ID and member_id != existing:
                    results.append(ErrorCode.FENCED_INSTANCE_ID)
                else:
                    log.info("Static member %s (%s) of group %s is %s", existing, instance_id, group_id, why)
                    self._remove_member_and_update_group(group, group.members[existing], f"Member {existing} {why}")
                    results.append(ErrorCode.NONE)
            elif member_id in group.pending_join_members:
                group.pending_join_members.discard(member_id)
                self._cancel("pending", group_id, member_id)
                if group.is_in_state(_S.PREPARING_REBALANCE):
                    self._maybe_complete_join_phase(group)
                results.append(ErrorCode.NONE)
            elif member_id not in group.members:
                results.append(ErrorCode.UNKNOWN_MEMBER_ID)
            else:
                log.info("Member %s of group %s is %s", member_id, group_id, why)
                self._remove_member_and_update_group(group, group.members[member_id], f"Member {member_id} {why}")
                results.append(ErrorCode.NONE)
        return results

    # ================================================================ records

    def _group_record(self, group: ClassicGroup, assignment: dict[str, bytes]) -> tuple[bytes, bytes]:
        members = tuple(
            MemberMetadata(m.member_id, m.client_id, m.client_host, m.rebalance_timeout_ms, m.session_timeout_ms,
                           m.metadata(group.protocol_name), assignment.get(m.member_id, b""), m.group_instance_id)
            for m in group.members.values()
        ) if group.protocol_name is not None else ()
        value = GroupMetadataValue(
            protocol_type=group.protocol_type or "", generation=group.generation_id,
            protocol=group.protocol_name, leader=group.leader_id if members else None,
            current_state_timestamp=group.current_state_timestamp_ms if group.current_state_timestamp_ms is not None else -1,
            members=members,
        )
        return encode_group_metadata_key(GroupMetadataKey(group.group_id)), encode_group_metadata_value(value)

    async def _store_group(self, group: ClassicGroup, assignment: dict[str, bytes]) -> None:
        record = self._group_record(group, assignment)
        await self.offsets_topic.append(self.offsets_topic.partition_for(group.group_id), [record])

    def _store_in_background(self, group: ClassicGroup, assignment: dict[str, bytes]) -> None:
        record = self._group_record(group, assignment)
        # Queued now, so it lands before any later write of this group.
        fut = self.offsets_topic.enqueue(self.offsets_topic.partition_for(group.group_id), [record])

        def report(done: asyncio.Future[int]) -> None:
            if not done.cancelled() and done.exception() is not None:
                log.error("Failed to write the metadata of group %s: %r", group.group_id, done.exception())

        fut.add_done_callback(report)

    # ================================================================ lookup and admin

    def get_or_create_simple_group(self, group_id: str) -> ClassicGroup:
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = ClassicGroup(group_id, now_ms=self._now())
        return group

    def list_groups(self, states: Sequence[str] = (), types: Sequence[str] = ()) -> list[ListedGroup]:
        wanted_states = {s.lower() for s in states}
        wanted_types = {t.lower() for t in types}
        if wanted_types and "classic" not in wanted_types:
            return []
        out = []
        for group in self.groups.values():
            if group.is_in_state(_S.DEAD):
                continue
            if wanted_states and group.state.value.lower() not in wanted_states:
                continue
            out.append(ListedGroup(group.group_id, group.protocol_type or "", group.state.value))
        return out

    def describe_group(self, group_id: str) -> DescribedGroup:
        group = self.groups.get(group_id)
        if group is None or group.is_in_state(_S.DEAD):
            return DescribedGroup(group_id, _S.DEAD.value, "", "", [])
        stable = group.is_in_state(_S.STABLE)
        # Kafka shows the protocol metadata only while Stable, but always the assignment a
        # member holds (during a rebalance: the previous generation's, until it is replaced).
        members = [
            DescribedMember(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                            m.metadata(group.protocol_name) if stable else b"", m.assignment)
            for m in group.members.values()
        ]
        return DescribedGroup(group.group_id, group.state.value, group.protocol_type or "",
                              group.protocol_name or "" if stable else "", members)

    # ================================================================ conversions (mixed groups)

    def group_record(self, group: ClassicGroup) -> tuple[bytes, bytes]:
        """The GroupMetadata record of a group built from a consumer-protocol group, each
        member carrying its assignment."""
        return self._group_record(group, {m.member_id: m.assignment for m in group.members.values()})

    def adopt(self, group: ClassicGroup, rebalance_reason: str | None) -> None:
        """Install a group converted from a consumer-protocol group (its record written):
        every member's session runs from now, and the group rebalances at once (unless no
        reason is given), so that its members rejoin as a classic group."""
        self.groups[group.group_id] = group
        for member in group.members.values():
            self._schedule_heartbeat(group, member, member.session_timeout_ms)
        if rebalance_reason is not None:
            self._prepare_rebalance(group, rebalance_reason)

    def hand_over(self, group_id: str) -> ClassicGroup | None:
        """Forget a group converted to a consumer-protocol group: its parked JoinGroup and
        SyncGroup requests get REBALANCE_IN_PROGRESS (the members rejoin the new group), its
        timers stop."""
        group = self.groups.pop(group_id, None)
        if group is None:
            return None
        for member in list(group.members.values()):
            self._complete_join(group, member, JoinGroupResult(error=ErrorCode.REBALANCE_IN_PROGRESS,
                                                               member_id=member.member_id))
            self._complete_sync(member, SyncGroupResult(error=ErrorCode.REBALANCE_IN_PROGRESS))
        self.timer.cancel_matching(lambda key: key[1] == group_id)
        return group

    def tombstone(self, group_id: str) -> tuple[bytes, bytes | None]:
        """The record that removes a group's metadata from `__consumer_offsets`."""
        return encode_group_metadata_key(GroupMetadataKey(group_id)), None

    def remove_group(self, group_id: str) -> None:
        """Forget a group whose tombstone is written: it turns Dead and its timers stop."""
        group = self.groups.pop(group_id, None)
        if group is not None:
            group.transition_to(_S.DEAD, self._now())
            self.timer.cancel_matching(lambda key: key[1] == group_id)
