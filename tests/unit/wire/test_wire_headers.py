"""Request/response headers and Kafka's per-API header version rules."""

from __future__ import annotations

import json
import os
import re
import struct
import sys
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema, load_response_schema
from kio.schema.index import api_key_map, schema_name_map

from wire.errors import FramingError
from wire.headers import (
    FIRST_FLEXIBLE_VERSION,
    HeaderError,
    RequestHeader,
    encode_request_header,
    parse_request_header,
    request_header_version,
    response_header_version,
    response_prefix,
)

ALL_KIO_VERSIONS = [
    (key, version) for key, name in sorted(api_key_map.items()) for version in sorted(schema_name_map[name])
]


def test_header_versions_for_every_api_kio_knows() -> None:
    assert len(ALL_KIO_VERSIONS) > 300
    for key, version in ALL_KIO_VERSIONS:
        request = load_request_schema(key, version)
        response = load_response_schema(key, version)
        assert request_header_version(key, version) == (2 if request.__flexible__ else 1), (key, version)
        assert request_header_version(key, version) == request.__header_schema__.__version__
        expected = 0 if key == 18 else (1 if response.__flexible__ else 0)
        assert response_header_version(key, version) == expected, (key, version)


def _kafka_schemas() -> dict[int, dict[str, object]]:
    """Kafka 4.4's request schemas (common/message/*Request.json in kafka-clients), by API key."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from jvm.kafka_jvm import classpath

    (jar,) = [e for e in classpath("harness").split(os.pathsep) if Path(e).name == "kafka-clients-4.4.0.jar"]
    schemas = {}
    with zipfile.ZipFile(jar) as z:
        for name in z.namelist():
            if re.fullmatch(r"common/message/\w+Request\.json", name):
                text = re.sub(r"//.*", "", z.read(name).decode())  # Kafka's schemas carry // comments
                schema = json.loads(text)
                schemas[schema["apiKey"]] = schema
    return schemas


def test_the_flexible_versions_are_kafkas() -> None:
    """FIRST_FLEXIBLE_VERSION holds Kafka 4.4's flexibleVersions for every API it defines, also
    where kio lacks the old versions (AlterPartition, the share-group APIs: "0+")."""
    schemas = _kafka_schemas()
    assert len(schemas) >= 90
    for key, schema in schemas.items():
        flexible = schema.get("flexibleVersions", "none")  # (absent from the removed ZooKeeper APIs)
        expected = None if flexible == "none" else int(str(flexible).rstrip("+"))
        assert str(flexible) == "none" or str(flexible).endswith("+"), (key, flexible)
        assert FIRST_FLEXIBLE_VERSION.get(key, "absent") == expected, (key, schema["name"], flexible)
    assert set(FIRST_FLEXIBLE_VERSION) == set(schemas)


@pytest.mark.parametrize(
    ("key", "version", "req", "resp"),
    [
        (0, 8, 1, 0), (0, 9, 2, 1), (0, 11, 2, 1),  # Produce flexible from v9
        (1, 11, 1, 0), (1, 12, 2, 1), (1, 17, 2, 1),  # Fetch flexible from v12
        (3, 8, 1, 0), (3, 9, 2, 1), (3, 12, 2, 1),  # Metadata flexible from v9
        (18, 2, 1, 0), (18, 3, 2, 0), (18, 4, 2, 0),  # ApiVersions: response always v0
        (18, 99, 2, 0),  # a future ApiVersions version is still flexible
        (19, 4, 1, 0), (19, 5, 2, 1),  # CreateTopics
        (32, 3, 1, 0), (32, 4, 2, 1),  # DescribeConfigs
        (2, 5, 1, 0), (2, 6, 2, 1),  # ListOffsets
        (56, 0, 2, 1), (78, 0, 2, 1),  # "0+" where kio knows only later versions
        (17, 1, 1, 0), (47, 0, 1, 0),  # SaslHandshake and OffsetDelete are never flexible
        (999, 0, 1, 0), (-1, 0, 1, 0),  # unknown keys: parse client id (v1)
    ],
)
def test_known_header_versions(key: int, version: int, req: int, resp: int) -> None:
    assert request_header_version(key, version) == req
    assert response_header_version(key, version) == resp


@settings(max_examples=150, deadline=None)
@given(
    api=st.sampled_from(ALL_KIO_VERSIONS),
    correlation_id=st.integers(-(2**31), 2**31 - 1),
    client_id=st.none() | st.text(max_size=40),
    tags=st.lists(st.tuples(st.integers(0, 300), st.binary(max_size=10)), max_size=3),
    body=st.binary(max_size=20),
)
def test_request_header_round_trip(api: tuple[int, int], correlation_id: int, client_id: str | None, tags: list, body: bytes) -> None:
    key, version = api
    raw = encode_request_header(key, version, correlation_id, client_id)
    hv = request_header_version(key, version)
    if hv == 2 and tags:  # replace the empty tag section with real tagged fields
        section = bytearray([len(tags)])
        for tag, data in tags:
            section += _uvarint(tag) + _uvarint(len(data)) + data
        raw = raw[:-1] + bytes(section)
    header, offset = parse_request_header(raw + body)
    assert header == RequestHeader(key, version, correlation_id, client_id, hv)
    assert offset == len(raw)


def _uvarint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def test_librdkafka_api_versions_v3_header() -> None:
    # exactly what librdkafka 2.x sends first on a connection
    frame = bytes.fromhex("0012000300000001000772646b61666b6100") + b"\x0blibrdkafka\x062.3.0\x00"
    header, offset = parse_request_header(frame)
    assert header == RequestHeader(18, 3, 1, "rdkafka", 2)
    assert frame[offset:] == b"\x0blibrdkafka\x062.3.0\x00"


def test_unknown_api_key_still_parses() -> None:
    frame = struct.pack(">hhih", 1234, 7, 42, 3) + b"abc" + b"body"
    header, offset = parse_request_header(frame)
    assert (header.api_key, header.correlation_id, header.client_id, header.header_version) == (1234, 42, "abc", 1)
    assert frame[offset:] == b"body"


@pytest.mark.parametrize(
    "frame",
    [
        b"",
        b"\x00\x03\x00\x01\x00\x00",
        struct.pack(">hhih", 3, 1, 1, 10) + b"short",
        struct.pack(">hhih", 3, 1, 1, -2),
        struct.pack(">hhih", 3, 1, 1, 2) + b"\xff\xfe",  # not UTF-8
        struct.pack(">hhih", 3, 12, 1, -1),  # v2 header without tag section
        struct.pack(">hhih", 3, 12, 1, -1) + b"\x01\x00\x05ab",  # tagged field past the end
        struct.pack(">hhih", 3, 12, 1, -1) + b"\xff\xff\xff\xff\xff\xff",  # overlong varint
    ],
)
def test_unparsable_headers_are_typed(frame: bytes) -> None:
    with pytest.raises(HeaderError) as info:
        parse_request_header(frame)
    assert isinstance(info.value, FramingError)


def test_response_headers() -> None:
    assert response_prefix(7, 0, 10) == struct.pack(">ii", 14, 7)
    assert response_prefix(7, 1, 10) == struct.pack(">ii", 15, 7) + b"\x00"
