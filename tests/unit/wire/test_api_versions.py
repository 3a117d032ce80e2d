"""The hand-written ApiVersions codec against kio's, for every version 0-4, and v5 (KIP-1242,
which kio lacks) by its bytes.

The decoder against kio's path (the bounds walk, then kio's reader), on valid requests and on the
same requests cut short or with bytes changed: both give the same request, or both refuse it,
except where kio and Kafka differ (the decoder does as Kafka does): unknown tags. The encoder is
byte-identical to kio's writer, and kio's reader reads its bytes back as the response it was given.
"""

from __future__ import annotations

import datetime
import importlib
import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.serial import entity_writer
from kio.static.primitive import i32Timedelta
from msgspec.structs import replace

from decoder_reference import (  # (tests/unit/wire)
    NULL,
    UNKNOWN_TAG,
    assert_decodes_as_kio,
    by_kio,
    damaged,
    kio_entity_of,
)
from wire.api_versions import (
    KIO_VERSIONS,
    ApiVersion,
    ApiVersionsRequest,
    ApiVersionsResponse,
    FinalizedFeatureKey,
    SupportedFeatureKey,
    decode_api_versions_request,
    encode_api_versions_response,
    unsupported_api_versions_response,
)
from wire.errors import RequestDecodeError
from wire.messages import decode_response, encode_request



# -- the request -----------------------------------------------------------------


def _kio_request(version: int, client_software_name: str, client_software_version: str) -> Any:
    m = importlib.import_module(f"kio.schema.api_versions.v{version}.request")
    return kio_entity_of(m.ApiVersionsRequest, client_software_name=client_software_name,
                  client_software_version=client_software_version)


def _normal(request: Any) -> tuple[str, str]:
    """A request, kio's or the hand-written decoder's, as plain values (the fields v0-2 lack at
    Kafka's default for a string, "")."""
    return getattr(request, "client_software_name", ""), getattr(request, "client_software_version", "")


def _by_kio(version: int, body: bytes | memoryview) -> Any:
    """The old path: the bounds walk, then kio's reader; None when either refuses, else
    UNKNOWN_TAG or NULL for those refusals."""
    entity = by_kio(18, version, body)
    return entity if entity is None or isinstance(entity, str) else _normal(entity)


def _by_hand(version: int, body: bytes | memoryview) -> Any:
    try:
        return _normal(decode_api_versions_request(version, body, 0))
    except RequestDecodeError:
        return None


# Short names, and names of a two-byte compact length (most of 100+ characters take 128+ bytes).
texts = st.text(max_size=12) | st.text(min_size=100, max_size=130)
software = st.text(alphabet="abcdefghijklmnopqrstuvwxyz.-0123456789", max_size=20) | texts


@st.composite
def requests(draw: st.DrawFn, versions: st.SearchStrategy[int] = st.sampled_from(KIO_VERSIONS)) -> tuple[int, str, str]:
    return draw(versions), draw(software), draw(software)


# Damage to a v0-2 body (empty: whatever follows is ignored) says little; most damaged ones are v3-4.
mostly_flexible = st.sampled_from(KIO_VERSIONS) | st.sampled_from([3, 4])


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(requests())
def test_valid_requests_decode_as_kio_decodes_them(request: tuple[int, str, str]) -> None:
    version, *fields = request
    assert_decodes_as_kio(_by_kio, _by_hand, version, encode_request(_kio_request(version, *fields)))


@pytest.mark.parametrize("version", KIO_VERSIONS)
def test_every_version_at_an_offset_with_bytes_after_it(version: int) -> None:
    name, software_version = "librdkafka", "2.0.2-\u00e9" * 20  # a version longer than a one-byte length
    body = encode_request(_kio_request(version, name, software_version))
    request = decode_api_versions_request(version, b"\xee\xee" + body + b"trailing bytes", 2)
    assert request == (ApiVersionsRequest(name, software_version) if version >= 3 else ApiVersionsRequest("", ""))
    assert _normal(request) == _by_kio(version, body + b"trailing bytes")
    # (160 bytes: a compact length of 161, two bytes)
    assert body == (b"" if version < 3 else b"\x0blibrdkafka" + b"\xa1\x01" + software_version.encode() + b"\x00")


