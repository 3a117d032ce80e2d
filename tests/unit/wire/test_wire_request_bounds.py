"""check_request_bounds: every declared size in a request body fits the bytes after it,
checked before kio's native reader (which reserves memory from the declared size)."""
from __future__ import annotations

import datetime
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.alter_partition_reassignments.v0 import request as reassign0
from kio.schema.create_topics.v2 import request as create_topics2
from kio.schema.fetch.v4 import response as fetch4_response
from kio.schema.metadata.v1 import request as metadata1
from kio.schema.metadata.v12 import request as metadata12
from kio.schema.produce.v9 import request as produce9
from kio.static.primitive import Records, i32, i32Timedelta

from wire.errors import RequestDecodeError
from wire.messages import encode_request, request_class
from wire.request_bounds import check_request_bounds

st.register_type_strategy(Records, st.binary(max_size=64))


def test_the_atheris_produce_frame_is_refused_with_kafkas_message() -> None:
    body = b"\x00" + b"\xff\xff" + b"\x00\x00\x13\x88" + b"\xff\xff\xff\xff\x7f"
    with pytest.raises(RequestDecodeError, match="Tried to allocate a collection of size"):
        check_request_bounds(produce9.ProduceRequest, body, 0)


@pytest.mark.parametrize(("cls", "body"), [
    (metadata1.MetadataRequest, struct.pack(">i", 2**31 - 1)),
    (create_topics2.CreateTopicsRequest, struct.pack(">i", 2**31 - 1)),
    (metadata12.MetadataRequest, b"\x05" + b"\x01"),  # 4 topics announced, one byte follows
    (produce9.ProduceRequest, b"\x00" + b"\xff\xff" + b"\x00\x00\x13\x88" + b"\x02" + b"\x40t"),  # 63-byte name
    (metadata12.MetadataRequest, b"\x01\x00\x00" + b"\x01" + b"\x00\x40"),  # tagged field of 64 bytes in 0
])
def test_sizes_beyond_the_body_are_refused(cls: type, body: bytes) -> None:
    with pytest.raises(RequestDecodeError):
        check_request_bounds(cls, body, 0)


def test_null_collections_and_strings_pass() -> None:
    # Metadata v12: topics = null (compact 0), allow_auto_topic_creation, include_topic_authorized_operations
    check_request_bounds(metadata12.MetadataRequest, b"\x00\x01\x00\x00", 0)
    check_request_bounds(metadata1.MetadataRequest, struct.pack(">i", -1), 0)


@pytest.mark.parametrize(("key", "version"), [(0, 9), (3, 12), (19, 7), (1, 13), (8, 9), (11, 9), (2, 8)])
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_well_formed_requests_pass_and_every_shorter_prefix_is_refused(key: int, version: int,
                                                                      data: st.DataObject) -> None:
    cls = request_class(key, version)
    body = encode_request(data.draw(st.from_type(cls)))
    check_request_bounds(cls, body, 0)
    cut = data.draw(st.integers(0, max(0, len(body) - 1)))
    if cut < len(body):
        with pytest.raises(RequestDecodeError):
            check_request_bounds(cls, body[:cut], 0)


@pytest.mark.parametrize("replicas", [None, (), (1, 2, 3)])
def test_a_null_array_of_fixed_size_elements_holds_nothing(replicas: tuple[int, ...] | None) -> None:
    # A cancelled reassignment: replicas is a null int32 array, and the walk goes on after it
    # (a null once moved the position back by one element and misread what followed).
    req = reassign0.AlterPartitionReassignmentsRequest(
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
        topics=(reassign0.ReassignableTopic(name="t", partitions=(
            reassign0.ReassignablePartition(partition_index=i32(7),
                                            replicas=None if replicas is None else tuple(i32(r) for r in replicas)),
        )),),
    )
    body = encode_request(req)
    check_request_bounds(type(req), body, 0)
    with pytest.raises(RequestDecodeError):
        check_request_bounds(type(req), body[:-1], 0)


def test_a_null_array_of_fixed_size_entities_holds_nothing() -> None:
    # Fetch v4's answer: aborted_transactions (16-byte entities) null, then the null records.
    body = (struct.pack(">ii", 0, 1) + struct.pack(">h", 1) + b"t" + struct.pack(">iihqq", 1, 0, 0, 5, 5)
            + struct.pack(">i", -1) + struct.pack(">i", 3) + b"abc")
    check_request_bounds(fetch4_response.FetchResponse, body, 0)
    with pytest.raises(RequestDecodeError):
        check_request_bounds(fetch4_response.FetchResponse, body[:-1], 0)
