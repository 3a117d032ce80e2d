"""A hand-written codec for JoinGroup (key 11), versions 0-9: a member joins a classic group
and takes part in its rebalance.

The decoder reads the body with wire.body_reader's checked reads (a body that does not hold
what it declares is a RequestDecodeError: Kafka closes the connection) into a struct with kio's
field names, the fields a version lacks at the defaults of Kafka's schema; tags, which the
request does not define, are skipped as Kafka skips them. The timeouts are ints of milliseconds
(kio gives timedeltas). The encoder writes kio's bytes for every version
(tests/unit/wire/test_group_codecs.py holds both to kio).

Layout (Kafka's JoinGroupRequest.json and JoinGroupResponse.json; v6+ are flexible)::

    request
      group_id            string
      session_timeout     int32
      rebalance_timeout   int32 (v1+; default -1: the handler takes the session timeout)
      member_id           string
      group_instance_id   nullable string (v5+)
      protocol_type       string
      protocols           [name string, metadata bytes, tags]
      reason              nullable string (v8+)
      tags                (v6+; none defined)

    response
      throttle_time       int32 (v2+)
      error_code          int16
      generation_id       int32
      protocol_type       nullable string (v7+)
      protocol_name       string, nullable from v7
      leader              string
      skip_assignment     bool (v9+)
      member_id           string
      members             [member_id string, group_instance_id nullable string (v5+),
                           metadata bytes, tags]
      tags                (v6+)
"""

from __future__ import annotations

import struct

import msgspec

from wire.body_reader import read_bytes, read_count, read_int, read_required_string, read_string, skip_tagged_fields
from wire.body_writer import write_bytes, write_length, write_string
from wire.errors import RequestDecodeError
from wire.records import Buffer

__all__ = ["VERSIONS", "JoinGroupRequest", "JoinGroupRequestProtocol", "JoinGroupResponse",
           "JoinGroupResponseMember", "decode_join_group_request", "encode_join_group_response"]

VERSIONS = range(0, 10)
FIRST_REBALANCE_TIMEOUT_VERSION = 1
FIRST_THROTTLE_VERSION = 2
FIRST_INSTANCE_ID_VERSION = 5
FIRST_FLEXIBLE_VERSION = 6
FIRST_PROTOCOL_TYPE_ANSWERED_VERSION = 7
FIRST_REASON_VERSION = 8
FIRST_SKIP_ASSIGNMENT_VERSION = 9

_REQUEST = "JoinGroupRequest"
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_ERROR_AND_GENERATION = struct.Struct(">hi")


class JoinGroupRequestProtocol(msgspec.Struct, frozen=True, gc=False):
    name: str
    metadata: bytes


class JoinGroupRequest(msgspec.Struct, frozen=True, gc=False):
    group_id: str
    session_timeout: int
    """Milliseconds."""
    rebalance_timeout: int = -1
    """Milliseconds; from v1 (-1 before: the session timeout stands in for it)."""
    member_id: str = ""
    group_instance_id: str | None = None
    """From v5."""
    protocol_type: str = ""
    protocols: tuple[JoinGroupRequestProtocol, ...] = ()
    reason: str | None = None
    """From v8."""


class JoinGroupResponseMember(msgspec.Struct, frozen=True, gc=False):
    member_id: str
    group_instance_id: str | None = None
    """Written from v5."""
    metadata: bytes = b""


class JoinGroupResponse(msgspec.Struct, frozen=True, gc=False):
    throttle_time: int = 0
    """Milliseconds; written from v2."""
    error_code: int = 0
    generation_id: int = -1
    protocol_type: str | None = None
    """Written from v7."""
    protocol_name: str | None = None
    """Nullable from v7; the caller gives "" for none before."""
    leader: str = ""
    skip_assignment: bool = False
    """Written from v9."""
    member_id: str = ""
    members: tuple[JoinGroupResponseMember, ...] = ()


def decode_join_group_request(version: int, buf: Buffer, pos: int) -> JoinGroupRequest:
    """Decode a JoinGroup body (versions 0-9) from `pos` of `buf`; bytes after it are ignored.
    RequestDecodeError for a body that does not hold what it declares; ValueError for a
    version outside 0-9."""
    if version not in VERSIONS:
        raise ValueError(f"join group request version {version} not in 0-9")
    end = len(buf)
    flexible = version >= FIRST_FLEXIBLE_VERSION
    group_id, pos = read_required_string(buf, pos, end, flexible, _REQUEST, "group_id")
    session_timeout, pos = read_int(buf, pos, end, 4, _REQUEST, "session_timeout")
    rebalance_timeout = -1
    if version >= FIRST_REBALANCE_TIMEOUT_VERSION:
        rebalance_timeout, pos = read_int(buf, pos, end, 4, _REQUEST, "rebalance_timeout")
    member_id, pos = read_required_string(buf, pos, end, flexible, _REQUEST, "member_id")
    instance_id = None
    if version >= FIRST_INSTANCE_ID_VERSION:
        instance_id, pos = read_string(buf, pos, end, flexible, _REQUEST, "group_instance_id")
    protocol_type, pos = read_required_string(buf, pos, end, flexible, _REQUEST, "protocol_type")
    count, pos = read_count(buf, pos, end, flexible, 3 if flexible else 6, _REQUEST, "protocols")
    protocols = []
    for _ in range(count):
        name, pos = read_required_string(buf, pos, end, flexible, _REQUEST, "protocols' name")
        metadata, pos = read_bytes(buf, pos, end, flexible, _REQUEST, "protocols' metadata")
        if metadata is None:
            raise RequestDecodeError(f"cannot decode {_REQUEST}: protocols' metadata is null")
        if flexible:
            pos = skip_tagged_fields(buf, pos, end, _REQUEST, "a protocol's tagged fields")
        protocols.append(JoinGroupRequestProtocol(name, metadata))
    reason = None
    if version >= FIRST_REASON_VERSION:
        reason, pos = read_string(buf, pos, end, flexible, _REQUEST, "reason")
    if flexible:
        skip_tagged_fields(buf, pos, end, _REQUEST, "the request's tagged fields")
    return JoinGroupRequest(group_id, session_timeout, rebalance_timeout, member_id, instance_id, protocol_type,
                            tuple(protocols), reason)


def encode_join_group_response(version: int, response: JoinGroupResponse) -> bytes:
    """The JoinGroupResponse body for `version` (0-9), byte for byte kio's."""
    if version not in VERSIONS:
        raise ValueError(f"join group response version {version} not in 0-9")
    flexible = version >= FIRST_FLEXIBLE_VERSION
    out = bytearray(_I32.pack(response.throttle_time) if version >= FIRST_THROTTLE_VERSION else b"")
    out += _ERROR_AND_GENERATION.pack(response.error_code, response.generation_id)
    if version >= FIRST_PROTOCOL_TYPE_ANSWERED_VERSION:
        write_string(out, response.protocol_type, flexible)
    write_string(out, response.protocol_name, flexible)
    write_string(out, response.leader, flexible)
    if version >= FIRST_SKIP_ASSIGNMENT_VERSION:
        out.append(1 if response.skip_assignment else 0)
    write_string(out, response.member_id, flexible)
    write_length(out, len(response.members), flexible)
    for m in response.members:
        write_string(out, m.member_id, flexible)
        if version >= FIRST_INSTANCE_ID_VERSION:
            write_string(out, m.group_instance_id, flexible)
        write_bytes(out, m.metadata, flexible)
        if flexible:
            out.append(0)  # the member's tagged fields: none
    if flexible:
        out.append(0)  # the response's tagged fields: none
    return bytes(out)
