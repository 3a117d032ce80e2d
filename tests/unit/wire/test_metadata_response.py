"""The hand-written Metadata encoder is byte-identical to kio's writer, for every version 0-13,
and kio's reader reads its bytes back as the response it was given."""

from __future__ import annotations

import datetime
import importlib
import io
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.serial import entity_writer
from kio.static.primitive import i32Timedelta

import wire.metadata_response as metadata_response
from decoder_reference import kio_entity_of
from wire.messages import decode_response
from wire.metadata_response import (
    VERSIONS,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
    encode_metadata_response,
)



def kio_entity(version: int, response: MetadataResponse) -> Any:
    """kio's MetadataResponse of `version` with the values of `response` (those it carries)."""
    m = importlib.import_module(f"kio.schema.metadata.v{version}.response")
    return kio_entity_of(
        m.MetadataResponse,
        throttle_time=i32Timedelta.parse(datetime.timedelta(milliseconds=response.throttle_time_ms)),
        brokers=tuple(kio_entity_of(m.MetadataResponseBroker, node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
                      for b in response.brokers),
        cluster_id=response.cluster_id,
        controller_id=response.controller_id,
        topics=tuple(kio_entity_of(
            m.MetadataResponseTopic, error_code=KioErrorCode(t.error_code), name=t.name, topic_id=t.topic_id,
            is_internal=t.is_internal, topic_authorized_operations=t.topic_authorized_operations,
            partitions=tuple(kio_entity_of(
                m.MetadataResponsePartition, error_code=KioErrorCode(p.error_code), partition_index=p.partition_index,
                leader_id=p.leader_id, leader_epoch=p.leader_epoch, replica_nodes=p.replica_nodes,
                isr_nodes=p.isr_nodes, offline_replicas=p.offline_replicas) for p in t.partitions))
            for t in response.topics),
        cluster_authorized_operations=response.cluster_authorized_operations,
        error_code=KioErrorCode(response.error_code),
    )


def kio_bytes(version: int, response: MetadataResponse) -> bytes:
    entity = kio_entity(version, response)
    out = io.BytesIO()
    entity_writer(type(entity))(out, entity)
    return out.getvalue()


def assert_as_kio(version: int, response: MetadataResponse) -> None:
    """Our bytes are kio's, and kio reads them back as the entity they came from."""
    ours = encode_metadata_response(version, response)
    assert ours == kio_bytes(version, response)
    assert decode_response(3, version, ours) == kio_entity(version, response)


_i32 = st.integers(-(2**31), 2**31 - 1)
_errors = st.sampled_from(sorted(int(e) for e in KioErrorCode))
_ids = st.lists(_i32, max_size=4)
_long_ids = st.lists(_i32, min_size=127, max_size=140)  # a flexible count of two bytes
_some_long_ids = st.integers(0, 7).flatmap(lambda k: _long_ids if k == 0 else _ids)  # one in eight long
# Short names, names of a two-byte compact length (most of 100+ characters take 128+ bytes)
_text = st.text(max_size=12) | st.text(min_size=100, max_size=130)
_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz._-0123456789", min_size=1, max_size=20) | _text

partitions = st.builds(
    MetadataResponsePartition,
    error_code=_errors, partition_index=_i32, leader_id=_i32, leader_epoch=_i32,
    replica_nodes=_some_long_ids.map(tuple), isr_nodes=_ids.map(tuple), offline_replicas=_some_long_ids.map(tuple),
)
brokers = st.builds(MetadataResponseBroker, node_id=_i32, host=_text, port=_i32, rack=st.none() | _text)


@st.composite
def responses(draw: st.DrawFn, version: int) -> MetadataResponse:
    topic = st.builds(
        MetadataResponseTopic, error_code=_errors, name=(st.none() | _names) if version >= 12 else _names,
        topic_id=st.none() | st.uuids(), is_internal=st.booleans(),
        partitions=st.lists(partitions, max_size=6).map(tuple), topic_authorized_operations=_i32)
    return MetadataResponse(
        throttle_time_ms=draw(st.integers(0, 2**31 - 1)), brokers=tuple(draw(st.lists(brokers, max_size=3))),
        cluster_id=draw(st.none() | _text), controller_id=draw(_i32), topics=tuple(draw(st.lists(topic, max_size=3))),
        cluster_authorized_operations=draw(_i32), error_code=draw(_errors))


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_responses_match_kio(version: int, data: st.DataObject) -> None:
    assert_as_kio(version, data.draw(responses(version)))


def _big_topic(n: int, name: str | None, shape: int = 0) -> MetadataResponseTopic:
    """A topic of `n` partitions; shape 1 varies the replica lists from partition to partition."""
    parts = []
    for i in range(n):
        replicas = (i % 3, (i + 1) % 3, (i + 2) % 3) if shape else (0,)
        isr = replicas[: 1 + i % 3] if shape else (0,)
        offline = replicas[i % 2:] if shape and i % 5 == 0 else ()
        parts.append(MetadataResponsePartition(0 if i % 7 else 6, i, i % 3, i // 10, replicas, isr, offline))
    return MetadataResponseTopic(0, name, uuid.UUID(int=n + 1), False, tuple(parts), 0x0F8)


@pytest.mark.parametrize("version", VERSIONS)
def test_large_topics_match_kio(version: int) -> None:
    """1,000 partitions of one shape, 1,000 of varied shapes, null and non-ASCII names."""
    response = MetadataResponse(
        7,
        (MetadataResponseBroker(0, "localhost", 9092),
         MetadataResponseBroker(1, "h\u00f4te-\u00e9", 9093, "rack-\u4e00")),
        None, 1,
        (_big_topic(1000, "t" * 200), _big_topic(1000, "\u0442\u043e\u043f\u0438\u043a", 1),
         _big_topic(0, None if version >= 12 else "")),
        0x1234, 0)
    assert_as_kio(version, response)


@pytest.mark.parametrize("version", VERSIONS)
def test_long_replica_lists_match_kio(version: int) -> None:
    """Arrays of 127 ids (a two-byte compact count) and 20,000 (three bytes), between partitions
    of one shape: the Struct of that shape is used again after them."""
    small = MetadataResponsePartition(0, 0, 1, 2, (1, 2), (1,), ())
    long_ = MetadataResponsePartition(0, 1, 1, 2, tuple(range(127)), tuple(range(20_000)), tuple(range(126)))
    topic = MetadataResponseTopic(3, "t", None, True, (small, long_, small, long_, long_, small))
    assert_as_kio(version, MetadataResponse(0, (), "c", -1, (topic,)))


@pytest.mark.parametrize("version", VERSIONS)
def test_strings_at_the_one_byte_length_boundary_match_kio(version: int) -> None:
    """A compact length of n + 1 takes one byte up to 126 bytes of UTF-8, two from 127."""
    response = MetadataResponse(
        0,
        (MetadataResponseBroker(1, "h" * 127, 9092, "\u00e9" * 63), MetadataResponseBroker(2, "h" * 126, 1, "r" * 128)),
        "\u00e9" * 64, 1,
        tuple(MetadataResponseTopic(0, name, None, False, ()) for name in ("t" * 126, "t" * 127, "\u4e00" * 42 + "t")))
    assert_as_kio(version, response)


def test_a_full_cache_of_partition_shapes_is_cleared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metadata_response, "_MAX_SHAPES", 3)
    monkeypatch.setattr(metadata_response, "_SHAPES", ({}, {}, {}, {}))
    parts = tuple(MetadataResponsePartition(0, i, 0, 0, tuple(range(i % 5)), (), ()) for i in range(20))
    response = MetadataResponse(0, (), None, 0, (MetadataResponseTopic(0, "t", None, False, parts),))
    for version in VERSIONS:
        assert_as_kio(version, response)
    assert all(len(cache) <= 3 for cache in metadata_response._SHAPES)


def test_fields_a_version_lacks_are_not_written() -> None:
    """v0 carries none of rack, cluster id, controller id, is_internal, throttle time; v13 no
    cluster operations but the top-level error code."""
    partition = MetadataResponsePartition(0, 5, 1, 9, (1,), (1,), (2,))
    topic = MetadataResponseTopic(0, "a", uuid.UUID(int=1), True, (partition,), 7)
    response = MetadataResponse(99, (MetadataResponseBroker(1, "h", 2, "r"),), "cid", 1, (topic,), 8, 35)
    assert encode_metadata_response(0, response) == (
        b"\x00\x00\x00\x01" + b"\x00\x00\x00\x01\x00\x01h\x00\x00\x00\x02"
        + b"\x00\x00\x00\x01" + b"\x00\x00\x00\x01a" + b"\x00\x00\x00\x01"
        + b"\x00\x00\x00\x00\x00\x05\x00\x00\x00\x01" + b"\x00\x00\x00\x01\x00\x00\x00\x01" * 2)
    assert encode_metadata_response(13, response) == (
        b"\x00\x00\x00\x63" + b"\x02" + b"\x00\x00\x00\x01\x02h\x00\x00\x00\x02\x02r\x00"
        + b"\x04cid" + b"\x00\x00\x00\x01"
        + b"\x02" + b"\x00\x00\x02a" + uuid.UUID(int=1).bytes + b"\x01"
        + b"\x02" + b"\x00\x00\x00\x00\x00\x05\x00\x00\x00\x01\x00\x00\x00\x09"
        + b"\x02\x00\x00\x00\x01" + b"\x02\x00\x00\x00\x01" + b"\x02\x00\x00\x00\x02" + b"\x00"
        + b"\x00\x00\x00\x07" + b"\x00"
        + b"\x00\x23" + b"\x00")


@pytest.mark.parametrize("version", [0, 11])
def test_a_topic_without_a_name_before_v12_is_refused(version: int) -> None:
    response = MetadataResponse(0, (), None, 0, (MetadataResponseTopic(3, None, uuid.UUID(int=4), False, ()),))
    with pytest.raises(ValueError, match="nullable from v12"):
        encode_metadata_response(version, response)
    with pytest.raises(TypeError):  # (kio's writer refuses it too)
        kio_bytes(version, response)
    assert encode_metadata_response(12, response) == kio_bytes(12, response)


@pytest.mark.parametrize("version", [-1, 14])
def test_versions_outside_range_are_refused(version: int) -> None:
    with pytest.raises(ValueError, match="not in 0-13"):
        encode_metadata_response(version, MetadataResponse(0, (), None, 0, ()))
