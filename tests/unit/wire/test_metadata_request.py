"""The hand-written Metadata decoder against kio's (with the bounds walk it needs), on valid
requests of every version 0-13 and on the same requests cut short or with bytes changed: both
give the same request, or both refuse it, except where kio and Kafka differ (the decoder does
as Kafka does): unknown tags, booleans other than 0 and 1, a null topics array in v0."""

from __future__ import annotations

import importlib
import subprocess
import sys
import uuid
from pathlib import Path
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
from wire.messages import _reader, encode_request, request_class
from wire.metadata_request import VERSIONS, MetadataRequest, MetadataRequestTopic, decode_metadata_request
from wire.request_bounds import check_request_bounds

Topic = tuple["uuid.UUID | None", "str | None"]

BOOL = "kio refuses a boolean byte other than 0 and 1"
"""kio's reader refuses such a byte; Kafka's reads it as true (`readByte() != 0`), and so does
the hand-written decoder (test_a_boolean_byte_other_than_0_is_true)."""



def _kio_request(version: int, topics: list[Topic] | None, allow_auto_topic_creation: bool,
                 include_cluster_authorized_operations: bool, include_topic_authorized_operations: bool) -> Any:
    m = importlib.import_module(f"kio.schema.metadata.v{version}.request")
    return kio_entity_of(
        m.MetadataRequest,
        topics=None if topics is None else tuple(
            kio_entity_of(m.MetadataRequestTopic, topic_id=topic_id, name=name) for topic_id, name in topics),
        allow_auto_topic_creation=allow_auto_topic_creation,
        include_cluster_authorized_operations=include_cluster_authorized_operations,
        include_topic_authorized_operations=include_topic_authorized_operations)


def _normal(request: Any) -> tuple[Any, ...]:
    """A request, kio's or the hand-written decoder's, as plain values (a field its version
    lacks at Kafka's default)."""
    return (
        None if request.topics is None else [(getattr(t, "topic_id", None), t.name) for t in request.topics],
        getattr(request, "allow_auto_topic_creation", True),
        getattr(request, "include_cluster_authorized_operations", False),
        getattr(request, "include_topic_authorized_operations", False),
    )


def _kio_refused_a_boolean(version: int, body: bytes | memoryview) -> bool:
    """Whether kio's path refused `body` at a boolean byte other than 0 and 1 (its reader runs
    only on a body that passed the bounds walk: it allocates from declared counts)."""
    cls = request_class(3, version)
    try:
        check_request_bounds(cls, body, 0)
    except RequestDecodeError:
        return False
    try:
        _reader(cls)(body, 0)
    except ValueError as exc:
        return "Invalid boolean value" in str(exc)
    except Exception:  # noqa: BLE001 - another refusal
        return False
    return False


def _by_kio(version: int, body: bytes | memoryview) -> Any:
    """The old path: the bounds walk, then kio's reader; None when either refuses."""
    entity = by_kio(3, version, body)
    if entity is None:
        return BOOL if _kio_refused_a_boolean(version, body) else None
    if isinstance(entity, str):  # UNKNOWN_TAG or NULL
        return entity
    if version == 0 and entity.topics is None:
        # kio reads a null array where v0's schema allows none; Kafka refuses it while parsing
        # ("non-nullable field topics was serialized as null"), and so does the decoder.
        return None
    return _normal(entity)


def _by_hand(version: int, body: bytes | memoryview) -> Any:
    try:
        return _normal(decode_metadata_request(version, body, 0))
    except RequestDecodeError:
        return None


names = st.text(min_size=0, max_size=8)
ids = st.none() | st.uuids()


