"""ApiVersions (key 18): the APIs, version ranges and feature levels this broker serves.

The list is the handler registry itself, so a client is never offered an API we do not
implement. From v3 the answer carries the feature levels (KIP-584) that change what
clients do, and only those that are built here: transaction.version 2 (KIP-890
transactions v2: EndTxn v5 bumps the epoch, Produce v12 adds partitions), which Java and
librdkafka clients read to choose their transaction protocol, group.version 1 (the
KIP-848 consumer group protocol) and share.version 2 (KIP-932 share groups, whose
ShareFetch and ShareAcknowledge v2 are served, with level 2's renew acknowledgements and
record-limited acquisition; Kafka 4.4 finalizes 2 too). Kafka's other levels (metadata.version of
KRaft, streams groups) are left out until those are served (tests/oracle/KNOWN_DIFFERENCES.md,
KD-203).

A v3+ request whose client software name or version Kafka's ApiVersionsRequest.isValid refuses
(letters, digits, '-' and '.', beginning and ending with a letter or digit), or a v5 request
with only one of a cluster id and a node id, is answered as Kafka answers it: INVALID_REQUEST,
with no APIs and no features. A v5 request naming another cluster or node (KIP-1242: a client
that reached the wrong broker) gets REBOOTSTRAP_REQUIRED the same way.
"""

from __future__ import annotations

import functools

from wire.api_versions import (
    ApiVersion,
    ApiVersionsRequest,
    ApiVersionsResponse,
    FinalizedFeatureKey,
    SupportedFeatureKey,
    encode_api_versions_response,
)
from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.encoded_response import EncodedResponse
from asyncbroker.handlers import HandlerRegistry
from asyncbroker.request_context import RequestContext
from asyncbroker.transaction_state import FINALIZED_TRANSACTION_VERSION

API_KEY = ApiKey.API_VERSIONS

# name -> (lowest supported, highest supported, finalized level)
FEATURES = {"group.version": (0, 1, 1), "share.version": (0, 2, 2),
            "transaction.version": (0, 2, FINALIZED_TRANSACTION_VERSION)}
FINALIZED_FEATURES_EPOCH = 0
"""Levels never change on this node: one epoch for its whole life."""


async def handle(ctx: RequestContext, header: RequestHeader, request: ApiVersionsRequest) -> EncodedResponse:
    error = None
    if not request.is_valid(header.api_version):
        error = ErrorCode.INVALID_REQUEST
    elif request.is_misrouted(ctx.broker.cluster_id, ctx.broker.node_id):
        error = ErrorCode.REBOOTSTRAP_REQUIRED
    if error is not None:
        # Kafka's answer (getErrorResponse): the error, no APIs and no features.
        body = encode_api_versions_response(header.api_version, ApiVersionsResponse(error, ()))
        return EncodedResponse([body], len(body))
    body = _answer(ctx.broker.handlers, header.api_version)
    return EncodedResponse([body], len(body))


@functools.lru_cache(maxsize=32)
def _answer(registry: HandlerRegistry, version: int) -> bytes:
    """The usual answer's body, encoded once per version: every client connection asks, and
    building and encoding some seventy ranges took longer than a small Produce. What it lists
    is fixed for a broker's life (its registry's APIs, and FEATURES)."""
    keys = tuple(ApiVersion(api_key=key, min_version=lo, max_version=hi)
                 for key, (lo, hi) in registry.supported_versions().items())
    response = ApiVersionsResponse(
        error_code=ErrorCode.NONE, api_keys=keys, throttle_time_ms=0,
        supported_features=tuple(SupportedFeatureKey(name=name, min_version=lo, max_version=hi)
                                 for name, (lo, hi, _) in FEATURES.items()),
        finalized_features_epoch=FINALIZED_FEATURES_EPOCH,
        finalized_features=tuple(FinalizedFeatureKey(name=name, max_version_level=level, min_version_level=level)
                                 for name, (_, _, level) in FEATURES.items()))
    return encode_api_versions_response(version, response)  # (v0-2 carry no features)
