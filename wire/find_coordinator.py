"""A hand-written codec for FindCoordinator (key 10), versions 0-6.

Every consumer group member and transactional producer starts with FindCoordinator. With
the codecs of the other requests a classic consumer and an idempotent producer send (listed in
wire.messages' _CONSUMER_CODECS) it keeps kio out of them: kio's import, its native reader and
each API's schema modules hold about 2 MB of a broker's memory once loaded.

`decode_find_coordinator_request` reads the body, checking each length and count against the
bytes left (wire.body_reader); a body that does not hold what it declares is a
RequestDecodeError (Kafka closes the connection on a request it cannot parse). The request has
kio's field names, with the fields a version lacks at the defaults of Kafka's schema. Where kio
and Kafka differ, this decoder does what Kafka's generated reader does: the request defines no
tagged field, so every tag is unknown, and Kafka skips them where kio refuses them. A null key
or key array is refused by both.

`encode_find_coordinator_response` writes the same bytes as kio's writer for every version
(the unit tests compare them), from a struct with kio's field names; the throttle time is an
int of milliseconds. A field a version lacks is not written.

Layout (Kafka's FindCoordinatorRequest.json and FindCoordinatorResponse.json; v3+ are flexible:
compact lengths, tagged fields)::

    request
      key               string (v0-3)
      key_type          int8 (v1+; 0 group, 1 transaction, 2 share (v6+))
      coordinator_keys  [string] (v4+)
      tags              (v3+; none defined)

    response
      throttle_time     int32 (v1+)
      error_code        int16 (v0-3)
      error_message     nullable string (v1-3)
      node_id           int32 (v0-3)
      host              string (v0-3)
      port              int32 (v0-3)
      coordinators      [key string, node_id int32, host string, port int32, error_code int16,
                         error_message nullable string, tags] (v4+)
      tags              (v3+)
"""

from __future__ import annotations

import struct

import msgspec

from wire.body_reader import read_count, read_int, read_required_string, skip_tagged_fields
from wire.body_writer import write_length, write_string
from wire.records import Buffer

__all__ = ["VERSIONS", "Coordinator", "FindCoordinatorRequest", "FindCoordinatorResponse",
           "decode_find_coordinator_request", "encode_find_coordinator_response"]

VERSIONS = range(0, 7)
FIRST_KEY_TYPE_VERSION = 1
FIRST_FLEXIBLE_VERSION = 3
FIRST_BATCHED_VERSION = 4
"""From v4 a request names several keys and the answer has a coordinator for each (KIP-699)."""

_REQUEST = "FindCoordinatorRequest"
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class FindCoordinatorRequest(msgspec.Struct, frozen=True, gc=False):
    key: str = ""
    """v0-3; "" from v4 (the keys are in coordinator_keys)."""
    key_type: int = 0
    """From v1; 0 (group) before."""
    coordinator_keys: tuple[str, ...] = ()
    """From v4; () before."""


class Coordinator(msgspec.Struct, frozen=True, gc=False):
    key: str
    node_id: int
    host: str
    port: int
    error_code: int
    error_message: str | None


class FindCoordinatorResponse(msgspec.Struct, frozen=True, gc=False):
    throttle_time: int = 0
    """Milliseconds; written from v1."""
    error_code: int = 0
    """v0-3."""
    error_message: str | None = None
    """v1-3."""
    node_id: int = -1
    """v0-3."""
    host: str = ""
    """v0-3."""
    port: int = -1
    """v0-3."""
    coordinators: tuple[Coordinator, ...] = ()
    """From v4."""


def decode_find_coordinator_request(version: int, buf: Buffer, pos: int) -> FindCoordinatorRequest:
    """Decode a FindCoordinator body (versions 0-6) that starts at `pos` of `buf`; bytes after
    it are ignored. RequestDecodeError for a body that does not hold what it declares;
    ValueError for a version outside 0-6."""
    if version not in VERSIONS:
        raise ValueError(f"find coordinator request version {version} not in 0-6")
    end = len(buf)
    flexible = version >= FIRST_FLEXIBLE_VERSION
    key = ""
    if version < FIRST_BATCHED_VERSION:
        key, pos = read_required_string(buf, pos, end, flexible, _REQUEST, "key")
    key_type = 0
    if version >= FIRST_KEY_TYPE_VERSION:
        key_type, pos = read_int(buf, pos, end, 1, _REQUEST, "key_type")
    keys: tuple[str, ...] = ()
    if version >= FIRST_BATCHED_VERSION:
        count, pos = read_count(buf, pos, end, flexible, 1, _REQUEST, "coordinator_keys")
        read = []
        for _ in range(count):
            value, pos = read_required_string(buf, pos, end, flexible, _REQUEST, "coordinator_keys")
            read.append(value)
        keys = tuple(read)
    if flexible:
        skip_tagged_fields(buf, pos, end, _REQUEST, "the request's tagged fields")
    return FindCoordinatorRequest(key, key_type, keys)


def encode_find_coordinator_response(version: int, response: FindCoordinatorResponse) -> bytes:
    """The FindCoordinatorResponse body for `version` (0-6), byte for byte kio's. ValueError for
    a version outside 0-6; struct.error for a number outside its field's range."""
    if version not in VERSIONS:
        raise ValueError(f"find coordinator response version {version} not in 0-6")
    flexible = version >= FIRST_FLEXIBLE_VERSION
    out = bytearray()
    if version >= 1:
        out += _I32.pack(response.throttle_time)
    if version < FIRST_BATCHED_VERSION:
        out += _I16.pack(response.error_code)
        if version >= 1:
            write_string(out, response.error_message, flexible)
        out += _I32.pack(response.node_id)
        write_string(out, response.host, flexible)
        out += _I32.pack(response.port)
    else:
        write_length(out, len(response.coordinators), True)
        for c in response.coordinators:
            write_string(out, c.key, True)
            out += _I32.pack(c.node_id)
            write_string(out, c.host, True)
            out += _I32.pack(c.port) + _I16.pack(c.error_code)
            write_string(out, c.error_message, True)
            out.append(0)  # the coordinator's tagged fields: none
    if flexible:
        out.append(0)  # the response's tagged fields: none
    return bytes(out)