@st.composite
def requests(draw: st.DrawFn) -> tuple[Any, ...]:
    version = draw(st.sampled_from(VERSIONS))
    if version >= 10:
        topic = st.tuples(ids, st.none() | names)
    else:
        topic = st.tuples(st.none(), names)
    topics = st.lists(topic, max_size=4)
    return (version, draw(topics if version == 0 else st.none() | topics), draw(st.booleans()), draw(st.booleans()),
            draw(st.booleans()))


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(requests())
def test_valid_requests_decode_as_kio_decodes_them(request: tuple[Any, ...]) -> None:
    version, *fields = request
    assert_decodes_as_kio(_by_kio, _by_hand, version, encode_request(_kio_request(version, *fields)))


@pytest.mark.parametrize("version", VERSIONS)
def test_every_version_with_and_without_topics(version: int) -> None:
    """Each version once by hand: all topics (null; v0: empty), and two topics, with each flag
    the version carries set."""
    topic_id = uuid.UUID(int=5) if version >= 10 else None
    named = [(topic_id, "a"), (None, "\u00e9t\u00e9" * 50)]  # a name longer than a one-byte length
    for topics in ([] if version == 0 else None, named):
        body = encode_request(_kio_request(version, topics, False, True, True))
        request = decode_metadata_request(version, b"\xee\xee" + body + b"trailing bytes", 2)
        assert request == MetadataRequest(
            None if topics is None else tuple(MetadataRequestTopic(i, n) for i, n in topics),
            version < 4, 8 <= version <= 10, version >= 8)
        assert _normal(request) == _by_kio(version, body)


@settings(max_examples=2000, suppress_health_check=[HealthCheck.too_slow])
@given(requests(), st.data())
def test_damaged_requests_are_refused_or_read_as_kio_reads_them(request: tuple[Any, ...], data: st.DataObject) -> None:
    version, *fields = request
    frozen = damaged(encode_request(_kio_request(version, *fields)), data)
    expected, got = _by_kio(version, frozen), _by_hand(version, frozen)
    if expected == NULL:  # a null name before v10: refused both ways
        assert got is None
    elif expected not in (UNKNOWN_TAG, BOOL):  # kio stopped there: it says nothing about the rest
        assert got == expected


def test_unknown_tagged_fields_are_skipped() -> None:
    """Metadata has no tagged field: tags at the topic and request level are all skipped (v12)."""
    topic_id = uuid.UUID(int=9)
    body = (b"\x03"  # two topics
            + topic_id.bytes + b"\x02a" + b"\x02" + b"\x00\x02xy" + b"\x07\x00"  # tags 0 (2 bytes), 7 (empty)
            + bytes(16) + b"\x00" + b"\x00"  # by nothing (a zero id, a null name), no tags
            + b"\x01" + b"\x00"  # allow auto creation, no topic authorized operations
            + b"\x01" + b"\x85\x01\x03abc")  # the request's: tag 133 (a two-byte tag), 3 bytes
    request = decode_metadata_request(12, body, 0)
    assert request == MetadataRequest((MetadataRequestTopic(topic_id, "a"), MetadataRequestTopic(None, None)),
                                      True, False, False)
    assert by_kio(3, 12, body) == UNKNOWN_TAG
    with pytest.raises(RequestDecodeError, match="the request's tagged fields"):
        decode_metadata_request(12, body[:-1], 0)
    with pytest.raises(RequestDecodeError, match="a topic's tagged fields"):
        decode_metadata_request(12, body.replace(b"\x00\x02xy", b"\x00\x7fxy"), 0)  # a tag past the body


@pytest.mark.parametrize(("version", "flags", "expected"), [
    (4, b"\x02", (True, False, False)),
    (8, b"\x00\xff\x80", (False, True, True)),
    (10, b"\x7f\x00\x01\x00", (True, False, True)),
    (13, b"\x00\x05\x00", (False, False, True)),
])
def test_a_boolean_byte_other_than_0_is_true(version: int, flags: bytes, expected: tuple[bool, bool, bool]) -> None:
    """As Kafka reads a boolean (`readByte() != 0`); kio refuses the byte."""
    body = (b"\x00" if version >= 9 else b"\xff\xff\xff\xff") + flags  # null topics, the flags (and no tags)
    request = decode_metadata_request(version, body, 0)
    assert request.topics is None
    assert (request.allow_auto_topic_creation, request.include_cluster_authorized_operations,
            request.include_topic_authorized_operations) == expected
    assert _by_kio(version, body) == BOOL


