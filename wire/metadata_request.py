"""A hand-written decoder for a client's first request: Metadata, versions 0-13.

Every client starts with ApiVersions and then Metadata. Through kio, answering that first
Metadata meant importing kio and loading its Metadata schemas, about 16 ms of the broker's
~100 ms start (and the bounds walk, wire.request_bounds, which reads kio's schemas too). This
module and wire.metadata_response answer it without importing kio at all.

`decode_metadata_request` reads the body once, checking each length and count against the
bytes left before anything is built from it (wire.body_reader); a body that does not hold
what it declares is a RequestDecodeError (Kafka closes the connection on a request it cannot
parse). The result has kio's field names, with the fields a version lacks at the defaults of
Kafka's schema, so a handler that read kio's entity reads it unchanged. The unit tests decode
random and damaged requests both ways and require the same request or the same refusal.

Where kio and Kafka differ, this decoder does what Kafka's generated reader does:

- tagged fields: Metadata defines none, so every tag is unknown; Kafka skips them, kio
  refuses them;
- a boolean byte other than 0 and 1 is true (Kafka reads `readByte() != 0`), where kio
  refuses it;
- a null topics array in v0 is refused (Kafka: "non-nullable field topics was serialized as
  null"), where kio reads it as None.

Layout (Kafka's MetadataRequest.json; v9+ are flexible: compact lengths, tagged fields)::

    topics                                 [topic_id uuid (v10+),
                                            name string (nullable v10+),
                                            tags (v9+)]
                                           (nullable v1+: null = every topic; in v0 an empty
                                            array means every topic)
    allow_auto_topic_creation              bool (v4+; else true)
    include_cluster_authorized_operations  bool (v8-10; else false)
    include_topic_authorized_operations    bool (v8+; else false)
    tags                                   (v9+)
"""

from __future__ import annotations

import uuid

import msgspec

from wire.body_reader import read_length, read_string, read_uuid, skip_tagged_fields, truncated
from wire.errors import RequestDecodeError
from wire.records import Buffer

__all__ = ["VERSIONS", "MetadataRequest", "MetadataRequestTopic", "decode_metadata_request"]

VERSIONS = range(0, 14)
FIRST_NULLABLE_TOPICS_VERSION = 1
FIRST_AUTO_CREATE_VERSION = 4
FIRST_AUTHORIZED_OPERATIONS_VERSION = 8
LAST_CLUSTER_OPERATIONS_VERSION = 10
FIRST_FLEXIBLE_VERSION = 9
FIRST_TOPIC_ID_VERSION = 10

_REQUEST = "MetadataRequest"


class MetadataRequestTopic(msgspec.Struct, frozen=True, gc=False):
    topic_id: uuid.UUID | None
    """From v10 (None for the zero id, as kio reads it); None before."""
    name: str | None
    """Never None before v10."""


class MetadataRequest(msgspec.Struct, frozen=True, gc=False):
    topics: tuple[MetadataRequestTopic, ...] | None
    """None (a null array, v1+): every topic."""
    allow_auto_topic_creation: bool = True
    include_cluster_authorized_operations: bool = False
    include_topic_authorized_operations: bool = False


def _topic(version: int, buf: Buffer, pos: int, end: int, flexible: bool) -> tuple[MetadataRequestTopic, int]:
    topic_id = None
    if version >= FIRST_TOPIC_ID_VERSION:
        topic_id, pos = read_uuid(buf, pos, end, _REQUEST, "a topic id")
    name, pos = read_string(buf, pos, end, flexible, _REQUEST, "a topic name")
    if name is None and version < FIRST_TOPIC_ID_VERSION:
        raise RequestDecodeError(f"cannot decode {_REQUEST}: a topic name is null (nullable from v10)")
    if flexible:
        pos = skip_tagged_fields(buf, pos, end, _REQUEST, "a topic's tagged fields")
    return MetadataRequestTopic(topic_id, name), pos


def decode_metadata_request(version: int, buf: Buffer, pos: int) -> MetadataRequest:
    """Decode a Metadata body (versions 0-13) that starts at `pos` of `buf`; bytes after it
    are ignored.

    RequestDecodeError for a body that does not hold what it declares.
    """
    end = len(buf)
    flexible = version >= FIRST_FLEXIBLE_VERSION
    if flexible and pos < end and buf[pos] < 0x80:  # the usual one-byte count
        n, pos = buf[pos] - 1, pos + 1
    else:
        n, pos = read_length(buf, pos, end, flexible, 4, _REQUEST, "topics")
    topics: tuple[MetadataRequestTopic, ...] | None
    if n == -1:
        if version < FIRST_NULLABLE_TOPICS_VERSION:
            raise RequestDecodeError(f"cannot decode {_REQUEST}: topics is null (nullable from v1)")
        topics = None
    elif n < 0:
        raise RequestDecodeError(f"cannot decode {_REQUEST}: topics is negative ({n})")
    else:
        # The least a topic takes: an empty name (and an id, and an empty tag section).
        least = (18 if version >= FIRST_TOPIC_ID_VERSION else 2) if flexible else 2
        if n * least > end - pos:
            raise RequestDecodeError(f"cannot decode {_REQUEST}: topics declares {n} entries in {end - pos} bytes")
        read = []
        for _ in range(n):
            topic, pos = _topic(version, buf, pos, end, flexible)
            read.append(topic)
        topics = tuple(read)
    if version < FIRST_AUTO_CREATE_VERSION:
        return MetadataRequest(topics)
    # Booleans as Kafka reads them: any byte but 0 is true.
    if version < FIRST_AUTHORIZED_OPERATIONS_VERSION:
        if pos >= end:
            raise truncated(_REQUEST, "allow_auto_topic_creation")
        return MetadataRequest(topics, buf[pos] != 0)
    if version <= LAST_CLUSTER_OPERATIONS_VERSION:
        if pos + 3 > end:
            raise truncated(_REQUEST, "the request's flags")
        auto_create, cluster_operations, topic_operations = buf[pos] != 0, buf[pos + 1] != 0, buf[pos + 2] != 0
        pos += 3
    else:
        if pos + 2 > end:
            raise truncated(_REQUEST, "the request's flags")
        auto_create, cluster_operations, topic_operations = buf[pos] != 0, False, buf[pos + 1] != 0
        pos += 2
    if flexible:
        skip_tagged_fields(buf, pos, end, _REQUEST, "the request's tagged fields")
    return MetadataRequest(topics, auto_create, cluster_operations, topic_operations)
