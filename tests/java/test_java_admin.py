"""kafka-clients 4.4's AdminClient against Kafka 4.4 and asyncbroker."""

from __future__ import annotations

import re

from java_harness import Targets
from facts import assert_same_facts


# Kafka 4.4's bootstrap writes a cluster-wide dynamic min.insync.replicas; asyncbroker reports it so too.
MIN_ISR_DYNAMIC_DEFAULT = "1|DYNAMIC_DEFAULT_BROKER_CONFIG"


def test_topics_create_list_describe_partitions_delete(targets: Targets) -> None:
    kafka, ours = targets.run("admin.topics")
    assert_same_facts(kafka, ours)
    for config in ("created_config", "validate_only_config"):
        assert ours[config]["min.insync.replicas"].startswith(MIN_ISR_DYNAMIC_DEFAULT)
    assert ours["create_errors"]["exists"] == {"error": "TopicExistsException",
                                               "message": "Topic 'admin-topic-<run>' already exists."}


def test_describe_and_incremental_alter_configs(targets: Targets) -> None:
    kafka, ours = targets.run("admin.configs")
    assert_same_facts(kafka, ours)
    assert ours["described"]["min.insync.replicas"].startswith(MIN_ISR_DYNAMIC_DEFAULT)
    for key in ("log.cleanup.policy", "log.segment.bytes", "message.max.bytes"):  # reconfigurable, as on Kafka
        assert ours["broker"][key].endswith("|ro=false")


def test_list_offsets_delete_records_log_dirs(targets: Targets) -> None:
    kafka, ours = targets.run("admin.records_and_offsets")
    assert_same_facts(kafka, ours)


def test_cluster_features_and_producers(targets: Targets) -> None:
    kafka, ours = targets.run("admin.cluster")
    known = {"KD-203": {"features.finalized", "features.supported"}}
    assert_same_facts(kafka, ours, known)
    # group.version, share.version and transaction.version are the features listed (KD-203),
    # each with the range and level Kafka gives it.
    for kind in ("finalized", "supported"):
        for name in ("group.version", "share.version", "transaction.version"):
            entry = re.search(re.escape(name) + r"=[^\]]*\]", kafka["features"][kind])
            assert entry is not None and entry.group(0) in ours["features"][kind], (kind, name)
        assert len(re.findall(r"=[^\]]*\]", ours["features"][kind])) == 3, ours["features"][kind]
    assert ours["describe_producers"] == ("epoch=0 lastSequence=2 coordinatorEpoch=OptionalInt.empty "
                                          "txnStart=OptionalLong.empty")


def test_consumer_groups(targets: Targets) -> None:
    kafka, ours = targets.run("admin.consumer_groups")
    assert_same_facts(kafka, ours)
