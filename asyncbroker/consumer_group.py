"""ConsumerGroup: a group of the consumer rebalance protocol (KIP-848), as Kafka's runs it.

The broker, not a leader member, decides the assignment. The group has an epoch, bumped
whenever what it must assign changes (a member joins, leaves or changes its subscription; a
subscribed topic gains partitions). For each epoch the coordinator computes a *target
assignment* with a server-side assignor (consumer_group_assignors.py), then moves each member
towards its target one heartbeat at a time (`reconcile`, Kafka's CurrentAssignmentBuilder):

- partitions a member holds but no longer has in its target are revoked first; the member
  keeps its epoch and is UNREVOKED_PARTITIONS until a heartbeat shows it let them go;
- partitions of its target that another member still holds are withheld (a partition has
  one owner at a time); the member takes the target epoch and is UNRELEASED_PARTITIONS
  until they are free;
- otherwise the member is STABLE at the target epoch.

The group is Empty without members, Assigning while its epoch is ahead of the target
assignment's, Reconciling while some member is not yet STABLE at the target epoch, and
Stable after that.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Iterable

import msgspec

from asyncbroker.consumer_group_records import ClassicMemberMetadata

__all__ = [
    "Assignment",
    "ConsumerGroup",
    "ConsumerGroupMember",
    "ConsumerGroupState",
    "MemberState",
    "ResolvedRegex",
    "reconcile",
]

Assignment = dict[uuid.UUID, frozenset[int]]
"""Partitions by topic id (no empty entries)."""

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class MemberState(enum.IntEnum):
    """The int8 in ConsumerGroupCurrentMemberAssignmentValue (Kafka's MemberState ids)."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


class ConsumerGroupState(str, enum.Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"


class ResolvedRegex(msgspec.Struct, frozen=True):
    """The topics a subscription regex matched when it was last resolved, with the topic
    metadata generation and the time of that resolution (Kafka's ResolvedRegularExpression)."""

    topics: frozenset[str]
    version: int
    timestamp: int


class ConsumerGroupMember(msgspec.Struct):
    """One member: what it asked for (its subscription) and where it stands (its epoch,
    the partitions it holds and those it must give up)."""

    member_id: str
    client_id: str = ""
    client_host: str = ""
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Assignment = msgspec.field(default_factory=dict)
    pending_revocation: Assignment = msgspec.field(default_factory=dict)
    # The member epoch at which each held partition was assigned (KIP-1251 keeps it in
    # the current-assignment record).
    assignment_epochs: dict[tuple[uuid.UUID, int], int] = msgspec.field(default_factory=dict)
    # Set for a member that joined with JoinGroup (the classic protocol), None otherwise.
    classic: ClassicMemberMetadata | None = None

    def metadata_key(self) -> tuple[object, ...]:
        """The fields of its ConsumerGroupMemberMetadata record."""
        return (self.instance_id, self.rack_id, self.client_id, self.client_host, self.subscribed_topic_names,
                self.subscribed_topic_regex, self.rebalance_timeout_ms, self.server_assignor, self.classic)

    def assignment_key(self) -> tuple[object, ...]:
        """The fields of its ConsumerGroupCurrentMemberAssignment record."""
        return (self.member_epoch, self.previous_member_epoch, self.state, self.assigned, self.pending_revocation)


class ConsumerGroup:
    """A consumer-protocol group's state on the coordinator."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.assignment_timestamp = 0
        self.members: dict[str, ConsumerGroupMember] = {}
        self.static_members: dict[str, str] = {}  # instance id -> member id
        self.target: dict[str, Assignment] = {}
        # (topic id, partition) -> (member id, member epoch) of its holder (assigned or pending revocation).
        self.partition_owners: dict[tuple[uuid.UUID, int], tuple[str, int]] = {}
        # What the members subscribe to, as last seen: topic name -> (topic id, partitions).
        self.subscribed_topics: dict[str, tuple[uuid.UUID, int]] = {}
        # The members' subscription regexes as last resolved (each kept while a member uses it).
        self.resolved_regexes: dict[str, ResolvedRegex] = {}

    # -- state --------------------------------------------------------------------------------

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        for m in self.members.values():
            if m.state != MemberState.STABLE or m.member_epoch != self.assignment_epoch:
                return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def classic_members(self) -> list[ConsumerGroupMember]:
        return [m for m in self.members.values() if m.classic is not None]

    def supports_classic_protocols(self, protocol_type: str, names: Iterable[str]) -> bool:
        """Whether a classic member offering `names` may join: the protocol type is "consumer"
        and, once there are classic members, one of its protocols is one they all offer
        (Kafka's supportsClassicProtocols)."""
        if protocol_type != "consumer":
            return False
        offered = set(names)
        if not self.members:
            return bool(offered)
        classic = self.classic_members()
        return any(all(name in {p for p, _ in m.classic.supported_protocols} for m in classic if m.classic)
                   for name in offered)

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        """Whether a member still waits for a partition of its target another member holds."""
        if member.state != MemberState.UNRELEASED_PARTITIONS:
            return False
        for topic_id, parts in self.target.get(member.member_id, {}).items():
            held = member.assigned.get(topic_id, frozenset())
            if any(p not in held and self.current_partition_epoch(topic_id, p) != -1 for p in parts):
                return True
        return False

    def regex_subscribers(self, regex: str) -> int:
        """How many members subscribe with `regex` (Kafka's numSubscribedMembers)."""
        return sum(1 for m in self.members.values() if m.subscribed_topic_regex == regex)

    def subscribed_regexes(self) -> set[str]:
        return {m.subscribed_topic_regex for m in self.members.values() if m.subscribed_topic_regex}

    def last_regex_refresh(self) -> tuple[int, int] | None:
        """(timestamp, version) of the last resolution, or None: every regex of the group is
        resolved together, so any one of them tells."""
        newest = max(self.resolved_regexes.values(), key=lambda r: r.timestamp, default=None)
        return None if newest is None else (newest.timestamp, newest.version)

    def current_partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        """The epoch of the member holding the partition, or -1 when it is free."""
        owner = self.partition_owners.get((topic_id, partition))
        return -1 if owner is None else owner[1]

    # -- changes (each mirrors a record, so replay and live updates share them) -----------------

    def put_member(self, member: ConsumerGroupMember) -> None:
        old = self.members.get(member.member_id)
        if old is not None and old.instance_id is not None and self.static_members.get(old.instance_id) == old.member_id:
            del self.static_members[old.instance_id]
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def update_assignment(self, member: ConsumerGroupMember, *, member_epoch: int, previous_member_epoch: int,
                          state: MemberState, assigned: Assignment, pending_revocation: Assignment) -> None:
        """Set what `member` holds, keeping the group's partition owners in step."""
        self._release(member)
        held = set(_partitions(member.assigned)) | set(_partitions(member.pending_revocation))
        epochs = {}
        for tp in _partitions(assigned):  # a partition newly held is assigned at the new epoch
            epochs[tp] = member.assignment_epochs.get(tp, member_epoch) if tp in held else member_epoch
        for tp in _partitions(pending_revocation):
            epochs[tp] = member.assignment_epochs.get(tp, member.member_epoch)
        member.assignment_epochs = epochs
        member.member_epoch, member.previous_member_epoch, member.state = member_epoch, previous_member_epoch, state
        member.assigned, member.pending_revocation = assigned, pending_revocation
        for tp in epochs:
            self.partition_owners[tp] = (member.member_id, member_epoch)

    def remove_member(self, member_id: str) -> ConsumerGroupMember | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        self._release(member)
        if member.instance_id is not None and self.static_members.get(member.instance_id) == member_id:
            del self.static_members[member.instance_id]
        self.target.pop(member_id, None)
        return member

    def _release(self, member: ConsumerGroupMember) -> None:
        """Forget every partition the member holds (by owner: `member` may already carry its
        next assignment)."""
        for tp in [tp for tp, owner in self.partition_owners.items() if owner[0] == member.member_id]:
            del self.partition_owners[tp]


def _partitions(assignment: Assignment) -> Iterable[tuple[uuid.UUID, int]]:
    for topic_id, parts in assignment.items():
        for p in parts:
            yield topic_id, p


def _owned(owned: Iterable[tuple[uuid.UUID, Iterable[int]]] | None) -> set[tuple[uuid.UUID, int]] | None:
    if owned is None:
        return None
    return {(t, p) for t, parts in owned for p in parts}


def reconcile(group: ConsumerGroup, member: ConsumerGroupMember, target_epoch: int, target: Assignment,
              owned: Iterable[tuple[uuid.UUID, Iterable[int]]] | None, subscribed: frozenset[uuid.UUID],
              subscription_changed: bool) -> tuple[int, int, MemberState, Assignment, Assignment]:
    """The member's next (epoch, previous epoch, state, assigned, pending revocation) towards
    `target` at `target_epoch`; `owned` is what the heartbeat says the member holds (None:
    not sent); `subscribed` the ids of the topics it subscribes to now, which bound what it
    may keep even before a new target says so. Kafka's CurrentAssignmentBuilder."""
    owned_set = _owned(owned)

    def owns_any(assignment: Assignment) -> bool:
        if owned_set is None:
            return True  # not told otherwise: it still holds them
        return any(tp in owned_set for tp in _partitions(assignment))

    current = (member.member_epoch, member.previous_member_epoch, member.state, member.assigned,
               member.pending_revocation)
    if member.state == MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return _next(group, member, member.member_epoch, target_epoch, target, subscribed, owns_any)
        return _drop_unsubscribed(member, subscribed, owns_any) if subscription_changed else current
    if member.state == MemberState.UNREVOKED_PARTITIONS:
        if owns_any(member.pending_revocation):
            return _drop_unsubscribed(member, subscribed, owns_any) if subscription_changed else current
        return _next(group, member, member.member_epoch, target_epoch, target, subscribed, owns_any)
    if member.state == MemberState.UNRELEASED_PARTITIONS:
        return _next(group, member, member.member_epoch, target_epoch, target, subscribed, owns_any)
    return _next(group, member, target_epoch, target_epoch, target, subscribed, owns_any)


def _frozen(assignment: dict[uuid.UUID, set[int]]) -> Assignment:
    return {t: frozenset(p) for t, p in assignment.items()}


def _drop_unsubscribed(member: ConsumerGroupMember, subscribed: frozenset[uuid.UUID],
                       owns_any: Callable[[Assignment], bool]) -> tuple[int, int, MemberState, Assignment,
                                                                         Assignment]:
    """A member whose subscription changed gives up the topics it left at once, at its epoch
    (Kafka's updateCurrentAssignment): they are revoked before any new target is reached."""
    if not subscribed and not member.pending_revocation:
        assigned: Assignment = {}
        revoking: Assignment = dict(member.assigned)
    else:
        assigned = {t: p for t, p in member.assigned.items() if t in subscribed}
        revoking = dict(member.pending_revocation)
        for t, parts in member.assigned.items():
            if t not in subscribed:
                revoking[t] = revoking.get(t, frozenset()) | parts
    epoch = member.member_epoch
    if assigned == member.assigned:
        return epoch, member.previous_member_epoch, member.state, member.assigned, member.pending_revocation
    if revoking and owns_any(revoking):
        return epoch, epoch, MemberState.UNREVOKED_PARTITIONS, assigned, revoking
    return epoch, epoch, member.state, assigned, member.pending_revocation


def _next(group: ConsumerGroup, member: ConsumerGroupMember, epoch: int, target_epoch: int, target: Assignment,
          subscribed: frozenset[uuid.UUID],
          owns_any: Callable[[Assignment], bool]) -> tuple[int, int, MemberState, Assignment, Assignment]:
    """Kafka's computeNextAssignment: keep what is in both, revoke what is not in the target
    or no longer subscribed to (and stay at `epoch` until the member lets it go), add what is
    free (or what the member itself is still to give up)."""
    assigned: dict[uuid.UUID, set[int]] = {}
    revoking: dict[uuid.UUID, set[int]] = {}
    incoming: dict[uuid.UUID, set[int]] = {}
    unreleased = False
    for topic_id in set(target) | set(member.assigned):
        want = target.get(topic_id, frozenset()) if topic_id in subscribed else frozenset()
        have = member.assigned.get(topic_id, frozenset())
        own_pending = member.pending_revocation.get(topic_id, frozenset())
        keep = set(have & want)
        revoke = set(have - keep)
        add = {p for p in want - keep if group.current_partition_epoch(topic_id, p) == -1 or p in own_pending}
        if len(add) != len(want - keep):
            unreleased = True
        if keep:
            assigned[topic_id] = keep
        if revoke:
            revoking[topic_id] = revoke
        if add:
            incoming[topic_id] = add
    if revoking and owns_any(_frozen(revoking)):
        return epoch, member.member_epoch, MemberState.UNREVOKED_PARTITIONS, _frozen(assigned), _frozen(revoking)
    for topic_id, parts in incoming.items():
        assigned.setdefault(topic_id, set()).update(parts)
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return target_epoch, member.member_epoch, state, _frozen(assigned), {}
