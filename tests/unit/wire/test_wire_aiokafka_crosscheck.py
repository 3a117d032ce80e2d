"""Cross-check messages against aiokafka's independent protocol code.

aiokafka hand-writes its request/response schemas (non-flexible versions
only), so it checks both kio and our fast encoders from outside: requests a
real client encodes decode here, and responses we encode decode there.
"""

from __future__ import annotations

from typing import Any

import pytest
from aiokafka.protocol import fetch as aio_fetch
from aiokafka.protocol import metadata as aio_metadata
from aiokafka.protocol import produce as aio_produce
from aiokafka.protocol.api import RequestHeader_v1
from hypothesis import given, settings
from hypothesis import strategies as st

from wire.headers import parse_request_header
from wire.messages import decode_request
from wire.records import Record, build_batch
from wire.response_encoders import (
    FetchPartitionData,
    FetchTopicData,
    ProducePartitionResult,
    ProduceTopicResult,
    encode_fetch_response,
    encode_produce_response,
)


def _client_frame(request: Any, correlation_id: int = 11) -> bytes:
    return RequestHeader_v1(request, correlation_id=correlation_id, client_id="aiokafka-test").encode() + request.encode()


@pytest.mark.parametrize("version", range(3, 9))
def test_aiokafka_produce_request_decodes(version: int) -> None:
    batch = build_batch([Record(0, 10, b"k", b"v"), Record(1, 11, None, None, [("h", None)])])
    cls = getattr(aio_produce, f"ProduceRequest_v{version}")
    request = cls("txn-1", -1, 30_000, [("topic-a", [(0, batch), (3, None)])])
    frame = _client_frame(request)
    header, offset = parse_request_header(frame)
    assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (0, version, 11, "aiokafka-test")
    decoded = decode_request(header, frame, offset)
    assert decoded.transactional_id == "txn-1" and decoded.acks == -1
    assert decoded.timeout_ms == 30_000
    topic = decoded.topic_data[0]
    assert topic.name == "topic-a"
    assert [(p.index, p.records) for p in topic.partition_data] == [(0, batch), (3, None)]


@pytest.mark.parametrize("version", range(0, 6))
def test_aiokafka_metadata_request_decodes(version: int) -> None:
    cls = getattr(aio_metadata, f"MetadataRequest_v{version}")
    args: list[Any] = [["a", "b"]]
    if version >= 4:
        args.append(True)
    request = cls(*args)
    frame = _client_frame(request)
    header, offset = parse_request_header(frame)
    decoded = decode_request(header, frame, offset)
    assert [t.name for t in decoded.topics] == ["a", "b"]


_opt_text = st.none() | st.text(max_size=10)
produce_parts = st.lists(
    st.builds(
        ProducePartitionResult,
        index=st.integers(0, 1000),
        error_code=st.sampled_from([0, 2, 3, 10, 87]),
        base_offset=st.integers(-1, 2**50),
        log_append_time_ms=st.sampled_from([-1, 1_700_000_000_000]),
        log_start_offset=st.integers(-1, 2**50),
        record_errors=st.lists(st.tuples(st.integers(0, 50), _opt_text), max_size=2),
        error_message=_opt_text,
    ),
    max_size=3,
)


@pytest.mark.parametrize("version", range(3, 9))
@settings(max_examples=20, deadline=None)
@given(topics=st.lists(st.tuples(st.text(min_size=1, max_size=10), produce_parts), max_size=3), throttle=st.integers(0, 5000))
def test_fast_produce_response_decodes_in_aiokafka(version: int, topics: list, throttle: int) -> None:
    body = encode_produce_response(version, [ProduceTopicResult(n, ps) for n, ps in topics], throttle_time_ms=throttle)
    decoded = getattr(aio_produce, f"ProduceResponse_v{version}").decode(body)

    def expected(p: ProducePartitionResult) -> tuple:
        row: tuple = (p.index, p.error_code, p.base_offset, p.log_append_time_ms)
        if version >= 5:
            row += (p.log_start_offset,)
        if version >= 8:
            row += ([tuple(e) for e in p.record_errors], p.error_message)
        return row

    assert [(t, [tuple(p) for p in ps]) for t, ps in decoded.topics] == [
        (n, [expected(p) for p in ps]) for n, ps in topics
    ]
    assert decoded.throttle_time_ms == throttle


fetch_parts = st.lists(
    st.builds(
        FetchPartitionData,
        partition_index=st.integers(0, 1000),
        error_code=st.sampled_from([0, 1, 3]),
        high_watermark=st.integers(-1, 2**50),
        last_stable_offset=st.integers(-1, 2**50),
        log_start_offset=st.integers(-1, 2**50),
        aborted_transactions=st.none() | st.lists(st.tuples(st.integers(0, 2**40), st.integers(0, 2**40)), max_size=2),
        preferred_read_replica=st.just(-1),
        records=st.none() | st.lists(st.binary(min_size=1, max_size=30), min_size=1, max_size=3),
    ),
    max_size=3,
)


@pytest.mark.parametrize("version", range(4, 12))
@settings(max_examples=20, deadline=None)
@given(topics=st.lists(st.tuples(st.text(min_size=1, max_size=10), fetch_parts), max_size=3), session=st.integers(0, 2**31 - 1))
def test_fast_fetch_response_decodes_in_aiokafka(version: int, topics: list, session: int) -> None:
    parts = encode_fetch_response(version, [FetchTopicData(n, ps) for n, ps in topics], session_id=session, throttle_time_ms=7)
    decoded = getattr(aio_fetch, f"FetchResponse_v{version}").decode(b"".join(bytes(p) for p in parts))

    def expected(p: FetchPartitionData) -> tuple:
        row: tuple = (p.partition_index, p.error_code, p.high_watermark, p.last_stable_offset)
        if version >= 5:
            row += (p.log_start_offset,)
        row += (None if p.aborted_transactions is None else [tuple(a) for a in p.aborted_transactions],)
        if version >= 11:
            row += (p.preferred_read_replica,)
        row += (None if p.records is None else b"".join(p.records),)
        return row

    assert [(t, [tuple(p) for p in ps]) for t, ps in decoded.topics] == [
        (n, [expected(p) for p in ps]) for n, ps in topics
    ]
    assert decoded.throttle_time_ms == 7
    if version >= 7:
        assert (decoded.error_code, decoded.session_id) == (0, session)