@settings(max_examples=2000, suppress_health_check=[HealthCheck.too_slow])
@given(requests(mostly_flexible), st.data())
def test_damaged_requests_are_refused_or_read_as_kio_reads_them(request: tuple[int, str, str],
                                                                 data: st.DataObject) -> None:
    version, *fields = request
    frozen = damaged(encode_request(_kio_request(version, *fields)), data)
    expected, got = _by_kio(version, frozen), _by_hand(version, frozen)
    if expected == NULL:  # a null name or version: refused both ways
        assert got is None
    elif expected != UNKNOWN_TAG:  # kio stopped at the tag: it says nothing about the rest
        assert got == expected


@pytest.mark.parametrize("version", [0, 1, 2])
def test_v0_to_v2_bodies_are_empty_whatever_follows(version: int) -> None:
    for body in (b"", b"\x00", b"\x03abc\x02x\x00", bytes(range(256))):
        assert decode_api_versions_request(version, body, 0) == ApiVersionsRequest("", "")
        assert _by_kio(version, body) == ("", "")


@pytest.mark.parametrize("version", [3, 4])
def test_unknown_tagged_fields_are_skipped(version: int) -> None:
    """ApiVersionsRequest defines no tagged field: Kafka skips every tag, kio refuses them."""
    body = (b"\x05kcat" + b"\x061.7.1"
            + b"\x03" + b"\x00\x02xy" + b"\x07\x00" + b"\x85\x01\x03abc")  # tags 0, 7 (empty), 133 (two bytes)
    assert decode_api_versions_request(version, body, 0) == ApiVersionsRequest("kcat", "1.7.1")
    assert decode_api_versions_request(version, memoryview(body + b"after"), 0) == ApiVersionsRequest("kcat", "1.7.1")
    assert by_kio(18, version, body) == UNKNOWN_TAG
    with pytest.raises(RequestDecodeError, match="the request's tagged fields"):
        decode_api_versions_request(version, body[:-1], 0)
    with pytest.raises(RequestDecodeError, match="the request's tagged fields"):
        decode_api_versions_request(version, body.replace(b"\x00\x02xy", b"\x00\x7fxy"), 0)  # a tag past the body


@pytest.mark.parametrize("version", [3, 4])
def test_nulls_the_schema_forbids_are_refused(version: int) -> None:
    for body, field in ((b"\x00\x02v\x00", "client_software_name"), (b"\x02n\x00\x00", "client_software_version")):
        with pytest.raises(RequestDecodeError, match=f"{field} is null"):
            decode_api_versions_request(version, body, 0)
        assert by_kio(18, version, body) == NULL


@pytest.mark.parametrize(("body", "message"), [
    (b"", "client_software_name: truncated varint"),
    (b"\x05kca", "the body ends inside client_software_name"),
    (b"\x05kcat", "client_software_version: truncated varint"),
    (b"\x05kcat\x02", "the body ends inside client_software_version"),
    (b"\x05kcat\x021", "the request's tagged fields: truncated varint"),
    (b"\x03\xff\xfe\x01\x00", "client_software_name is not UTF-8"),
    (b"\x01\x03a\xc3\x00", "client_software_version is not UTF-8"),
    (b"\xff\xff\xff\xff\xff\x01", "client_software_name: varint longer than 5 bytes"),
    (b"\x80\x80\x80\x80\x01\x00", "the body ends inside client_software_name"),
])
@pytest.mark.parametrize("version", [3, 4])
def test_malformed_bodies_are_refused(version: int, body: bytes, message: str) -> None:
    with pytest.raises(RequestDecodeError, match=message):
        decode_api_versions_request(version, body, 0)
    assert _by_kio(version, body) is None


# -- the response ----------------------------------------------------------------


