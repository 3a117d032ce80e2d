"""A classic-protocol group and its members: the state Kafka's ClassicGroup keeps.

The group moves through Kafka's five states, and only along Kafka's edges:

    Empty -> PreparingRebalance -> CompletingRebalance -> Stable
    (any live state) -> PreparingRebalance; PreparingRebalance -> Empty;
    anything -> Dead (group deleted or expired)

This module is pure bookkeeping (no timers, no IO): the coordinator
(group_coordinator.py) drives it and owns the futures that answer parked
JoinGroup/SyncGroup requests.
"""

from __future__ import annotations

import asyncio
import enum
import uuid
from typing import Any

import msgspec

MEMBER_ID_DELIMITER = "-"
NO_LEADER = ""
NO_GENERATION = -1
CONSUMER_PROTOCOL_TYPE = "consumer"


class ClassicGroupState(enum.Enum):
    """Names as DescribeGroups/ListGroups report them."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_S = ClassicGroupState
VALID_PREVIOUS_STATES: dict[ClassicGroupState, frozenset[ClassicGroupState]] = {
    _S.EMPTY: frozenset({_S.PREPARING_REBALANCE}),
    _S.PREPARING_REBALANCE: frozenset({_S.STABLE, _S.COMPLETING_REBALANCE, _S.EMPTY}),
    _S.COMPLETING_REBALANCE: frozenset({_S.PREPARING_REBALANCE}),
    _S.STABLE: frozenset({_S.COMPLETING_REBALANCE}),
    _S.DEAD: frozenset({_S.STABLE, _S.PREPARING_REBALANCE, _S.COMPLETING_REBALANCE, _S.EMPTY, _S.DEAD}),
}


class OffsetAndMetadata(msgspec.Struct, frozen=True):
    """One committed offset, as kept in memory and in an OffsetCommitValue."""

    committed_offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp_ms: int = -1
    expire_timestamp_ms: int = -1
    # Offset of the record in __consumer_offsets that holds this commit
    # (lets a reload keep the newest one and expiry compare positions).
    record_offset: int = -1


class ClassicGroupMember:
    """A member: its protocols, timeouts, assignment and the requests it has parked."""

    __slots__ = (
        "member_id", "group_instance_id", "client_id", "client_host", "rebalance_timeout_ms",
        "session_timeout_ms", "protocol_type", "protocols", "assignment", "join_future", "sync_future",
        "is_new", "heartbeat_deadline",
    )

    def __init__(self, member_id: str, group_instance_id: str | None, client_id: str, client_host: str,
                 rebalance_timeout_ms: int, session_timeout_ms: int, protocol_type: str,
                 protocols: list[tuple[str, bytes]], assignment: bytes = b"") -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.protocols = protocols  # (name, metadata) in the member's order of preference
        self.assignment = assignment
        self.join_future: asyncio.Future[Any] | None = None
        self.sync_future: asyncio.Future[Any] | None = None
        # A member that joined during this rebalance gets the longer "new member"
        # join timeout (KIP-394) until its first heartbeat.
        self.is_new = False
        self.heartbeat_deadline = 0

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.join_future is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.sync_future is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str | None) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        raise ValueError(f"member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        """Same protocols and metadata, in the same order: a rejoin that changes nothing."""
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} does not support any of the candidate protocols")


class ClassicGroup:
    """A group's members, generation, protocol and leader."""

    def __init__(self, group_id: str, state: ClassicGroupState = ClassicGroupState.EMPTY, *, now_ms: int) -> None:
        self.group_id = group_id
        self.state = state
        self.previous_state = state
        self.current_state_timestamp_ms: int | None = now_ms
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, ClassicGroupMember] = {}
        self.static_members: dict[str, str] = {}  # group instance id -> member id
        self.pending_join_members: set[str] = set()
        self.pending_sync_members: set[str] = set()
        self.supported_protocols: dict[str, int] = {}
        self.new_member_added = False
        self.num_awaiting_join = 0

    # -- state ------------------------------------------------------------

    def is_in_state(self, state: ClassicGroupState) -> bool:
        return self.state is state

    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS_STATES[ClassicGroupState.PREPARING_REBALANCE]

    def transition_to(self, target: ClassicGroupState, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS_STATES[target]:
            raise RuntimeError(
                f"Group {self.group_id} should be in one of {sorted(s.value for s in VALID_PREVIOUS_STATES[target])} "
                f"states before moving to {target.value} state. Instead it is in {self.state.value} state."
            )
        self.previous_state = self.state
        self.state = target
        self.current_state_timestamp_ms = now_ms

    # -- members ----------------------------------------------------------

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def static_member_id(self, group_instance_id: str) -> str | None:
        return self.static_members.get(group_instance_id)

    def generate_member_id(self, client_id: str, group_instance_id: str | None) -> str:
        prefix = group_instance_id if group_instance_id is not None else client_id
        return f"{prefix}{MEMBER_ID_DELIMITER}{uuid.uuid4()}"

    def add(self, member: ClassicGroupMember, join_future: asyncio.Future[Any] | None = None) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        for name in member.protocol_names():
            self.supported_protocols[name] = self.supported_protocols.get(name, 0) + 1
        if member.is_static:
            self.static_members[member.group_instance_id] = member.member_id  # type: ignore[index]
        member.join_future = join_future
        if join_future is not None:
            self.num_awaiting_join += 1
        self.pending_join_members.discard(member.member_id)

    def remove(self, member_id: str) -> ClassicGroupMember | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            for name in member.protocol_names():
                self.supported_protocols[name] = self.supported_protocols.get(name, 0) - 1
            if member.is_awaiting_join:
                self.num_awaiting_join -= 1
            if member.is_static and self.static_members.get(member.group_instance_id) == member_id:  # type: ignore[arg-type]
                del self.static_members[member.group_instance_id]  # type: ignore[arg-type]
        self.pending_sync_members.discard(member_id)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        return member

    def update_member(self, member: ClassicGroupMember, protocols: list[tuple[str, bytes]],
                      rebalance_timeout_ms: int, session_timeout_ms: int,
                      join_future: asyncio.Future[Any] | None) -> None:
        for name in member.protocol_names():
            self.supported_protocols[name] = self.supported_protocols.get(name, 0) - 1
        member.protocols = protocols
        for name in member.protocol_names():
            self.supported_protocols[name] = self.supported_protocols.get(name, 0) + 1
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if join_future is not None and not member.is_awaiting_join:
            self.num_awaiting_join += 1
        elif join_future is None and member.is_awaiting_join:
            self.num_awaiting_join -= 1
        member.join_future = join_future

    def replace_static_member(self, group_instance_id: str, old_member_id: str,
                              new_member_id: str) -> ClassicGroupMember:
        """A static member rejoined with a new member id: same member, new id."""
        old = self.members.pop(old_member_id)
        new = ClassicGroupMember(new_member_id, group_instance_id, old.client_id, old.client_host,
                                 old.rebalance_timeout_ms, old.session_timeout_ms, old.protocol_type,
                                 old.protocols, old.assignment)
        new.join_future = old.join_future
        new.sync_future = old.sync_future
        old.join_future = old.sync_future = None
        self.members[new_member_id] = new
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        if old_member_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_member_id)
            self.pending_sync_members.add(new_member_id)
        self.static_members[group_instance_id] = new_member_id
        return new

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep a leader that rejoined, or hand leadership to the first member that did;
        False when no member is awaiting its join answer (or there is no leader)."""
        leader = self.members.get(self.leader_id) if self.leader_id is not None else None
        if leader is None:
            return False
        if leader.is_awaiting_join:
            return True
        for member in self.members.values():
            if member.is_awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_join_members

    def not_yet_rejoined_members(self) -> list[ClassicGroupMember]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # -- protocols --------------------------------------------------------

    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {name for name, count in self.supported_protocols.items() if count == n}

    def supports_protocols(self, protocol_type: str, protocol_names: list[str]) -> bool:
        if self.is_in_state(ClassicGroupState.EMPTY):
            return bool(protocol_type) and bool(protocol_names)
        n = len(self.members)
        return self.protocol_type == protocol_type and any(
            self.supported_protocols.get(name, 0) == n for name in protocol_names
        )

    def select_protocol(self) -> str | None:
        """The protocol the members vote for; None when no protocol is supported by every
        member (a member that lists a name twice counts twice, as in Kafka, so a lone member
        offering "range" twice supports nothing)."""
        candidates = self.candidate_protocols()
        if not candidates:
            return None
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        # Most votes wins; ties go to the protocol voted first (dict order).
        return max(votes.items(), key=lambda kv: kv[1])[0]

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(ClassicGroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.transition_to(ClassicGroupState.EMPTY, now_ms)
        self.pending_sync_members.clear()

    def assignments(self) -> dict[str, bytes]:
        return {m.member_id: m.assignment for m in self.members.values()}

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members of a 'consumer' group subscribe to (None when unknown)."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for member in self.members.values():
                data = member.metadata(self.protocol_name)
                # ConsumerProtocolSubscription: int16 version, then (v0 prefix of every
                # version) an array of topic names.
                pos = 2
                count = int.from_bytes(data[pos:pos + 4], "big", signed=True)
                pos += 4
                for _ in range(max(count, 0)):
                    n = int.from_bytes(data[pos:pos + 2], "big", signed=True)
                    pos += 2
                    topics.add(data[pos:pos + n].decode("utf-8"))
                    pos += n
        except (ValueError, UnicodeDecodeError):
            return None
        return topics
