"""Differential scenarios: the share group offset admin APIs (KIP-932) compared with Kafka 4.4.
DescribeShareGroupOffsets v0 and v1, AlterShareGroupOffsets v0 and DeleteShareGroupOffsets v0:
their answers for unknown groups, topics and partitions, for other kinds of groups, for groups
with members and for empty group ids; the group an alter creates; the start offsets and lags
described after altering, fetching, acknowledging and deleting; and where the next ShareFetch
starts (the records acquired, noted).

Both brokers run with group.share.assignment.interval.ms=0 (ORACLE_SETTINGS).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

import admin_steps
import group_steps
from data_steps import produce
from differential import Connection, ScenarioRun, batch, entity
from test_consumer_group_protocol import join as consumer_join
from test_consumer_group_protocol import topics
from test_share_group_membership import hb, until_assigned

pytestmark = pytest.mark.timeout(240)

DESCRIBE_OFFSETS, ALTER_OFFSETS, DELETE_OFFSETS, SHARE_FETCH = 90, 91, 92, 78
ACCEPT = 1


def describe_offsets(run: ScenarioRun, label: str,
                     groups: Mapping[str, Mapping[str, Sequence[int]] | None] | Sequence[tuple[str, Any]], *,
                     version: int = 1, raw_group: bool = False) -> Any:
    """DescribeShareGroupOffsets: group -> {topic: partitions} (None: every partition with state);
    or (group, topics) pairs, to name a group twice."""
    pairs = list(groups.items()) if isinstance(groups, Mapping) else list(groups)
    return run.call(DESCRIBE_OFFSETS, version, _label=label, groups=[
        entity(DESCRIBE_OFFSETS, version, "DescribeShareGroupOffsetsRequestGroup",
               group_id=g if raw_group else run.group(g),
               topics=None if wanted is None else [
                   entity(DESCRIBE_OFFSETS, version, "DescribeShareGroupOffsetsRequestTopic", topic_name=run.topic(t),
                          partitions=list(parts)) for t, parts in wanted.items()])
        for g, wanted in pairs])


def alter_offsets(run: ScenarioRun, label: str, group: str, offsets: Mapping[str, Mapping[int, int]], *,
                  raw_group: bool = False) -> Any:
    return run.call(ALTER_OFFSETS, 0, _label=label, group_id=group if raw_group else run.group(group), topics=[
        entity(ALTER_OFFSETS, 0, "AlterShareGroupOffsetsRequestTopic", topic_name=run.topic(t), partitions=[
            entity(ALTER_OFFSETS, 0, "AlterShareGroupOffsetsRequestPartition", partition_index=p, start_offset=o)
            for p, o in parts.items()]) for t, parts in offsets.items()])


def delete_offsets(run: ScenarioRun, label: str, group: str, topic_names: Sequence[str], *,
                   raw_group: bool = False) -> Any:
    return run.call(DELETE_OFFSETS, 0, _label=label, group_id=group if raw_group else run.group(group), topics=[
        entity(DELETE_OFFSETS, 0, "DeleteShareGroupOffsetsRequestTopic", topic_name=run.topic(t))
        for t in topic_names])


def share_group_config(run: ScenarioRun, group: str, key: str, value: str) -> None:
    run.call(44, 1, _label=f"{key}={value}", _record=False, validate_only=False, resources=[
        entity(44, 1, "AlterConfigsResource", resource_type=32, resource_name=run.group(group), configs=[
            entity(44, 1, "AlterableConfig", name=key, config_operation=0, value=value)])])


def produce_records(run: ScenarioRun, topic: str, partition: int, count: int) -> None:
    """`count` records, one batch each."""
    for _ in range(count):
        produce(run, topic, {partition: batch(1)}, record=False)


def fetch_acquired(run: ScenarioRun, label: str, group: str, member: str, topic: str, partitions: Sequence[int],
                   *, acks: Mapping[int, Sequence[tuple[int, int, int]]] | None = None,
                   epoch: int = 0, conn: Connection | None = None) -> int:
    """ShareFetch (v1) until records are acquired (the share partition may still be setting up
    on the first ones), then the acquired ranges are noted: (partition, first, last, delivery
    count), contiguous ranges of one delivery count merged (Kafka answers records acquired
    together as one range, asyncbroker one range per record batch). Acknowledgements go with
    the first fetch. Returns the next share session epoch."""
    topic_id = run.topic_id(topic)
    pending_acks = dict(acks or {})

    def one() -> list[tuple[int, int, int, int]] | None:
        nonlocal epoch, pending_acks
        answer = run.call(SHARE_FETCH, 1, _record=False, _conn=conn, group_id=run.group(group), member_id=member,
                          share_session_epoch=epoch, max_wait=datetime.timedelta(milliseconds=500), min_bytes=1,
                          max_bytes=1 << 20, max_records=500, batch_size=500, forgotten_topics_data=[], topics=[
                              entity(SHARE_FETCH, 1, "FetchTopic", topic_id=topic_id, partitions=[
                                  entity(SHARE_FETCH, 1, "FetchPartition", partition_index=p,
                                         acknowledgement_batches=[
                                             entity(SHARE_FETCH, 1, "AcknowledgementBatch", first_offset=f,
                                                    last_offset=last, acknowledge_types=[t])
                                             for f, last, t in pending_acks.get(p, ())])
                                  for p in partitions])])
        assert answer.error_code.value == 0, answer
        epoch = 1 if epoch == 0 else epoch + 1
        pending_acks = {}
        got = sorted((p.partition_index, a.first_offset, a.last_offset, a.delivery_count)
                     for t in answer.responses for p in t.partitions for a in p.acquired_records)
        merged: list[tuple[int, int, int, int]] = []
        for partition, first, last, count in got:  # the same records, however the ranges are cut
            if merged and merged[-1][0] == partition and merged[-1][2] + 1 == first and merged[-1][3] == count:
                merged[-1] = (partition, merged[-1][1], last, count)
            else:
                merged.append((partition, first, last, count))
        return merged or None

    run.note(label, run.wait_until(one, label, timeout=30))
    return epoch


def _share_acknowledge_errors(answer: Any) -> Any:
    """A ShareAcknowledge answer's error codes (its leader and node endpoints are ShareFetch's
    business, not these scenarios')."""
    return (answer.error_code.value, [(p.partition_index, p.error_code.value)
                                      for t in answer.responses for p in t.partitions])