def kio_entity(version: int, response: ApiVersionsResponse) -> Any:
    """kio's ApiVersionsResponse of `version` with the values of `response` (those it carries)."""
    m = importlib.import_module(f"kio.schema.api_versions.v{version}.response")
    return kio_entity_of(
        m.ApiVersionsResponse,
        error_code=KioErrorCode(response.error_code),
        api_keys=tuple(m.ApiVersion(api_key=k.api_key, min_version=k.min_version, max_version=k.max_version)
                       for k in response.api_keys),
        throttle_time=i32Timedelta.parse(datetime.timedelta(milliseconds=response.throttle_time_ms)),
        supported_features=tuple(
            m.SupportedFeatureKey(name=f.name, min_version=f.min_version, max_version=f.max_version)
            for f in response.supported_features) if version >= 3 else (),
        finalized_features_epoch=response.finalized_features_epoch,
        finalized_features=tuple(
            m.FinalizedFeatureKey(name=f.name, max_version_level=f.max_version_level,
                                  min_version_level=f.min_version_level)
            for f in response.finalized_features) if version >= 3 else (),
        zk_migration_ready=response.zk_migration_ready,
    )


def kio_bytes(version: int, response: ApiVersionsResponse) -> bytes:
    entity = kio_entity(version, response)
    out = io.BytesIO()
    entity_writer(type(entity))(out, entity)
    return out.getvalue()


def assert_as_kio(version: int, response: ApiVersionsResponse) -> bytes:
    """Our bytes are kio's, and kio reads them back as the entity they came from."""
    ours = encode_api_versions_response(version, response)
    assert ours == kio_bytes(version, response)
    assert decode_response(18, version, ours) == kio_entity(version, response)
    return ours


_i16 = st.integers(-(2**15), 2**15 - 1)
_i32 = st.integers(-(2**31), 2**31 - 1)
_i64 = st.integers(-(2**63), 2**63 - 1)
_errors = st.sampled_from(sorted(int(e) for e in KioErrorCode))
_feature_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz._", min_size=1, max_size=20) | texts
_api_version = st.builds(ApiVersion, api_key=_i16, min_version=_i16, max_version=_i16)
# One in eight lists of api keys takes a two-byte compact count (127 entries or more).
_api_keys = st.integers(0, 7).flatmap(
    lambda k: st.lists(_api_version, min_size=127, max_size=140) if k == 0 else st.lists(_api_version, max_size=8))
_supported = st.builds(SupportedFeatureKey, name=_feature_names, min_version=_i16, max_version=_i16)
_finalized = st.builds(FinalizedFeatureKey, name=_feature_names, max_version_level=_i16, min_version_level=_i16)

responses = st.builds(
    ApiVersionsResponse,
    error_code=_errors,
    api_keys=_api_keys.map(tuple),
    throttle_time_ms=_i32,
    supported_features=st.lists(_supported, max_size=4).map(tuple),
    finalized_features_epoch=st.sampled_from([-1, 0]) | _i64,
    finalized_features=st.lists(_finalized, max_size=4).map(tuple),
    zk_migration_ready=st.booleans(),
)