def test_nulls_the_schema_forbids_are_refused() -> None:
    with pytest.raises(RequestDecodeError, match=r"topics is null \(nullable from v1\)"):
        decode_metadata_request(0, b"\xff\xff\xff\xff", 0)
    assert by_kio(3, 0, b"\xff\xff\xff\xff").topics is None  # (kio takes it)
    assert decode_metadata_request(1, b"\xff\xff\xff\xff", 0).topics is None
    for version, body in ((0, b"\x00\x00\x00\x01\xff\xff"), (8, b"\x00\x00\x00\x01\xff\xff\x01\x00\x00"),
                          (9, b"\x02\x00\x00\x01\x00\x00\x00")):
        with pytest.raises(RequestDecodeError, match=r"a topic name is null \(nullable from v10\)"):
            decode_metadata_request(version, body, 0)
        assert by_kio(3, version, body) == NULL
    assert decode_metadata_request(10, b"\x02" + bytes(16) + b"\x00\x00" + b"\x01\x00\x00\x00", 0).topics == (
        MetadataRequestTopic(None, None),)


@pytest.mark.parametrize("version", [0, 1, 4, 8, 9, 10, 13])
def test_a_declared_count_the_bytes_cannot_hold_is_refused_before_anything_is_built(version: int) -> None:
    count = b"\xff\xff\xff\x7f" if version >= 9 else b"\x7f\xff\xff\xff"  # 2^28-2 or 2^31-1 topics
    with pytest.raises(RequestDecodeError, match="topics declares .* entries in 3 bytes"):
        decode_metadata_request(version, count + b"\x00\x00\x00", 0)
    # One topic more than the bytes can hold at the least a topic takes (an empty name; v10+:
    # and an id; v9+: and a tag section).
    least = 2 if version < 9 else 2 if version < 10 else 18
    body = (b"\x04" if version >= 9 else b"\x00\x00\x00\x03") + bytes(2 * least)
    with pytest.raises(RequestDecodeError, match=f"topics declares 3 entries in {2 * least} bytes"):
        decode_metadata_request(version, body, 0)


@pytest.mark.parametrize(("version", "body", "message"), [
    (1, b"\xff\xff\xff\xfe", r"topics is negative \(-2\)"),
    (3, b"\x00\x00\x00\x01\x00\x03ab", "the body ends inside a topic name"),
    (4, b"\x00\x00\x00\x00", "the body ends inside allow_auto_topic_creation"),
    (8, b"\x00\x00\x00\x00\x01\x01", "the body ends inside the request's flags"),
    (11, b"\x01\x01", "the body ends inside the request's flags"),
    (10, b"\x03" + bytes(16) + b"\x15" + b"a" * 20 + b"\x00" + bytes(15), "the body ends inside a topic id"),
    (9, b"\x02\x03\xff\xfe\x00", "a topic name is not UTF-8"),
    (12, b"\x01\x01\x00", "the request's tagged fields"),
    (13, b"\xff\xff\xff\xff\xff\x01", "topics: varint longer than 5 bytes"),
])
def test_malformed_bodies_are_refused(version: int, body: bytes, message: str) -> None:
    with pytest.raises(RequestDecodeError, match=message):
        decode_metadata_request(version, body, 0)
    assert _by_kio(version, body) is None


def test_the_module_does_not_import_kio() -> None:
    code = ("import sys, wire.metadata_request, wire.metadata_response; "
            "print([m for m in sys.modules if m.startswith('kio')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[3]).stdout
    assert out.strip() == "[]"
