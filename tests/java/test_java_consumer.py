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

def test_fetch_sessions_follow_positions_pauses_assignments_and_seeks(targets: Targets) -> None:
    """The consumer keeps a fetch session (KIP-227) with each broker; what it reads through
    the session's changes is the same on both."""
    kafka, ours = targets.run("consumer.fetch_sessions")
    assert_same_facts(kafka, ours)
    reads = ours["reads"]
    assert reads[3].startswith("paused 0-2: 3@3=") and "0@" not in reads[3]
    assert reads[-1] == "p0 from 1: 0@1=p0-r1 0@2=p0-r2 0@3=p0-r3 0@4=p0-r4"
