"""Request and response headers, and which header version each API uses.

Kafka picks the header version from the *body* schema: a flexible (tagged
fields) request version uses request header v2, otherwise v1; a flexible
response uses response header v1, otherwise v0 -- except ApiVersions, whose
responses always use header v0 so that a client that does not yet know the
broker's versions can still read the answer. Flexibility per API/version
comes from kio's schema metadata (`__header_schema__`, generated from
Kafka's JSON `flexibleVersions`), except for Produce and Fetch, whose requests and responses
have hand-written codecs: loading their kio schemas only to read the flag cost
a first request ~5 ms and the broker ~0.15 MB per version clients use.
"""

from __future__ import annotations

import struct
from functools import lru_cache

import msgspec
from kio.index import KioIndexError, load_request_schema, load_response_schema
from kio.schema.index import api_key_map, schema_name_map

from wire.errors import CorruptRecordError, HeaderError
from wire.records import read_uvarint

__all__ = [
    "RequestHeader",
    "HeaderError",
    "parse_request_header",
    "request_header_version",
    "response_header_version",
    "encode_request_header",
    "encode_response_header",
    "response_prefix",
    "API_VERSIONS_KEY",
]

API_VERSIONS_KEY = 18
_HDR = struct.Struct(">hhih")  # api_key, api_version, correlation_id, client_id length
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
# A tagged-field count/size beyond this cannot fit in any valid frame.
_MAX_UVARINT_BYTES = 5
# The first flexible version of the APIs whose kio schemas the broker never needs (Produce's
# "flexibleVersions": "9+", Fetch's "12+"); the header tests compare it with kio's for every version.
_FIRST_FLEXIBLE = {0: 9, 1: 12}


class RequestHeader(msgspec.Struct, frozen=True):
    """A decoded request header. header_version is 1 or 2 (0 is never parsed)."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header_version: int


def _known_versions(api_key: int) -> tuple[int, int] | None:
    name = api_key_map.get(api_key)
    if name is None:
        return None
    versions = schema_name_map.get(name)
    if not versions:
        return None
    return min(versions), max(versions)


def _clamp(api_key: int, api_version: int) -> int | None:
    """Nearest version kio knows (flexibility is an "N+" range in Kafka)."""
    known = _known_versions(api_key)
    if known is None:
        return None
    lo, hi = known
    return min(max(api_version, lo), hi)


@lru_cache(maxsize=4096)
def request_header_version(api_key: int, api_version: int) -> int:
    """1 for non-flexible request versions, 2 for flexible ones.

    Unknown API keys yield 1 (client id still parsed) so the caller can
    close the connection or answer with a proper error; versions outside
    kio's range take the flexibility of the nearest known version.
    """
    first_flexible = _FIRST_FLEXIBLE.get(api_key)
    if first_flexible is not None:
        return 2 if api_version >= first_flexible else 1
    version = _clamp(api_key, api_version)
    if version is None:
        return 1
    try:
        schema = load_request_schema(api_key, version)
    except KioIndexError:
        return 1
    return 2 if schema.__flexible__ else 1


@lru_cache(maxsize=4096)
def response_header_version(api_key: int, api_version: int) -> int:
    """0 for non-flexible response versions and for ApiVersions, else 1."""
    if api_key == API_VERSIONS_KEY:
        return 0
    first_flexible = _FIRST_FLEXIBLE.get(api_key)
    if first_flexible is not None:
        return 1 if api_version >= first_flexible else 0
    version = _clamp(api_key, api_version)
    if version is None:
        return 0
    try:
        schema = load_response_schema(api_key, version)
    except KioIndexError:
        return 0
    return 1 if schema.__flexible__ else 0


def _read_uvarint(buf: bytes | bytearray | memoryview, pos: int, end: int) -> tuple[int, int]:
    """wire's one varint reader; in a header a bad varint is a HeaderError (close the connection)."""
    try:
        return read_uvarint(buf, pos, end, _MAX_UVARINT_BYTES)
    except CorruptRecordError as exc:
        raise HeaderError(f"{exc.message.replace(' in record', '')} in request header") from None


def parse_request_header(frame: bytes | bytearray | memoryview) -> tuple[RequestHeader, int]:
    """Decode the request header at the start of `frame` (size prefix removed).

    Returns the header and the offset of the body in the frame. The client id
    is a classic nullable int16-length string in both v1 and v2 (Kafka kept it
    non-compact); v2 adds a tagged-field section, which is skipped.
    """
    end = len(frame)
    if end < _HDR.size:
        raise HeaderError(f"request header needs at least {_HDR.size} bytes, frame has {end}")
    api_key, api_version, correlation_id, id_len = _HDR.unpack_from(frame, 0)
    pos = _HDR.size
    client_id: str | None
    if id_len < 0:
        if id_len != -1:
            raise HeaderError(f"invalid client id length {id_len}")
        client_id = None
    else:
        if pos + id_len > end:
            raise HeaderError(f"client id length {id_len} runs past the frame")
        try:
            client_id = str(frame[pos : pos + id_len], "utf-8")
        except UnicodeDecodeError:
            raise HeaderError("client id is not valid UTF-8") from None
        pos += id_len
    version = request_header_version(api_key, api_version)
    if version >= 2 and pos < end and frame[pos] == 0:
        pos += 1  # no tagged fields: the usual case
    elif version >= 2:
        count, pos = _read_uvarint(frame, pos, end)
        for _ in range(count):
            _tag, pos = _read_uvarint(frame, pos, end)
            size, pos = _read_uvarint(frame, pos, end)
            if pos + size > end:
                raise HeaderError("tagged field runs past the frame")
            pos += size
    return RequestHeader(api_key, api_version, correlation_id, client_id, version), pos


def encode_request_header(
    api_key: int,
    api_version: int,
    correlation_id: int,
    client_id: str | None,
    header_version: int | None = None,
) -> bytes:
    """Encode a request header (clients and tests; the broker only parses)."""
    if header_version is None:
        header_version = request_header_version(api_key, api_version)
    parts = [struct.pack(">hhi", api_key, api_version, correlation_id)]
    if header_version >= 1:
        if client_id is None:
            parts.append(_I16.pack(-1))
        else:
            raw = client_id.encode("utf-8")
            parts.append(_I16.pack(len(raw)))
            parts.append(raw)
    if header_version >= 2:
        parts.append(b"\x00")  # no tagged fields
    return b"".join(parts)


_V1_SUFFIX = b"\x00"  # response header v1: empty tagged-field section


def encode_response_header(correlation_id: int, header_version: int) -> bytes:
    """Response header v0 (correlation id) or v1 (plus empty tagged fields)."""
    if header_version >= 1:
        return _I32.pack(correlation_id) + _V1_SUFFIX
    return _I32.pack(correlation_id)


def response_prefix(correlation_id: int, header_version: int, body_size: int) -> bytes:
    """Frame size + response header for a body of `body_size` bytes.

    Lets the service write `[prefix, *body_parts]` with writelines without
    concatenating a large body.
    """
    if header_version >= 1:
        return struct.pack(">iib", body_size + 5, correlation_id, 0)
    return struct.pack(">ii", body_size + 4, correlation_id)
