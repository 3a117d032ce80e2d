"""A hand-written codec for a client's first request: ApiVersions (key 18), versions 0-5.

Every client opens a connection with ApiVersions, then Metadata. Through kio, answering that
first ApiVersions meant importing kio (about 12 ms of the broker's ~100 ms start) and loading its
ApiVersions schemas (about 3 ms more). This module, with wire.metadata_request and
wire.metadata_response, answers a client's first requests without importing kio at all.

`decode_api_versions_request` reads the body, checking each length against the bytes left
(wire.body_reader); a body that does not hold what it declares is a RequestDecodeError (Kafka
closes the connection on a request it cannot parse). Bytes after the body are ignored, as kio
and Kafka ignore them. The result has kio's field names; v0-2 have no fields, so both names are
at Kafka's default for a string, "". Where kio and Kafka differ, this decoder does what
Kafka's generated reader does: the request defines no tagged field, so every tag is unknown,
and Kafka skips them where kio refuses them. A null name or version is refused by both ("non-
nullable field ... was serialized as null"). A name longer than 32,767 bytes is taken, as kio
takes it (Kafka's reader refuses it: "string field ... had invalid length").

`encode_api_versions_response` writes the same bytes as kio's writer (kio.serial.entity_writer;
the unit tests compare them byte for byte for every version) from msgspec structs with kio's
field names, except the throttle time, an int of milliseconds. A field a version lacks is not
written. From v3 the features are tagged fields of the response, written as kio and Kafka's
generated writer write them: in tag order, each only when it differs from its default (an empty
list, epoch -1, false), after a count of those written; so a response at the defaults ends with
one byte, 0. (Kafka's schema notes that a v0-3 answer omits features whose MinVersion is 0,
KAFKA-17011: that is the caller's choice of features, not the encoding's.)

`unsupported_api_versions_response` is the v0 body Kafka sends to an ApiVersions request of a
version it does not serve (KIP-511).

Layout (Kafka's ApiVersionsRequest.json and ApiVersionsResponse.json; v3+ are flexible: compact
lengths, tagged fields; the response header stays v0 for every version)::

    request
      client_software_name     string (v3+)
      client_software_version  string (v3+)
      cluster_id               nullable string (v5+, KIP-1242: the cluster the client means to reach)
      node_id                  int32 (v5+, -1 for none: the broker it means to reach)
      tags                     (v3+; none defined)

    response
    response (v5 as v4)
      error_code               int16
      api_keys                 [api_key int16, min_version int16, max_version int16, tags (v3+)]
      throttle_time_ms         int32 (v1+)
      tags                     (v3+) 0: supported_features [name string, min_version int16,
                                                            max_version int16, tags]
                                     1: finalized_features_epoch int64 (default -1)
                                     2: finalized_features [name string, max_version_level int16,
                                                            min_version_level int16, tags]
                                     3: zk_migration_ready bool (default false)
"""

from __future__ import annotations

import re
import struct
from collections.abc import Mapping

import msgspec

from wire.body_reader import read_string, skip_tagged_fields, truncated
from wire.errors import ErrorCode, RequestDecodeError
from wire.body_writer import write_length, write_string, write_tagged_fields
from wire.records import Buffer

__all__ = [
    "VERSIONS",
    "ApiVersion",
    "ApiVersionsRequest",
    "ApiVersionsResponse",
    "FinalizedFeatureKey",
    "SupportedFeatureKey",
    "decode_api_versions_request",
    "encode_api_versions_response",
    "unsupported_api_versions_response",
]

VERSIONS = range(0, 6)
KIO_VERSIONS = range(0, 5)
"""The versions kio has schemas for, which the unit tests compare with; v5's are checked by hand
and against Kafka 4.4 (tests/oracle/test_admin_metadata.py)."""
FIRST_THROTTLE_VERSION = 1
FIRST_FLEXIBLE_VERSION = 3
FIRST_TARGET_VERSION = 5

