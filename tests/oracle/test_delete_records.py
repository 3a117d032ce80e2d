"""Differential scenarios: DeleteRecords (v0-2), compared with Kafka 4.4 field by field,
with what Fetch and ListOffsets see afterwards.

Partition 0 holds offsets 0-2, 3-5 (one gzip batch) and 6-7; partition 1 offsets 0-1.
"""

from __future__ import annotations

import pytest

from data_steps import (
    DELETE_RECORDS,
    EARLIEST,
    LATEST,
    MAX_TIMESTAMP,
    call,
    delete_records,
    fetch_topics,
    list_offsets_topics,
    produce,
)
from differential import BASE_TIMESTAMP, ScenarioRun, batch, entity
from steps import TIMEOUT, create_topic
from wire.records import CompressionType

pytestmark = pytest.mark.timeout(180)


def three_batches(run: ScenarioRun) -> None:
    create_topic(run, "t", partitions=2, record=False)
    produce(run, "t", {0: batch(3)}, record=False)
    produce(run, "t", {0: batch(3, compression=CompressionType.GZIP)}, record=False)
    produce(run, "t", {0: batch(2)}, record=False)
    produce(run, "t", {1: batch(2)}, record=False)


@pytest.mark.parametrize("version", range(0, 3))
def test_every_version(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        three_batches(run)
        delete_records(run, {"t": {0: 2, 1: 5}}, version=version, label="an offset, and one past the HW")
        delete_records(run, {"t": {0: 2}}, version=version, label="the same offset again")
        delete_records(run, {"t": {0: 1}}, version=version, label="below the log start")
        delete_records(run, {"t": {0: -1, 1: -1}}, version=version, label="up to the high watermark")
        delete_records(run, {"t": {0: -2, 1: 9}}, version=version, label="-2, and past the HW")
        delete_records(run, {"t": {0: 8, 7: 0}, "missing": {0: 0}}, version=version, label="unknowns")
        fetch_topics(run, {"t": {0: 8, 1: 2}})
        list_offsets_topics(run, {"t": [(0, EARLIEST), (1, EARLIEST)]})
    brokers.compare(scenario)


def test_inside_a_compressed_batch(brokers) -> None:  # type: ignore[no-untyped-def]
    """The log start may fall inside a batch: the batch is still served whole, the offsets
    below the start are out of range."""
    def scenario(run: ScenarioRun) -> None:
        three_batches(run)
        delete_records(run, {"t": {0: 4}})
        fetch_topics(run, {"t": {0: 4}}, label="at the log start")
        fetch_topics(run, {"t": {0: 3}}, label="inside the batch, below the start")
        list_offsets_topics(run, {"t": [(0, EARLIEST), (0, LATEST), (0, MAX_TIMESTAMP), (0, BASE_TIMESTAMP)]})
    brokers.compare(scenario)


def test_then_produce_and_read(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        three_batches(run)
        delete_records(run, {"t": {0: -1}})
        produce(run, "t", {0: batch(2)}, label="produce after deleting everything")
        fetch_topics(run, {"t": {0: 8}})
        fetch_topics(run, {"t": {0: 0}}, label="the deleted offsets")
        delete_records(run, {"t": {0: 9}})
        list_offsets_topics(run, {"t": [(0, EARLIEST), (0, LATEST), (0, MAX_TIMESTAMP)]})
    brokers.compare(scenario)


def test_a_partition_named_twice(brokers) -> None:  # type: ignore[no-untyped-def]
    """Kafka keys the request by partition: the later offset is the one deleted to."""
    def scenario(run: ScenarioRun) -> None:
        three_batches(run)
        version = 2
        topic = entity(DELETE_RECORDS, version, "DeleteRecordsTopic", name=run.topic("t"), partitions=(
            entity(DELETE_RECORDS, version, "DeleteRecordsPartition", partition_index=0, offset=5),
            entity(DELETE_RECORDS, version, "DeleteRecordsPartition", partition_index=1, offset=1),
            entity(DELETE_RECORDS, version, "DeleteRecordsPartition", partition_index=0, offset=3)))
        call(run, DELETE_RECORDS, version, topics=(topic,), timeout=TIMEOUT)
        list_offsets_topics(run, {"t": [(0, EARLIEST), (1, EARLIEST)]})
    brokers.compare(scenario)


def test_empty_partition(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "e", partitions=1, record=False)
        delete_records(run, {"e": {0: -1}})
        delete_records(run, {"e": {0: 0}})
        delete_records(run, {"e": {0: 1}})
        list_offsets_topics(run, {"e": [(0, EARLIEST), (0, LATEST)]})
    brokers.compare(scenario)


def test_topics_nobody_may_delete_from(brokers) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        version = 2
        topics = tuple(
            entity(DELETE_RECORDS, version, "DeleteRecordsTopic", name=name, partitions=(
                entity(DELETE_RECORDS, version, "DeleteRecordsPartition", partition_index=0, offset=0),))
            for name in ("__cluster_metadata", "bad/name", "")
        )
        call(run, DELETE_RECORDS, version, topics=topics, timeout=TIMEOUT)
    brokers.compare(scenario)


def test_cleanup_policies(brokers) -> None:  # type: ignore[no-untyped-def]
    """Kafka deletes records only where the cleanup policy includes delete: a compacted-only
    topic answers POLICY_VIOLATION (and keeps its log start), compact,delete deletes. After a
    change of policy the answer follows."""
    def scenario(run: ScenarioRun) -> None:
        from steps import INCREMENTAL_ALTER_CONFIGS

        for symbol, policy in (("compacted", "compact"), ("both", "compact,delete")):
            create_topic(run, symbol, partitions=1, configs={"cleanup.policy": policy}, record=False)
            produce(run, symbol, {0: batch(3)}, record=False)
        delete_records(run, {"compacted": {0: 2}, "both": {0: 2}}, label="compact, and compact,delete")
        delete_records(run, {"compacted": {0: -1}}, label="compact, to the high watermark")
        list_offsets_topics(run, {"compacted": [(0, EARLIEST)], "both": [(0, EARLIEST)]})
        resource = entity(INCREMENTAL_ALTER_CONFIGS, 1, "AlterConfigsResource", resource_type=2,
                          resource_name=run.topic("compacted"), configs=(
                              entity(INCREMENTAL_ALTER_CONFIGS, 1, "AlterableConfig", name="cleanup.policy",
                                     config_operation=0, value="delete"),))
        call(run, INCREMENTAL_ALTER_CONFIGS, 1, record=False, resources=(resource,), validate_only=False)

        def deletable() -> bool:
            r = call(run, DELETE_RECORDS, 2, record=False, timeout=TIMEOUT, topics=(
                entity(DELETE_RECORDS, 2, "DeleteRecordsTopic", name=run.topic("compacted"), partitions=(
                    entity(DELETE_RECORDS, 2, "DeleteRecordsPartition", partition_index=0, offset=1),)),))
            return int(r.topics[0].partitions[0].error_code) == 0

        run.wait_until(deletable, "DeleteRecords allowed once the policy is delete")
        list_offsets_topics(run, {"compacted": [(0, EARLIEST)]}, label="after the policy change")
    brokers.compare(scenario)
