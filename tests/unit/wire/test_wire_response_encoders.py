"""The hand-written Produce/Fetch encoders are byte-identical to kio's.

Fetch record data may be buffers or opaque regions (anything with `__len__`,
like the service's FileRegion over a segment file): regions come back as
parts untouched, and with their bytes put in place the body equals kio's.
"""

from __future__ import annotations

import datetime
import importlib
import uuid
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.static.primitive import i32Timedelta

from decoder_reference import kio_entity_of
from wire.messages import decode_response, encode_response
from wire.response_encoders import (
    FETCH_VERSIONS,
    PRODUCE_VERSIONS,
    FetchPartitionData,
    FetchTopicData,
    ProducePartitionResult,
    ProduceTopicResult,
    encode_fetch_response,
    encode_idle_fetch_partition,
    encode_produce_one_partition,
    encode_produce_response,
    fetch_response_size,
)



def _ts(ms: int) -> datetime.datetime | None:
    if ms < 0:
        return None
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.timezone.utc)


def _throttle(ms: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=ms))


def _endpoints(m: Any, eps: list[tuple[int, str, int, str | None]]) -> tuple[Any, ...]:
    return tuple(kio_entity_of(m.NodeEndpoint, node_id=n, host=h, port=p, rack=r) for n, h, p, r in eps)


def kio_produce(version: int, topics: list[ProduceTopicResult], throttle: int, eps: list) -> bytes:
    m = importlib.import_module(f"kio.schema.produce.v{version}.response")
    responses = []
    for t in topics:
        parts = []
        for p in t.partitions:
            kw: dict[str, Any] = dict(
                index=p.index,
                error_code=KioErrorCode(p.error_code),
                base_offset=p.base_offset,
                log_append_time=_ts(p.log_append_time_ms),
                log_start_offset=p.log_start_offset,
                error_message=p.error_message,
            )
            if hasattr(m, "BatchIndexAndErrorMessage"):
                kw["record_errors"] = tuple(
                    m.BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=msg)
                    for i, msg in p.record_errors
                )
            if hasattr(m, "LeaderIdAndEpoch"):
                leader = p.current_leader or (-1, -1)
                kw["current_leader"] = m.LeaderIdAndEpoch(leader_id=leader[0], leader_epoch=leader[1])
            parts.append(kio_entity_of(m.PartitionProduceResponse, **kw))
        responses.append(
            kio_entity_of(m.TopicProduceResponse, name=t.name, topic_id=t.topic_id, partition_responses=tuple(parts))
        )
    kw = dict(responses=tuple(responses), throttle_time=_throttle(throttle))
    if hasattr(m, "NodeEndpoint"):
        kw["node_endpoints"] = _endpoints(m, eps)
    return encode_response(kio_entity_of(m.ProduceResponse, **kw))


class Region:
    """An opaque stand-in for a file region: a length, and bytes only the test can reach."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"Region({self._data!r})"


def _bytes_of(part: Any) -> bytes:
    """What the service would send for a part: a region's bytes, or the buffer itself."""
    return part._data if isinstance(part, Region) else bytes(part)


def join_parts(parts: list[Any]) -> bytes:
    return b"".join(_bytes_of(p) for p in parts)


def kio_fetch(version: int, topics: list[FetchTopicData], throttle: int, error: int, session: int, eps: list) -> bytes:
    m = importlib.import_module(f"kio.schema.fetch.v{version}.response")
    responses = []
    for t in topics:
        parts = []
        for p in t.partitions:
            kw: dict[str, Any] = dict(
                partition_index=p.partition_index,
                error_code=KioErrorCode(p.error_code),
                high_watermark=p.high_watermark,
                last_stable_offset=p.last_stable_offset,
                log_start_offset=p.log_start_offset,
                aborted_transactions=None
                if p.aborted_transactions is None
                else tuple(m.AbortedTransaction(producer_id=a, first_offset=b) for a, b in p.aborted_transactions),
                preferred_read_replica=p.preferred_read_replica,
                records=None if p.records is None else join_parts(list(p.records)),
            )
            if hasattr(m, "EpochEndOffset"):
                e = p.diverging_epoch or (-1, -1)
                kw["diverging_epoch"] = m.EpochEndOffset(epoch=e[0], end_offset=e[1])
                c = p.current_leader or (-1, -1)
                kw["current_leader"] = m.LeaderIdAndEpoch(leader_id=c[0], leader_epoch=c[1])
                s = p.snapshot_id or (-1, -1)
                kw["snapshot_id"] = m.SnapshotId(end_offset=s[0], epoch=s[1])
            parts.append(kio_entity_of(m.PartitionData, **kw))
        responses.append(kio_entity_of(m.FetchableTopicResponse, topic=t.topic, topic_id=t.topic_id, partitions=tuple(parts)))
    kw = dict(
        throttle_time=_throttle(throttle),
        error_code=KioErrorCode(error),
        session_id=session,
        responses=tuple(responses),
    )
    if hasattr(m, "NodeEndpoint"):
        kw["node_endpoints"] = _endpoints(m, eps)
    return encode_response(kio_entity_of(m.FetchResponse, **kw))


