"""A hand-written codec for SyncGroup (key 14), versions 0-5: the leader of a classic group
hands in the assignment, and every member gets its part.

The decoder reads the body with wire.body_reader's checked reads (a body that does not hold
what it declares is a RequestDecodeError: Kafka closes the connection) into a struct with kio's
field names, the fields a version lacks at the defaults of Kafka's schema; tags, which the
request does not define, are skipped as Kafka skips them. The encoder writes kio's bytes for
every version (tests/unit/wire/test_group_codecs.py holds both to kio).

Layout (Kafka's SyncGroupRequest.json and SyncGroupResponse.json; v4+ are flexible)::

    request
      group_id           string
      generation_id      int32
      member_id          string
      group_instance_id  nullable string (v3+)
      protocol_type      nullable string (v5+)
      protocol_name      nullable string (v5+)
      assignments        [member_id string, assignment bytes, tags]
      tags               (v4+; none defined)

    response
      throttle_time      int32 (v1+)
      error_code         int16
      protocol_type      nullable string (v5+)
      protocol_name      nullable string (v5+)
      assignment         bytes
      tags               (v4+)
"""

from __future__ import annotations

import struct

import msgspec

from wire.body_reader import read_bytes, read_count, read_int, read_required_string, read_string, skip_tagged_fields
from wire.body_writer import write_bytes, write_string
from wire.errors import RequestDecodeError
from wire.records import Buffer

__all__ = ["VERSIONS", "SyncGroupRequest", "SyncGroupRequestAssignment", "SyncGroupResponse",
           "decode_sync_group_request", "encode_sync_group_response"]

VERSIONS = range(0, 6)
FIRST_INSTANCE_ID_VERSION = 3
FIRST_FLEXIBLE_VERSION = 4
FIRST_PROTOCOL_VERSION = 5

_REQUEST = "SyncGroupRequest"
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class SyncGroupRequestAssignment(msgspec.Struct, frozen=True, gc=False):
    member_id: str
    assignment: bytes


class SyncGroupRequest(msgspec.Struct, frozen=True, gc=False):
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    """From v3."""
    protocol_type: str | None = None
    """From v5."""
    protocol_name: str | None = None
    """From v5."""
    assignments: tuple[SyncGroupRequestAssignment, ...] = ()


class SyncGroupResponse(msgspec.Struct, frozen=True, gc=False):
    throttle_time: int = 0
    """Milliseconds; written from v1."""
    error_code: int = 0
    protocol_type: str | None = None
    """Written from v5."""
    protocol_name: str | None = None
    """Written from v5."""
    assignment: bytes = b""


def decode_sync_group_request(version: int, buf: Buffer, pos: int) -> SyncGroupRequest:
    """Decode a SyncGroup body (versions 0-5) from `pos` of `buf`; bytes after it are ignored.
    RequestDecodeError for a body that does not hold what it declares; ValueError for a
    version outside 0-5."""
    if version not in VERSIONS:
        raise ValueError(f"sync group request version {version} not in 0-5")
    end = len(buf)
    flexible = version >= FIRST_FLEXIBLE_VERSION
    group_id, pos = read_required_string(buf, pos, end, flexible, _REQUEST, "group_id")
    generation_id, pos = read_int(buf, pos, end, 4, _REQUEST, "generation_id")
    member_id, pos = read_required_string(buf, pos, end, flexible, _REQUEST, "member_id")
    instance_id = protocol_type = protocol_name = None
    if version >= FIRST_INSTANCE_ID_VERSION:
        instance_id, pos = read_string(buf, pos, end, flexible, _REQUEST, "group_instance_id")
    if version >= FIRST_PROTOCOL_VERSION:
        protocol_type, pos = read_string(buf, pos, end, flexible, _REQUEST, "protocol_type")
        protocol_name, pos = read_string(buf, pos, end, flexible, _REQUEST, "protocol_name")
    count, pos = read_count(buf, pos, end, flexible, 3 if flexible else 6, _REQUEST, "assignments")
    assignments = []
    for _ in range(count):
        assigned, pos = read_required_string(buf, pos, end, flexible, _REQUEST, "assignments' member_id")
        assignment, pos = read_bytes(buf, pos, end, flexible, _REQUEST, "assignments' assignment")
        if assignment is None:
            raise RequestDecodeError(f"cannot decode {_REQUEST}: assignments' assignment is null")
        if flexible:
            pos = skip_tagged_fields(buf, pos, end, _REQUEST, "an assignment's tagged fields")
        assignments.append(SyncGroupRequestAssignment(assigned, assignment))
    if flexible:
        skip_tagged_fields(buf, pos, end, _REQUEST, "the request's tagged fields")
    return SyncGroupRequest(group_id, generation_id, member_id, instance_id, protocol_type, protocol_name,
                            tuple(assignments))


def encode_sync_group_response(version: int, response: SyncGroupResponse) -> bytes:
    """The SyncGroupResponse body for `version` (0-5), byte for byte kio's."""
    if version not in VERSIONS:
        raise ValueError(f"sync group response version {version} not in 0-5")
    flexible = version >= FIRST_FLEXIBLE_VERSION
    out = bytearray(_I32.pack(response.throttle_time) if version >= 1 else b"")
    out += _I16.pack(response.error_code)
    if version >= FIRST_PROTOCOL_VERSION:
        write_string(out, response.protocol_type, flexible)
        write_string(out, response.protocol_name, flexible)
    write_bytes(out, response.assignment, flexible)
    if flexible:
        out.append(0)  # the response's tagged fields: none
    return bytes(out)
