"""kafka-clients 4.4's KafkaProducer (acks=all, idempotence on) against Kafka 4.4 and asyncbroker."""

from __future__ import annotations

from java_harness import Targets
from facts import assert_same_facts


def test_every_codec_round_trips_in_order(targets: Targets) -> None:
    kafka, ours = targets.run("produce.codecs")
    assert_same_facts(kafka, ours)
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        assert ours[codec] == {"records": 60, "end_offsets": "30,30"}


def test_headers_null_keys_and_values(targets: Targets) -> None:
    kafka, ours = targets.run("produce.headers_and_nulls")
    assert_same_facts(kafka, ours)
    assert ours["records"] == 5
    assert ours["compacted_null_key"]["error"] == "InvalidRecordException"


def test_records_at_and_over_max_message_bytes(targets: Targets) -> None:
    kafka, ours = targets.run("produce.large_records")
    assert_same_facts(kafka, ours)
    assert [o["error"] for o in ours["outcomes"]] == ["RecordTooLargeException"] * 3
    assert ours["read_back"] == 2
