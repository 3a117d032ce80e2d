"""Differential scenarios: Fetch (v4-17), compared with Kafka 4.4 field by field.

Record batches here have known sizes (4 records, values of 50/60/70 bytes: 297, 337 and
377 bytes), so the byte budgets below land before, inside or after a given batch.
"""

from __future__ import annotations

import datetime
import struct
import uuid
from typing import Any

import pytest

import txn_steps as ts
from admin_steps import SET, TOPIC, delete_topics, incremental_alter_configs, wait_for_topic_config, wait_until_gone
from data_steps import delete_records, fetch_partition, fetch_topics, produce
from differential import ScenarioRun, batch, entity, request_class_name
from steps import FETCH, create_topic
from wire.records import CompressionType

pytestmark = pytest.mark.timeout(180)

def three_by_three(run: ScenarioRun, symbol: str = "t") -> None:
    """A topic of 3 partitions, each holding 3 batches of 4 records (offsets 0-11)."""
    create_topic(run, symbol, partitions=3, record=False)
    for p in range(3):
        for i in range(3):
            produce(run, symbol, {p: batch(4, value_size=50 + 10 * i)}, record=False)


@pytest.mark.parametrize("version", range(4, 18))
def test_every_version(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        three_by_three(run)
        produce(run, "t", {0: batch(3, compression=CompressionType.GZIP)}, record=False)
        fetch_topics(run, {"t": {0: 0, 1: 4, 2: 12}}, version=version)
        fetch_topics(run, {"t": {0: 13, 1: 99}}, version=version, label="inside the last batch, past the end")
        fetch_topics(run, {"t": {0: 0, 1: 0, 2: 0}}, max_bytes=400, partition_max_bytes=250, version=version,
                     label="budgets")
    brokers.compare(scenario)


@pytest.mark.parametrize(("max_bytes", "partition_max_bytes"), [
    (1, 1_048_576), (100, 1_048_576), (300, 1_048_576), (0, 0), (52_428_800, 1),
], ids=["max-1", "max-100", "max-300-cuts-the-second-batch", "zero", "partition-max-1"])
def test_first_batch_larger_than_the_limits_kip74(brokers, max_bytes: int,  # type: ignore[no-untyped-def]
                                                  partition_max_bytes: int) -> None:
    """The first partition with data returns its first batch whole, whatever the limits; a
    limit inside its second batch ends Kafka's answer with a piece of it (KD-215)."""
    def scenario(run: ScenarioRun) -> None:
        three_by_three(run)
        fetch_topics(run, {"t": {0: 0, 1: 0, 2: 0}}, max_bytes=max_bytes, partition_max_bytes=partition_max_bytes)
    cut = {"0:.responses[0].partitions[0].records.trailing_partial_bytes"} if max_bytes == 300 else set()
    brokers.compare(scenario, known={"KD-215": cut} if cut else None)


_PARTIAL = ".records.trailing_partial_bytes"
BUDGET_CUTS: dict[tuple[int, int], set[str]] = {
    (500, 200): set(), (600, 250): set(),
    (1000, 300): {f"0:.responses[0].partitions[{p}]{_PARTIAL}" for p in range(3)}
    | {f"1:.responses[0].partitions[2]{_PARTIAL}"},
    # The second fetch: the 359 bytes Kafka spends on a piece stay in the budget, and the third
    # partition's first batch (297 bytes) fits in them.
    (700, 700): {f"0:.responses[0].partitions[0]{_PARTIAL}", f"1:.responses[0].partitions[0]{_PARTIAL}",
                 "1:.responses[0].partitions[2].records.batches[len]"},
    (1500, 1_048_576): {f"0:.responses[0].partitions[1]{_PARTIAL}", f"1:.responses[0].partitions[2]{_PARTIAL}"},
}
"""The answers of test_budget_across_partitions where a limit falls inside a later batch (KD-215)."""


@pytest.mark.parametrize(("max_bytes", "partition_max_bytes"), [
    (500, 200), (1000, 300), (600, 250), (700, 700), (1500, 1_048_576),
], ids=["partition-share-below-a-batch", "one-batch-each", "second-partition-cut", "budget-out-midway",
        "budget-out-in-the-third"])
def test_budget_across_partitions(brokers, max_bytes: int, partition_max_bytes: int) -> None:  # type: ignore[no-untyped-def]
    """max_bytes runs out midway: later partitions get their whole batches that fit (Kafka adds a
    cut piece of the next one: KD-215, listed in BUDGET_CUTS) or, when not even their first batch
    fits, nothing (never part of a first batch)."""
    def scenario(run: ScenarioRun) -> None:
        three_by_three(run)
        fetch_topics(run, {"t": {0: 0, 1: 0, 2: 0}}, max_bytes=max_bytes, partition_max_bytes=partition_max_bytes)
        fetch_topics(run, {"t": {2: 4, 0: 8, 1: 0}}, max_bytes=max_bytes, partition_max_bytes=partition_max_bytes,
                     label="other order, other offsets")
    cut = BUDGET_CUTS[(max_bytes, partition_max_bytes)]
    brokers.compare(scenario, known={"KD-215": cut} if cut else None)


def test_offsets_out_of_range(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        three_by_three(run)
        delete_records(run, {"t": {1: 5}}, record=False)
        for offset in (-1, -2, 13, 1000):
            fetch_topics(run, {"t": {0: offset}}, label=f"offset {offset}")
        for offset in (0, 4, 5, 6):
            fetch_topics(run, {"t": {1: offset}}, label=f"log start 5, offset {offset}")
        fetch_topics(run, {"t": {0: 13, 1: 0, 2: 0}}, label="out of range beside good partitions")
    brokers.compare(scenario)


def test_fetch_at_the_log_end(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        three_by_three(run)
        create_topic(run, "empty", partitions=1, record=False)
        fetch_topics(run, {"t": {0: 12}, "empty": {0: 0}})
        fetch_topics(run, {"t": {0: 12, 1: 11}}, label="at the end and just before it")
    brokers.compare(scenario)


def test_long_poll_min_bytes_not_reached(brokers) -> None:  # type: ignore[no-untyped-def]
    """max_wait passes with fewer than min_bytes: the answer carries what there is (nothing
    timing-related is compared)."""
    def scenario(run: ScenarioRun) -> None:
        three_by_three(run)
        fetch_topics(run, {"t": {0: 12}}, min_bytes=1000, max_wait_ms=200, label="parked at the end")
        fetch_topics(run, {"t": {0: 0, 1: 0}}, min_bytes=100_000, max_wait_ms=200, label="some data, not enough")
        fetch_topics(run, {"t": {0: 0}}, min_bytes=100, max_wait_ms=30_000, label="enough at once")
    brokers.compare(scenario)


def test_long_poll_woken_by_a_produce(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t", partitions=2, record=False)
        produce(run, "t", {0: batch(2)}, record=False)
        version = 12
        parked = run.connect()
        request = entity(FETCH, version, request_class_name(FETCH, version), cluster_id=None, replica_id=-1,
                         replica_state=None, max_wait=datetime.timedelta(milliseconds=20_000), min_bytes=1,
                         max_bytes=52_428_800, isolation_level=0, session_id=0, session_epoch=-1,
                         topics=(entity(FETCH, version, "FetchTopic", topic=run.topic("t"),
                                        partitions=(fetch_partition(version, 0, 2), fetch_partition(version, 1, 0))),),
                         forgotten_topics_data=(), rack_id="")
        correlation = parked.send(request)
        # Sent first, the fetch finds nothing and parks; the produce on another connection wakes
        # it. Should the produce overtake it, the fetch reads the same batch at once: the answer
        # compared is the same either way, only the path to it differs.
        produce(run, "t", {1: batch(3)})
        run.record("the parked fetch's answer", request, parked.receive(FETCH, version, correlation))
    brokers.compare(scenario)


def test_read_committed_on_non_transactional_data(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        three_by_three(run)
        for version in (4, 12, 17):
            fetch_topics(run, {"t": {0: 0, 1: 8}}, isolation_level=1, version=version)
    brokers.compare(scenario)


def test_unknown_topics_and_partitions_come_last(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        three_by_three(run)
        create_topic(run, "u", partitions=1, record=False)
        fetch_topics(run, {"t": {5: 0, 0: 0}, "missing": {0: 0}, "u": {0: 0}, })
        fetch_topics(run, {"missing": {0: 0}}, label="nothing known")
        # The same topic in two entries, split by another, and a partition named twice.
        version = 12
        topics = (
            entity(FETCH, version, "FetchTopic", topic=run.topic("t"), partitions=(fetch_partition(version, 0, 0),)),
            entity(FETCH, version, "FetchTopic", topic=run.topic("u"), partitions=(fetch_partition(version, 0, 0),)),
            entity(FETCH, version, "FetchTopic", topic=run.topic("t"),
                   partitions=(fetch_partition(version, 1, 0), fetch_partition(version, 9, 0))),
            entity(FETCH, version, "FetchTopic", topic=run.topic("t"), partitions=(fetch_partition(version, 0, 5),)),
        )
        run.call(FETCH, version, _label="split and repeated entries", cluster_id=None, replica_id=-1,
                 replica_state=None, max_wait=datetime.timedelta(0), min_bytes=1, max_bytes=52_428_800,
                 isolation_level=0, session_id=0, session_epoch=-1, topics=topics, forgotten_topics_data=(), rack_id="")
    brokers.compare(scenario)


@pytest.mark.parametrize("version", [13, 17])
def test_topic_ids(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        three_by_three(run)
        fetch_topics(run, {"t": {0: 0, 7: 0}}, version=version)
        fetch_topics(run, {"t": {0: 0}, "x": {0: 0}}, topic_ids={"x": uuid.UUID(int=12345)}, version=version,
                     label="an unknown topic id")
        fetch_topics(run, {"x": {0: 0}}, topic_ids={"x": uuid.UUID(int=0)}, version=version, label="the zero id")
    brokers.compare(scenario)


def open_session(run: ScenarioRun, topics: dict[str, dict[int, int]], symbol: str, *, version: int = 12,
                 session_id: int = 0, **fields: Any) -> int:
    """A full fetch asking for a session (epoch 0); its id is shown as `symbol` (ids are random)."""
    response = fetch_topics(run, topics, session_id=session_id, session_epoch=0, version=version, record=False,
                            **fields)
    run.alias_session(response.session_id, symbol)
    run.note(f"full fetch v{version} opening {symbol}", response)
    return int(response.session_id)


def test_new_fetch_session(brokers) -> None:  # type: ignore[no-untyped-def]
    """A client asking for a session (id 0, epoch 0) gets one; a sessionless fetch (epoch -1) none."""
    def scenario(run: ScenarioRun) -> None:
        three_by_three(run)
        session = open_session(run, {"t": {0: 0}}, "<session A>")
        run.note("the session id is positive", session > 0)
        fetch_topics(run, {"t": {0: 0}}, session_id=0, session_epoch=-1, label="sessionless")
    brokers.compare(scenario)


@pytest.mark.parametrize("version", [7, 12, 13, 17])
def test_incremental_fetches(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    """An incremental fetch reads every partition of its session and answers those with news:
    records, a new high watermark or log start offset, an error; the epochs go up by one."""
    def scenario(run: ScenarioRun) -> None:
        three_by_three(run)
        sid = open_session(run, {"t": {0: 0, 1: 0}}, "<session A>", version=version)

        def incremental(epoch: int, topics: dict[str, dict[int, int]], label: str, **fields: Any) -> Any:
            return fetch_topics(run, topics, session_id=sid, session_epoch=epoch, version=version, label=label,
                                **fields)

        incremental(1, {}, "nothing changed: both partitions' records again, from their cached offsets")
        incremental(2, {"t": {0: 12, 1: 12}}, "both at their end: no news, an empty answer")
        incremental(3, {}, "still no news")
        produce(run, "t", {1: batch(4, value_size=50)}, record=False)
        incremental(4, {}, "p1 grew: only p1, with its new record batch")
        delete_records(run, {"t": {0: 4}}, record=False)
        incremental(5, {"t": {1: 16}}, "p1 read to its end, p0's log start moved: only p0, without records")
        incremental(6, {"t": {2: 0, 7: 0}}, "p2 and an unknown partition added: both answered")
        incremental(7, {}, "the unknown partition's error comes every time")
        incremental(7, {}, "epoch 7 again: INVALID_FETCH_SESSION_EPOCH")
        incremental(8, {}, "the session still expects 8")
        fetch_topics(run, {}, session_id=sid, session_epoch=9, version=12 if version >= 13 else 13,
                     label="by the other kind of topic reference: FETCH_SESSION_TOPIC_ID_ERROR")
        incremental(9, {"t": {0: 0}}, "p0 asked from 0, below its log start (an error), and p7 forgotten",
                    forgotten={"t": [7]})
        incremental(10, {}, "p0, p1, p2 forgotten: the session closes, a sessionless answer",
                    forgotten={"t": [0, 1, 2]})
        incremental(11, {}, "the session is gone: FETCH_SESSION_ID_NOT_FOUND")
    brokers.compare(scenario)


@pytest.mark.parametrize("version", [12, 13])
def test_a_session_of_idle_partitions(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    """Partitions read at their end have no news until their log moves (asyncbroker skips
    reading them meanwhile): an open transaction and its commit (read_committed), an append, a
    new log start offset. A long poll over them waits out max_wait, and a change of their
    topic's config brings no news. A partition of an unknown topic (id) beside them is answered
    its error, after a long poll too."""
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t", partitions=3, record=False)
        ts.wait_for_coordinator(run)
        sid = open_session(run, {"t": {0: 0, 1: 0, 2: 0}}, "<session A>", version=version, isolation_level=1)

        def incremental(epoch: int, topics: dict[str, dict[int, int]], label: str, **fields: Any) -> Any:
            return fetch_topics(run, topics, session_id=sid, session_epoch=epoch, version=version, isolation_level=1,
                                label=label, **fields)

        incremental(1, {}, "all three idle: an empty answer")
        incremental(2, {}, "a long poll over them: empty, after max_wait", max_wait_ms=200)
        p = ts.init(run, "tx")
        ts.send(run, "t", 0, "tx", ts.txn_batch(p.producer_id, 0, 0, [(b"k1", b"v1"), (b"k2", b"v2")]), version=12)
        incremental(3, {}, "p0's open transaction: its new high watermark, no records read_committed")
        incremental(4, {}, "p0 has not moved since: no news")
        ts.end_txn(run, "tx", p.producer_id, 0, True)
        ts.wait_for_state(run, "tx", "CompleteCommit")
        committed = incremental(5, {}, "", record=False)
        run.note("the commit: p0's records and marker", {
            "error_code": committed.error_code.value,
            "partitions": [ts.partition_view(run, p) for t in committed.responses for p in t.partitions]})
        incremental(6, {"t": {0: 3}}, "p0 read to its end: no news")
        produce(run, "t", {1: batch(4)}, record=False)
        incremental(7, {}, "p1 grew: its records")
        delete_records(run, {"t": {1: 2}}, record=False)
        incremental(8, {"t": {1: 4}}, "p1 read to its end after its log start moved: p1 without records")
        incremental(9, {}, "no news")
        incremental_alter_configs(run, [(TOPIC, "t", [("retention.ms", SET, "86400000")])], label="t's retention.ms")
        wait_for_topic_config(run, "t", "retention.ms", "86400000")
        incremental(10, {}, "after t's config changed: no news")
        incremental(11, {}, "still none")
        unknown = {"topic_ids": {"x": uuid.UUID(int=7)}} if version >= 13 else {}
        incremental(12, {"x": {0: 0}}, "a partition of a topic (or topic id) no broker has, added", **unknown)
        incremental(13, {}, "a long poll: that partition's error again, t's have no news", max_wait_ms=200)
    brokers.compare(scenario)


def test_incremental_fetches_take_turns_within_the_budget(brokers) -> None:  # type: ignore[no-untyped-def]
    """A partition that returned records moves to the end of its session, so a fetch.max.bytes
    that admits one batch serves each partition in turn (Kafka's answers add 3 bytes of the
    next batch: KD-215)."""
    def scenario(run: ScenarioRun) -> None:
        three_by_three(run)
        sid = open_session(run, {"t": {0: 0, 1: 0, 2: 0}}, "<session A>", max_bytes=300)
        for epoch in range(1, 5):
            fetch_topics(run, {}, session_id=sid, session_epoch=epoch, max_bytes=300, label=f"epoch {epoch}")
    brokers.compare(scenario, known={"KD-215": {f"{step}:.responses[0].partitions[0].records.trailing_partial_bytes"
                                                for step in range(5)}})


def test_full_fetches_close_the_session_they_name(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        three_by_three(run)
        first = open_session(run, {"t": {0: 0}}, "<session A>")
        second = open_session(run, {"t": {1: 0}}, "<session B>", session_id=first)
        fetch_topics(run, {}, session_id=first, session_epoch=1, label="A, closed by B's full fetch")
        fetch_topics(run, {}, session_id=second, session_epoch=1, label="B")
        fetch_topics(run, {"t": {2: 0}}, session_id=second, session_epoch=-1, label="a sessionless fetch naming B")
        fetch_topics(run, {}, session_id=second, session_epoch=2, label="B, closed")
    brokers.compare(scenario)


@pytest.mark.parametrize("version", [12, 13])
def test_a_topic_deleted_and_created_again_under_a_session(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    """The session keeps a deleted topic's partitions, answered UNKNOWN_TOPIC_OR_PARTITION.
    Once a topic of that name is created again, a session by name (before v13) reads it (here
    from an offset past its end); a session by id (v13+) answers INCONSISTENT_TOPIC_ID."""
    def scenario(run: ScenarioRun) -> None:
        three_by_three(run)
        three_by_three(run, "u")
        sid = open_session(run, {"t": {0: 12, 1: 12}, "u": {0: 12}}, "<session A>", version=version)
        delete_topics(run, ["t"], label="delete t")
        wait_until_gone(run, "t")
        fetch_topics(run, {}, session_id=sid, session_epoch=1, version=version, label="t deleted")
        fetch_topics(run, {}, session_id=sid, session_epoch=2, version=version, max_wait_ms=200,
                     label="t deleted, again, in a long poll (u's partition has no news)")
        create_topic(run, "t", partitions=2, record=False)
        fetch_topics(run, {}, session_id=sid, session_epoch=3, version=version, label="t created again")
        fetch_topics(run, {}, session_id=sid, session_epoch=4, version=version, label="t created again, again")
    brokers.compare(scenario)


@pytest.mark.parametrize("version", [12, 13])
def test_session_ids_no_cache_shard_holds(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    """Ids name their cache shard (8 of 268,435,455 ids each): an id past the last shard, or
    below the first, fails the whole request with UNKNOWN_SERVER_ERROR, full fetches too."""
    def scenario(run: ScenarioRun) -> None:
        three_by_three(run)
        for session_id in (2_147_483_647, 2_147_483_640, 2_147_483_639, -268_435_454, -268_435_455,
                           -2_147_483_648):
            for epoch in (1, 0, -1):
                response = fetch_topics(run, {"t": {0: 0, 1: 0}}, session_id=session_id, session_epoch=epoch,
                                        version=version, record=False)
                if epoch == 0 and response.session_id != session_id:
                    run.alias_session(response.session_id, "<a new session>")  # a shard held the id
                run.note(f"session {session_id}, epoch {epoch}", response)
    brokers.compare(scenario)


def test_unknown_fetch_sessions(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        three_by_three(run)
        fetch_topics(run, {"t": {0: 0}}, session_id=12345, session_epoch=1, label="incremental, unknown session")
        fetch_topics(run, {"t": {0: 0}}, session_id=12345, session_epoch=-1, label="full, closing an unknown session")
        fetch_topics(run, {"t": {0: 0}}, session_id=0, session_epoch=5, label="incremental without a session")
        fetch_topics(run, {"t": {0: 0}}, session_id=0, session_epoch=-3, label="epoch -3")
    brokers.compare(scenario)


def test_forgotten_topics_without_a_session(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        three_by_three(run)
        fetch_topics(run, {"t": {0: 0}}, forgotten={"t": [0, 1]})
        fetch_topics(run, {"t": {0: 0}}, forgotten={"t": [1]}, version=13)
    brokers.compare(scenario)


def test_current_leader_epoch(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        three_by_three(run)
        for current in (-1, -5, 0, 1, 5):
            fetch_topics(run, {"t": {0: {"fetch_offset": 0, "current_leader_epoch": current}, 1: 0}},
                         label=f"current leader epoch {current}")
        fetch_topics(run, {"t": {0: {"fetch_offset": 0, "current_leader_epoch": 3}}}, version=9, label="v9")
    brokers.compare(scenario)


def test_last_fetched_epoch(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        three_by_three(run)
        for offset, epoch in ((4, 0), (12, 0), (13, 0), (50, 0), (4, 1), (4, 3)):
            fetch_topics(run, {"t": {0: {"fetch_offset": offset, "last_fetched_epoch": epoch}}},
                         label=f"offset {offset}, last fetched epoch {epoch}")
        delete_records(run, {"t": {0: 5}}, record=False)
        fetch_topics(run, {"t": {0: {"fetch_offset": 1, "last_fetched_epoch": 0}}}, label="below the log start")
        for version in (11, 17):
            fetch_topics(run, {"t": {0: {"fetch_offset": 50, "last_fetched_epoch": 0}}}, version=version)
    brokers.compare(scenario)


def test_replica_ids(brokers) -> None:  # type: ignore[no-untyped-def]
    """A fetch from a replica id: no broker replicates from this one (Kafka's single node has
    no follower either)."""
    def scenario(run: ScenarioRun) -> None:
        three_by_three(run)
        for replica_id in (-1, -2, 0, 1, 7):
            fetch_topics(run, {"t": {0: 0}}, replica_id=replica_id, version=12, label=f"replica {replica_id}")
        for replica_id in (-1, 1):
            fetch_topics(run, {"t": {0: 0}}, replica_id=replica_id, version=15, label=f"replica {replica_id}, v15")
        fetch_topics(run, {"t": {0: {"fetch_offset": 0, "current_leader_epoch": 0}}}, replica_id=1,
                     label="replica 1 with a leader epoch")
    brokers.compare(scenario)


def test_compressed_batches_are_returned_whole(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t", partitions=1, record=False)
        for codec in (CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD):
            produce(run, "t", {0: batch(5, compression=codec)}, record=False)
        for offset in (2, 7, 19):
            fetch_topics(run, {"t": {0: offset}}, label=f"offset {offset}")
        fetch_topics(run, {"t": {0: 3}}, partition_max_bytes=10, label="inside a batch, one byte budget")
    brokers.compare(scenario)


@pytest.mark.parametrize("version", [12, 17])
def test_tagged_fields(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    """The tags Kafka defines for Fetch, a null and a foreign ClusterId (tag 0, nullable from
    v12), a ReplicaState of a consumer (tag 1, v15+) and a partition's ReplicaDirectoryId (tag 0,
    v17), beside tags it does not know, on the partition, the topic and the request; then a
    ClusterId shorter than its tag's size (KD-214), and a body cut inside the request's tags,
    which closes the connection."""
    def body(topic: bytes, cluster_id: bytes, *, cut: int = 0) -> bytes:
        directory = b"\x10" + uuid.UUID(int=3).bytes if version >= 17 else b""
        replica_state = b"\x01\x0d" + struct.pack(">iq", -1, -1) + b"\x00" if version >= 15 else b""
        out = ((b"" if version >= 15 else struct.pack(">i", -1))  # replica id (a consumer)
               + struct.pack(">iiibii", 0, 0, 1 << 20, 0, 0, -1)  # max wait, min and max bytes, level, no session
               + b"\x02" + topic + b"\x02"  # one topic, one partition:
               + struct.pack(">iiqiqi", 0, -1, 0, -1, -1, 1 << 20)
               + (b"\x02\x00" + directory if version >= 17 else b"\x01") + b"\x07\x02ab"  # its tags
               + b"\x01\x08\x00"  # the topic's
               + b"\x01" + b"\x01"  # no forgotten topic; rack id ""
               + (b"\x03" if version >= 15 else b"\x02") + b"\x00" + cluster_id + replica_state
               + b"\x0a\x02zz")  # the request's: ClusterId (size, string), ReplicaState, tag 10
        return out[: len(out) - cut]

    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t", partitions=1, record=False)
        produce(run, "t", {0: batch(2)}, record=False)
        if version >= 13:
            topic = run.topic_id("t").bytes
        else:
            name = run.topic("t").encode()
            topic = bytes([len(name) + 1]) + name
        for label, cluster_id in (("a null ClusterId", b"\x01\x00"), ("a foreign ClusterId", b"\x06\x06other")):
            cid = run.conn.send_raw(FETCH, version, body(topic, cluster_id))
            run.record(f"Fetch v{version} with {label} and unknown tags", None, run.conn.receive(FETCH, version, cid))
        conn = run.connect()
        conn.send_raw(FETCH, version, body(topic, b"\x06\x05other"))  # "othe", then "r" read as the next tag
        run.note("connection closed after a ClusterId shorter than its tag", conn.closed_by_peer(3))
        conn = run.connect()
        conn.send_raw(FETCH, version, body(topic, b"\x01\x00", cut=1))
        run.note("connection closed after a body cut inside a tagged field", conn.closed_by_peer(10))
    brokers.compare(scenario, known={"KD-214": {"2:"}})
