"""A hand-written codec for LeaveGroup (key 13), versions 0-5: members leave a classic group
(from v3 several at once, by member id or by group instance id).

The decoder reads the body with wire.body_reader's checked reads (a body that does not hold
what it declares is a RequestDecodeError: Kafka closes the connection) into a struct with kio's
field names, the fields a version lacks at the defaults of Kafka's schema; tags, which the
request does not define, are skipped as Kafka skips them. The encoder writes kio's bytes for
every version (tests/unit/wire/test_group_codecs.py holds both to kio).

Layout (Kafka's LeaveGroupRequest.json and LeaveGroupResponse.json; v4+ are flexible)::

    request
      group_id            string
      member_id           string (v0-2)
      members             [member_id string, group_instance_id nullable string,
                           reason nullable string (v5+), tags] (v3+)
      tags                (v4+; none defined)

    response
      throttle_time       int32 (v1+)
      error_code          int16
      members             [member_id string, group_instance_id nullable string, error_code int16,
                           tags] (v3+)
      tags                (v4+)
"""

from __future__ import annotations

import struct

import msgspec

from wire.body_reader import read_count, read_required_string, read_string, skip_tagged_fields
from wire.body_writer import write_length, write_string
from wire.records import Buffer

__all__ = ["VERSIONS", "LeaveGroupRequest", "LeaveGroupResponse", "MemberIdentity", "MemberResponse",
           "decode_leave_group_request", "encode_leave_group_response"]

VERSIONS = range(0, 6)
FIRST_BATCHED_VERSION = 3
FIRST_FLEXIBLE_VERSION = 4
FIRST_REASON_VERSION = 5

_REQUEST = "LeaveGroupRequest"
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class MemberIdentity(msgspec.Struct, frozen=True, gc=False):
    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None
    """From v5."""


class LeaveGroupRequest(msgspec.Struct, frozen=True, gc=False):
    group_id: str
    member_id: str = ""
    """v0-2; "" from v3 (the members are in `members`)."""
    members: tuple[MemberIdentity, ...] = ()
    """From v3."""


class MemberResponse(msgspec.Struct, frozen=True, gc=False):
    member_id: str
    group_instance_id: str | None
    error_code: int


class LeaveGroupResponse(msgspec.Struct, frozen=True, gc=False):
    throttle_time: int = 0
    """Milliseconds; written from v1."""
    error_code: int = 0
    members: tuple[MemberResponse, ...] = ()
    """Written from v3."""


def decode_leave_group_request(version: int, buf: Buffer, pos: int) -> LeaveGroupRequest:
    """Decode a LeaveGroup body (versions 0-5) from `pos` of `buf`; bytes after it are ignored.
    RequestDecodeError for a body that does not hold what it declares; ValueError for a
    version outside 0-5."""
    if version not in VERSIONS:
        raise ValueError(f"leave group request version {version} not in 0-5")
    end = len(buf)
    flexible = version >= FIRST_FLEXIBLE_VERSION
    group_id, pos = read_required_string(buf, pos, end, flexible, _REQUEST, "group_id")
    if version < FIRST_BATCHED_VERSION:
        member_id, pos = read_required_string(buf, pos, end, flexible, _REQUEST, "member_id")
        return LeaveGroupRequest(group_id, member_id)
    count, pos = read_count(buf, pos, end, flexible, 3 if flexible else 4, _REQUEST, "members")
    members = []
    for _ in range(count):
        member_id, pos = read_required_string(buf, pos, end, flexible, _REQUEST, "members' member_id")
        instance_id, pos = read_string(buf, pos, end, flexible, _REQUEST, "members' group_instance_id")
        reason = None
        if version >= FIRST_REASON_VERSION:
            reason, pos = read_string(buf, pos, end, flexible, _REQUEST, "members' reason")
        if flexible:
            pos = skip_tagged_fields(buf, pos, end, _REQUEST, "a member's tagged fields")
        members.append(MemberIdentity(member_id, instance_id, reason))
    if flexible:
        skip_tagged_fields(buf, pos, end, _REQUEST, "the request's tagged fields")
    return LeaveGroupRequest(group_id, members=tuple(members))


def encode_leave_group_response(version: int, response: LeaveGroupResponse) -> bytes:
    """The LeaveGroupResponse body for `version` (0-5), byte for byte kio's."""
    if version not in VERSIONS:
        raise ValueError(f"leave group response version {version} not in 0-5")
    flexible = version >= FIRST_FLEXIBLE_VERSION
    out = bytearray(_I32.pack(response.throttle_time) if version >= 1 else b"")
    out += _I16.pack(response.error_code)
    if version >= FIRST_BATCHED_VERSION:
        write_length(out, len(response.members), flexible)
        for m in response.members:
            write_string(out, m.member_id, flexible)
            write_string(out, m.group_instance_id, flexible)
            out += _I16.pack(m.error_code)
            if flexible:
                out.append(0)  # the member's tagged fields: none
    if flexible:
        out.append(0)  # the response's tagged fields: none
    return bytes(out)
