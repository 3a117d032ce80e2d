"""kafka-clients 4.4's KafkaShareConsumer (KIP-932) on Kafka 4.4 and on asyncbroker: two members
share one partition and every record is delivered once; a record released explicitly is
delivered again with its delivery count raised."""

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
