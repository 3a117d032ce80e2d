"""The records of a consumer-protocol group in `__consumer_offsets`, both ways between Kafka 4.4
and asyncbroker (issue 19: groups survive a restart, and a log dir moved to Kafka keeps them).

- Kafka → asyncbroker: the same scenario (test_consumer_group_protocol.two_members: joins,
  revocation, leave) runs on Kafka; every consumer-group record Kafka wrote for the group is
  decoded here and encoded again to the very same bytes, and replaying them gives the group
  ConsumerGroupDescribe showed on Kafka.
- asyncbroker → Kafka: the scenario runs on asyncbroker; Kafka's DumpLogSegments
  (--offsets-decoder) reads every record asyncbroker wrote for the group and decodes each as
  the record type it is, with the epochs asyncbroker answered.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import test_consumer_group_protocol as scenarios
from differential import run_scenario
from jvm.kafka_jvm import dump_log_segments

from asyncbroker.consumer_group_manager import ConsumerGroupManager
from asyncbroker.consumer_group_records import (
    VALUE_DECODERS,
    decode_consumer_group_key,
    decode_consumer_group_metadata_value,
)
from asyncbroker.coordinator_records import CoordinatorRecordType
from asyncbroker.group_metadata_hash import group_metadata_hash
from asyncbroker.offsets_topic import partition_for
from wire.records import decode_records

pytestmark = pytest.mark.timeout(180)

_T = CoordinatorRecordType
ENCODERS = {
    _T.CONSUMER_GROUP_METADATA: "encode_consumer_group_metadata_value",
    _T.CONSUMER_GROUP_MEMBER_METADATA: "encode_member_metadata_value",
    _T.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA: "encode_target_assignment_metadata_value",
    _T.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER: "encode_target_assignment_member_value",
    _T.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: "encode_current_member_assignment_value",
    _T.CONSUMER_GROUP_REGULAR_EXPRESSION: "encode_regular_expression_value",
}


def replayed(records: list[tuple[bytes, bytes | None]]) -> tuple[ConsumerGroupManager, list[tuple[Any, Any]]]:
    """Kafka's records decoded (each value encoded back to its very bytes) and replayed into a
    manager; the manager and the (key, value) pairs."""
    import asyncbroker.consumer_group_records as formats

    manager = ConsumerGroupManager.__new__(ConsumerGroupManager)
    manager.groups = {}
    decoded = []
    for key_bytes, value_bytes in records:
        key = decode_consumer_group_key(key_bytes)
        assert key is not None
        value = None if value_bytes is None else VALUE_DECODERS[key.record_type](value_bytes)
        if value is not None:
            assert getattr(formats, ENCODERS[key.record_type])(value) == value_bytes, (key, value)
        manager.replay(key, value)
        decoded.append((key, value))
    return manager, decoded


def group_records(log_dir: Path, group_id: str) -> list[tuple[bytes, bytes | None]]:
    """(key, value) of every record of `group_id`'s __consumer_offsets partition, in log order."""
    part = log_dir / f"__consumer_offsets-{partition_for(group_id, 50)}"
    out = []
    for segment in sorted(part.glob("*.log")):
        data = segment.read_bytes()
        pos = 0
        while pos + 61 <= len(data):
            size = int.from_bytes(data[pos + 8:pos + 12], "big") + 12
            if pos + size > len(data):
                break
            for r in decode_records(data[pos:pos + size]):
                if r.key is not None:
                    out.append((bytes(r.key), None if r.value is None else bytes(r.value)))
            pos += size
    return [(k, v) for k, v in out if (key := decode_consumer_group_key(k)) is not None and key.group == group_id]


