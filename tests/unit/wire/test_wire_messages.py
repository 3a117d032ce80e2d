"""Message bodies through kio (and the hand-written Produce decoder): decode requests,
encode responses, unknown APIs."""

from __future__ import annotations

import datetime
import importlib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.index import api_key_map
from kio.static.primitive import Records, i32Timedelta

from wire.api_versions import unsupported_api_versions_response
from wire.errors import ErrorCode, RequestDecodeError, UnsupportedApiError
from wire.headers import encode_request_header, parse_request_header
from wire.messages import (
    _CONSUMER_CODECS,
    ApiKey,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    kio_version_range,
    request_class,
    response_class,
)
from wire.records import Record, build_batch

from decoder_reference import kio_from_ours  # (tests/unit/wire)
from test_api_versions import _kio_request as _kio_api_versions_request
from test_fetch_request import _kio_request as _kio_fetch_request
from test_metadata_request import _kio_request as _kio_metadata_request

# kio has no hypothesis hook for its opaque record bytes.
st.register_type_strategy(Records, st.binary(max_size=64))

# What the broker advertises (the service owns the final table).
ADVERTISED = {
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.METADATA: (0, 12),
    ApiKey.PRODUCE: (3, 11),
    ApiKey.FETCH: (4, 17),
    ApiKey.LIST_OFFSETS: (1, 9),
    ApiKey.DELETE_RECORDS: (0, 2),
    ApiKey.CREATE_TOPICS: (2, 7),
    ApiKey.DELETE_TOPICS: (1, 6),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.DESCRIBE_CONFIGS: (1, 4),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.DESCRIBE_CLUSTER: (0, 1),
    ApiKey.DESCRIBE_LOG_DIRS: (1, 4),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: (2, 4),
}
ADVERTISED_VERSIONS = [(k, v) for k, (lo, hi) in ADVERTISED.items() for v in range(lo, hi + 1)]


def test_api_key_names_match_kio_index() -> None:
    for key, name in api_key_map.items():
        assert ApiKey(key).name == name.upper()
    assert (ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.METADATA) == (0, 1, 2, 3)
    assert ApiKey.API_VERSIONS == 18 and ApiKey.CONTROLLED_SHUTDOWN == 7


@pytest.mark.parametrize(("key", "version"), ADVERTISED_VERSIONS)
def test_every_advertised_version_has_schemas(key: int, version: int) -> None:
    req = request_class(key, version)
    resp = response_class(key, version)
    assert (req.__api_key__, req.__version__) == (key, version)
    assert (resp.__api_key__, resp.__version__) == (key, version)
    lo, hi = kio_version_range(key)
    assert lo <= version <= hi


@pytest.mark.parametrize(("key", "version"), ADVERTISED_VERSIONS)
@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_advertised_requests_round_trip(key: int, version: int, data: st.DataObject) -> None:
    cls = request_class(key, version)
    entity = data.draw(st.from_type(cls))
    body = encode_request(entity)
    frame = encode_request_header(key, version, 5, "client") + body
    header, offset = parse_request_header(frame)
    decoded = decode_request(header, frame, offset)
    if key == ApiKey.PRODUCE:  # the hand-written decoders: kio's fields under the handler's names
        decoded = _as_kio_produce(decoded, cls)
    elif key == ApiKey.FETCH:
        decoded = _as_kio_fetch(decoded, version)
    elif key == ApiKey.METADATA:
        decoded = _kio_metadata_request(
            version, None if decoded.topics is None else [(t.topic_id, t.name) for t in decoded.topics],
            decoded.allow_auto_topic_creation, decoded.include_cluster_authorized_operations,
            decoded.include_topic_authorized_operations)
    elif key == ApiKey.API_VERSIONS:
        decoded = _kio_api_versions_request(version, decoded.client_software_name, decoded.client_software_version)
    elif key in _CONSUMER_CODECS:
        decoded = kio_from_ours(decoded, cls)
    assert decoded == entity


