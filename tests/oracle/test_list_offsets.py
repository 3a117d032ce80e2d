"""Differential scenarios: ListOffsets (v1-9), compared with Kafka 4.4 field by field.

The partition under test holds three batches whose timestamps are not in offset order:
offsets 0-2 at BASE+0..2, 3-5 (gzip) at BASE+100..102, 6-7 at BASE+50..51.
"""

from __future__ import annotations

import pytest

from data_steps import (
    EARLIEST,
    EARLIEST_LOCAL,
    LATEST,
    LATEST_TIERED,
    MAX_TIMESTAMP,
    delete_records,
    list_offsets_topics,
    produce,
)
from differential import BASE_TIMESTAMP, ScenarioRun, batch
from steps import create_topic
from wire.records import CompressionType

pytestmark = pytest.mark.timeout(180)

B = BASE_TIMESTAMP
SPECIALS = (LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED)


def out_of_order_timestamps(run: ScenarioRun, partitions: int = 2) -> None:
    create_topic(run, "t", partitions=partitions, record=False)
    produce(run, "t", {0: batch(3)}, record=False)
    produce(run, "t", {0: batch(3, base_timestamp=B + 100, compression=CompressionType.GZIP)}, record=False)
    produce(run, "t", {0: batch(2, base_timestamp=B + 50)}, record=False)


@pytest.mark.parametrize("version", range(1, 10))
def test_special_timestamps_per_version(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    """-1 and -2 always; -3 from v7, -4 from v8, -5 from v9: UNSUPPORTED_VERSION before."""
    def scenario(run: ScenarioRun) -> None:
        out_of_order_timestamps(run)
        for ts in SPECIALS:
            list_offsets_topics(run, {"t": [(0, ts), (1, ts)]}, version=version, label=f"timestamp {ts}")
        list_offsets_topics(run, {"t": [(0, B + 1), (1, B + 1)]}, version=version, label="by timestamp")
    brokers.compare(scenario)


def test_other_negative_timestamps(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        out_of_order_timestamps(run)
        for ts in (-6, -7, -100):
            list_offsets_topics(run, {"t": [(0, ts), (1, ts)]}, label=f"timestamp {ts}")
    brokers.compare(scenario)


def test_by_timestamp(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        out_of_order_timestamps(run)
        for delta in (-B, -1, 0, 1, 2, 3, 49, 50, 51, 52, 99, 100, 102, 103, 10**9):
            list_offsets_topics(run, {"t": [(0, B + delta), (1, B + delta)]}, label=f"base {delta:+}")
    brokers.compare(scenario)


def test_max_timestamp_is_not_the_last_batch(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        out_of_order_timestamps(run)
        list_offsets_topics(run, {"t": [(0, MAX_TIMESTAMP), (1, MAX_TIMESTAMP)]})
        produce(run, "t", {0: batch(2, base_timestamp=B + 102)}, record=False)
        list_offsets_topics(run, {"t": [(0, MAX_TIMESTAMP)]}, label="a tie with a later record")
        produce(run, "t", {1: batch([(b"k", b"v")], base_timestamp=-1)}, record=False)
        list_offsets_topics(run, {"t": [(1, MAX_TIMESTAMP), (1, 0)]}, label="a record without timestamp")
    brokers.compare(scenario)


def test_after_delete_records(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        out_of_order_timestamps(run)
        delete_records(run, {"t": {0: 4}}, record=False)
        for ts in (LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, B, B + 2, B + 50, B + 101):
            list_offsets_topics(run, {"t": [(0, ts)]}, label=f"log start 4, timestamp {ts}")
        delete_records(run, {"t": {0: -1}}, record=False)
        for ts in (LATEST, EARLIEST, MAX_TIMESTAMP, B):
            list_offsets_topics(run, {"t": [(0, ts)]}, label=f"everything deleted, timestamp {ts}")
    brokers.compare(scenario)


def test_current_leader_epoch(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        out_of_order_timestamps(run)
        for current in (-1, 0, 1, 3, -5):
            list_offsets_topics(run, {"t": [(0, LATEST, current), (1, B, current)]},
                                label=f"current leader epoch {current}")
        list_offsets_topics(run, {"t": [(0, MAX_TIMESTAMP, 1), (1, EARLIEST, 0)]}, label="mixed epochs")
        list_offsets_topics(run, {"t": [(0, LATEST, 5)]}, version=3, label="v3 has no leader epoch")
    brokers.compare(scenario)


def test_unknown_topics_and_partitions(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        out_of_order_timestamps(run)
        list_offsets_topics(run, {"t": [(0, LATEST), (5, LATEST), (-1, LATEST)], "missing": [(0, LATEST)]})
        list_offsets_topics(run, {"missing": [(0, EARLIEST), (1, B)]}, version=1)
    brokers.compare(scenario)


@pytest.mark.parametrize("version", [1, 5, 9])
def test_duplicate_partitions(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    """A partition named twice is INVALID_REQUEST, answered once; the others as usual."""
    def scenario(run: ScenarioRun) -> None:
        out_of_order_timestamps(run)
        list_offsets_topics(run, {"t": [(0, LATEST), (0, EARLIEST), (1, LATEST)]}, version=version)
        list_offsets_topics(run, {"t": [(0, LATEST), (1, LATEST), (0, LATEST)]}, version=version, label="same target")
        list_offsets_topics(run, {"t": [(5, LATEST), (5, LATEST)]}, version=version, label="unknown, twice")
    brokers.compare(scenario)


@pytest.mark.parametrize("version", [2, 5, 9])
def test_read_committed(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        out_of_order_timestamps(run)
        for ts in (LATEST, EARLIEST, MAX_TIMESTAMP, B):
            list_offsets_topics(run, {"t": [(0, ts), (1, ts)]}, isolation_level=1, version=version,
                                label=f"read committed, timestamp {ts}")
    brokers.compare(scenario)


def test_replica_ids(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        out_of_order_timestamps(run)
        for replica_id in (-1, -2, 0, 1, 5):
            list_offsets_topics(run, {"t": [(0, LATEST), (1, B)]}, replica_id=replica_id,
                                label=f"replica {replica_id}")
    brokers.compare(scenario)


def test_empty_partition(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "e", partitions=1, record=False)
        for ts in (*SPECIALS, 0, B):
            list_offsets_topics(run, {"e": [(0, ts)]}, label=f"timestamp {ts}")
    brokers.compare(scenario)


def test_several_topics(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        out_of_order_timestamps(run)
        create_topic(run, "u", partitions=3, record=False)
        produce(run, "u", {2: batch(4)}, record=False)
        list_offsets_topics(run, {"u": [(2, LATEST), (0, EARLIEST), (1, B)], "t": [(1, MAX_TIMESTAMP), (0, B + 60)]})
    brokers.compare(scenario)
