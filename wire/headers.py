"""Request and response headers, and which header version each API uses.

Kafka picks the header version from the *body* schema: a flexible (tagged
fields) request version uses request header v2, otherwise v1; a flexible
response uses response header v1, otherwise v0 -- except ApiVersions, whose
responses always use header v0 so that a client that does not yet know the
broker's versions can still read the answer. Each API's flexibility is one
"N+" range in Kafka's JSON schemas (`flexibleVersions`, the same for its request
and response): FIRST_FLEXIBLE_VERSION keeps N for every API Kafka 4.4 defines.
It is a table here rather than a question to kio's schemas because reading the
headers of a client's first requests must not import kio (about 12 ms of the
broker's start, and its schemas of each API a few more); the header tests hold
it to Kafka's JSON and to kio's schemas for every version.
"""

from __future__ import annotations

import struct

import msgspec

from wire.errors import CorruptRecordError, HeaderError
from wire.records import read_uvarint

__all__ = [
    "RequestHeader",
    "HeaderError",
    "parse_request_header",
    "request_header_version",
    "response_header_version",
    "encode_request_header",
    "response_prefix",
    "API_VERSIONS_KEY",
]

API_VERSIONS_KEY = 18
_HDR = struct.Struct(">hhih")  # api_key, api_version, correlation_id, client_id length
_I16 = struct.Struct(">h")
# Frame size and response header v0 (correlation id) or v1 (plus an empty tagged-field section).
_PREFIX_V0 = struct.Struct(">ii")
_PREFIX_V1 = struct.Struct(">iib")
# A tagged-field count/size beyond this cannot fit in any valid frame.
_MAX_UVARINT_BYTES = 5
FIRST_FLEXIBLE_VERSION: dict[int, int | None] = {
    0: 9, 1: 12, 2: 6, 3: 9, 4: None, 5: None, 6: None, 7: None, 8: 8, 9: 6, 10: 3, 11: 6, 12: 4,
    13: 4, 14: 4, 15: 5, 16: 3, 17: None, 18: 3, 19: 5, 20: 4, 21: 2, 22: 2, 23: 4, 24: 3, 25: 3,
    26: 3, 27: 1, 28: 3, 29: 2, 30: 2, 31: 2, 32: 4, 33: 2, 34: 2, 35: 2, 36: 2, 37: 2, 38: 2,
    39: 2, 40: 2, 41: 2, 42: 2, 43: 2, 44: 1, 45: 0, 46: 0, 47: None, 48: 1, 49: 1, 50: 0, 51: 0,
    52: 0, 53: 1, 54: 1, 55: 0, 56: 0, 57: 0, 58: 0, 59: 0, 60: 0, 61: 0, 62: 0, 63: 0, 64: 0,
    65: 0, 66: 0, 67: 0, 68: 0, 69: 0, 70: 0, 71: 0, 72: 0, 73: 0, 74: 0, 75: 0, 76: 0, 77: 0,
    78: 0, 79: 0, 80: 0, 81: 0, 82: 0, 83: 0, 84: 0, 85: 0, 86: 0, 87: 0, 88: 0, 89: 0, 90: 0,
    91: 0, 92: 0, 93: 0, 94: 0,
}
"""API key -> the first flexible version of its request and response (Kafka 4.4's
`flexibleVersions`: "N+"), None for an API that has none ("none")."""


class RequestHeader(msgspec.Struct, frozen=True):
    """A decoded request header. header_version is 1 or 2 (0 is never parsed)."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header_version: int


def request_header_version(api_key: int, api_version: int) -> int:
    """1 for non-flexible request versions, 2 for flexible ones.

    Unknown API keys yield 1 (client id still parsed) so the caller can
    close the connection or answer with a proper error.
    """
    first_flexible = FIRST_FLEXIBLE_VERSION.get(api_key)
    return 2 if first_flexible is not None and api_version >= first_flexible else 1


def response_header_version(api_key: int, api_version: int) -> int:
    """0 for non-flexible response versions and for ApiVersions, else 1."""
    if api_key == API_VERSIONS_KEY:
        return 0
    first_flexible = FIRST_FLEXIBLE_VERSION.get(api_key)
    return 1 if first_flexible is not None and api_version >= first_flexible else 0


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


def response_prefix(correlation_id: int, header_version: int, body_size: int) -> bytes:
    """Frame size + response header for a body of `body_size` bytes.

    Lets the service write `[prefix, *body_parts]` with writelines without
    concatenating a large body.
    """
    if header_version >= 1:
        return _PREFIX_V1.pack(body_size + 5, correlation_id, 0)
    return _PREFIX_V0.pack(body_size + 4, correlation_id)