def acknowledge(run: ScenarioRun, label: str, group: str, member: str, topic: str, epoch: int,
                acks: Mapping[int, Sequence[tuple[int, int, int]]], conn: Connection | None = None) -> int:
    """ShareAcknowledge (v1), its error codes noted; returns the next share session epoch."""
    answer = run.call(79, 1, _record=False, _conn=conn, group_id=run.group(group), member_id=member, share_session_epoch=epoch, topics=[
        entity(79, 1, "AcknowledgeTopic", topic_id=run.topic_id(topic), partitions=[
            entity(79, 1, "AcknowledgePartition", partition_index=p, acknowledgement_batches=[
                entity(79, 1, "AcknowledgementBatch", first_offset=f, last_offset=last, acknowledge_types=[t])
                for f, last, t in batches]) for p, batches in acks.items()])])
    run.note(label, _share_acknowledge_errors(answer))
    return epoch + 1


def close_session(run: ScenarioRun, label: str, group: str, member: str, conn: Connection | None = None) -> None:
    """The member closes its share session (ShareAcknowledge with epoch -1, as a share consumer
    does when it closes): what it still holds is released."""
    answer = run.call(79, 1, _record=False, _conn=conn, group_id=run.group(group), member_id=member,
                      share_session_epoch=-1, topics=[])
    run.note(label, _share_acknowledge_errors(answer))


def join_assigned(run: ScenarioRun, label: str, member: str, topic_names: list[str]) -> None:
    """A member joins; partitions whose share state is already initialized (altered offsets)
    are assigned at once, others once their state is set up (heartbeats until then)."""
    answer = hb(run, label, member, topics_=topic_names)
    if answer.assignment is None or not answer.assignment.topic_partitions:
        until_assigned(run, f"{label}: assigned", member, answer.member_epoch)


