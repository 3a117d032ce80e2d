"""Differential scenarios: ShareFetch v1 and ShareAcknowledge v1 (KIP-932) compared with Kafka
4.4 over raw requests: share sessions (opening, epochs, closing, a session that does not
exist), the records a member acquires with their delivery counts, ACCEPT / RELEASE / REJECT,
a released record delivered again, and bad acknowledgements (records not acquired, acquired
by another member, unknown types, a range upside down, acknowledging twice).

A share partition's state is initialized on its first fetch (Kafka asks its share
coordinator), so the first fetches of a member are repeated, unrecorded, until records come;
each scenario keeps its own count of session epochs.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import pytest

import data_steps
import group_steps
from admin_steps import creatable, create_topics, incremental_alter_configs, metadata_topics
from differential import ScenarioRun, batch, entity
from test_share_group_membership import hb, until_assigned

pytestmark = pytest.mark.timeout(180)

SHARE_FETCH, SHARE_ACKNOWLEDGE = 78, 79
ACCEPT, RELEASE, REJECT = 1, 2, 3
GROUP_RESOURCE, SET = 32, 0


class Member:
    """A share group member over its own connection, counting its share session's epochs."""

    def __init__(self, run: ScenarioRun, member_id: str) -> None:
        self.run, self.member_id = run, member_id
        self.conn = run.connect()
        self.epoch = 0

    def fetch(self, label: str | None, acks: tuple[tuple[int, int, tuple[int, ...]], ...] = (), *,
              epoch: int | None = None, topic_id: uuid.UUID | None = None, wait_ms: int = 0,
              max_records: int = 500, record: bool = True, member_id: str | None = None,
              max_bytes: int = 1 << 20) -> Any:
        topic_id = topic_id or self.run.topic_id("solo")
        used = self.epoch if epoch is None else epoch
        answer = self.run.call(
            SHARE_FETCH, 1, _label=label, _conn=self.conn, _record=record, group_id=self.run.group("g"),
            member_id=self.member_id if member_id is None else member_id, share_session_epoch=used,
            max_wait=datetime.timedelta(milliseconds=wait_ms), min_bytes=1, max_bytes=max_bytes,
            max_records=max_records, batch_size=max_records,
            topics=(entity(SHARE_FETCH, 1, "FetchTopic", topic_id=topic_id, partitions=(
                entity(SHARE_FETCH, 1, "FetchPartition", partition_index=0, acknowledgement_batches=tuple(
                    entity(SHARE_FETCH, 1, "AcknowledgementBatch", first_offset=f, last_offset=la,
                           acknowledge_types=types) for f, la, types in acks)),)),),
            forgotten_topics_data=())
        if answer.error_code == 0 and epoch in (None, 0):
            self.epoch = 1 if epoch == 0 else self.epoch + 1
        return answer

    def acknowledge(self, label: str, acks: tuple[tuple[int, int, tuple[int, ...]], ...], *,
                    epoch: int | None = None, member_id: str | None = None) -> Any:
        used = self.epoch if epoch is None else epoch
        answer = self.run.call(
            SHARE_ACKNOWLEDGE, 1, _label=label, _conn=self.conn, group_id=self.run.group("g"),
            member_id=self.member_id if member_id is None else member_id, share_session_epoch=used,
            topics=(entity(SHARE_ACKNOWLEDGE, 1, "AcknowledgeTopic", topic_id=self.run.topic_id("solo"), partitions=(
                entity(SHARE_ACKNOWLEDGE, 1, "AcknowledgePartition", partition_index=0, acknowledgement_batches=tuple(
                    entity(SHARE_ACKNOWLEDGE, 1, "AcknowledgementBatch", first_offset=f, last_offset=la,
                           acknowledge_types=types) for f, la, types in acks)),)),))
        if epoch is None and answer.error_code == 0:
            self.epoch += 1
        return answer

    def fetch_until_acquired(self, label: str, **limits: int) -> Any:
        """Fetches (unrecorded) until records are acquired; that answer is recorded."""
        def acquired() -> Any:
            answer = self.fetch(label, wait_ms=200, record=False, **limits)
            assert answer.error_code == 0, answer
            got = [p for t in answer.responses for p in t.partitions if p.acquired_records]
            return answer if got else None
        answer = self.run.wait_until(acquired, label, timeout=30)
        self.run.record(label, None, answer)
        return answer


def setup(run: ScenarioRun, batches: int = 3) -> None:
    """Topic "solo" (one partition) with `batches` one-record batches; group "g" reads from the
    earliest offset; member a is assigned solo-0."""
    group_steps.wait_for_coordinator(run)
    create_topics(run, [creatable(run, "solo", 1)], label="create solo")
    metadata_topics(run, ["solo"], record=False)
    for i in range(batches):
        data_steps.produce(run, "solo", {0: batch([(None, f"v{i}".encode())])}, record=False)
    incremental_alter_configs(run, [(GROUP_RESOURCE, "=" + run.group("g"),
                                     [("share.auto.offset.reset", SET, "earliest")])], label="earliest")
    a = hb(run, "a joins", "m-a", topics_=["solo"])
    until_assigned(run, "a is given solo-0", "m-a", a.member_epoch)