_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz._-0123456789", min_size=1, max_size=20)
_opt_text = st.none() | st.text(max_size=12)
_i32 = st.integers(-(2**31), 2**31 - 1)
_i64 = st.integers(-1, 2**62)
_pair32 = st.none() | st.tuples(_i32, _i32)
_errors = st.sampled_from([0, 1, 2, 3, 6, 10, 43, 87, -1])
_endpoint = st.tuples(st.integers(0, 1000), _names, st.integers(1, 65535), st.none() | _names)

produce_partitions = st.builds(
    ProducePartitionResult,
    index=st.integers(0, 10_000),
    error_code=_errors,
    base_offset=_i64,
    log_append_time_ms=st.sampled_from([-1, 0, 1_700_000_000_123]),
    log_start_offset=_i64,
    record_errors=st.lists(st.tuples(st.integers(0, 100), _opt_text), max_size=3),
    error_message=_opt_text,
    current_leader=_pair32,
)
produce_topics = st.lists(
    st.builds(
        ProduceTopicResult,
        name=_names,
        partitions=st.lists(produce_partitions, max_size=3),
        topic_id=st.uuids(),
    ),
    max_size=3,
)


@pytest.mark.parametrize("version", range(PRODUCE_VERSIONS[0], PRODUCE_VERSIONS[1] + 1))
@settings(max_examples=25, deadline=None)
@given(topics=produce_topics, throttle=st.integers(0, 10_000), eps=st.lists(_endpoint, max_size=2))
def test_produce_response_matches_kio(version: int, topics: list, throttle: int, eps: list) -> None:
    ours = encode_produce_response(version, topics, throttle_time_ms=throttle, node_endpoints=eps)
    assert ours == kio_produce(version, topics, throttle, eps)


@pytest.mark.parametrize("version", range(PRODUCE_VERSIONS[0], PRODUCE_VERSIONS[1] + 1))
@settings(max_examples=40, deadline=None)
@given(name=_names, partition=produce_partitions, usual=st.booleans(), throttle=st.integers(0, 10_000))
def test_one_partition_produce_response_matches_the_general_one(version: int, name: str, partition: Any,
                                                               usual: bool, throttle: int) -> None:
    """The one-partition encoder, on the usual answer (no record errors, message or leader) and
    on any other: the general encoder's bytes, which the test above holds to kio's."""
    if usual:
        partition = msgspec.structs.replace(partition, record_errors=[], error_message=None, current_leader=None)
    ours = encode_produce_one_partition(version, name, partition, throttle)
    assert ours == encode_produce_response(version, [ProduceTopicResult(name, [partition])], throttle_time_ms=throttle)



_record_data = st.binary(max_size=40) | st.binary(max_size=40).map(Region)
_record_parts = st.none() | st.lists(_record_data, max_size=3)
fetch_partitions = st.builds(
    FetchPartitionData,
    partition_index=st.integers(0, 10_000),
    error_code=_errors,
    high_watermark=_i64,
    last_stable_offset=_i64,
    log_start_offset=_i64,
    aborted_transactions=st.none() | st.lists(st.tuples(_i64, _i64), max_size=3),
    preferred_read_replica=st.sampled_from([-1, 0, 1]),
    records=_record_parts,
    diverging_epoch=st.none() | st.tuples(_i32, _i64),
    current_leader=_pair32,
    snapshot_id=st.none() | st.tuples(_i64, _i32),
)
fetch_topics = st.lists(
    st.builds(FetchTopicData, topic=_names, partitions=st.lists(fetch_partitions, max_size=3), topic_id=st.uuids()),
    max_size=3,
)


@pytest.mark.parametrize("version", range(FETCH_VERSIONS[0], FETCH_VERSIONS[1] + 1))
@settings(max_examples=25, deadline=None)
@given(
    topics=fetch_topics,
    throttle=st.integers(0, 10_000),
    error=_errors,
    session=_i32,
    eps=st.lists(_endpoint, max_size=2),
)
def test_fetch_response_matches_kio(version: int, topics: list, throttle: int, error: int, session: int, eps: list) -> None:
    parts = encode_fetch_response(
        version, topics, throttle_time_ms=throttle, error_code=error, session_id=session, node_endpoints=eps
    )
    body = join_parts(parts)
    assert fetch_response_size(parts) == len(body)
    assert body == kio_fetch(version, topics, throttle, error, session, eps)
    # Every non-empty record object is a part of its own, the same object; nothing else is opaque.
    records = [r for t in topics for p in t.partitions for r in (p.records or ()) if len(r)]
    passed = [q for q in parts if any(q is r for r in records)]
    assert len(passed) == len(records)
    assert all(isinstance(q, (bytes, bytearray, memoryview)) for q in parts if not isinstance(q, Region))


