"""The consumer's embedded protocol (ConsumerProtocolSubscription, ConsumerProtocolAssignment):
every version's fields as the Java client writes them, and malformed bytes refused."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wire.consumer_protocol import (
    SchemaError,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    version_of,
)


def _s(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def subscription_bytes(version: int) -> bytes:
    out = struct.pack(">hi", version, 2) + _s("a") + _s("b") + struct.pack(">i", 2) + b"ud"
    if version >= 1:
        out += struct.pack(">i", 1) + _s("a") + struct.pack(">iii", 2, 0, 3)
    if version >= 2:
        out += struct.pack(">i", 7)
    if version >= 3:
        out += _s("rack-1")
    return out


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_fields_of_each_version(version: int) -> None:
    got = decode_subscription(subscription_bytes(version))
    assert got == Subscription(version, ("a", "b"), b"ud", ((("a", (0, 3)),) if version >= 1 else ()),
                               7 if version >= 2 else -1, "rack-1" if version >= 3 else None)


def test_a_newer_version_is_read_for_the_fields_known() -> None:
    newer = struct.pack(">h", 9) + subscription_bytes(3)[2:] + b"fields of version 9"
    assert decode_subscription(newer).rack_id == "rack-1"


def test_assignment_round_trip_in_the_members_version() -> None:
    data = encode_assignment({"a": [0, 2], "b": []}, 3)
    assert version_of(data) == 3
    assert decode_assignment(data) == ((("a", (0, 2)), ("b", ())), None)
    assert encode_assignment({}, 1) == bytes.fromhex("000100000000ffffffff")  # what Kafka 4.4 sends


@pytest.mark.parametrize("data", [b"", b"\x00", b"\x00\x01\x7f\xff\xff\xff", b"\xff\xff\x00\x00\x00\x00",
                                  b"\x00\x00\x00\x00\x00\x01\x00\x05ab"])
def test_malformed_subscriptions_are_refused(data: bytes) -> None:
    with pytest.raises(SchemaError):
        decode_subscription(data)


@given(st.binary(max_size=64))
def test_any_bytes_decode_or_raise_schema_error(data: bytes) -> None:
    for decode in (decode_subscription, decode_assignment):
        try:
            decode(data)
        except SchemaError:
            pass
