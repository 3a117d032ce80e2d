"""kafka-clients 4.4's KafkaShareConsumer (KIP-932) on Kafka 4.4 and on asyncbroker: two members
share one partition and every record is delivered once; a record released explicitly is
delivered again with its delivery count raised; share.acquire.mode=record_limit hands a batch
out max.poll.records at a time (ShareFetch v2); a record renewed with AcknowledgeType.RENEW
stays with its member past its lock (share.version 2); the share group offset admin APIs
through kafka-clients' Admin."""

from __future__ import annotations

from facts import assert_same_facts
from java_harness import Targets


def test_two_members_share_a_partition_each_record_once(targets: Targets) -> None:
    kafka, ours = targets.run("share.pair", timeout_s=120)
    assert_same_facts(kafka, ours)
    assert ours == {"distinct": 20, "each_once": True}


def test_a_released_record_is_delivered_again(targets: Targets) -> None:
    kafka, ours = targets.run("share.release", timeout_s=120)
    assert_same_facts(kafka, ours)
    assert ours == {"delivery_1": 1, "delivery_2": 2}


def test_record_limit_splits_a_batch_to_max_poll_records(targets: Targets) -> None:
    kafka, ours = targets.run("share.record_limit", timeout_s=120)
    assert_same_facts(kafka, ours)
    assert ours["poll_sizes"] == "[3, 3, 3, 1]", ours


def test_a_renewed_record_stays_with_its_member_past_the_lock(targets: Targets) -> None:
    kafka, ours = targets.run("share.renew", timeout_s=180)
    assert_same_facts(kafka, ours)
    assert ours == {"handed_to_b": 0, "renewed_more_than_once": True, "delivery_counts": "[1]",
                    "accepted_without_error": True}, ours


def test_share_group_offsets_through_the_admin_client(targets: Targets) -> None:
    """Admin.alterShareGroupOffsets / listShareGroupOffsets / deleteShareGroupOffsets of
    kafka-clients 4.4: the offsets set, the lag described, where a share consumer starts
    after an alter and after a delete, and the errors for a group with a member, an unknown
    partition and a topic without share state."""
    kafka, ours = targets.run("share.offsets_admin", timeout_s=180)
    assert_same_facts(kafka, ours)
    assert ours["after_alter"] == {"0": "start=2 lag=3", "1": "start=0 lag=5"}
    assert ours["consumed_after_alter"] == ",".join(
        sorted([f"0:{o}" for o in range(2, 5)] + [f"1:{o}" for o in range(5)]))
    assert ours["consumed_after_delete"] == 10