@pytest.mark.parametrize("version", range(FETCH_VERSIONS[0], FETCH_VERSIONS[1] + 1))
def test_idle_partitions_match_kio(version: int) -> None:
    # Partitions with nothing but offsets (no records, no aborted transactions, no tagged
    # fields): flexible versions write each in one piece. Null and empty aborted lists differ.
    idle = [FetchPartitionData(p, error_code=6 if p == 2 else 0, high_watermark=100 + p, last_stable_offset=90 + p,
                               log_start_offset=p, aborted_transactions=None if p % 2 else [],
                               preferred_read_replica=-1, records=()) for p in range(4)]
    topics = [FetchTopicData("t", idle, uuid.UUID(int=7))]
    parts = encode_fetch_response(version, topics, session_id=5)
    assert join_parts(parts) == kio_fetch(version, topics, 0, 0, 5, [])
    # The same partitions encoded ahead (encode_idle_fetch_partition), between others that are not.
    busy = FetchPartitionData(9, high_watermark=5, last_stable_offset=5, log_start_offset=0,
                              aborted_transactions=[(1, 2)], records=[b"\x01\x02"])
    ahead: list[FetchPartitionData | bytes] = [
        encode_idle_fetch_partition(version, p.partition_index, p.error_code, p.high_watermark, p.last_stable_offset,
                                    p.log_start_offset, p.aborted_transactions is None) for p in idle]
    ahead.insert(2, busy)
    expected = [FetchTopicData("t", idle[:2] + [busy] + idle[2:], uuid.UUID(int=7))]
    parts = encode_fetch_response(version, [FetchTopicData("t", ahead, uuid.UUID(int=7))], session_id=5)
    assert join_parts(parts) == kio_fetch(version, expected, 0, 0, 5, [])


def test_fetch_records_are_passed_through_without_copy() -> None:
    big = bytearray(b"x" * 100_000)
    view = memoryview(big)[10:90_010]
    parts = encode_fetch_response(
        12, [FetchTopicData("t", [FetchPartitionData(0, high_watermark=5, records=[view])])]
    )
    assert any(p is view for p in parts)
    body = b"".join(bytes(p) for p in parts)
    decoded = decode_response(1, 12, body)
    assert decoded.responses[0].partitions[0].records == bytes(view)


def test_record_size_counts_bytes_not_items() -> None:
    wide = memoryview(bytearray(range(16))).cast("I")  # 4 items of 4 bytes
    parts = encode_fetch_response(12, [FetchTopicData("t", [FetchPartitionData(0, records=[wide])])])
    assert fetch_response_size(parts) == len(join_parts(parts))
    assert decode_response(1, 12, join_parts(parts)).responses[0].partitions[0].records == bytes(range(16))


@pytest.mark.parametrize("version", range(FETCH_VERSIONS[0], FETCH_VERSIONS[1] + 1))
def test_fetch_with_region_decodes_with_kio(version: int) -> None:
    """A service-shaped response (leader, no tagged fields) with one partition's records in a region."""
    tid_a, tid_b = uuid.uuid4(), uuid.uuid4()
    region = Region(b"PAYLOAD-FROM-FILE")
    topics = [
        FetchTopicData("alpha", [
            FetchPartitionData(0, 0, 10, 9, 2, [(7, 3), (8, 5)], records=[b"\x01\x02\x03"]),
            FetchPartitionData(1, 1, -1, -1, -1, None, records=()),
        ], tid_a),
        FetchTopicData("beta", [FetchPartitionData(3, 0, 100, 100, 0, None, records=[region])], tid_b),
    ]
    parts = encode_fetch_response(version, topics)
    assert sum(1 for p in parts if p is region) == 1
    data = join_parts(parts)
    assert fetch_response_size(parts) == len(data)
    resp = decode_response(1, version, data)
    decoded = resp.responses
    assert len(decoded) == 2
    if version >= 13:
        assert (decoded[0].topic_id, decoded[1].topic_id) == (tid_a, tid_b)
    else:
        assert (decoded[0].topic, decoded[1].topic) == ("alpha", "beta")
    p0, p1 = decoded[0].partitions
    assert (p0.partition_index, p0.error_code, p0.high_watermark, p0.last_stable_offset) == (0, 0, 10, 9)
    assert bytes(p0.records) == b"\x01\x02\x03"
    assert [(t.producer_id, t.first_offset) for t in p0.aborted_transactions] == [(7, 3), (8, 5)]
    if version >= 5:
        assert p0.log_start_offset == 2
    assert p1.error_code == 1 and p1.aborted_transactions is None and not p1.records
    p2 = decoded[1].partitions[0]
    assert p2.partition_index == 3 and bytes(p2.records) == b"PAYLOAD-FROM-FILE"


def test_produce_v13_uses_topic_id() -> None:
    tid = uuid.uuid4()
    body = encode_produce_response(13, [ProduceTopicResult("ignored", [ProducePartitionResult(0)], topic_id=tid)])
    decoded = decode_response(0, 13, body)
    assert decoded.responses[0].topic_id == tid


def test_versions_outside_range_rejected() -> None:
    with pytest.raises(ValueError):
        encode_produce_response(2, [])
    with pytest.raises(ValueError):
        encode_fetch_response(18, [])
