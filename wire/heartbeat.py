"""A hand-written codec for Heartbeat (key 12), versions 0-4: a classic group member is alive.

Sent every few seconds by every member of a classic group. The decoder reads the body with
wire.body_reader's checked reads (a body that does not hold what it declares is a
RequestDecodeError: Kafka closes the connection) into a struct with kio's field names, the
fields a version lacks at the defaults of Kafka's schema; tags, which the request does not
define, are skipped as Kafka skips them. The encoder writes kio's bytes for every version
(tests/unit/wire/test_group_codecs.py holds both to kio).

Layout (Kafka's HeartbeatRequest.json and HeartbeatResponse.json; v4+ are flexible)::

    request
      group_id           string
      generation_id      int32
      member_id          string
      group_instance_id  nullable string (v3+)
      tags               (v4+; none defined)

    response
      throttle_time      int32 (v1+)
      error_code         int16
      tags               (v4+)
"""

from __future__ import annotations

import struct

import msgspec

from wire.body_reader import read_int, read_required_string, read_string, skip_tagged_fields
from wire.records import Buffer

__all__ = ["VERSIONS", "HeartbeatRequest", "HeartbeatResponse", "decode_heartbeat_request",
           "encode_heartbeat_response"]

VERSIONS = range(0, 5)
FIRST_INSTANCE_ID_VERSION = 3
FIRST_FLEXIBLE_VERSION = 4

_REQUEST = "HeartbeatRequest"
_I16 = struct.Struct(">h")
_THROTTLE_AND_ERROR = struct.Struct(">ih")


class HeartbeatRequest(msgspec.Struct, frozen=True, gc=False):
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    """From v3 (static membership, KIP-345)."""


class HeartbeatResponse(msgspec.Struct, frozen=True, gc=False):
    throttle_time: int = 0
    """Milliseconds; written from v1."""
    error_code: int = 0


def decode_heartbeat_request(version: int, buf: Buffer, pos: int) -> HeartbeatRequest:
    """Decode a Heartbeat body (versions 0-4) from `pos` of `buf`; bytes after it are ignored.
    RequestDecodeError for a body that does not hold what it declares; ValueError for a
    version outside 0-4."""
    if version not in VERSIONS:
        raise ValueError(f"heartbeat request version {version} not in 0-4")
    end = len(buf)
    flexible = version >= FIRST_FLEXIBLE_VERSION
    group_id, pos = read_required_string(buf, pos, end, flexible, _REQUEST, "group_id")
    generation_id, pos = read_int(buf, pos, end, 4, _REQUEST, "generation_id")
    member_id, pos = read_required_string(buf, pos, end, flexible, _REQUEST, "member_id")
    instance_id = None
    if version >= FIRST_INSTANCE_ID_VERSION:
        instance_id, pos = read_string(buf, pos, end, flexible, _REQUEST, "group_instance_id")
    if flexible:
        skip_tagged_fields(buf, pos, end, _REQUEST, "the request's tagged fields")
    return HeartbeatRequest(group_id, generation_id, member_id, instance_id)


def encode_heartbeat_response(version: int, response: HeartbeatResponse) -> bytes:
    """The HeartbeatResponse body for `version` (0-4), byte for byte kio's."""
    if version not in VERSIONS:
        raise ValueError(f"heartbeat response version {version} not in 0-4")
    if version == 0:
        return _I16.pack(response.error_code)
    body = _THROTTLE_AND_ERROR.pack(response.throttle_time, response.error_code)
    return body + b"\x00" if version >= FIRST_FLEXIBLE_VERSION else body
