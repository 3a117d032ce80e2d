"""Differential scenarios: OffsetForLeaderEpoch (v2-4), compared with Kafka 4.4 field by field.

Every partition of a single-node cluster is led in epoch 0 from its creation on.
"""

from __future__ import annotations

import pytest

from data_steps import delete_records, offset_for_leader_epoch, produce
from differential import ScenarioRun, batch
from steps import create_topic

pytestmark = pytest.mark.timeout(180)

NO_EPOCH = -1


def two_topics(run: ScenarioRun) -> None:
    create_topic(run, "t", partitions=2, record=False)
    create_topic(run, "e", partitions=1, record=False)
    produce(run, "t", {0: batch(3)}, record=False)
    produce(run, "t", {0: batch(5)}, record=False)
    produce(run, "t", {1: batch(2)}, record=False)


@pytest.mark.parametrize("version", range(2, 5))
def test_known_unknown_and_future_epochs(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        two_topics(run)
        offset_for_leader_epoch(run, {"t": [(0, NO_EPOCH, 0), (1, NO_EPOCH, 0)], "e": [(0, NO_EPOCH, 0)]},
                                version=version, label="the current epoch")
        for epoch in (1, 5, NO_EPOCH, -5):
            offset_for_leader_epoch(run, {"t": [(0, NO_EPOCH, epoch)], "e": [(0, NO_EPOCH, epoch)]},
                                    version=version, label=f"epoch {epoch}")
    brokers.compare(scenario)


def test_current_leader_epoch(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        two_topics(run)
        for current, epoch in ((0, 0), (1, 0), (7, 3), (-3, 0), (-2, -2), (0, NO_EPOCH), (0, 2)):
            offset_for_leader_epoch(run, {"t": [(0, current, epoch), (1, NO_EPOCH, 0)]},
                                    label=f"current {current}, epoch {epoch}")
    brokers.compare(scenario)


def test_unknown_topics_and_partitions(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        two_topics(run)
        offset_for_leader_epoch(run, {"t": [(3, NO_EPOCH, 0), (-1, NO_EPOCH, 0), (0, NO_EPOCH, 0)],
                                      "missing": [(0, NO_EPOCH, 0)]})
        offset_for_leader_epoch(run, {"missing": [(0, 1, 0)]}, label="unknown, with a future current epoch")
    brokers.compare(scenario)


def test_after_delete_records(brokers) -> None:  # type: ignore[no-untyped-def]
    """An epoch below every known one ends where the first known epoch starts: the log start."""
    def scenario(run: ScenarioRun) -> None:
        two_topics(run)
        delete_records(run, {"t": {0: 4}}, record=False)
        offset_for_leader_epoch(run, {"t": [(0, NO_EPOCH, 0)]}, label="epoch 0")
        offset_for_leader_epoch(run, {"t": [(1, NO_EPOCH, -7)]}, label="epoch -7, untouched partition")
        offset_for_leader_epoch(run, {"t": [(0, NO_EPOCH, -7)]}, label="epoch -7")
        delete_records(run, {"t": {0: -1}}, record=False)
        offset_for_leader_epoch(run, {"t": [(0, NO_EPOCH, -7)]}, label="epoch -7, everything deleted")
    brokers.compare(scenario)


def test_replica_ids(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        two_topics(run)
        for replica_id in (-2, 0, 1, 5):
            offset_for_leader_epoch(run, {"t": [(0, NO_EPOCH, 0)]}, replica_id=replica_id,
                                    label=f"replica {replica_id}")
    brokers.compare(scenario)
