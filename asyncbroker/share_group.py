"""ShareGroup: a share group (KIP-932), the membership half: who is in it and which partitions
each member may fetch from.

Members of a share group do not own partitions: several may fetch from one partition, and
records, not partitions, are handed out (share_partition.py, acquisition). So there is no
revocation step: a member's assignment is its target at the target epoch, at once (Kafka's
ShareGroupAssignmentBuilder). The group epoch moves when a member joins, leaves or changes
its subscription, or when a subscribed topic changes or its partitions become assignable.

A partition is assignable once its share state is initialized (Kafka's
ShareGroupStatePartitionMetadata): a topic newly subscribed to is first "initializing", then
"initialized", and only then assigned; the group epoch moves again when that happens.

The group is Empty without members, Stable otherwise (share groups have no reconciliation).
"""

from __future__ import annotations

import enum
import uuid

import msgspec

from asyncbroker.consumer_group import Assignment

__all__ = ["LEAVE_GROUP_MEMBER_EPOCH", "ShareGroup", "ShareGroupMember", "ShareGroupState"]

LEAVE_GROUP_MEMBER_EPOCH = -1


class ShareGroupState(str, enum.Enum):
    EMPTY = "Empty"
    STABLE = "Stable"


class ShareGroupMember(msgspec.Struct):
    member_id: str
    client_id: str = ""
    client_host: str = ""
    rack_id: str | None = None
    subscribed_topic_names: tuple[str, ...] = ()
    member_epoch: int = 0
    previous_member_epoch: int = 0
    assigned: Assignment = msgspec.field(default_factory=dict)

    def metadata_key(self) -> tuple[object, ...]:
        """The fields of its ShareGroupMemberMetadata record."""
        return (self.rack_id, self.client_id, self.client_host, self.subscribed_topic_names)


class ShareGroup:
    """A share group's state on the coordinator."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        # Kafka's ModernGroup starts at epoch 1, its target assignment too (a group an
        # AlterShareGroupOffsets creates is described so).
        self.group_epoch = 1
        self.assignment_epoch = 1
        self.assignment_timestamp = 0
        self.members: dict[str, ShareGroupMember] = {}
        self.target: dict[str, Assignment] = {}
        # What the members subscribe to, as last looked at: topic name -> (topic id, partitions).
        self.subscribed_topics: dict[str, tuple[uuid.UUID, int]] = {}
        # Share state of a topic's partitions: being set up, or ready (assignable).
        # topic id -> (topic name, partitions)
        self.initializing: dict[uuid.UUID, tuple[str, frozenset[int]]] = {}
        self.initialized: dict[uuid.UUID, tuple[str, frozenset[int]]] = {}
        # Topics whose share state is being deleted (DeleteShareGroupOffsets): topic id -> name.
        self.deleting: dict[uuid.UUID, str] = {}
        # Whether a ShareGroupStatePartitionMetadata record stands for the group (Kafka's
        # DeleteShareGroupOffsets answers nothing at all without one).
        self.has_state_metadata = False

    @property
    def state(self) -> ShareGroupState:
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def assignable(self) -> dict[uuid.UUID, frozenset[int]]:
        """Partitions whose share state is initialized, by topic id."""
        return {topic_id: parts for topic_id, (_, parts) in self.initialized.items()}