_REQUEST = "ApiVersionsRequest"

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I32_AT = _I32.unpack_from
_HEAD = struct.Struct(">hi")  # error_code, api_keys' count (a v0 answer)
_API_VERSION = struct.Struct(">hhh")  # api_key, min_version, max_version (v0-2)
_API_VERSION_FLEXIBLE = struct.Struct(">hhhx")  # ... and an empty tagged-field section (v3+)
_FEATURE = struct.Struct(">hhx")  # two levels and an empty tagged-field section
_I64 = struct.Struct(">q")


_CLIENT_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")
"""What Kafka's ApiVersionsRequest.isValid requires of a v3+ client software name and version."""


class ApiVersionsRequest(msgspec.Struct, frozen=True, gc=False):
    client_software_name: str = ""
    """From v3; "" before."""
    client_software_version: str = ""
    """From v3; "" before."""
    cluster_id: str | None = None
    """From v5 (KIP-1242): the cluster the client means to reach; None when it does not know."""
    node_id: int = -1
    """From v5: the broker the client means to reach; -1 when it does not know."""

    def is_valid(self, version: int) -> bool:
        """Kafka's ApiVersionsRequest.isValid: from v3, a client software name and version of
        letters, digits, '-' and '.', that begin and end with a letter or digit; from v5, a
        cluster id and a node id given together or neither. A request that is not is answered
        INVALID_REQUEST, and nothing else."""
        if version < FIRST_FLEXIBLE_VERSION:
            return True
        return (_CLIENT_SOFTWARE.fullmatch(self.client_software_name) is not None
                and _CLIENT_SOFTWARE.fullmatch(self.client_software_version) is not None
                and (self.cluster_id is None) == (self.node_id == -1))

    def is_misrouted(self, cluster_id: str | None, node_id: int) -> bool:
        """KIP-1242: the client named another cluster or another broker than this one (v5+), and
        must bootstrap again (REBOOTSTRAP_REQUIRED)."""
        return self.cluster_id is not None and (self.cluster_id != cluster_id or self.node_id != node_id)


class ApiVersion(msgspec.Struct, frozen=True, gc=False):
    api_key: int
    min_version: int
    max_version: int


class SupportedFeatureKey(msgspec.Struct, frozen=True, gc=False):
    name: str
    min_version: int
    max_version: int


class FinalizedFeatureKey(msgspec.Struct, frozen=True, gc=False):
    name: str
    max_version_level: int
    min_version_level: int


class ApiVersionsResponse(msgspec.Struct, frozen=True, gc=False):
    error_code: int
    api_keys: tuple[ApiVersion, ...]
    throttle_time_ms: int = 0
    """Written from v1."""
    supported_features: tuple[SupportedFeatureKey, ...] = ()
    """Written from v3 (tag 0), unless empty."""
    finalized_features_epoch: int = -1
    """Written from v3 (tag 1), unless -1 (unknown)."""
    finalized_features: tuple[FinalizedFeatureKey, ...] = ()
    """Written from v3 (tag 2), unless empty."""
    zk_migration_ready: bool = False
    """Written from v3 (tag 3), unless false."""


_NO_FIELDS = ApiVersionsRequest()


# -- the request -----------------------------------------------------------------


def _name(buf: Buffer, pos: int, end: int, what: str) -> tuple[str, int]:
    value, pos = read_string(buf, pos, end, True, _REQUEST, what)
    if value is None:
        raise RequestDecodeError(f"cannot decode {_REQUEST}: {what} is null")
    return value, pos


