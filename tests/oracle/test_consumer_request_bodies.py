"""Differential scenario: the requests a classic consumer group and an idempotent producer send,
as raw bodies, to Kafka 4.4 and to asyncbroker, whose hand-written decoders read them
(wire.find_coordinator, wire.join_group, wire.heartbeat, wire.offset_fetch, wire.list_offsets,
wire.init_producer_id, ...). Where kio and Kafka differ the decoders mean to do as Kafka does:
tags the schemas do not define are skipped, a boolean byte other than 0 and 1 is true. Nulls the
schemas forbid and bodies cut inside their tags close the connection."""

from __future__ import annotations

import dataclasses
import struct

import pytest

import group_steps as gs
from differential import ScenarioRun
from steps import create_topic

pytestmark = pytest.mark.timeout(180)

FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT, OFFSET_FETCH, LIST_OFFSETS, INIT_PRODUCER_ID = 10, 11, 12, 9, 2, 22
UNKNOWN_TAGS = b"\x02\x05\x01a\x40\x00"
"""A tagged-field section of two tags no schema here defines: 5 (one byte) and 64 (empty)."""


def _compact(text: str | None) -> bytes:
    """A compact (flexible-version) string, null for None."""
    return b"\x00" if text is None else bytes([len(text.encode()) + 1]) + text.encode()


def _i32(n: int) -> bytes:
    return struct.pack(">i", n)


def raw_bodies(run: ScenarioRun) -> None:
    gs.wait_for_coordinator(run)
    gs.wait_for_producer_ids(run)
    create_topic(run, "t", partitions=1, record=False)
    topic, group = run.topic("t"), run.group("g")

    def answer(label: str, api_key: int, version: int, body: bytes) -> None:
        cid = run.conn.send_raw(api_key, version, body)
        run.record(label, None, run.conn.receive(api_key, version, cid))

    def closes(label: str, api_key: int, version: int, body: bytes) -> None:
        conn = run.connect()
        conn.send_raw(api_key, version, body)
        run.note(f"{label}: connection closed", conn.closed_by_peer(5))

    # FindCoordinator: the key's and the request's tags.
    answer("FindCoordinator v3 with unknown tags", FIND_COORDINATOR, 3, _compact(group) + b"\x00" + UNKNOWN_TAGS)
    answer("FindCoordinator v4 with unknown tags", FIND_COORDINATOR, 4,
           b"\x00" + b"\x02" + _compact(group) + UNKNOWN_TAGS)
    closes("FindCoordinator v4 with a null key", FIND_COORDINATOR, 4, b"\x00\x02\x00\x00")
    closes("FindCoordinator v3 cut inside its tags", FIND_COORDINATOR, 3, _compact(group) + b"\x00" + b"\x02\x05")

    # Heartbeat of a member the group does not know, with unknown tags.
    answer("Heartbeat v4 with unknown tags", HEARTBEAT, 4,
           _compact(group) + _i32(1) + _compact("no-such-member") + _compact(None) + UNKNOWN_TAGS)

    # JoinGroup: a protocol's metadata null, which the schema forbids.
    head = _compact(group) + _i32(30_000) + _i32(60_000) + _compact("") + _compact(None) + _compact("consumer")
    closes("JoinGroup v6 with a null protocol metadata", JOIN_GROUP, 6, head + b"\x02" + _compact("range") + b"\x00"
           + b"\x00" + b"\x00")

    # OffsetFetch: require_stable as the byte 2 (read, where kio refused it and the connection
    # closed); the group's and the request's tags.
    answer("OffsetFetch v7 with require_stable byte 2", OFFSET_FETCH, 7, _compact(group) + b"\x00" + b"\x02" + b"\x00")
    partitions = b"\x02" + _i32(0) + UNKNOWN_TAGS
    answer("OffsetFetch v8 with require_stable byte 2 and unknown tags", OFFSET_FETCH, 8,
           b"\x02" + _compact(group) + b"\x02" + _compact(topic) + partitions + UNKNOWN_TAGS + b"\x02" + UNKNOWN_TAGS)

    # ListOffsets: the latest offset, with tags at every level.
    answer("ListOffsets v6 with unknown tags", LIST_OFFSETS, 6,
           _i32(-1) + b"\x00" + b"\x02" + _compact(topic) + b"\x02" + _i32(0) + _i32(-1) + struct.pack(">q", -1)
           + UNKNOWN_TAGS + UNKNOWN_TAGS + UNKNOWN_TAGS)
    closes("ListOffsets v6 with a null topic name", LIST_OFFSETS, 6,
           _i32(-1) + b"\x00" + b"\x02" + b"\x00" + b"\x01" + b"\x00" + b"\x00")

    # InitProducerId of an idempotent producer (no transactional id), with unknown tags; the id
    # is compared by its order of appearance (gs.producer_id_name).
    cid = run.conn.send_raw(INIT_PRODUCER_ID, 2, _compact(None) + _i32(60_000) + UNKNOWN_TAGS)
    got = run.conn.receive(INIT_PRODUCER_ID, 2, cid)
    run.record("InitProducerId v2 with unknown tags", None,
               dataclasses.replace(got, producer_id=gs.producer_id_name(run, got.producer_id)))


def test_raw_consumer_request_bodies(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(raw_bodies)
