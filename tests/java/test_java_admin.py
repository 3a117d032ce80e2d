"""kafka-clients 4.4's AdminClient against Kafka 4.4 and asyncbroker."""

from __future__ import annotations

from conftest import Targets
from facts import assert_same_facts


def test_topics_create_list_describe_partitions_delete(targets: Targets) -> None:
    kafka, ours = targets.run("admin.topics")
    assert_same_facts(kafka, ours)


def test_describe_and_incremental_alter_configs(targets: Targets) -> None:
    kafka, ours = targets.run("admin.configs")
    assert_same_facts(kafka, ours)


def test_list_offsets_delete_records_log_dirs(targets: Targets) -> None:
    kafka, ours = targets.run("admin.records_and_offsets")
    assert_same_facts(kafka, ours)


def test_cluster_features_and_producers(targets: Targets) -> None:
    kafka, ours = targets.run("admin.cluster")
    assert_same_facts(kafka, ours)


def test_consumer_groups(targets: Targets) -> None:
    kafka, ours = targets.run("admin.consumer_groups")
    assert_same_facts(kafka, ours)
