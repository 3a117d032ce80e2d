"""The hand-written Fetch decoder against kio's (with the bounds walk it needs), on valid
requests of every served version and on the same requests cut short or with bytes changed:
both give the same request, or both refuse it."""

from __future__ import annotations

import datetime
import importlib
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from decoder_reference import (  # (tests/unit/wire)
    NULL,
    UNKNOWN_TAG,
    assert_decodes_as_kio,
    by_kio,
    damaged,
    kio_entity_of,
)
from wire.errors import RequestDecodeError
from wire.fetch_request import VERSIONS, decode_fetch_request
from wire.messages import encode_request

Partition = tuple[int, int, int, int, int, int, "uuid.UUID | None"]



def _kio_request(version: int, replica_id: int, replica_epoch: int, max_wait_ms: int, min_bytes: int, max_bytes: int,
                 isolation_level: int, session_id: int, session_epoch: int,
                 topics: list[tuple[str, uuid.UUID | None, list[Partition]]],
                 forgotten: list[tuple[str, uuid.UUID | None, list[int]]], rack_id: str, cluster_id: str | None) -> Any:
    m = importlib.import_module(f"kio.schema.fetch.v{version}.request")
    extra: dict[str, Any] = {}
    if version >= 15:
        extra["replica_state"] = m.ReplicaState(replica_id=replica_id, replica_epoch=replica_epoch)
    return kio_entity_of(
        m.FetchRequest, replica_id=replica_id, max_wait=datetime.timedelta(milliseconds=max_wait_ms),
        min_bytes=min_bytes, max_bytes=max_bytes, isolation_level=isolation_level, session_id=session_id,
        session_epoch=session_epoch, rack_id=rack_id, cluster_id=cluster_id, **extra,
        topics=tuple(kio_entity_of(m.FetchTopic, topic=name, topic_id=topic_id, partitions=tuple(
            kio_entity_of(m.FetchPartition, partition=p, current_leader_epoch=cle, fetch_offset=fo, last_fetched_epoch=lfe,
                   log_start_offset=lso, partition_max_bytes=pmb, replica_directory_id=directory)
            for p, cle, fo, lfe, lso, pmb, directory in partitions)) for name, topic_id, partitions in topics),
        forgotten_topics_data=tuple(kio_entity_of(m.ForgottenTopic, topic=name, topic_id=topic_id, partitions=tuple(ps))
                                    for name, topic_id, ps in forgotten) if version >= 7 else ())


def _normal(request: Any) -> tuple[Any, ...]:
    """A request, kio's or the hand-written decoder's, as plain values (a field its version
    lacks at Kafka's default)."""
    state = getattr(request, "replica_state", None)
    max_wait = request.max_wait // datetime.timedelta(milliseconds=1) if hasattr(request, "max_wait") \
        else request.max_wait_ms
    return (
        state.replica_id if state is not None else request.replica_id,
        state.replica_epoch if state is not None else getattr(request, "replica_epoch", -1),
        max_wait, request.min_bytes, request.max_bytes, request.isolation_level,
        getattr(request, "session_id", 0), getattr(request, "session_epoch", -1),
        [(getattr(t, "topic", None), getattr(t, "topic_id", None),
          [(p.partition, getattr(p, "current_leader_epoch", -1), p.fetch_offset, getattr(p, "last_fetched_epoch", -1),
            getattr(p, "log_start_offset", -1), p.partition_max_bytes, getattr(p, "replica_directory_id", None))
           for p in t.partitions]) for t in request.topics],
        [(getattr(t, "topic", None), getattr(t, "topic_id", None), list(t.partitions))
         for t in getattr(request, "forgotten_topics_data", ())],
        getattr(request, "rack_id", ""), getattr(request, "cluster_id", None),
    )


def _by_kio(version: int, body: bytes | memoryview) -> Any:
    """The old path: the bounds walk, then kio's reader; None when either refuses."""
    entity = by_kio(1, version, body)
    if entity is None or isinstance(entity, str):  # a refusal, or UNKNOWN_TAG or NULL
        return entity
    forgotten = getattr(entity, "forgotten_topics_data", ())
    if entity.topics is None or forgotten is None or getattr(entity, "rack_id", "") is None:
        return None
    if any(t.partitions is None or getattr(t, "topic", "") is None for t in entity.topics) or any(
            t.partitions is None or getattr(t, "topic", "") is None for t in forgotten):
        # kio reads a null array or name where the schema allows none; the handler then failed
        # on it and the connection closed. Kafka refuses them while parsing.
        return None
    return _normal(entity)


# NULL: kio reads the ClusterId tag (v12+) as a string that cannot be null, where Kafka's schema
# has "nullableVersions": "12+"; the hand-written decoder takes a null there as Kafka does (see
# test_a_null_cluster_id_is_taken), and refuses a null topic name as both do.


def _by_hand(version: int, body: bytes | memoryview) -> Any:
    try:
        return _normal(decode_fetch_request(version, body, 0))
    except RequestDecodeError:
        return None


