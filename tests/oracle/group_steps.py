"""Steps of the consumer-group scenarios: FindCoordinator, the classic rebalance protocol
(JoinGroup, SyncGroup, Heartbeat, LeaveGroup), offsets (OffsetCommit, OffsetFetch,
OffsetDelete), group administration (DescribeGroups, ListGroups, DeleteGroups) and
InitProducerId.

Each step is recorded (compared) unless it says otherwise. A JoinGroup that waits for a
rebalance parks its connection, so `send_join` only sends and `Pending.answer` reads the
answer later; scenarios give each member its own connection. Members are named in the
transcript by the order in which the broker handed out their ids (`run.alias`), so the
two brokers' generated ids compare equal while the shape of the id is still checked.
"""

from __future__ import annotations

import dataclasses
import re
import struct
import uuid
import weakref
from collections.abc import Iterable, Sequence
from typing import Any

from jvm.kafka_jvm import ORACLE_SETTINGS
from differential import UNORDERED, Connection, ScenarioRun, entity, request_class_name

OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR = 8, 9, 10
JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = 11, 12, 13, 14
DESCRIBE_GROUPS, LIST_GROUPS, INIT_PRODUCER_ID = 15, 16, 22
DELETE_GROUPS, OFFSET_DELETE = 42, 47

# Kafka's defaults for group.min.session.timeout.ms / group.max.session.timeout.ms.
MIN_SESSION_MS, MAX_SESSION_MS = 6_000, 1_800_000
SESSION_MS = 10_000
REBALANCE_MS = 10_000

NONE, MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS = 0, 79, 27


# -- the consumer protocol (the bytes inside JoinGroup/SyncGroup) ---------------------


