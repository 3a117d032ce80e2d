"""The hand-written codecs of the classic group APIs against kio's, for every version each serves.

Requests: random requests of each version (hypothesis builds kio's entities from their types),
written by kio's writer, decode to the same values through the codec as through kio's path (the
bounds walk, then kio's reader), from an offset, with bytes after the body, and from a memoryview.
The same bodies cut short or with bytes changed give the same request both ways or are refused
both ways, except where kio and Kafka differ (the codecs do as Kafka does): unknown tags, which
Kafka skips and kio refuses, and a boolean byte other than 0 and 1, which Kafka reads as true and
kio refuses (each has its own test below). Responses: random answers of each version are written byte for byte
as kio writes them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import msgspec
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from decoder_reference import (  # (tests/unit/wire)
    BOOLEAN,
    NULL,
    OVERFLOW,
    UNKNOWN_TAG,
    by_kio,
    damaged,
    kio_bytes,
    kio_from_ours,
    ours_from_kio,
    plain,
)
from wire import (
    find_coordinator,
    heartbeat,
    init_producer_id,
    join_group,
    leave_group,
    list_offsets,
    offset_commit,
    offset_fetch,
    sync_group,
)
from wire.errors import RequestDecodeError
from wire.headers import FIRST_FLEXIBLE_VERSION
from wire.messages import ApiKey, decode_response, encode_request, request_class, response_class


class Codec(NamedTuple):
    api_key: int
    versions: range
    decode: Callable[[int, Any, int], Any]
    request: type[Any]
    encode: Callable[[int, Any], bytes]
    response: type[Any]


CODECS = {
    "init_producer_id": Codec(ApiKey.INIT_PRODUCER_ID, init_producer_id.VERSIONS,
                              init_producer_id.decode_init_producer_id_request, init_producer_id.InitProducerIdRequest,
                              init_producer_id.encode_init_producer_id_response,
                              init_producer_id.InitProducerIdResponse),
    "list_offsets": Codec(ApiKey.LIST_OFFSETS, list_offsets.VERSIONS, list_offsets.decode_list_offsets_request,
                          list_offsets.ListOffsetsRequest, list_offsets.encode_list_offsets_response,
                          list_offsets.ListOffsetsResponse),
    "offset_fetch": Codec(ApiKey.OFFSET_FETCH, offset_fetch.VERSIONS, offset_fetch.decode_offset_fetch_request,
                          offset_fetch.OffsetFetchRequest, offset_fetch.encode_offset_fetch_response,
                          offset_fetch.OffsetFetchResponse),
    "offset_commit": Codec(ApiKey.OFFSET_COMMIT, offset_commit.VERSIONS, offset_commit.decode_offset_commit_request,
                           offset_commit.OffsetCommitRequest, offset_commit.encode_offset_commit_response,
                           offset_commit.OffsetCommitResponse),
    "find_coordinator": Codec(ApiKey.FIND_COORDINATOR, find_coordinator.VERSIONS,
                              find_coordinator.decode_find_coordinator_request,
                              find_coordinator.FindCoordinatorRequest,
                              find_coordinator.encode_find_coordinator_response,
                              find_coordinator.FindCoordinatorResponse),
    "heartbeat": Codec(ApiKey.HEARTBEAT, heartbeat.VERSIONS, heartbeat.decode_heartbeat_request,
                       heartbeat.HeartbeatRequest, heartbeat.encode_heartbeat_response, heartbeat.HeartbeatResponse),
    "join_group": Codec(ApiKey.JOIN_GROUP, join_group.VERSIONS, join_group.decode_join_group_request,
                        join_group.JoinGroupRequest, join_group.encode_join_group_response,
                        join_group.JoinGroupResponse),
    "leave_group": Codec(ApiKey.LEAVE_GROUP, leave_group.VERSIONS, leave_group.decode_leave_group_request,
                         leave_group.LeaveGroupRequest, leave_group.encode_leave_group_response,
                         leave_group.LeaveGroupResponse),
    "sync_group": Codec(ApiKey.SYNC_GROUP, sync_group.VERSIONS, sync_group.decode_sync_group_request,
                        sync_group.SyncGroupRequest, sync_group.encode_sync_group_response,
                        sync_group.SyncGroupResponse),
}

CASES = [(name, version) for name, codec in CODECS.items() for version in codec.versions]
SLOW = [HealthCheck.too_slow, HealthCheck.data_too_large]


def _by_kio(codec: Codec, version: int, body: bytes | memoryview) -> Any:
    """kio's reading as the codec's struct; None, UNKNOWN_TAG or NULL for kio's refusals. kio
    reads a null array where the schema forbids one as None: Kafka refuses it ("non-nullable
    field ... was serialized as null"), as the codecs do, so that is NULL too."""
    entity = by_kio(codec.api_key, version, body)
    if entity is None or isinstance(entity, str):
        return entity
    try:
        return ours_from_kio(entity, codec.request)
    except msgspec.ValidationError as exc:
        if "got `null`" in str(exc):
            return NULL
        raise


def _by_hand(codec: Codec, version: int, body: bytes | memoryview) -> Any:
    try:
        return codec.decode(version, body, 0)
    except RequestDecodeError:
        return None


def _flexible(codec: Codec, version: int) -> bool:
    first = FIRST_FLEXIBLE_VERSION[codec.api_key]
    return first is not None and version >= first


@pytest.mark.parametrize(("name", "version"), CASES)
@settings(max_examples=60, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_requests_decode_as_kio_decodes_them(name: str, version: int, data: st.DataObject) -> None:
    codec = CODECS[name]
    body = encode_request(data.draw(st.from_type(request_class(codec.api_key, version))))
    expected = _by_kio(codec, version, body)
    assume(expected != OVERFLOW)
    assert expected is not None and not isinstance(expected, str)
    assert codec.decode(version, body, 0) == expected
    assert codec.decode(version, memoryview(body), 0) == expected
    assert codec.decode(version, b"\xee\xee\xee" + body + b"trailing", 3) == expected


@pytest.mark.parametrize(("name", "version"), CASES)
@settings(max_examples=150, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_damaged_requests_are_refused_or_read_as_kio_reads_them(name: str, version: int,
                                                                 data: st.DataObject) -> None:
    codec = CODECS[name]
    body = damaged(encode_request(data.draw(st.from_type(request_class(codec.api_key, version)))), data)
    expected, got = _by_kio(codec, version, body), _by_hand(codec, version, body)
    if expected == NULL:  # a null the schema forbids: refused both ways
        assert got is None
    elif expected not in (UNKNOWN_TAG, OVERFLOW, BOOLEAN):  # kio stopped there: it says nothing more
        assert got == expected


@pytest.mark.parametrize(("name", "version"), [c for c in CASES if _flexible(CODECS[c[0]], c[1])])
@settings(max_examples=20, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_unknown_tagged_fields_are_skipped(name: str, version: int, data: st.DataObject) -> None:
    """These requests define no tagged field Kafka reads: it skips every tag, kio refuses them.
    The request's own section is its last byte (0: none)."""
    codec = CODECS[name]
    body = encode_request(data.draw(st.from_type(request_class(codec.api_key, version))))
    assert body[-1:] == b"\x00"
    tagged = body[:-1] + b"\x03" + b"\x00\x02xy" + b"\x07\x00" + b"\x85\x01\x03abc"  # tags 0, 7, 133
    assert codec.decode(version, tagged, 0) == codec.decode(version, body, 0)
    assert by_kio(codec.api_key, version, tagged) == UNKNOWN_TAG
    with pytest.raises(RequestDecodeError, match="the request's tagged fields"):
        codec.decode(version, tagged[:-1], 0)


@pytest.mark.parametrize(("name", "version"), CASES)
@settings(max_examples=60, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_responses_are_written_as_kio_writes_them(name: str, version: int, data: st.DataObject) -> None:
    codec = CODECS[name]
    entity = data.draw(st.from_type(response_class(codec.api_key, version)))
    ours = ours_from_kio(entity, codec.response)
    assert codec.encode(version, ours) == kio_bytes(entity)
    assert kio_from_ours(ours, type(entity)) == entity


@pytest.mark.parametrize("name", CODECS)
def test_versions_outside_the_range_are_refused(name: str) -> None:
    codec = CODECS[name]
    for version in (codec.versions.start - 1, codec.versions.stop):
        with pytest.raises(ValueError):
            codec.decode(version, b"", 0)
        with pytest.raises(ValueError):
            codec.encode(version, codec.response())


# -- FindCoordinator ---------------------------------------------------------------


@pytest.mark.parametrize("version", find_coordinator.VERSIONS)
def test_find_coordinator_null_keys_are_refused(version: int) -> None:
    flexible = version >= 3
    null = b"\x00" if flexible else b"\xff\xff"
    if version < 4:
        body = null + (b"\x00" if version >= 1 else b"") + (b"\x00" if flexible else b"")
        what = "key"
    else:
        body = b"\x00" + b"\x02" + null + b"\x00"  # key type 0, one key: null
        what = "coordinator_keys"
    with pytest.raises(RequestDecodeError, match=f"{what} is null"):
        find_coordinator.decode_find_coordinator_request(version, body, 0)
    assert by_kio(ApiKey.FIND_COORDINATOR, version, body) in (NULL, None)


@pytest.mark.parametrize("version", find_coordinator.VERSIONS)
def test_find_coordinator_key_type_is_signed(version: int) -> None:
    """An int8 of 0xff is -1 (an unknown key type, which the handler answers INVALID_REQUEST)."""
    if version == 0:
        return
    flexible = version >= 3
    body = (b"\x02g" if flexible else b"\x00\x01g") + b"\xff" if version < 4 else b"\xff\x02\x02g"
    request = find_coordinator.decode_find_coordinator_request(version, body + (b"\x00" if flexible else b""), 0)
    assert request.key_type == -1


@pytest.mark.parametrize(("name", "version"), CASES)
@settings(max_examples=10, deadline=None, suppress_health_check=SLOW)
@given(data=st.data())
def test_a_quota_throttle_is_set_in_the_answer(name: str, version: int, data: st.DataObject) -> None:
    """A client over its quota gets the throttle in the answer (KIP-219): the encoded answer
    takes it where kio's reader finds throttle_time, in every version that has the field."""
    from asyncbroker.encoded_response import EncodedResponse, with_throttle_time

    codec = CODECS[name]
    entity = data.draw(st.from_type(response_class(codec.api_key, version)))
    body = codec.encode(version, ours_from_kio(entity, codec.response))
    throttled = with_throttle_time(EncodedResponse([body], len(body)), codec.api_key, version, 1234)
    answer = decode_response(codec.api_key, version, b"".join(throttled.parts))
    if hasattr(entity, "throttle_time"):
        assert plain(answer) == {**plain(entity), "throttle_time": 1234}
    else:
        assert answer == entity


# -- OffsetFetch -------------------------------------------------------------------


@pytest.mark.parametrize("version", [7, 8])
def test_offset_fetch_require_stable_reads_any_byte_but_zero_as_true(version: int) -> None:
    """Kafka reads the boolean as `readByte() != 0`; kio refuses a byte of 2 or more."""
    head = b"\x02g\x00" if version == 7 else b"\x02\x02g\x00\x00"  # group "g", every topic (null)
    every_topic = (offset_fetch.OffsetFetchRequest("g", None) if version == 7
                   else offset_fetch.OffsetFetchRequest(groups=(offset_fetch.OffsetFetchRequestGroup("g"),)))
    for byte, stable in ((0, False), (1, True), (2, True), (0xFF, True)):
        body = head + bytes([byte]) + b"\x00"
        assert offset_fetch.decode_offset_fetch_request(version, body, 0) == msgspec.structs.replace(
            every_topic, require_stable=stable)
        if byte > 1:
            assert by_kio(ApiKey.OFFSET_FETCH, version, body) == BOOLEAN
        else:
            assert _by_kio(CODECS["offset_fetch"], version, body) == msgspec.structs.replace(
                every_topic, require_stable=stable)
