"""The `__consumer_offsets` key/value formats, byte for byte as Kafka writes them."""

from __future__ import annotations

import struct

import pytest

from asyncbroker.coordinator_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    RecordFormatError,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from asyncbroker.offsets_topic import java_string_hash, partition_for


def s16(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def test_offset_commit_key_layout() -> None:
    key = encode_offset_commit_key(OffsetCommitKey("g", "topic", 3))
    assert key == b"\x00\x01" + s16("g") + s16("topic") + b"\x00\x00\x00\x03"
    assert decode_key(key) == OffsetCommitKey("g", "topic", 3)
    # Kafka before 2.x wrote key version 0: same fields.
    assert decode_key(b"\x00\x00" + key[2:]) == OffsetCommitKey("g", "topic", 3)


def test_group_metadata_key_layout() -> None:
    key = encode_group_metadata_key(GroupMetadataKey("my-group"))
    assert key == b"\x00\x02" + s16("my-group")
    assert decode_key(key) == GroupMetadataKey("my-group")


def test_keys_of_other_coordinator_records_are_skipped() -> None:
    # Type 3 is ConsumerGroupMetadataKey (KIP-848), not used by classic groups.
    assert decode_key(b"\x00\x03" + s16("g")) is None


def test_offset_commit_value_v3_layout() -> None:
    value = encode_offset_commit_value(OffsetCommitValue(42, "meta", 1_700_000_000_000, 7))
    expected = (b"\x00\x03" + struct.pack(">q", 42) + struct.pack(">i", 7) + s16("meta")
                + struct.pack(">q", 1_700_000_000_000))
    assert value == expected
    assert decode_offset_commit_value(value) == OffsetCommitValue(42, "meta", 1_700_000_000_000, 7, -1)


def test_offset_commit_value_with_expire_timestamp_is_v1() -> None:
    value = encode_offset_commit_value(OffsetCommitValue(5, "", 1000, 3, expire_timestamp=2000))
    assert value == b"\x00\x01" + struct.pack(">q", 5) + s16("") + struct.pack(">qq", 1000, 2000)
    # v1 has no leader epoch.
    assert decode_offset_commit_value(value) == OffsetCommitValue(5, "", 1000, -1, 2000)


def test_offset_commit_value_v0_and_v4_decode() -> None:
    v0 = b"\x00\x00" + struct.pack(">q", 9) + s16("m") + struct.pack(">q", 123)
    assert decode_offset_commit_value(v0) == OffsetCommitValue(9, "m", 123, -1, -1)
    # v4 is flexible: compact string (length + 1) and an empty tagged-field section.
    v4 = b"\x00\x04" + struct.pack(">qi", 9, 2) + b"\x02m" + struct.pack(">q", 123) + b"\x00"
    assert decode_offset_commit_value(v4) == OffsetCommitValue(9, "m", 123, 2, -1)
    with pytest.raises(RecordFormatError):
        decode_offset_commit_value(b"\x00\x09" + v0[2:])
    with pytest.raises(RecordFormatError):
        decode_offset_commit_value(v0[:-3])


def test_group_metadata_value_v3_roundtrip_and_layout() -> None:
    member = MemberMetadata("m-1", "client", "/127.0.0.1", 300000, 45000, b"sub", b"assign", "instance-1")
    value = GroupMetadataValue("consumer", 4, "range", "m-1", 1_700_000_000_000, (member,))
    data = encode_group_metadata_value(value)
    expected = (b"\x00\x03" + s16("consumer") + struct.pack(">i", 4) + s16("range") + s16("m-1")
                + struct.pack(">q", 1_700_000_000_000) + struct.pack(">i", 1)
                + s16("m-1") + s16("instance-1") + s16("client") + s16("/127.0.0.1")
                + struct.pack(">ii", 300000, 45000) + struct.pack(">i", 3) + b"sub" + struct.pack(">i", 6) + b"assign")
    assert data == expected
    assert decode_group_metadata_value(data) == value


def test_empty_group_metadata_value_has_null_protocol_and_leader() -> None:
    data = encode_group_metadata_value(GroupMetadataValue("consumer", 5, None, None, 10, ()))
    assert data == b"\x00\x03" + s16("consumer") + struct.pack(">i", 5) + b"\xff\xff\xff\xff" + struct.pack(">qi", 10, 0)
    assert decode_group_metadata_value(data).members == ()


def test_group_metadata_value_v0_uses_session_timeout_as_rebalance_timeout() -> None:
    data = (b"\x00\x00" + s16("consumer") + struct.pack(">i", 1) + s16("range") + s16("m") + struct.pack(">i", 1)
            + s16("m") + s16("c") + s16("h") + struct.pack(">i", 10000) + struct.pack(">i", 0)
            + struct.pack(">i", 0))
    decoded = decode_group_metadata_value(data)
    assert decoded.current_state_timestamp == -1
    assert decoded.members[0].rebalance_timeout == decoded.members[0].session_timeout == 10000
    assert decoded.members[0].group_instance_id is None


def test_partition_for_uses_java_string_hash_code() -> None:
    # Values of Java's "...".hashCode().
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert partition_for("hello", 50) == 99162322 % 50
    # The famous string whose hashCode is Integer.MIN_VALUE: Kafka's Utils.abs maps it to 0.
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert partition_for("polygenelubricants", 7) == 0
    # Characters outside the BMP count as two UTF-16 code units, as in Java.
    assert java_string_hash("\U0001F600") == 31 * 0xD83D + 0xDE00