def _as_kio_produce(request: Any, cls: type[Any]) -> Any:
    m = importlib.import_module(cls.__module__)
    return cls(transactional_id=request.transactional_id, acks=request.acks,
               timeout=datetime.timedelta(milliseconds=request.timeout_ms),
               topic_data=tuple(m.TopicProduceData(name=t.name, partition_data=tuple(
                   m.PartitionProduceData(index=p.index, records=p.records) for p in t.partition_data))
                   for t in request.topic_data))


def _as_kio_fetch(request: Any, version: int) -> Any:
    return _kio_fetch_request(
        version, request.replica_id, request.replica_epoch, request.max_wait_ms, request.min_bytes, request.max_bytes,
        request.isolation_level, request.session_id, request.session_epoch,
        [(t.topic, t.topic_id, [(p.partition, p.current_leader_epoch, p.fetch_offset, p.last_fetched_epoch,
                                 p.log_start_offset, p.partition_max_bytes, p.replica_directory_id)
                                for p in t.partitions]) for t in request.topics],
        [(t.topic, t.topic_id, list(t.partitions)) for t in request.forgotten_topics_data], request.rack_id,
        request.cluster_id)


@pytest.mark.parametrize(("key", "version"), ADVERTISED_VERSIONS)
@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_advertised_responses_round_trip(key: int, version: int, data: st.DataObject) -> None:
    entity = data.draw(st.from_type(response_class(key, version)))
    assert decode_response(key, version, encode_response(entity)) == entity


def test_librdkafka_api_versions_v3_request() -> None:
    frame = bytes.fromhex("0012000300000001000772646b61666b6100") + b"\x0blibrdkafka\x062.3.0\x00"
    header, offset = parse_request_header(frame)
    req = decode_request(header, frame, offset)
    assert (req.client_software_name, req.client_software_version) == ("librdkafka", "2.3.0")


def test_api_versions_v0_request_has_empty_body() -> None:
    frame = encode_request_header(18, 0, 9, "kafka-python")
    header, offset = parse_request_header(frame)
    assert type(decode_request(header, frame, offset)).__name__ == "ApiVersionsRequest"


@pytest.mark.parametrize("version", [3, 7, 9, 11])
def test_produce_records_stay_bytes(version: int) -> None:
    batch = build_batch([Record(0, 1, b"k", b"v"), Record(1, 2, None, b"w")])
    m = importlib.import_module(f"kio.schema.produce.v{version}.request")
    req = m.ProduceRequest(
        transactional_id=None,
        acks=-1,
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
        topic_data=(m.TopicProduceData(name="t", partition_data=(m.PartitionProduceData(index=0, records=batch),)),),
    )
    frame = encode_request_header(0, version, 1, "p") + encode_request(req)
    header, offset = parse_request_header(frame)
    records = decode_request(header, frame, offset).topic_data[0].partition_data[0].records
    assert type(records) is bytes and records == batch


def test_unsupported_api_versions_response_is_v0_body() -> None:
    body = unsupported_api_versions_response({18: (0, 4), 0: (3, 11)})
    decoded = decode_response(18, 0, body)
    assert decoded.error_code == ErrorCode.UNSUPPORTED_VERSION == 35
    assert [(a.api_key, a.min_version, a.max_version) for a in decoded.api_keys] == [(0, 3, 11), (18, 0, 4)]
    assert body == b"\x00\x23\x00\x00\x00\x02\x00\x00\x00\x03\x00\x0b\x00\x12\x00\x00\x00\x04"


@pytest.mark.parametrize(("key", "version"), [(0, 2), (1, 99), (4, 0), (1000, 0)])
def test_unknown_api_or_version_is_unsupported(key: int, version: int) -> None:
    with pytest.raises(UnsupportedApiError):
        request_class(key, version)
    frame = encode_request_header(key, version, 1, "x")
    header, offset = parse_request_header(frame)
    with pytest.raises(UnsupportedApiError):
        decode_request(header, frame, offset)


def test_truncated_body_is_request_decode_error() -> None:
    frame = encode_request_header(3, 12, 1, "x") + b"\x02\x00"
    header, offset = parse_request_header(frame)
    with pytest.raises(RequestDecodeError):
        decode_request(header, frame, offset)