def test_records_kafka_wrote_read_and_written_back(brokers) -> None:  # type: ignore[no-untyped-def]
    run = run_scenario(scenarios.two_members, "kafka", brokers.kafka.bootstrap)
    group_id = run.group("g")
    records = group_records(Path(brokers.kafka.log_dir), group_id)
    manager, decoded = replayed(records)
    assert {key.record_type for key, _ in decoded} == set(ENCODERS) - {_T.CONSUMER_GROUP_REGULAR_EXPRESSION}
    # The scenario ends with the group emptied ("empty" described), then deleted.
    described = [s.response for s in run.transcript if s.label == "empty"][0]["groups"]
    empty = next(g for g in described if g["group_id"] == "g")
    assert group_id not in manager.groups  # deleted: its tombstones replayed
    assert empty["group_epoch"] == empty["assignment_epoch"] == 5
    # The metadata hash Kafka wrote while both topics were subscribed is the one computed here.
    hashes = [decode_consumer_group_metadata_value(v).metadata_hash for k, v in records
              if v is not None and decode_consumer_group_key(k).record_type == _T.CONSUMER_GROUP_METADATA]  # type: ignore[union-attr]
    both = group_metadata_hash({run.topic("t1"): (run.topic_id("t1"), 3), run.topic("t2"): (run.topic_id("t2"), 2)})
    assert both in hashes and hashes[-1] == 0  # the group ends with no member, so no topic


def test_records_asyncbroker_wrote_read_by_kafka(brokers) -> None:  # type: ignore[no-untyped-def]
    run = run_scenario(scenarios.two_members, "asyncbroker", brokers.ours.bootstrap)
    group_id = run.group("g")
    part = Path(brokers.ours.log_dir) / f"__consumer_offsets-{partition_for(group_id, 50)}"
    out = dump_log_segments(sorted(part.glob("*.log")), ["--offsets-decoder"])
    lines = [line for line in out.splitlines() if f'"{group_id}"' in line and '"type":"' in line]
    decoded = []
    for line in lines:
        key = json.loads(re.search(r"key: (\{.*?\}\}) payload", line).group(1))  # type: ignore[union-attr]
        payload = line.split("payload: ", 1)[1]
        decoded.append((int(key["type"]), None if payload == "<DELETE>" else json.loads(payload)))
    ours = group_records(Path(brokers.ours.log_dir), group_id)
    assert len(decoded) == len(ours) and {t for t, _ in decoded} >= {3, 5, 6, 7, 8}
    epochs = [v["data"]["epoch"] for t, v in decoded if t == 3 and v is not None]
    assert epochs == sorted(epochs) and epochs[-1] == 5  # as asyncbroker answered ("empty": epoch 5)
    hashes = [v["data"].get("metadataHash", 0) for t, v in decoded if t == 3 and v is not None]
    both = group_metadata_hash({run.topic("t1"): (run.topic_id("t1"), 3), run.topic("t2"): (run.topic_id("t2"), 2)})
    assert both in hashes and hashes[-1] == 0
    # Every member epoch a heartbeat answered is one a current-assignment record holds.
    answered = {s.response["member_epoch"] for s in run.transcript
                if s.request is not None and isinstance(s.response, dict) and "member_epoch" in s.response
                and s.response["error_code"] == "none" and s.response["member_epoch"] > 0}
    current = {v["data"]["memberEpoch"] for t, v in decoded if t == 8 and v is not None}
    assert answered and answered <= current
    members = [v["data"] for t, v in decoded if t == 5 and v is not None]
    assert len(members) == 2
    for m in members:
        assert sorted(n.rsplit("-", 1)[0] for n in m["subscribedTopicNames"]) == ["t1", "t2"]
        assert m["serverAssignor"] == "range" and m["rebalanceTimeoutMs"] == 30000
        # Kafka would take a member record without it for a classic member's.
        assert m["classicMemberMetadata"] is None


def test_regex_records_kafka_wrote_read_and_written_back(brokers) -> None:  # type: ignore[no-untyped-def]
    """ConsumerGroupRegularExpression (type 16): Kafka's bytes decode and encode back to the
    same bytes, and replaying them leaves what Kafka resolved, then forgot with each regex's
    last user."""
    run = run_scenario(scenarios.regex_subscriptions, "kafka", brokers.kafka.bootstrap)
    group_id = run.group("g")
    manager, decoded = replayed(group_records(Path(brokers.kafka.log_dir), group_id))
    regexes = [(key, value) for key, value in decoded if key.record_type == _T.CONSUMER_GROUP_REGULAR_EXPRESSION]
    assert any(v is not None for _, v in regexes) and any(v is None for _, v in regexes)
    both = f"{run.topic('t1')}|__consumer_offsets"
    for key, value in regexes:
        # a's second regex is never resolved (within 10 s of the first): only its tombstone is
        # written, when a leaves.
        assert key.regex == both or (key.regex == run.topic("t2") and value is None)
        if value is not None:
            assert sorted(value.topics) == sorted([run.topic("t1"), "__consumer_offsets"])
    assert manager.groups[group_id].resolved_regexes == {}


