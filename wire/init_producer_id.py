"""A hand-written codec for InitProducerId (key 22), versions 0-5: an idempotent or
transactional producer's id and epoch.

Idempotence is on by default in the Java client (3.0+), librdkafka's `enable.idempotence` and
kafka-python 3.x: their first request after Metadata is this one. The decoder reads the body with
wire.body_reader's checked reads (a body that does not hold what it declares is a
RequestDecodeError: Kafka closes the connection) into a struct with kio's field names, the
fields a version lacks at the defaults of Kafka's schema; tags, which the request does not
define, are skipped as Kafka skips them. The encoder writes kio's bytes for every version
(tests/unit/wire/test_group_codecs.py holds both to kio). Version 6 (KIP-939's two-phase commit)
is not served.

Layout (Kafka's InitProducerIdRequest.json and InitProducerIdResponse.json; v2+ are flexible)::

    request
      transactional_id      nullable string (null: an idempotent producer)
      transaction_timeout   int32
      producer_id           int64 (v3+; -1 for none)
      producer_epoch        int16 (v3+; -1 for none)
      tags                  (v2+; none defined)

    response
      throttle_time         int32
      error_code            int16
      producer_id           int64
      producer_epoch        int16
      tags                  (v2+)
"""

from __future__ import annotations

import struct

import msgspec

from wire.body_reader import read_int, read_string, skip_tagged_fields
from wire.records import Buffer

__all__ = ["VERSIONS", "InitProducerIdRequest", "InitProducerIdResponse", "decode_init_producer_id_request",
           "encode_init_producer_id_response"]

VERSIONS = range(0, 6)
FIRST_FLEXIBLE_VERSION = 2
FIRST_PRODUCER_ID_VERSION = 3

_REQUEST = "InitProducerIdRequest"
_ANSWER = struct.Struct(">ihqh")  # throttle_time, error_code, producer_id, producer_epoch


class InitProducerIdRequest(msgspec.Struct, frozen=True, gc=False):
    transactional_id: str | None
    transaction_timeout: int
    """Milliseconds."""
    producer_id: int = -1
    """From v3 (KIP-360: a producer bumping its own epoch)."""
    producer_epoch: int = -1
    """From v3."""


class InitProducerIdResponse(msgspec.Struct, frozen=True, gc=False):
    throttle_time: int = 0
    """Milliseconds."""
    error_code: int = 0
    producer_id: int = -1
    producer_epoch: int = -1


def decode_init_producer_id_request(version: int, buf: Buffer, pos: int) -> InitProducerIdRequest:
    """Decode an InitProducerId body (versions 0-5) from `pos` of `buf`; bytes after it are
    ignored. RequestDecodeError for a body that does not hold what it declares; ValueError for
    a version outside 0-5."""
    if version not in VERSIONS:
        raise ValueError(f"init producer id request version {version} not in 0-5")
    end = len(buf)
    flexible = version >= FIRST_FLEXIBLE_VERSION
    transactional_id, pos = read_string(buf, pos, end, flexible, _REQUEST, "transactional_id")
    timeout, pos = read_int(buf, pos, end, 4, _REQUEST, "transaction_timeout")
    producer_id, producer_epoch = -1, -1
    if version >= FIRST_PRODUCER_ID_VERSION:
        producer_id, pos = read_int(buf, pos, end, 8, _REQUEST, "producer_id")
        producer_epoch, pos = read_int(buf, pos, end, 2, _REQUEST, "producer_epoch")
    if flexible:
        skip_tagged_fields(buf, pos, end, _REQUEST, "the request's tagged fields")
    return InitProducerIdRequest(transactional_id, timeout, producer_id, producer_epoch)


def encode_init_producer_id_response(version: int, response: InitProducerIdResponse) -> bytes:
    """The InitProducerIdResponse body for `version` (0-5), byte for byte kio's."""
    if version not in VERSIONS:
        raise ValueError(f"init producer id response version {version} not in 0-5")
    body = _ANSWER.pack(response.throttle_time, response.error_code, response.producer_id, response.producer_epoch)
    return body + b"\x00" if version >= FIRST_FLEXIBLE_VERSION else body