@pytest.mark.parametrize("version", KIO_VERSIONS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(response=responses)
def test_responses_match_kio(version: int, response: ApiVersionsResponse) -> None:
    assert_as_kio(version, response)


@pytest.mark.parametrize("version", KIO_VERSIONS)
def test_defaults_and_broker_answers_match_kio(version: int) -> None:
    """The defaults (no tagged field: v3+ end with a 0 count), a broker's usual answer (epoch 0,
    features with non-ASCII and long names), and 300 api keys (a two-byte compact count)."""
    keys = (ApiVersion(0, 3, 13), ApiVersion(18, 0, 4))
    assert_as_kio(version, ApiVersionsResponse(0, ()))
    assert_as_kio(version, ApiVersionsResponse(35, keys))
    assert_as_kio(version, ApiVersionsResponse(
        0, keys, 10,
        (SupportedFeatureKey("group.version", 0, 1), SupportedFeatureKey("\u00e9t\u00e9.\u4e00" * 30, 1, 2)),
        0, (FinalizedFeatureKey("transaction.version", 2, 2), FinalizedFeatureKey("f" * 200, -1, 32767))))
    assert_as_kio(version, ApiVersionsResponse(-1, tuple(ApiVersion(i, 0, i) for i in range(300)), 2**31 - 1,
                                               (SupportedFeatureKey("", -32768, 32767),), 2**63 - 1, (),
                                               True))


def test_tagged_fields_are_written_only_when_not_at_their_default() -> None:
    """In tag order, each only when it differs from its default (empty, -1, false), after a count of
    those written: as kio's writer and Kafka's generated writer do."""
    base = ApiVersionsResponse(0, (ApiVersion(18, 0, 4),), 0)
    head = b"\x00\x00" + b"\x02" + b"\x00\x12\x00\x00\x00\x04\x00" + b"\x00\x00\x00\x00"
    assert assert_as_kio(3, base) == head + b"\x00"
    assert assert_as_kio(4, replace(base, finalized_features_epoch=0)) == (
        head + b"\x01" + b"\x01\x08" + bytes(8))
    assert assert_as_kio(3, replace(base, zk_migration_ready=True)) == head + b"\x01" + b"\x03\x01\x01"
    assert assert_as_kio(4, replace(base, supported_features=(SupportedFeatureKey("a", 0, 1),))) == (
        head + b"\x01" + b"\x00\x08" + b"\x02" + b"\x02a\x00\x00\x00\x01\x00")
    everything = ApiVersionsResponse(
        0, (ApiVersion(18, 0, 4),), 0, (SupportedFeatureKey("a", 0, 1),), 5, (FinalizedFeatureKey("\u00e9", 2, 1),),
        True)
    assert assert_as_kio(4, everything) == (
        head + b"\x04" + b"\x00\x08\x02\x02a\x00\x00\x00\x01\x00" + b"\x01\x08" + (5).to_bytes(8, "big")
        + b"\x02\x09\x02\x03\xc3\xa9\x00\x02\x00\x01\x00" + b"\x03\x01\x01")
    assert assert_as_kio(2, everything) == b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x12\x00\x00\x00\x04" + bytes(4)
    assert assert_as_kio(0, everything) == b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x12\x00\x00\x00\x04"


@pytest.mark.parametrize("version", [-1, 6])
def test_versions_outside_range_are_refused(version: int) -> None:
    with pytest.raises(ValueError, match="not in 0-5"):
        encode_api_versions_response(version, ApiVersionsResponse(0, ()))
    with pytest.raises(ValueError, match="not in 0-5"):
        decode_api_versions_request(version, b"", 0)


def _v5_body(name: str, software_version: str, cluster_id: str | None, node_id: int, tags: bytes = b"\x00") -> bytes:
    def compact(text: str | None) -> bytes:
        return b"\x00" if text is None else bytes([len(text.encode()) + 1]) + text.encode()

    return compact(name) + compact(software_version) + compact(cluster_id) + node_id.to_bytes(4, "big", signed=True) + tags


@pytest.mark.parametrize(("cluster_id", "node_id"), [(None, -1), ("AbCdEfGhIjKlMnOpQrStUv", 1), ("c", -1), (None, 7)])
def test_v5_reads_the_cluster_and_node_a_client_means_to_reach(cluster_id: str | None, node_id: int) -> None:
    """KIP-1242's fields after v4's (ClusterId nullable), read from an offset, with unknown tags
    after them and bytes after the body."""
    body = b"xyz" + _v5_body("apache-kafka-java", "4.4.0", cluster_id, node_id, b"\x01\x07\x01a") + b"trailing"
    request = decode_api_versions_request(5, body, 3)
    assert request == ApiVersionsRequest("apache-kafka-java", "4.4.0", cluster_id, node_id)
    assert request.is_valid(5) is ((cluster_id is None) == (node_id == -1))  # both or neither


@pytest.mark.parametrize("cut", range(1, 6))
def test_a_v5_body_cut_short_is_refused(cut: int) -> None:
    body = _v5_body("t", "1", "cluster", 1)
    with pytest.raises(RequestDecodeError):
        decode_api_versions_request(5, body[:-cut], 0)


def test_a_v5_request_naming_another_cluster_or_node_is_misrouted() -> None:
    """KIP-1242: a client that names a cluster and node must have reached that one; Kafka 4.4
    answers the others REBOOTSTRAP_REQUIRED (tests/oracle/test_admin_metadata.py)."""
    assert not ApiVersionsRequest("t", "1").is_misrouted("us", 1)  # it knows neither
    assert not ApiVersionsRequest("t", "1", "us", 1).is_misrouted("us", 1)
    assert ApiVersionsRequest("t", "1", "them", 1).is_misrouted("us", 1)
    assert ApiVersionsRequest("t", "1", "us", 2).is_misrouted("us", 1)


def test_a_v5_answer_is_laid_out_as_v4s() -> None:
    response = ApiVersionsResponse(0, (ApiVersion(18, 0, 5),), 3, (SupportedFeatureKey("a", 0, 1),), 0,
                                   (FinalizedFeatureKey("a", 1, 1),))
    assert encode_api_versions_response(5, response) == encode_api_versions_response(4, response)


@pytest.mark.parametrize("supported", [
    {},
    {18: (0, 4)},
    {18: (0, 4), 0: (3, 13), 3: (0, 13), 1: (4, 17)},
    {i: (i % 3, i) for i in reversed(range(93))},
    {-1: (-32768, 32767), 32767: (0, 0)},
])
def test_unsupported_api_versions_response_reads_back_as_kio_reads_a_v0_answer(
        supported: dict[int, tuple[int, int]]) -> None:
    ours = unsupported_api_versions_response(supported)
    assert ours[:2] == b"\x00\x23"  # UNSUPPORTED_VERSION
    entity = decode_response(18, 0, ours)
    assert entity.error_code == KioErrorCode.unsupported_version
    assert [(k.api_key, k.min_version, k.max_version) for k in entity.api_keys] == [
        (key, *supported[key]) for key in sorted(supported)]


def test_unsupported_api_versions_response_lists_ranges_by_key() -> None:
    """What the broker sends (KIP-511): ApiVersions' own range; and a table in key order."""
    assert unsupported_api_versions_response({18: (0, 4)}) == b"\x00\x23\x00\x00\x00\x01\x00\x12\x00\x00\x00\x04"
    assert unsupported_api_versions_response({3: (0, 13), 0: (3, 13)}) == (
        b"\x00\x23\x00\x00\x00\x02" + b"\x00\x00\x00\x03\x00\x0d" + b"\x00\x03\x00\x00\x00\x0d")


def test_the_module_does_not_import_kio() -> None:
    code = "import sys, wire.api_versions; print([m for m in sys.modules if m.startswith('kio')])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[3]).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(("name", "software_version", "valid"), [
    ("librdkafka", "2.0.2", True), ("apache-kafka-java", "4.4.0", True), ("t", "1", True),
    ("confluent-kafka-python", "2.6.1-rdkafka-2.6.1", True), ("a.b-c", "0", True),
    ("", "1.0", False), ("oracle", "", False), ("bad name", "1.0", False), ("oracle", "1.", False),
    ("-leading", "1", False), ("trailing-", "1", False), ("under_score", "1", False), ("ünïcode", "1", False),
])
def test_client_software_names_are_checked_as_kafka_checks_them(name: str, software_version: str,
                                                                  valid: bool) -> None:
    """Kafka's ApiVersionsRequest.isValid, from v3 only (v0-2 carry neither)."""
    request = ApiVersionsRequest(name, software_version)
    assert request.is_valid(3) is valid and request.is_valid(4) is valid
    assert request.is_valid(2) and ApiVersionsRequest().is_valid(0)