def test_regex_records_asyncbroker_wrote_read_by_kafka(brokers) -> None:  # type: ignore[no-untyped-def]
    run = run_scenario(scenarios.regex_subscriptions, "asyncbroker", brokers.ours.bootstrap)
    group_id = run.group("g")
    part = Path(brokers.ours.log_dir) / f"__consumer_offsets-{partition_for(group_id, 50)}"
    out = dump_log_segments(sorted(part.glob("*.log")), ["--offsets-decoder"])
    regex_lines = [line for line in out.splitlines() if f'"{group_id}"' in line and '"type":"16"' in line]
    decoded = [line.split("payload: ", 1)[1] for line in regex_lines]
    assert "<DELETE>" in decoded
    values = [json.loads(p)["data"] for p in decoded if p != "<DELETE>"]
    assert values and all(sorted(v["topics"]) == sorted([run.topic("t1"), "__consumer_offsets"]) for v in values)
    assert all(v["timestamp"] > 0 for v in values)


def test_share_group_records_kafka_wrote_read_and_written_back(brokers) -> None:  # type: ignore[no-untyped-def]
    """A share group's records (types 10 to 15): Kafka's bytes decode and encode back to the
    same bytes, and replaying them leaves the group Kafka deleted gone."""
    import asyncbroker.consumer_group_records as formats
    import test_share_group_membership as share
    from asyncbroker.consumer_group_records import SHARE_GROUP_RECORD_TYPES
    from asyncbroker.share_group_manager import ShareGroupManager

    run = run_scenario(share.one_member, "kafka", brokers.kafka.bootstrap)
    group_id = run.group("g")
    records = group_records(Path(brokers.kafka.log_dir), group_id)
    manager = ShareGroupManager.__new__(ShareGroupManager)
    manager.groups = {}
    types = set()
    for key_bytes, value_bytes in records:
        key = decode_consumer_group_key(key_bytes)
        assert key is not None and key.record_type in SHARE_GROUP_RECORD_TYPES
        types.add(key.record_type)
        value = None if value_bytes is None else VALUE_DECODERS[key.record_type](value_bytes)
        if value is not None:
            assert getattr(formats, SHARE_ENCODERS[key.record_type])(value) == value_bytes, (key, value)
        manager.replay(key, value)  # type: ignore[arg-type]
    assert types == set(SHARE_ENCODERS)
    assert group_id not in manager.groups  # deleted at the end: its tombstones replayed


def test_share_group_records_asyncbroker_wrote_read_by_kafka(brokers) -> None:  # type: ignore[no-untyped-def]
    import test_share_group_membership as share

    run = run_scenario(share.one_member, "asyncbroker", brokers.ours.bootstrap)
    group_id = run.group("g")
    part = Path(brokers.ours.log_dir) / f"__consumer_offsets-{partition_for(group_id, 50)}"
    out = dump_log_segments(sorted(part.glob("*.log")), ["--offsets-decoder"])
    lines = [line for line in out.splitlines() if f'"{group_id}"' in line and '"type":"' in line]
    decoded = {int(json.loads(re.search(r"key: (\{.*?\}\}) payload", line).group(1))["type"])  # type: ignore[union-attr]
               for line in lines}
    assert decoded == set(SHARE_ENCODERS), decoded
    assert not any("Unknown" in line or "error" in line.lower() for line in lines)


SHARE_ENCODERS = {
    _T.SHARE_GROUP_MEMBER_METADATA: "encode_share_member_metadata_value",
    _T.SHARE_GROUP_METADATA: "encode_share_group_metadata_value",
    _T.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA: "encode_target_assignment_metadata_value",
    _T.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER: "encode_target_assignment_member_value",
    _T.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT: "encode_share_current_member_assignment_value",
    _T.SHARE_GROUP_STATE_PARTITION_METADATA: "encode_share_state_partition_metadata_value",
}