ints32 = st.integers(-(2**31), 2**31 - 1)
ints64 = st.integers(-(2**63), 2**63 - 1)
names = st.text(min_size=0, max_size=8)
ids = st.none() | st.uuids()
partitions = st.tuples(ints32, ints32, ints64, ints32, ints64, ints32, ids)


@st.composite
def requests(draw: st.DrawFn) -> tuple[Any, ...]:
    version = draw(st.sampled_from(VERSIONS))
    by_id = version >= 13
    topic = st.tuples(st.just("") if by_id else names, ids if by_id else st.none(),
                      st.lists(partitions, max_size=3))
    forgotten = st.tuples(st.just("") if by_id else names, ids if by_id else st.none(), st.lists(ints32, max_size=3))
    return (version, draw(ints32), draw(ints64), draw(ints32), draw(ints32), draw(ints32), draw(st.integers(0, 1)),
            draw(ints32), draw(ints32), draw(st.lists(topic, max_size=3)),
            draw(st.lists(forgotten, max_size=2)) if version >= 7 else [], draw(names), draw(st.none() | names))


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(requests())
def test_valid_requests_decode_as_kio_decodes_them(request: tuple[Any, ...]) -> None:
    version, *fields = request
    assert_decodes_as_kio(_by_kio, _by_hand, version, encode_request(_kio_request(version, *fields)))


@settings(max_examples=2000, suppress_health_check=[HealthCheck.too_slow])
@given(requests(), st.data())
def test_damaged_requests_are_refused_or_read_as_kio_reads_them(request: tuple[Any, ...], data: st.DataObject) -> None:
    version, *fields = request
    frozen = damaged(encode_request(_kio_request(version, *fields)), data)
    expected, got = _by_kio(version, frozen), _by_hand(version, frozen)
    if expected == NULL:  # a null name is refused; a null ClusterId is Kafka's default
        assert got is None or got[-1] is None
    elif expected != UNKNOWN_TAG:  # kio stopped at the tag: it says nothing about the rest
        assert got == expected


def test_unknown_tagged_fields_are_skipped() -> None:
    """Unknown tags on a partition, a topic, a forgotten topic, ReplicaState and the request, beside
    the known ones (v17)."""
    directory = uuid.UUID(int=7)
    body = (b"\x00\x00\x01\xf4" + b"\x00\x00\x00\x01" + b"\x00\x10\x00\x00" + b"\x01"  # max wait, min, max bytes, level
            + b"\x00\x00\x00\x05" + b"\x00\x00\x00\x02"  # session 5, epoch 2
            + b"\x02" + uuid.UUID(int=1).bytes + b"\x02"  # one topic (by id), one partition:
            + b"\x00\x00\x00\x03" + b"\xff\xff\xff\xff" + (9).to_bytes(8, "big") + b"\xff\xff\xff\xff"
            + (4).to_bytes(8, "big", signed=True) + b"\x00\x10\x00\x00"
            + b"\x02" + b"\x00\x10" + directory.bytes + b"\x07\x02ab"  # its tags: directory id, tag 7
            + b"\x01\x08\x00"  # the topic's: tag 8
            + b"\x02" + uuid.UUID(int=2).bytes + b"\x02" + b"\x00\x00\x00\x04" + b"\x01\x09\x01\xff"  # forgotten
            + b"\x03rk"  # rack id
            + b"\x03" + b"\x00\x03\x03ci" + b"\x01\x0f" + b"\x00\x00\x00\x06" + (8).to_bytes(8, "big")
            + b"\x01\x05\x00" + b"\x0a\x00")  # the request's: cluster id, replica state (with tag 5), tag 10
    request = decode_fetch_request(17, body, 0)
    assert _normal(request) == (
        6, 8, 500, 1, 1 << 20, 1, 5, 2,
        [(None, uuid.UUID(int=1), [(3, -1, 9, -1, 4, 1 << 20, directory)])],
        [(None, uuid.UUID(int=2), [4])], "rk", "ci")
    with pytest.raises(RequestDecodeError, match="the request's tagged fields: truncated varint"):
        decode_fetch_request(17, body[:-1], 0)


def test_a_null_cluster_id_is_taken() -> None:
    body = bytes(25) + b"\x01\x01\x01" + b"\x01\x00\x01\x00"  # no topics, forgotten ones, rack; tag 0: null
    assert decode_fetch_request(12, body, 0).cluster_id is None
    assert decode_fetch_request(12, body[:-2] + b"\x02\x02c", 0).cluster_id == "c"


@pytest.mark.parametrize("version", [4, 11, 12, 13, 17])
def test_a_declared_count_the_bytes_cannot_hold_is_refused_before_anything_is_built(version: int) -> None:
    head = (b"" if version >= 15 else b"\xff\xff\xff\xff") + bytes(13) + (bytes(8) if version >= 7 else b"")
    count = b"\xff\xff\xff\x7f" if version >= 12 else b"\x7f\xff\xff\xff"  # 2^28-2 or 2^31-1 topics in 0 bytes
    with pytest.raises(RequestDecodeError, match="topics declares .* entries in 0 bytes"):
        decode_fetch_request(version, head + count, 0)
