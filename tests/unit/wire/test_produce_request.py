"""The hand-written Produce decoder against kio's (with the bounds walk it needs), on valid
requests of every served version and on the same requests cut short or with bytes changed:
both give the same request, or both refuse it."""

from __future__ import annotations

import datetime
import importlib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from decoder_reference import NULL, UNKNOWN_TAG, assert_decodes_as_kio, by_kio, damaged  # (tests/unit/wire)
from wire.errors import RequestDecodeError
from wire.messages import encode_request
from wire.produce_request import VERSIONS, decode_produce_request


def _kio_request(version: int, transactional_id: str | None, acks: int, timeout_ms: int,
                 topics: list[tuple[str, list[tuple[int, bytes | None]]]]) -> Any:
    m = importlib.import_module(f"kio.schema.produce.v{version}.request")
    return m.ProduceRequest(
        transactional_id=transactional_id, acks=acks, timeout=datetime.timedelta(milliseconds=timeout_ms),
        topic_data=tuple(m.TopicProduceData(name=name, partition_data=tuple(
            m.PartitionProduceData(index=index, records=records) for index, records in partitions))
            for name, partitions in topics))


def _by_kio(version: int, body: bytes | memoryview) -> Any:
    """The old path: the bounds walk, then kio's reader; None when either refuses."""
    entity = by_kio(0, version, body)
    if entity is None or entity == NULL:  # (Produce has no nullable field kio reads as not)
        return None
    if entity == UNKNOWN_TAG:
        return entity
    if entity.topic_data is None or any(t.partition_data is None or t.name is None for t in entity.topic_data):
        # kio reads a null array or topic name where the schema allows none; the handler then
        # failed on it and the connection closed. Kafka refuses them while parsing.
        return None
    return (entity.transactional_id, int(entity.acks), entity.timeout // datetime.timedelta(milliseconds=1),
            [(t.name, [(p.index, None if p.records is None else bytes(p.records)) for p in t.partition_data])
             for t in entity.topic_data])


def _by_hand(version: int, body: bytes | memoryview) -> Any:
    try:
        request = decode_produce_request(version, body, 0)
    except RequestDecodeError:
        return None
    return (request.transactional_id, request.acks, request.timeout_ms,
            [(t.name, [(p.index, None if p.records is None else bytes(p.records)) for p in t.partition_data])
             for t in request.topic_data])


names = st.text(min_size=0, max_size=8)
requests = st.tuples(
    st.sampled_from(VERSIONS),
    st.none() | names,
    st.integers(-32768, 32767),
    st.integers(-(2**31), 2**31 - 1),
    st.lists(st.tuples(names, st.lists(st.tuples(st.integers(-(2**31), 2**31 - 1),
                                                 st.none() | st.binary(max_size=40)), max_size=3)), max_size=3),
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(requests)
def test_valid_requests_decode_as_kio_decodes_them(request: tuple[Any, ...]) -> None:
    version, *fields = request
    assert_decodes_as_kio(_by_kio, _by_hand, version, encode_request(_kio_request(version, *fields)))


@settings(max_examples=1500, suppress_health_check=[HealthCheck.too_slow])
@given(requests, st.data())
def test_damaged_requests_are_refused_or_read_as_kio_reads_them(request: tuple[Any, ...], data: st.DataObject) -> None:
    version, *fields = request
    frozen = damaged(encode_request(_kio_request(version, *fields)), data)
    expected = _by_kio(version, frozen)
    if expected != UNKNOWN_TAG:  # kio stopped at the tag: it says nothing about the rest
        assert _by_hand(version, frozen) == expected


def test_unknown_tagged_fields_are_skipped() -> None:
    """Tags on the partition, the topic and the request (Produce v9+ names none)."""
    records = b"\x01" * 70
    body = (b"\x00" + b"\xff\xff" + b"\x00\x00\x75\x30"  # null transactional id, acks -1, timeout
            + b"\x02" + b"\x02t" + b"\x02" + b"\x00\x00\x00\x00" + bytes([len(records) + 1]) + records
            + b"\x01\x07\x03abc"  # the partition's tags: one, tag 7, 3 bytes
            + b"\x02\x08\x00\x09\x01\xff"  # the topic's: tags 8 and 9
            + b"\x01\x0a\x00")  # the request's: tag 10, empty
    request = decode_produce_request(9, body, 0)
    assert (request.transactional_id, request.acks, request.timeout_ms) == (None, -1, 30_000)
    assert [(t.name, [(p.index, p.records) for p in t.partition_data]) for t in request.topic_data] == [
        ("t", [(0, records)])]
    with pytest.raises(RequestDecodeError, match="the request's tagged fields: truncated varint"):
        decode_produce_request(9, body[:-1], 0)


@pytest.mark.parametrize("version", [3, 8, 9, 12])
def test_records_of_a_large_frame_are_not_copied(version: int) -> None:
    records = bytes(range(256)) * 8
    frame = memoryview(encode_request(_kio_request(version, None, -1, 30_000, [("t", [(0, records)])])))
    got = decode_produce_request(version, frame, 0).topic_data[0].partition_data[0].records
    assert isinstance(got, memoryview) and got.obj is frame.obj and bytes(got) == records


def test_a_declared_count_the_bytes_cannot_hold_is_refused_before_anything_is_built() -> None:
    body = b"\xff\xff" + b"\xff\xff" + b"\x00\x00\x75\x30" + b"\x7f\xff\xff\xff"  # 2^31-1 topics in 0 bytes
    with pytest.raises(RequestDecodeError, match="declares 2147483647 entries"):
        decode_produce_request(3, body, 0)