def sessions(run: ScenarioRun) -> None:
    """Opening, continuing and closing a share session, and the requests that do not fit one."""
    setup(run)
    a = Member(run, "m-a")
    a.fetch("fetch in a session never opened", epoch=1)
    a.acknowledge("acknowledge opening a session", ((0, 0, (ACCEPT,)),), epoch=0)
    a.fetch("acknowledgements in the opening fetch", ((0, 0, (ACCEPT,)),), epoch=0)
    a.fetch("no group id", epoch=0, member_id="")
    a.fetch_until_acquired("a opens its session and acquires")
    a.fetch("a fetch with a stale epoch", epoch=a.epoch - 1)
    a.fetch("a fetch with a future epoch", epoch=a.epoch + 3)
    a.acknowledge("a closes its session accepting everything", ((0, 2, (ACCEPT,)),), epoch=-1)
    a.fetch("a fetch in the closed session", epoch=1)
    a.acknowledge("a second close", ((0, 0, (ACCEPT,)),), epoch=-1)


def test_share_sessions(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(sessions)


def acknowledgements(run: ScenarioRun) -> None:
    """ACCEPT, RELEASE and REJECT; a released record comes back with its delivery count raised;
    acknowledgements that do not fit the records' states."""
    setup(run)
    a = Member(run, "m-a")
    a.fetch_until_acquired("a acquires 0-2")
    a.acknowledge("records never fetched", ((10, 12, (ACCEPT,)),))
    a.acknowledge("an unknown acknowledge type", ((0, 0, (7,)),))
    a.acknowledge("a range upside down", ((2, 0, (ACCEPT,)),))
    a.acknowledge("types not matching the range", ((0, 2, (ACCEPT, RELEASE)),))
    a.acknowledge("overlapping batches", ((0, 1, (ACCEPT,)), (1, 2, (ACCEPT,))))
    a.acknowledge("a later batch fails: none applies", ((0, 0, (ACCEPT,)), (5, 5, (ACCEPT,))))
    a.acknowledge("accept 0, release 1, reject 2", ((0, 2, (ACCEPT, RELEASE, REJECT)),))
    a.acknowledge("accept 0 again", ((0, 0, (ACCEPT,)),))
    a.fetch("1 is delivered again", wait_ms=2000)
    b = Member(run, "m-b")
    hb(run, "b joins", "m-b", topics_=["solo"])
    b.fetch("b opens a session", epoch=0, wait_ms=0)
    b.acknowledge("b acknowledges what a holds", ((1, 1, (ACCEPT,)),))
    a.fetch("a accepts 1 and waits briefly", ((1, 1, (ACCEPT,)),), wait_ms=100)
    data_steps.produce(run, "solo", {0: batch([(None, b"late")])}, record=False)
    b.fetch("b acquires the new record", wait_ms=5000)


def test_acknowledgements(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(acknowledgements)


def delivery_limit(run: ScenarioRun) -> None:
    """share.delivery.count.limit lowered to 2 while the share partition is in use: a record
    released twice is archived, the start offset moves past it, and it is never delivered
    again; a gap acknowledged as such."""
    setup(run, batches=2)
    a = Member(run, "m-a")
    a.fetch_until_acquired("a acquires 0-1")
    # set while the share partition is in use: it applies from the next acknowledgement
    incremental_alter_configs(run, [(GROUP_RESOURCE, "=" + run.group("g"),
                                     [("share.delivery.count.limit", SET, "2")])], label="limit 2")
    a.fetch("release 0, accept 1", ((0, 1, (RELEASE, ACCEPT)),), wait_ms=2000)
    a.fetch("release 0 again: archived", ((0, 0, (RELEASE,)),), wait_ms=300)
    data_steps.produce(run, "solo", {0: batch([(None, b"v2")])}, record=False)
    a.fetch("only the new record", wait_ms=5000)
    a.acknowledge("acknowledge it as a gap", ((2, 2, (0,)),))
    a.fetch("nothing left", wait_ms=300)


def test_delivery_count_limit(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(delivery_limit)


def large_reads(run: ScenarioRun) -> None:
    """About 3 MiB of records (30 batches of 100 records of 1 KiB) and fetches allowed 50 MiB:
    all of them acquired at once up to max_records; released, they are one batch that the
    next fetch takes whole whatever its max_records; a fetch with max_bytes 1 gets the first
    batch whole."""
    setup(run, batches=0)
    for _ in range(30):
        data_steps.produce(run, "solo", {0: batch([(None, b"x" * 1024)] * 100)}, record=False)
    incremental_alter_configs(run, [(GROUP_RESOURCE, "=" + run.group("g"),
                                     [("share.partition.max.record.locks", SET, "4000")])], label="locks 4000")
    a = Member(run, "m-a")
    a.fetch_until_acquired("a acquires everything", max_records=5000, max_bytes=50 << 20)
    a.acknowledge("a releases them", ((0, 2999, (RELEASE,)),))
    a.fetch("a with max_records 250", max_records=250, max_bytes=50 << 20, wait_ms=2000)
    a.acknowledge("a releases them again", ((0, 2999, (RELEASE,)),))
    a.fetch("a with max_bytes 1", max_records=5000, max_bytes=1, wait_ms=2000)
    data_steps.produce(run, "solo", {0: batch([(None, b"y" * 1024)] * 100)}, record=False)
    a.acknowledge("a accepts them", ((0, 2999, (ACCEPT,)),))
    a.fetch("a gets the new batch", max_records=5000, max_bytes=50 << 20, wait_ms=2000)


def test_large_reads(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(large_reads)
