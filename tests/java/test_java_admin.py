"""kafka-clients 4.4's AdminClient against Kafka 4.4 and asyncbroker."""

from __future__ import annotations

from java_harness import Targets
from facts import assert_same_facts


# KD-401: Kafka 4.4's bootstrap writes a cluster-wide dynamic min.insync.replicas; no dynamic
# broker configs here, so the same value is a DEFAULT_CONFIG.
MIN_ISR_DYNAMIC_DEFAULT = "1|DYNAMIC_DEFAULT_BROKER_CONFIG"


def test_topics_create_list_describe_partitions_delete(targets: Targets) -> None:
    kafka, ours = targets.run("admin.topics")
    known = {"KD-401": {"created_config.min.insync.replicas", "validate_only_config.min.insync.replicas"}}
    assert_same_facts(kafka, ours, known)
    for config in ("created_config", "validate_only_config"):
        assert kafka[config]["min.insync.replicas"].startswith(MIN_ISR_DYNAMIC_DEFAULT)
        assert ours[config]["min.insync.replicas"] == "1|DEFAULT_CONFIG|ro=false|sensitive=false|null"
    assert ours["create_errors"]["exists"] == {"error": "TopicExistsException",
                                               "message": "Topic 'admin-topic-<run>' already exists."}


def test_describe_and_incremental_alter_configs(targets: Targets) -> None:
    kafka, ours = targets.run("admin.configs")
    dynamic_broker_keys = {"broker.log.cleanup.policy", "broker.log.segment.bytes", "broker.message.max.bytes"}
    known = {"KD-401": {"described.min.insync.replicas", "after_alter.min.insync.replicas", *dynamic_broker_keys}}
    assert_same_facts(kafka, ours, known)
    assert ours["described"]["min.insync.replicas"] == (
        "1|DEFAULT_CONFIG|ro=false|sensitive=false|INT|synonyms=[min.insync.replicas=1@DEFAULT_CONFIG]")
    for key in dynamic_broker_keys:  # reconfigurable on Kafka, static here
        assert kafka["broker"][key.split(".", 1)[1]].endswith("|ro=false")
        assert ours["broker"][key.split(".", 1)[1]].endswith("|ro=true")


def test_list_offsets_delete_records_log_dirs(targets: Targets) -> None:
    kafka, ours = targets.run("admin.records_and_offsets")
    assert_same_facts(kafka, ours)


def test_cluster_features_and_producers(targets: Targets) -> None:
    kafka, ours = targets.run("admin.cluster")
    known = {"KD-402": {"features.finalized", "features.supported", "features.epoch_present"}}
    assert_same_facts(kafka, ours, known)
    assert ours["features"] == {"finalized": "{}", "supported": "{}", "epoch_present": False}
    assert ours["describe_producers"] == ("epoch=0 lastSequence=2 coordinatorEpoch=OptionalInt.empty "
                                          "txnStart=OptionalLong.empty")


def test_consumer_groups(targets: Targets) -> None:
    kafka, ours = targets.run("admin.consumer_groups")
    assert_same_facts(kafka, ours)
