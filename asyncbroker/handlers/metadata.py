"""Metadata (key 3): the single node, and every requested topic's partitions.

On one node this broker is every partition's leader, the controller and the
only replica: leader epoch 0, replicas = isr = [node id]. Topics that do not
exist are created here when auto.create.topics.enable is on and the client
allows it (v4+), as Kafka does, and reported UNKNOWN_TOPIC_OR_PARTITION by the
request that created them (Kafka 4.4's answer while its controller creates the
topic); invalid names answer INVALID_TOPIC_EXCEPTION.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Hashable
from typing import Any

from storage.topic_name import is_internal, validate_topic_name
from wire.errors import ErrorCode, KafkaError, UnknownTopicIdError
from wire.headers import RequestHeader
from wire.messages import ApiKey
from wire.metadata_response import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
    encode_metadata_response,
)

from asyncbroker.acl_binding import (
    AUTHORIZED_OPERATIONS_OMITTED,
    CLUSTER_NAME,
    EVERY_OPERATION,
    AclOperation,
    ResourceType,
)
from asyncbroker.encoded_response import EncodedResponse
from asyncbroker.handlers import error_code_for
from asyncbroker.request_context import RequestContext

API_KEY = ApiKey.METADATA

_ZERO_UUID = uuid.UUID(int=0)


@functools.lru_cache(maxsize=64)
def _partition_entries(node: int, partitions: int) -> tuple[MetadataResponsePartition, ...]:
    """The partition list of a topic with `partitions` partitions (immutable, so shared): on
    one node they differ only by index."""
    replicas = (node,)
    return tuple(MetadataResponsePartition(error_code=ErrorCode.NONE, partition_index=p, leader_id=node,
                                           leader_epoch=0, replica_nodes=replicas, isr_nodes=replicas,
                                           offline_replicas=())
                 for p in range(partitions))


def _has_id(topic: Any) -> bool:
    topic_id = getattr(topic, "topic_id", None)
    return topic_id is not None and topic_id != _ZERO_UUID


def _refusal(version: int, requested: Any) -> ErrorCode | None:
    """The error with which Kafka refuses a whole Metadata request: topic ids before v12
    (INVALID_REQUEST), an entry with neither name nor id (its lookup fails: UNKNOWN_SERVER_ERROR)."""
    for t in requested or ():
        if version < 12 and (t.name is None or _has_id(t)):
            return ErrorCode.INVALID_REQUEST
        if t.name is None and not _has_id(t):
            return ErrorCode.UNKNOWN_SERVER_ERROR
    return None


def _error_response(requested: Any, error: ErrorCode) -> MetadataResponse:
    """Kafka's answer to a refused Metadata request: no brokers, no cluster, and every
    requested entry echoed with the error."""
    topics = tuple(
        MetadataResponseTopic(error_code=error, name=t.name or "", topic_id=getattr(t, "topic_id", None),
                              is_internal=False, partitions=(),
                              topic_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)
        for t in requested
    )
    return MetadataResponse(throttle_time_ms=0, brokers=(), cluster_id=None, controller_id=-1, topics=topics,
                            cluster_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED, error_code=error)


def _cache_key(version: int, request: Any) -> Hashable:
    """What in a Metadata request shapes its answer (besides the topics themselves)."""
    requested = request.topics
    return (
        version,
        None if requested is None else tuple((t.name, getattr(t, "topic_id", None)) for t in requested),
        getattr(request, "allow_auto_topic_creation", True),
        getattr(request, "include_topic_authorized_operations", False),
        getattr(request, "include_cluster_authorized_operations", False),
    )


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> EncodedResponse:
    """The answer, from the encoded-answer cache while no topic has changed since it was built
    (see MetadataResponseCache), else built and kept when every topic in it was found. With an
    authorizer the answer depends on the principal and the ACLs, and is built every time."""
    version = header.api_version
    if ctx.broker.authorizer is not None:
        body = encode_metadata_response(version, await _answer(ctx, version, request))
        return EncodedResponse([body], len(body))
    cache = ctx.broker.metadata_responses
    key = (ctx.listener_name, _cache_key(version, request))
    cached = cache.get(key)
    if cached is not None:
        return EncodedResponse([cached], len(cached))
    generation = cache.generation()
    response = await _answer(ctx, version, request)
    body = encode_metadata_response(version, response)
    if response.error_code == ErrorCode.NONE and all(t.error_code == ErrorCode.NONE for t in response.topics):
        cache.put(key, generation, body)  # (an error entry can change without a new generation: never kept)
    return EncodedResponse([body], len(body))


async def _answer(ctx: RequestContext, version: int, request: Any) -> MetadataResponse:
    node = ctx.broker.node_id
    topics_out: list[MetadataResponseTopic] = []
    with_topic_ops = getattr(request, "include_topic_authorized_operations", False)
    # Kafka's answer lists the topics it describes, then those it may not create, then those
    # it may not describe (named requests only: a listing of all topics just leaves them out).
    may_not_create: list[MetadataResponseTopic] = []
    may_not_describe: list[MetadataResponseTopic] = []

    def topic_entity(name: str | None, topic_id: uuid.UUID | None, error: int, partitions: int
                     ) -> MetadataResponseTopic:
        parts = _partition_entries(node, partitions)
        if not with_topic_ops:
            ops = AUTHORIZED_OPERATIONS_OMITTED
        elif name is not None:
            ops = ctx.authorized_operations(ResourceType.TOPIC, name)
        else:
            ops = EVERY_OPERATION[ResourceType.TOPIC] if ctx.broker.authorizer is None else AUTHORIZED_OPERATIONS_OMITTED
        return MetadataResponseTopic(error_code=error, name=name, topic_id=topic_id,
                                     is_internal=name is not None and is_internal(name), partitions=parts,
                                     topic_authorized_operations=ops)

    def unauthorized(name: str | None, topic_id: uuid.UUID | None, internal: bool) -> MetadataResponseTopic:
        return MetadataResponseTopic(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=name, topic_id=topic_id,
                                     is_internal=internal, partitions=(),
                                     topic_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)

    def may_create(name: str) -> bool:
        return (ctx.authorize_cluster(AclOperation.CREATE, log_denial=False)
                or ctx.authorize_topic(AclOperation.CREATE, name))

    requested = request.topics
    refused = _refusal(version, requested)
    if refused is not None:
        return _error_response(requested, refused)
    if version >= 12 and any(_has_id(t) for t in requested or ()):
        # Kafka resolves a request that names topics by id through the ids alone: entries
        # given by name next to them get no answer.
        requested = [t for t in requested if _has_id(t)]
    # v0: an empty list means all topics; v1+: null means all topics.
    if requested is None or (version == 0 and not requested):
        for listed in sorted(ctx.broker.topics.all(), key=lambda m: m.name):
            if not ctx.authorize_topic(AclOperation.DESCRIBE, listed.name, log_denial=False):
                continue
            topics_out.append(topic_entity(listed.name, listed.topic_id, ErrorCode.NONE, listed.partitions))
    else:
        allow_auto = getattr(request, "allow_auto_topic_creation", True)
        for t in requested:
            name = t.name
            topic_id = getattr(t, "topic_id", None)
            if not name and topic_id is not None and topic_id != _ZERO_UUID:
                meta = ctx.broker.topics.by_id(topic_id)
                if meta is None:
                    topics_out.append(topic_entity(None, topic_id, UnknownTopicIdError.error_code, 0))
                elif not ctx.authorize_topic(AclOperation.DESCRIBE, meta.name):
                    # Topic ids are not secret: Kafka says which one it may not describe.
                    may_not_describe.append(unauthorized(None, topic_id, False))
                else:
                    topics_out.append(topic_entity(meta.name, meta.topic_id, ErrorCode.NONE, meta.partitions))
                continue
            if not ctx.authorize_topic(AclOperation.DESCRIBE, name):
                # Never says whether the topic exists.
                may_not_describe.append(unauthorized(name, None, False))
                continue
            meta = ctx.broker.topics.get(name)
            if meta is None and allow_auto and ctx.broker.config.auto_create_topics_enable and not may_create(name):
                may_not_create.append(unauthorized(name, None, is_internal(name)))
                continue
            if meta is None:
                try:
                    validate_topic_name(name)
                    if allow_auto and await ctx.broker.auto_create_topic(name) is not None:
                        # Kafka 4.4 answers the request that triggers the creation with
                        # UNKNOWN_TOPIC_OR_PARTITION and serves the topic from the next one on
                        # (clients retry); answering the same keeps clients on Kafka's path.
                        topics_out.append(topic_entity(name, None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0))
                        continue
                except KafkaError as exc:
                    topics_out.append(topic_entity(name, None, error_code_for(exc), 0))
                    continue
                except Exception as exc:  # noqa: BLE001 - mapped at the boundary
                    topics_out.append(topic_entity(name, None, error_code_for(exc), 0))
                    continue
            if meta is None:
                topics_out.append(topic_entity(name, None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0))
            else:
                topics_out.append(topic_entity(meta.name, meta.topic_id, ErrorCode.NONE, meta.partitions))

    host, port = ctx.broker.advertised_for(ctx.listener_name)
    brokers = (MetadataResponseBroker(node_id=node, host=host, port=port, rack=None),)
    return MetadataResponse(
        throttle_time_ms=0,
        brokers=brokers,
        cluster_id=ctx.broker.cluster_id,
        controller_id=node,
        topics=(*topics_out, *may_not_create, *may_not_describe),
        cluster_authorized_operations=(
            ctx.authorized_operations(ResourceType.CLUSTER, CLUSTER_NAME)
            if getattr(request, "include_cluster_authorized_operations", False) else AUTHORIZED_OPERATIONS_OMITTED),
        error_code=ErrorCode.NONE,  # v13+: a request-level error; none on a served request
    )