def wait_for_share_state(run: ScenarioRun, group: str, topic: str, partitions: int) -> None:
    """Kafka initializes the share state of a joining member's partitions that had none in the
    background, and may answer a Describe before it is done; asyncbroker does it with the join.
    Unrecorded Describes until the topic's `partitions` all have state."""
    def initialized() -> bool:
        answer = run.call(DESCRIBE_OFFSETS, 1, _record=False, groups=[
            entity(DESCRIBE_OFFSETS, 1, "DescribeShareGroupOffsetsRequestGroup", group_id=run.group(group),
                   topics=None)])
        return any(t.topic_name == run.topic(topic) and len(t.partitions) == partitions
                   for t in answer.groups[0].topics or ())
    run.wait_until(initialized, f"the share state of {topic}'s {partitions} partitions", timeout=30)


def wait_for_share_coordinator(run: ScenarioRun, topic: str) -> None:
    """Kafka creates __share_group_state (50 partitions) and loads it on the first share-state
    request of a session, which on a busy machine takes longer than a request's usual 30 s:
    one such request first, unrecorded, allowed three minutes."""
    conn = Connection(run.bootstrap, timeout=180)
    try:
        run.call(DESCRIBE_OFFSETS, 1, _conn=conn, _record=False, groups=[
            entity(DESCRIBE_OFFSETS, 1, "DescribeShareGroupOffsetsRequestGroup", group_id=run.group(f"probe-{i}"),
                   topics=[entity(DESCRIBE_OFFSETS, 1, "DescribeShareGroupOffsetsRequestTopic",
                                  topic_name=run.topic(topic), partitions=[0])]) for i in range(8)])
    finally:
        conn.close()


def describe_unknowns(run: ScenarioRun) -> None:
    """Nothing altered yet: unknown groups, unknown topics and partitions, empty topic lists,
    null topics, both versions, several groups in one request, an empty group id."""
    topics(run)
    wait_for_share_coordinator(run, "t1")
    for version in (0, 1):
        # (no partition past a topic's last: Kafka's persister retries those for half a minute,
        # then answers them as partitions without state, as asyncbroker does at once)
        describe_offsets(run, f"v{version}: unknown group, known and unknown topics", {
            "nobody": {"t1": [0, 1, 2], "t2": [1], "nope": [0, 2]}}, version=version)
        describe_offsets(run, f"v{version}: unknown group, all partitions", {"nobody": None}, version=version)
    # Kafka's share-state persister refuses these: the group's answer is UNKNOWN_SERVER_ERROR
    describe_offsets(run, "a negative partition", {"nobody": {"t1": [0, -1]}, "other": {"t2": [0]}})
    describe_offsets(run, "a topic without partitions", {"nobody": {"t1": [], "t2": [0]}})
    describe_offsets(run, "unknown topics only: no persister, no error", {"": {"nope": [-1]}}, raw_group=True)
    describe_offsets(run, "an unknown topic without partitions", {"nobody": {"nope": []}})
    describe_offsets(run, "no topics, and all, of two groups", {"a": {}, "b": None})
    describe_offsets(run, "empty group id", [("", {"t1": [0]}), ("", None)], raw_group=True)
    describe_offsets(run, "empty group id, all", {"": None}, raw_group=True)


