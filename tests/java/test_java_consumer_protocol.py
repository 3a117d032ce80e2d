"""kafka-clients 4.4's KafkaConsumer with group.protocol=consumer (KIP-848) on Kafka 4.4 and on
asyncbroker: members join and leave, a broker-side regex picks up a topic created later, a
static member rejoins without moving partitions, and a new member resumes from the commits."""

from __future__ import annotations

from facts import assert_same_facts
from java_harness import Targets


def test_members_join_and_leave(targets: Targets) -> None:
    kafka, ours = targets.run("kip848.join_leave", timeout_s=120)
    assert_same_facts(kafka, ours)
    assert ours == {"alone": 4, "shared": "2+2", "after_leave": 4}


def test_regex_subscription_picks_up_a_later_topic_and_refuses_bad_patterns(targets: Targets) -> None:
    kafka, ours = targets.run("kip848.regex", timeout_s=150)
    assert_same_facts(kafka, ours)
    assert ours["before"] == 1 and ours["after"] == 2 and ours["assigned_partitions"] == 3
    assert ours["lookahead"] == {"error": "InvalidRegularExpression"}
    assert ours["unbalanced"] == {"error": "InvalidRegularExpression"}


def test_static_member_rejoins_without_moving_partitions(targets: Targets) -> None:
    kafka, ours = targets.run("kip848.static_rejoin", timeout_s=120)
    assert_same_facts(kafka, ours)
    assert ours == {"rejoined_with_same_partitions": True, "other_member_kept_its_partitions": True}


def test_a_new_member_resumes_from_the_group_commits(targets: Targets) -> None:
    kafka, ours = targets.run("kip848.commit_resume", timeout_s=120)
    assert_same_facts(kafka, ours)
    assert ours == {"first_read": 6, "committed": 4, "metadata": "half-way", "resumed_at": 4, "position": 6}


def test_a_group_migrating_between_protocols(targets: Targets) -> None:
    """A classic and a consumer-protocol KafkaConsumer in one group, each protocol joining
    the other's group (the online upgrade, a mixed group), then leaving (the downgrade)."""
    kafka, ours = targets.run("kip848.mixed_group", timeout_s=240)
    assert_same_facts(kafka, ours)
    assert ours == {"classic first": {"shared": "2+2", "after_leave": 4},
                    "consumer first": {"shared": "2+2", "after_leave": 4}}