def _string(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def subscription(topics: Sequence[str], *, owned: dict[str, Sequence[int]] | None = None,
                 generation: int = -1, version: int = 1, user_data: bytes | None = None) -> bytes:
    """ConsumerProtocolSubscription (v0-v2) as the Java client writes it: topics, user data,
    owned partitions (v1+, what cooperative assignors read) and the generation (v2+)."""
    out = struct.pack(">hi", version, len(topics)) + b"".join(_string(t) for t in topics)
    out += struct.pack(">i", -1) if user_data is None else struct.pack(">i", len(user_data)) + user_data
    if version >= 1:
        owned = owned or {}
        out += struct.pack(">i", len(owned))
        for topic, parts in owned.items():
            out += _string(topic) + struct.pack(">i", len(parts)) + b"".join(struct.pack(">i", p) for p in parts)
    if version >= 2:
        out += struct.pack(">i", generation)
    return out


def assignment(partitions: dict[str, Sequence[int]], *, version: int = 1) -> bytes:
    """ConsumerProtocolAssignment: the partitions a member gets, no user data."""
    out = struct.pack(">hi", version, len(partitions))
    for topic, parts in partitions.items():
        out += _string(topic) + struct.pack(">i", len(parts)) + b"".join(struct.pack(">i", p) for p in parts)
    return out + struct.pack(">i", -1)


def group_id(run: ScenarioRun, group: str) -> str:
    """The run's name for a symbolic group; "" stays "" (the invalid group id)."""
    return run.group(group) if group else ""


# -- naming generated member ids ----------------------------------------------------

_MEMBER_ID = re.compile(r"(?P<prefix>.*)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def name_member(run: ScenarioRun, member_id: str) -> None:
    """Alias a broker-generated member id "<client or instance id>-<uuid>" by its order of
    appearance; an id of another shape is left alone, so the difference shows."""
    m = _MEMBER_ID.fullmatch(member_id or "")
    if m and member_id not in run.normalise.aliases:
        n = sum(1 for a in run.normalise.aliases.values() if a.startswith(f"{m['prefix']}-<uuid"))
        run.alias(member_id, f"{m['prefix']}-<uuid {n + 1}>")


def _name_members(run: ScenarioRun, response: Any) -> None:
    """Alias every member id in an answer, in the order the answer lists them."""
    if dataclasses.is_dataclass(response) and not isinstance(response, type):
        for f in dataclasses.fields(response):
            value = getattr(response, f.name)
            if f.name in ("member_id", "leader") and isinstance(value, str):
                name_member(run, value)
            else:
                _name_members(run, value)
    elif isinstance(response, (tuple, list)):
        for v in response:
            _name_members(run, v)


# -- sending, with answers read now or later ------------------------------------------


@dataclasses.dataclass
class Pending:
    """A request sent on a connection whose answer is read later (a parked JoinGroup)."""

    run: ScenarioRun
    conn: Connection
    request: Any
    correlation_id: int
    label: str
    record: bool

    def answer(self) -> Any:
        response = self.conn.receive(self.request.__api_key__, self.request.__version__, self.correlation_id)
        self.run.normalise.learn_topic_ids(response)
        _name_members(self.run, response)
        if self.record:
            self.run.record(self.label, self.request, response)
        return response


def send(run: ScenarioRun, api_key: int, version: int, *, label: str | None = None,
         conn: Connection | None = None, record: bool = True, **fields: Any) -> Pending:
    request = entity(api_key, version, request_class_name(api_key, version), **fields)
    c = conn or run.conn
    cid = c.send(request)
    return Pending(run, c, request, cid, label or f"{type(request).__name__} v{version}", record)


def call(run: ScenarioRun, api_key: int, version: int, **kwargs: Any) -> Any:
    return send(run, api_key, version, **kwargs).answer()


# -- FindCoordinator ----------------------------------------------------------------


def find_coordinator(run: ScenarioRun, keys: Sequence[str], *, version: int = 6, key_type: int = 0,
                     label: str | None = None, record: bool = True) -> Any:
    if version >= 4:
        return call(run, FIND_COORDINATOR, version, label=label, record=record, key_type=key_type,
                    coordinator_keys=tuple(keys))
    (key,) = keys
    return call(run, FIND_COORDINATOR, version, label=label, record=record, key=key, key_type=key_type)


# -- the rebalance protocol ---------------------------------------------------------


def protocols(version: int, *entries: tuple[str, bytes]) -> tuple[Any, ...]:
    return tuple(entity(JOIN_GROUP, version, "JoinGroupRequestProtocol", name=n, metadata=m) for n, m in entries)


def send_join(run: ScenarioRun, group: str, *, version: int = 9, member_id: str = "", conn: Connection | None = None,
              instance_id: str | None = None, protocol_type: str = "consumer",
              offered: Sequence[tuple[str, bytes]] = (("range", b"meta"),), session_ms: int = SESSION_MS,
              rebalance_ms: int = REBALANCE_MS, reason: str | None = None, label: str | None = None,
              record: bool = True) -> Pending:
    """JoinGroup for the group named `group` (symbolic): sent now, answered when the
    broker completes the join phase."""
    return send(run, JOIN_GROUP, version, label=label, conn=conn, record=record, group_id=group_id(run, group),
                session_timeout=session_ms, rebalance_timeout=rebalance_ms, member_id=member_id,
                group_instance_id=instance_id, protocol_type=protocol_type,
                protocols=protocols(version, *offered), reason=reason)


def join(run: ScenarioRun, group: str, **kwargs: Any) -> Any:
    return send_join(run, group, **kwargs).answer()


def join_new_member(run: ScenarioRun, group: str, *, version: int = 9, conn: Connection | None = None,
                    **kwargs: Any) -> Pending:
    """A dynamic member's first join: v4+ first gets MEMBER_ID_REQUIRED with its id, then
    joins again with it (sent, not yet answered)."""
    member_id = ""
    if version >= 4:
        first = join(run, group, version=version, conn=conn, **kwargs)
        assert first.error_code.value == MEMBER_ID_REQUIRED, first
        member_id = first.member_id
    return send_join(run, group, version=version, member_id=member_id, conn=conn, **kwargs)


def sync(run: ScenarioRun, group: str, generation: int, member_id: str, *, version: int = 5,
         assignments: dict[str, bytes] | None = None, instance_id: str | None = None,
         protocol_type: str | None = "consumer", protocol_name: str | None = "range",
         conn: Connection | None = None, label: str | None = None) -> Pending:
    """SyncGroup (sent; a follower's answer waits for the leader's assignment)."""
    assigned = tuple(entity(SYNC_GROUP, version, "SyncGroupRequestAssignment", member_id=m, assignment=a)
                     for m, a in (assignments or {}).items())
    return send(run, SYNC_GROUP, version, label=label, conn=conn, group_id=group_id(run, group),
                generation_id=generation, member_id=member_id, group_instance_id=instance_id,
                protocol_type=protocol_type, protocol_name=protocol_name, assignments=assigned)


def heartbeat(run: ScenarioRun, group: str, generation: int, member_id: str, *, version: int = 4,
              instance_id: str | None = None, conn: Connection | None = None, label: str | None = None,
              record: bool = True) -> Any:
    return call(run, HEARTBEAT, version, label=label, conn=conn, record=record, group_id=group_id(run, group),
                generation_id=generation, member_id=member_id, group_instance_id=instance_id)


def leave(run: ScenarioRun, group: str, members: Sequence[tuple[str, str | None]], *, version: int = 5,
          reason: str | None = None, conn: Connection | None = None, label: str | None = None) -> Any:
    """LeaveGroup for (member id, group instance id) pairs; v0-v2 take one member id."""
    if version >= 3:
        identities = tuple(entity(LEAVE_GROUP, version, "MemberIdentity", member_id=m, group_instance_id=i,
                                  reason=reason) for m, i in members)
        return call(run, LEAVE_GROUP, version, label=label, conn=conn, group_id=group_id(run, group),
                    members=identities)
    ((member_id, _),) = members
    return call(run, LEAVE_GROUP, version, label=label, conn=conn, group_id=group_id(run, group), member_id=member_id)


@dataclasses.dataclass
class Member:
    """A member after a completed join: what later requests need."""

    member_id: str
    generation: int
    leader: str
    conn: Connection


def form_group(run: ScenarioRun, group: str, *, version: int = 9, assignment_bytes: bytes = b"assigned",
               **join_kwargs: Any) -> Member:
    """One dynamic member joins and syncs; the group is Stable with it as leader (recorded)."""
    conn = run.connect()
    joined = join_new_member(run, group, version=version, conn=conn, **join_kwargs).answer()
    assert joined.error_code.value == NONE, joined
    synced = sync(run, group, joined.generation_id, joined.member_id, conn=conn,
                  assignments={joined.member_id: assignment_bytes}).answer()
    assert synced.error_code.value == NONE, synced
    return Member(joined.member_id, joined.generation_id, joined.leader, conn)


# -- observing a group without recording ------------------------------------------------


def group_state(run: ScenarioRun, group: str) -> str:
    r = call(run, DESCRIBE_GROUPS, 5, record=False, groups=(run.group(group),), include_authorized_operations=False)
    return r.groups[0].group_state


def wait_for_state(run: ScenarioRun, group: str, state: str, timeout: float = 30.0) -> None:
    """Wait until DescribeGroups reports `state` (e.g. a join parked on another connection
    has reached the broker and moved the group to PreparingRebalance)."""
    run.wait_until(lambda: group_state(run, group) == state, f"group {group} in state {state}", timeout)


def wait_for_members(run: ScenarioRun, group: str, count: int, timeout: float = 30.0) -> None:
    """Wait until the group has `count` members (joins parked on several connections have
    all arrived), unrecorded."""
    def arrived() -> bool:
        r = call(run, DESCRIBE_GROUPS, 5, record=False, groups=(run.group(group),), include_authorized_operations=False)
        return len(r.groups[0].members) == count

    run.wait_until(arrived, f"{count} members in group {group}", timeout)


# -- offsets ------------------------------------------------------------------------

PartitionOffsets = dict[int, int | tuple[int, int, str | None]]


def commit(run: ScenarioRun, group: str, offsets: dict[str, PartitionOffsets], *, version: int = 9,
           generation: int = -1, member_id: str = "", instance_id: str | None = None,
           retention_ms: int = -1, label: str | None = None, conn: Connection | None = None,
           raw_group: str | None = None) -> Any:
    """OffsetCommit: {topic symbol: {partition: offset | (offset, leader epoch, metadata)}}."""
    topics = []
    for symbol, parts in offsets.items():
        partitions = []
        for p, value in parts.items():
            offset, epoch, meta = value if isinstance(value, tuple) else (value, -1, "")
            partitions.append(entity(OFFSET_COMMIT, version, "OffsetCommitRequestPartition", partition_index=p,
                                     committed_offset=offset, committed_leader_epoch=epoch,
                                     committed_metadata=meta))
        topics.append(entity(OFFSET_COMMIT, version, "OffsetCommitRequestTopic", name=run.topic(symbol),
                             topic_id=_topic_id(run, symbol) if version >= 10 else None,
                             partitions=tuple(partitions)))
    return call(run, OFFSET_COMMIT, version, label=label, conn=conn,
                group_id=group_id(run, group) if raw_group is None else raw_group,
                generation_id_or_member_epoch=generation, member_id=member_id, group_instance_id=instance_id,
                retention_time=retention_ms, topics=tuple(topics))


def fetch_offsets(run: ScenarioRun, requests: Sequence[tuple[str, dict[str, Sequence[int]] | None]], *,
                  version: int = 9, require_stable: bool = False, label: str | None = None,
                  raw_groups: bool = False, member_id: str | None = None, member_epoch: int = -1) -> Any:
    """OffsetFetch for [(group, {topic symbol: partitions} or None for all)]; one group
    before v8, any number from v8."""
    def topics(spec: dict[str, Sequence[int]] | None, cls: str) -> Any:
        if spec is None:
            return None
        # Only the v8+ form (OffsetFetchRequestTopics) has topic ids, from v10 on.
        by_id = cls == "OffsetFetchRequestTopics"
        return tuple(entity(OFFSET_FETCH, version, cls, name=run.topic(t), partition_indexes=tuple(ps),
                            **({"topic_id": _topic_id(run, t) if version >= 10 else None} if by_id else {}))
                     for t, ps in spec.items())

    def gid(g: str) -> str:
        return g if raw_groups else group_id(run, g)

    if version >= 8:
        groups = tuple(entity(OFFSET_FETCH, version, "OffsetFetchRequestGroup", group_id=gid(g), member_id=member_id,
                              member_epoch=member_epoch, topics=topics(spec, "OffsetFetchRequestTopics"))
                       for g, spec in requests)
        return call(run, OFFSET_FETCH, version, label=label, groups=groups, require_stable=require_stable)
    ((g, spec),) = requests
    return call(run, OFFSET_FETCH, version, label=label, group_id=gid(g),
                topics=topics(spec, "OffsetFetchRequestTopic"), require_stable=require_stable)


UNKNOWN_TOPIC_ID = uuid.UUID("6a8f9f4e-0b7e-4c5e-9d1b-0c3e2f1a4b5c")


def _topic_id(run: ScenarioRun, symbol: str) -> uuid.UUID:
    """The topic id of a symbolic topic (v10 offset APIs); "unknown" stands for an id no
    topic has, "zero" for the zero id."""
    if symbol == "unknown":
        run.topic_ids.setdefault(UNKNOWN_TOPIC_ID, "unknown")
        return UNKNOWN_TOPIC_ID
    if symbol == "zero":
        return uuid.UUID(int=0)
    return run.topic_id(symbol)


def delete_offsets(run: ScenarioRun, group: str, topics: dict[str, Sequence[int]], *, label: str | None = None) -> Any:
    wanted = tuple(entity(OFFSET_DELETE, 0, "OffsetDeleteRequestTopic", name=run.topic(t), partitions=tuple(
        entity(OFFSET_DELETE, 0, "OffsetDeleteRequestPartition", partition_index=p) for p in ps))
        for t, ps in topics.items())
    return call(run, OFFSET_DELETE, 0, label=label, group_id=group_id(run, group), topics=wanted)


# -- administration -----------------------------------------------------------------


def describe_groups(run: ScenarioRun, groups: Iterable[str], *, version: int = 5, raw: bool = False,
                    label: str | None = None, authorized_operations: bool = False) -> Any:
    return call(run, DESCRIBE_GROUPS, version, label=label, groups=tuple(g if raw else group_id(run, g) for g in groups),
                include_authorized_operations=authorized_operations)


def list_groups(run: ScenarioRun, *, version: int = 5, states: Sequence[str] = (), types: Sequence[str] = (),
                label: str | None = None) -> Any:
    """ListGroups, recorded with only this run's groups: the brokers are shared by the whole
    session, and the groups of other scenarios (named after their own runs) are not this
    scenario's to compare."""
    pending = send(run, LIST_GROUPS, version, label=label, record=False, states_filter=tuple(states),
                   types_filter=tuple(types))
    response = pending.answer()
    mine = tuple(g for g in response.groups if g.group_id.endswith(run.suffix))
    run.record(pending.label, pending.request, dataclasses.replace(response, groups=mine))
    return response


def delete_groups(run: ScenarioRun, groups: Iterable[str], *, version: int = 2, raw: bool = False,
                  label: str | None = None, record: bool = True) -> Any:
    return call(run, DELETE_GROUPS, version, label=label, record=record,
                groups_names=tuple(g if raw else group_id(run, g) for g in groups))


_PRODUCER_IDS: weakref.WeakKeyDictionary[ScenarioRun, dict[int, str]] = weakref.WeakKeyDictionary()


def init_producer_id(run: ScenarioRun, *, version: int = 5, transactional_id: str | None = None,
                     producer_id: int = -1, producer_epoch: int = -1, timeout_ms: int = 60_000,
                     label: str | None = None, record: bool = True) -> Any:
    """InitProducerId, recorded with the producer id named by its order of appearance in the
    run: Kafka's controller hands out ids in blocks from 0, asyncbroker derives them from the
    clock (unique across restarts without a quorum), so only their identity is comparable."""
    pending = send(run, INIT_PRODUCER_ID, version, label=label, record=False, transactional_id=transactional_id,
                   transaction_timeout=timeout_ms, producer_id=producer_id, producer_epoch=producer_epoch)
    response = pending.answer()
    if record:
        run.record(pending.label, pending.request,
                   dataclasses.replace(response, producer_id=producer_id_name(run, response.producer_id)))
    return response


def producer_id_name(run: ScenarioRun, producer_id: int) -> Any:
    """A producer id as the transcript shows it: its order of appearance in the run (-1 as is)."""
    if producer_id < 0:
        return producer_id
    names = _PRODUCER_IDS.setdefault(run, {})
    return names.setdefault(producer_id, f"<producer id {len(names) + 1}>")


def wait_for_producer_ids(run: ScenarioRun) -> None:
    """Kafka answers COORDINATOR_LOAD_IN_PROGRESS until its broker has a block of producer
    ids from the controller (the first request of a session); wait for one, unrecorded."""
    run.wait_until(lambda: init_producer_id(run, record=False).error_code.value == NONE, "producer ids")


# -- answers whose collections Kafka builds from hash maps --------------------------------


def _sort_join_group(answer: dict[str, Any]) -> None:
    """Kafka lists the leader's members from a hash map of member ids: the order carries no
    meaning (assignors sort), and ids differ between brokers, so compare them sorted."""
    answer["members"].sort(key=lambda m: m["member_id"])


def _sort_describe_groups(answer: dict[str, Any]) -> None:
    """DescribeGroups lists a group's members from the same hash map, and answers the groups
    shard by shard of __consumer_offsets (the hash of a group id, which holds the run's
    suffix), so neither order can match between two runs."""
    answer["groups"].sort(key=lambda g: g["group_id"])
    for g in answer["groups"]:
        g["members"].sort(key=lambda m: m["member_id"])


def _sort_delete_groups(answer: dict[str, Any]) -> None:
    """DeleteGroups answers shard by shard too (see _sort_describe_groups)."""
    answer["results"].sort(key=lambda r: r["group_id"])


def _sort_list_groups(answer: dict[str, Any]) -> None:
    """ListGroups gathers the groups of every coordinator shard (hash maps)."""
    answer["groups"].sort(key=lambda g: g["group_id"])


def _sort_offset_fetch(answer: dict[str, Any]) -> None:
    """OffsetFetch for all of a group's offsets walks a hash map of topics and partitions
    (the groups of the v8+ form come in the request's order)."""
    for holder in answer.get("groups") or [answer]:
        topics = holder.get("topics") or []
        topics.sort(key=lambda t: str(t.get("name", t.get("topic_id"))))
        for t in topics:
            t["partitions"].sort(key=lambda p: p["partition_index"])


UNORDERED.update({JOIN_GROUP: _sort_join_group, DESCRIBE_GROUPS: _sort_describe_groups,
                  LIST_GROUPS: _sort_list_groups, OFFSET_FETCH: _sort_offset_fetch,
                  DELETE_GROUPS: _sort_delete_groups})


# -- waiting for the coordinators (unrecorded) ----------------------------------------


def wait_for_coordinator(run: ScenarioRun, key_type: int = 0) -> None:
    """Kafka answers COORDINATOR_NOT_AVAILABLE while it creates and loads __consumer_offsets
    (key type 0) or __transaction_state (1) on the first lookup of a session: wait until it
    names a coordinator, unrecorded, so scenarios compare steady-state answers."""
    def ready() -> bool:
        r = find_coordinator(run, ["ready"], key_type=key_type, record=False)
        return r.coordinators[0].error_code.value == NONE

    run.wait_until(ready, f"the coordinator for key type {key_type}")
    if key_type == 0:
        # Then Kafka loads each shard (partition) of __consumer_offsets, answering
        # NOT_COORDINATOR for its groups until then: describe one group of every shard.
        def loaded() -> bool:
            r = call(run, DESCRIBE_GROUPS, 5, record=False, groups=_SHARD_PROBES, include_authorized_operations=False)
            return all(g.error_code.value == NONE for g in r.groups)

        run.wait_until(loaded, "the group coordinator's shards")


def _java_hash(s: str) -> int:
    """Java's String.hashCode, which Kafka's partitionFor(groupId) takes."""
    h = 0
    for unit in s.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def _shard_probes(partitions: int) -> tuple[str, ...]:
    """A group id for each partition of __consumer_offsets (Utils.abs(hash) % partitions)."""
    found: dict[int, str] = {}
    i = 0
    while len(found) < partitions:
        name = f"shard-probe-{i}"
        h = _java_hash(name)
        found.setdefault((0 if h == -(1 << 31) else abs(h)) % partitions, name)
        i += 1
    return tuple(found[p] for p in range(partitions))


_SHARD_PROBES = _shard_probes(int(ORACLE_SETTINGS["offsets.topic.num.partitions"]))
