"""kafka-clients 4.4's KafkaConsumer (classic group protocol, and group.protocol=consumer) against
Kafka 4.4 and asyncbroker."""

from __future__ import annotations

from java_harness import Targets
from facts import assert_same_facts


def test_positions_seeks_offsets_for_times_pause_resume(targets: Targets) -> None:
    kafka, ours = targets.run("consumer.positions")
    assert_same_facts(kafka, ours)
    assert ours["offsets_for_times_p0"] == 4


def test_commit_sync_async_and_committed(targets: Targets) -> None:
    kafka, ours = targets.run("consumer.commits")
    assert_same_facts(kafka, ours)
    # A position commit carries the leader epoch of the records read (0 on a new topic);
    # an explicit OffsetAndMetadata without one carries none.
    assert ours["position_leader_epoch"] == "Optional[0]"
    assert ours["explicit_leader_epoch"] == "Optional.empty"


def test_group_restarts_from_committed_offsets(targets: Targets) -> None:
    kafka, ours = targets.run("consumer.group_restart")
    assert_same_facts(kafka, ours)
    assert ours["reset_none"] == {"error": "NoOffsetForPartitionException"}


def test_eager_rebalance_listener_sequence(targets: Targets) -> None:
    kafka, ours = targets.run("rebalance.eager")
    assert_same_facts(kafka, ours)
    assert ours["c1_events"] == ["assigned [0, 1, 2, 3]", "revoked [0, 1, 2, 3]", "assigned [0, 1]",
                                 "revoked [0, 1]", "assigned [0, 1, 2, 3]"]


def test_cooperative_sticky_rebalance_listener_sequence(targets: Targets) -> None:
    kafka, ours = targets.run("rebalance.cooperative")
    assert_same_facts(kafka, ours)


def test_group_protocol_consumer_consumes(targets: Targets) -> None:
    """group.protocol=consumer (KIP-848): the Java consumer joins with ConsumerGroupHeartbeat,
    is assigned both partitions by the broker and reads every record, on both brokers."""
    kafka, ours = targets.run("consumer.group_protocol_consumer")
    assert kafka["outcome"] == "consumed"
    assert_same_facts(kafka, ours)
    assert ours == {"outcome": "consumed", "records": 6, "assignment": 2}