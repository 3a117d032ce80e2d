"""Request/response bodies through kio, plus the API key table.

kio generates one frozen dataclass per API/version from Kafka's JSON schemas
and ships a native decoder; we use it for the APIs admins and transactions use.
Produce and Fetch, on every request, have hand-written decoders
(wire.produce_request, wire.fetch_request) and encoders (wire.response_encoders,
re-exported here); ApiVersions and Metadata, a client's first requests, have
hand-written codecs (wire.api_versions, wire.metadata_request,
wire.metadata_response), and so do the other requests of a classic consumer
group and an idempotent producer (_CONSUMER_CODECS below). A broker serving
them never imports kio (its import is about 12 ms, and it holds some 2 MB once
its schemas are loaded): kio loads with the first request for any other API.
The rules for unknown APIs are Kafka's: an ApiVersions request of an
unknown version gets UNSUPPORTED_VERSION in a v0 body
(wire.api_versions.unsupported_api_versions_response); any other unknown
key/version means the connection is closed (`UnsupportedApiError` from
request_class/decode).
"""

from __future__ import annotations

import enum
import importlib
import io
import sys
from collections.abc import Callable
from functools import lru_cache
from types import ModuleType
from typing import Any, Literal

from wire.api_versions import VERSIONS as API_VERSIONS_VERSIONS, decode_api_versions_request
from wire.errors import RequestDecodeError, UnsupportedApiError
from wire.fetch_request import VERSIONS as FETCH_VERSIONS, decode_fetch_request
from wire.framing import patchable
from wire.headers import RequestHeader
from wire.metadata_request import VERSIONS as METADATA_VERSIONS, decode_metadata_request
from wire.produce_request import VERSIONS as PRODUCE_VERSIONS, decode_produce_request
from wire.response_encoders import (
    FetchPartitionData,
    FetchTopicData,
    ProducePartitionResult,
    ProduceTopicResult,
    encode_fetch_response,
    encode_produce_response,
    fetch_response_size,
)

__all__ = [
    "ApiKey",
    "kio_version_range",
    "request_class",
    "response_class",
    "response_module",
    "decode_request",
    "encode_response",
    "encode_request",
    "decode_response",
    "FetchPartitionData",
    "FetchTopicData",
    "ProducePartitionResult",
    "ProduceTopicResult",
    "encode_fetch_response",
    "encode_produce_response",
    "fetch_response_size",
]


class ApiKey(enum.IntEnum):
    """Kafka API keys with Kafka's names (ApiKeys.java)."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    LEADER_AND_ISR = 4
    STOP_REPLICA = 5
    UPDATE_METADATA = 6
    CONTROLLED_SHUTDOWN = 7
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    ALTER_REPLICA_LOG_DIRS = 34
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    CREATE_DELEGATION_TOKEN = 38
    RENEW_DELEGATION_TOKEN = 39
    EXPIRE_DELEGATION_TOKEN = 40
    DESCRIBE_DELEGATION_TOKEN = 41
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    VOTE = 52
    BEGIN_QUORUM_EPOCH = 53
    END_QUORUM_EPOCH = 54
    DESCRIBE_QUORUM = 55
    ALTER_PARTITION = 56
    UPDATE_FEATURES = 57
    ENVELOPE = 58
    FETCH_SNAPSHOT = 59
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    BROKER_REGISTRATION = 62
    BROKER_HEARTBEAT = 63
    UNREGISTER_BROKER = 64
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    ALLOCATE_PRODUCER_IDS = 67
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    CONTROLLER_REGISTRATION = 70
    GET_TELEMETRY_SUBSCRIPTIONS = 71
    PUSH_TELEMETRY = 72
    ASSIGN_REPLICAS_TO_DIRS = 73
    LIST_CONFIG_RESOURCES = 74
    DESCRIBE_TOPIC_PARTITIONS = 75
    SHARE_GROUP_HEARTBEAT = 76
    SHARE_GROUP_DESCRIBE = 77
    SHARE_FETCH = 78
    SHARE_ACKNOWLEDGE = 79
    ADD_RAFT_VOTER = 80
    REMOVE_RAFT_VOTER = 81
    UPDATE_RAFT_VOTER = 82
    INITIALIZE_SHARE_GROUP_STATE = 83
    READ_SHARE_GROUP_STATE = 84
    WRITE_SHARE_GROUP_STATE = 85
    DELETE_SHARE_GROUP_STATE = 86
    READ_SHARE_GROUP_STATE_SUMMARY = 87
    STREAMS_GROUP_HEARTBEAT = 88
    STREAMS_GROUP_DESCRIBE = 89
    DESCRIBE_SHARE_GROUP_OFFSETS = 90
    ALTER_SHARE_GROUP_OFFSETS = 91
    DELETE_SHARE_GROUP_OFFSETS = 92


def kio_version_range(api_key: int) -> tuple[int, int] | None:
    """(min, max) version for which kio has both the request and the response schema (what
    a broker can decode and answer), or None for a key kio does not know."""
    from kio.schema.index import api_key_map, schema_name_map
    from kio.static.constants import EntityType

    name = api_key_map.get(api_key)
    if name is None:
        return None
    versions = [v for v, kinds in schema_name_map.get(name, {}).items()
                if EntityType.request in kinds and EntityType.response in kinds]
    return (min(versions), max(versions)) if versions else None


@lru_cache(maxsize=2048)
def request_class(api_key: int, api_version: int) -> type[Any]:
    """kio request dataclass; UnsupportedApiError if kio has no such schema."""
    return _kio_schema(api_key, api_version, "request")


@lru_cache(maxsize=2048)
def response_class(api_key: int, api_version: int) -> type[Any]:
    """kio response dataclass; UnsupportedApiError if kio has no such schema."""
    return _kio_schema(api_key, api_version, "response")


def response_module(api_key: int, api_version: int) -> ModuleType:
    """kio's module of that response (its nested entities' classes); UnsupportedApiError if none."""
    return sys.modules[response_class(api_key, api_version).__module__]


def _kio_schema(api_key: int, api_version: int, kind: Literal["request", "response"]) -> type[Any]:
    from wire._kio_compat import payload_schema  # kio's layout, with its version check

    try:
        return payload_schema(ApiKey(api_key).name.lower(), api_version, kind)
    except (ValueError, LookupError):  # a key we do not name; a version kio lacks
        raise UnsupportedApiError(f"unsupported {kind} api_key={api_key} version={api_version}") from None


_READERS: dict[type, Any] = {}
"""kio's reader of each schema class, built once."""