def test_describe_unknowns(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(describe_unknowns)


def alter_and_describe(run: ScenarioRun) -> None:
    """Alter an unknown group's offsets (it is created, empty); what Describe says of them
    (lag: the high watermark less the start offset); a member makes the group non-empty;
    errors of the whole request."""
    topics(run)
    wait_for_share_coordinator(run, "t1")
    produce_records(run, "t1", 0, 5)
    produce_records(run, "t1", 1, 2)
    alter_offsets(run, "alter an unknown group", "g", {
        "t1": {0: 2, 1: 0, 5: 1}, "nope": {0: 1, 1: 1}, "t2": {1: 9}})
    describe_offsets(run, "v1: all", {"g": None})
    describe_offsets(run, "v0: all", {"g": None}, version=0)
    describe_offsets(run, "v1: some", {"g": {"t1": [0, 1, 2], "t2": [0, 1], "nope": [3]}})
    group_steps.list_groups(run, types=["share"], label="the altered group is listed")
    run.call(77, 1, _label="ShareGroupDescribe of the altered group", group_ids=[run.group("g")],
             include_authorized_operations=False)
    alter_offsets(run, "alter again, past the end", "g", {"t1": {0: 50}})
    describe_offsets(run, "a lag below zero", {"g": {"t1": [0]}})
    alter_offsets(run, "only unknown partitions", "g", {"t2": {2: 1, 3: 1}})
    alter_offsets(run, "only unknown topics, a new group", "new", {"nope": {0: 1}})
    group_steps.list_groups(run, types=["share"], label="no group for unknown topics only")
    alter_offsets(run, "no topics, a new group", "none", {})
    group_steps.list_groups(run, types=["share"], label="nor for no topics")
    alter_offsets(run, "empty group id", "", {"t1": {0: 1}}, raw_group=True)
    # Kafka's share-state persister refuses a negative partition: the whole request fails, after
    # the group was made (its message names the topic id, masked)
    alter_offsets(run, "a negative partition", "neg", {"t1": {0: 1, -1: 3}})
    run.transcript[-1].response["error_message"] = re.sub(
        r" [A-Za-z0-9_-]{22} ", " <topic-id> ", run.transcript[-1].response["error_message"] or "")
    describe_offsets(run, "nothing was written", {"neg": None})
    group_steps.list_groups(run, types=["share"], label="the group was made")
    alter_offsets(run, "a negative start offset", "neg", {"t1": {0: -5}})
    describe_offsets(run, "a negative start offset described", {"neg": None})
    # a member: the group is not empty
    join_assigned(run, "a joins", "m-a", ["t1"])
    alter_offsets(run, "a group with a member", "g", {"t1": {0: 1}})
    hb(run, "a leaves", "m-a", -1)
    alter_offsets(run, "empty again", "g", {"t1": {0: 1}})
    wait_for_share_state(run, "g", "t1", 3)
    describe_offsets(run, "after the member left", {"g": None})
    # another kind of group
    consumer_join(run, "a consumer-protocol group", "m-c", ["t1"], group="c")
    alter_offsets(run, "a consumer group", "c", {"t1": {0: 1}})
    describe_offsets(run, "a consumer group", [("c", {"t1": [0]}), ("c", None)])
    from test_consumer_group_protocol import hb as consumer_hb
    consumer_hb(run, "consumer member leaves", "m-c", -1, group="c")
    group_steps.join(run, "k", label="a classic group")
    alter_offsets(run, "a classic group", "k", {"t1": {0: 1}})
    delete_offsets(run, "a classic group", "k", ["t1"])


def test_alter_and_describe(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(alter_and_describe)


def alter_delete_and_fetch(run: ScenarioRun) -> None:
    """Where fetching starts: at the altered offset; acknowledged records move the start
    offset (Describe); altered back, accepted records are delivered again; deleted, the next
    fetch starts where share.auto.offset.reset says. DeleteShareGroupOffsets' answers."""
    group_steps.wait_for_coordinator(run)
    admin_steps.create_topics(run, [admin_steps.creatable(run, "t", 1), admin_steps.creatable(run, "u", 1)])
    admin_steps.metadata_topics(run, ["t", "u"], record=False)
    wait_for_share_coordinator(run, "t")
    produce_records(run, "t", 0, 6)
    delete_offsets(run, "delete: unknown group", "g", ["t"])
    share_group_config(run, "g", "share.auto.offset.reset", "earliest")
    alter_offsets(run, "alter t-0 to 3", "g", {"t": {0: 3}})
    # Each member fetches over its own connection and closes it when done, as a share consumer
    # does: Kafka forgets a group's share partitions when the last connection that held one of
    # its share sessions closes, and reads their state afresh at the next fetch (KD-213).
    conn = run.connect()
    join_assigned(run, "a joins", "m-a", ["t"])
    epoch = fetch_acquired(run, "a fetches from 3", "g", "m-a", "t", [0], conn=conn)
    delete_offsets(run, "delete: a member", "g", ["t"])
    acknowledge(run, "a accepts 3-4", "g", "m-a", "t", epoch, {0: [(3, 4, ACCEPT)]}, conn=conn)
    # Kafka writes the state before moving the start offset past what was accepted
    describe_offsets(run, "start offset 3, 3-4 delivered", {"g": None})
    close_session(run, "a closes its share session", "g", "m-a", conn=conn)
    conn.close()
    hb(run, "a leaves", "m-a", -1)
    describe_offsets(run, "a has left", {"g": None})
    alter_offsets(run, "alter t-0 back to 1", "g", {"t": {0: 1}})
    conn = run.connect()
    join_assigned(run, "b joins", "m-b", ["t"])
    fetch_acquired(run, "b fetches from 1", "g", "m-b", "t", [0], conn=conn)
    close_session(run, "b closes its share session", "g", "m-b", conn=conn)
    conn.close()
    hb(run, "b leaves", "m-b", -1)
    delete_offsets(run, "delete t, u and an unknown topic", "g", ["t", "u", "nope"])
    describe_offsets(run, "nothing left", {"g": None})
    describe_offsets(run, "t-0 after the delete", {"g": {"t": [0]}})
    delete_offsets(run, "delete t again", "g", ["t"])
    delete_offsets(run, "empty group id", "", ["t"], raw_group=True)
    conn = run.connect()
    join_assigned(run, "c joins", "m-c", ["t"])
    fetch_acquired(run, "c fetches from the earliest", "g", "m-c", "t", [0], conn=conn)
    close_session(run, "c closes its share session", "g", "m-c", conn=conn)
    conn.close()
    hb(run, "c leaves", "m-c", -1)
    alter_offsets(run, "alter once more", "g", {"t": {0: 2}})
    run.call(42, 2, _label="delete the group", groups_names=[run.group("g")])
    describe_offsets(run, "no state once the group is deleted", {"g": {"t": [0]}})
    conn = run.connect()
    join_assigned(run, "d joins the group anew", "m-d", ["t"])
    fetch_acquired(run, "d fetches from the earliest", "g", "m-d", "t", [0], conn=conn)
    close_session(run, "d closes its share session", "g", "m-d", conn=conn)
    conn.close()
    hb(run, "d leaves", "m-d", -1)
    consumer_join(run, "a consumer-protocol group", "m-x", ["t"], group="c")
    delete_offsets(run, "delete: a consumer group", "c", ["t"])
    from test_consumer_group_protocol import hb as consumer_hb
    consumer_hb(run, "consumer member leaves", "m-x", -1, group="c")


def test_alter_delete_and_fetch(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(alter_delete_and_fetch)


def altered_while_a_connection_stays_open(run: ScenarioRun) -> None:
    """KD-213: the member that fetched keeps its connection open (its share session closed,
    the member gone): Kafka keeps the share partition in memory and the next member's fetch
    goes on from there, not from the altered offset; asyncbroker starts from the altered
    offset."""
    group_steps.wait_for_coordinator(run)
    admin_steps.create_topics(run, [admin_steps.creatable(run, "t", 1)])
    admin_steps.metadata_topics(run, ["t"], record=False)
    wait_for_share_coordinator(run, "t")
    produce_records(run, "t", 0, 6)
    alter_offsets(run, "alter t-0 to 3", "g", {"t": {0: 3}})
    join_assigned(run, "a joins", "m-a", ["t"])
    epoch = fetch_acquired(run, "a fetches from 3", "g", "m-a", "t", [0])
    acknowledge(run, "a accepts 3-4", "g", "m-a", "t", epoch, {0: [(3, 4, ACCEPT)]})
    close_session(run, "a closes its share session", "g", "m-a")
    hb(run, "a leaves", "m-a", -1)
    alter_offsets(run, "alter t-0 back to 1", "g", {"t": {0: 1}})
    join_assigned(run, "b joins", "m-b", ["t"])
    fetch_acquired(run, "b fetches", "g", "m-b", "t", [0])
    close_session(run, "b closes its share session", "g", "m-b")
    hb(run, "b leaves", "m-b", -1)


def test_altered_while_a_connection_stays_open(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(altered_while_a_connection_stays_open, known={"KD-213": {"9:[0][1]", "9:[0][3]"}})