def decode_api_versions_request(version: int, buf: Buffer, pos: int) -> ApiVersionsRequest:
    """Decode an ApiVersions body (versions 0-5) that starts at `pos` of `buf`; bytes after it
    are ignored.

    RequestDecodeError for a body that does not hold what it declares; ValueError for a version
    outside 0-5 (Kafka answers those without reading the body: unsupported_api_versions_response).
    """
    if version not in VERSIONS:
        raise ValueError(f"api versions request version {version} not in 0-5")
    if version < FIRST_FLEXIBLE_VERSION:
        return _NO_FIELDS  # (v0-2 have an empty body)
    end = len(buf)
    name, pos = _name(buf, pos, end, "client_software_name")
    software_version, pos = _name(buf, pos, end, "client_software_version")
    cluster_id, node_id = None, -1
    if version >= FIRST_TARGET_VERSION:
        cluster_id, pos = read_string(buf, pos, end, True, _REQUEST, "cluster_id")
        if pos + 4 > end:
            raise truncated(_REQUEST, "node_id")
        node_id, pos = _I32_AT(buf, pos)[0], pos + 4
    skip_tagged_fields(buf, pos, end, _REQUEST, "the request's tagged fields")
    return ApiVersionsRequest(name, software_version, cluster_id, node_id)


# -- the response ----------------------------------------------------------------


def _write_features(out: bytearray, features: list[tuple[str, int, int]]) -> None:
    """A feature list (a tagged field's value): each name, then its two levels."""
    write_length(out, len(features), True)
    for name, first, second in features:
        write_string(out, name, True)
        out += _FEATURE.pack(first, second)


def _tagged_fields(response: ApiVersionsResponse) -> list[tuple[int, bytes]]:
    """The response's tagged fields that are not at their defaults, in tag order."""
    fields: list[tuple[int, bytes]] = []
    if response.supported_features:
        value = bytearray()
        _write_features(value, [(f.name, f.min_version, f.max_version) for f in response.supported_features])
        fields.append((0, bytes(value)))
    if response.finalized_features_epoch != -1:
        fields.append((1, _I64.pack(response.finalized_features_epoch)))
    if response.finalized_features:
        value = bytearray()
        _write_features(value, [(f.name, f.max_version_level, f.min_version_level)
                                for f in response.finalized_features])
        fields.append((2, bytes(value)))
    if response.zk_migration_ready:
        fields.append((3, b"\x01"))
    return fields


def encode_api_versions_response(version: int, response: ApiVersionsResponse) -> bytes:
    """The ApiVersionsResponse body for `version` (0-5), byte for byte kio's (v5's is v4's).

    The features (v3+) are not written before v3. ValueError for a version outside 0-5;
    struct.error for a number outside its field's range (kio's writer refuses it too).
    """
    if version not in VERSIONS:
        raise ValueError(f"api versions response version {version} not in 0-5")
    flexible = version >= FIRST_FLEXIBLE_VERSION
    keys = response.api_keys
    out = bytearray(_I16.pack(response.error_code))
    write_length(out, len(keys), flexible)
    pack = (_API_VERSION_FLEXIBLE if flexible else _API_VERSION).pack
    for k in keys:
        out += pack(k.api_key, k.min_version, k.max_version)
    if version >= FIRST_THROTTLE_VERSION:
        out += _I32.pack(response.throttle_time_ms)
    if flexible:
        write_tagged_fields(out, _tagged_fields(response))
    return bytes(out)


def unsupported_api_versions_response(supported: Mapping[int, tuple[int, int]]) -> bytes:
    """ApiVersions v0 body: UNSUPPORTED_VERSION plus the given ranges, by api key.

    Sent (with response header v0) when a client asks for an ApiVersions version newer than
    ours, so it can retry with one we support (KIP-511). Kafka itself lists only ApiVersions'
    own range here; pass `{18: (lo, hi)}` for exactly that, or the full table.
    """
    pack = _API_VERSION.pack
    parts = [_HEAD.pack(ErrorCode.UNSUPPORTED_VERSION, len(supported))]
    for key in sorted(supported):
        lo, hi = supported[key]
        parts.append(pack(key, lo, hi))
    return b"".join(parts)