def _reader(cls: type) -> Any:
    reader = _READERS.get(cls)
    if reader is None:
        from kio.serial import entity_reader

        reader = _READERS[cls] = entity_reader(cls)
    return reader


_CONSUMER_CODECS: dict[int, str] = {
    ApiKey.LIST_OFFSETS: "wire.list_offsets",
    ApiKey.OFFSET_COMMIT: "wire.offset_commit",
    ApiKey.OFFSET_FETCH: "wire.offset_fetch",
    ApiKey.FIND_COORDINATOR: "wire.find_coordinator",
    ApiKey.JOIN_GROUP: "wire.join_group",
    ApiKey.HEARTBEAT: "wire.heartbeat",
    ApiKey.LEAVE_GROUP: "wire.leave_group",
    ApiKey.SYNC_GROUP: "wire.sync_group",
    ApiKey.INIT_PRODUCER_ID: "wire.init_producer_id",
}
"""The hand-written codecs of the other requests a classic consumer and an idempotent producer
send (neither loads kio): the group's, ListOffsets (when the consumer has no committed offset to
start from) and InitProducerId. Each module has VERSIONS and decode_<api>_request, and loads with
its API's first request."""

_consumer_decoders: dict[int, tuple[range, Callable[[int, Any, int], Any]]] = {}


def _consumer_decoder(api_key: int) -> tuple[range, Callable[[int, Any, int], Any]] | None:
    found = _consumer_decoders.get(api_key)
    if found is None:
        module_name = _CONSUMER_CODECS.get(api_key)
        if module_name is None:
            return None
        module = importlib.import_module(module_name)
        found = _consumer_decoders[api_key] = (
            module.VERSIONS, getattr(module, f"decode_{ApiKey(api_key).name.lower()}_request"))
    return found


def decode_request(header: RequestHeader, frame: bytes | bytearray | memoryview, body_offset: int) -> Any:
    """Decode the request body that follows the header in `frame`.

    A Produce comes back as wire.produce_request.ProduceRequest, its records
    slices of the frame, untouched (writable slices of a large frame's own
    buffer, wire.framing.patchable: the append assigns offsets in them rather
    than in a copy); a Fetch as wire.fetch_request.FetchRequest, a Metadata as
    wire.metadata_request.MetadataRequest, an ApiVersions as
    wire.api_versions.ApiVersionsRequest, the APIs of _CONSUMER_CODECS as their
    codec's struct; every other API as kio's dataclass.
    UnsupportedApiError for an API/version kio lacks; RequestDecodeError
    (INVALID_REQUEST: Kafka closes the connection) for a malformed body.
    """
    if header.api_key == ApiKey.PRODUCE and header.api_version in PRODUCE_VERSIONS:
        return decode_produce_request(header.api_version, patchable(frame), body_offset)
    if header.api_key == ApiKey.FETCH and header.api_version in FETCH_VERSIONS:
        return decode_fetch_request(header.api_version, frame, body_offset)
    if header.api_key == ApiKey.METADATA and header.api_version in METADATA_VERSIONS:
        return decode_metadata_request(header.api_version, frame, body_offset)
    if header.api_key == ApiKey.API_VERSIONS and header.api_version in API_VERSIONS_VERSIONS:
        return decode_api_versions_request(header.api_version, frame, body_offset)
    hand_written = _consumer_decoder(header.api_key)
    if hand_written is not None and header.api_version in hand_written[0]:
        return hand_written[1](header.api_version, frame, body_offset)
    from wire.request_bounds import check_request_bounds  # (it reads kio's schemas: loaded with kio)

    cls = request_class(header.api_key, header.api_version)
    check_request_bounds(cls, frame, body_offset)  # before kio: it allocates from declared sizes
    try:
        entity, _size = _reader(cls)(frame, body_offset)
    except Exception as exc:  # the native reader raises ValueError/IndexError/etc.
        raise RequestDecodeError(
            f"cannot decode {cls.__name__} v{header.api_version}: {type(exc).__name__}: {exc}"
        ) from None
    return entity


def decode_response(api_key: int, api_version: int, body: bytes | bytearray | memoryview) -> Any:
    """Decode a response body (tests and tools; the broker only encodes)."""
    from wire.request_bounds import check_request_bounds

    cls = response_class(api_key, api_version)
    check_request_bounds(cls, body, 0)
    try:
        entity, _size = _reader(cls)(body, 0)
    except Exception as exc:
        raise RequestDecodeError(f"cannot decode {cls.__name__}: {exc}") from None
    return entity


def encode_response(entity: Any) -> bytes:
    """Encode a kio response entity's body (no size prefix, no header)."""
    from kio.serial import entity_writer

    buf = io.BytesIO()
    entity_writer(type(entity))(buf, entity)
    return buf.getvalue()


def encode_request(entity: Any) -> bytes:
    """Encode a kio request entity's body (tests and tools)."""
    return encode_response(entity)
