"""CreateTopics (API 19): create topics with configs, or only validate them (validate_only).

Each topic gets its own result; one bad topic never fails the others. The
checks (name, existence, partitions, replication factor on one node, configs)
live in TopicManager; this module adds the request-level rules Kafka applies
(duplicate names, manual assignments) and builds the per-version response.
"""
from __future__ import annotations

import uuid
from collections import Counter
from typing import TYPE_CHECKING, Any

from wire.errors import ErrorCode, InvalidReplicaAssignmentError, InvalidRequestError, KafkaError
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.handlers import error_code_for, error_message_for
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder
from asyncbroker.topics import ZERO_UUID, check_manual_assignment

if TYPE_CHECKING:
    from asyncbroker.broker import Broker

API_KEY = ApiKey.CREATE_TOPICS


def _partitions_from_assignments(broker: Broker, topic: Any) -> int:
    """Manual assignment: partitions 0..n-1 (in any order), each on registered brokers only."""
    if topic.replication_factor != -1:
        raise InvalidRequestError(
            "A manual partition assignment was specified, but replication factor was not set to -1.")
    if topic.num_partitions != -1:
        raise InvalidRequestError("A manual partition assignment was specified, but numPartitions was not set to -1.")
    replication_factor: int | None = None
    for expected, a in enumerate(sorted(topic.assignments, key=lambda a: a.partition_index)):
        if a.partition_index != expected:
            raise InvalidReplicaAssignmentError("partitions should be a consecutive 0-based integer sequence")
        check_manual_assignment(a.broker_ids, (broker.node_id,), replication_factor)
        replication_factor = len(a.broker_ids)
    return len(topic.assignments)


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    rb = ResponseBuilder(API_KEY, header.api_version)
    counts = Counter(t.name for t in request.topics)
    results = []
    # CREATE on the cluster or on each topic; the new topic's configs are shown only with
    # DESCRIBE_CONFIGS on it (Kafka's ControllerApis.createTopics).
    cluster_create = ctx.authorize_cluster(AclOperation.CREATE, log_denial=False)
    creatable = {n for n in counts if cluster_create or ctx.authorize_topic(AclOperation.CREATE, n)}
    for topic in request.topics:
        if counts[topic.name] > 1 or topic.name not in creatable:
            continue  # answered once, after the others, as Kafka's controller does
        try:
            num_partitions = topic.num_partitions
            if topic.assignments:
                num_partitions = _partitions_from_assignments(ctx.broker, topic)
            if ctx.mutations_limited(header.client_id or ""):
                # Checked as Kafka's controller checks it: after the topic is found valid, before it is made.
                checked = await ctx.broker.topics.create_topic(
                    topic.name, num_partitions, topic.replication_factor if not topic.assignments else -1,
                    {c.name: c.value for c in topic.configs}, validate_only=True)
                ctx.record_mutations(header.client_id or "", checked.partitions, strict=header.api_version >= 6)
            meta = await ctx.broker.topics.create_topic(
                topic.name,
                num_partitions,
                topic.replication_factor if not topic.assignments else -1,
                {c.name: c.value for c in topic.configs},
                validate_only=request.validate_only,
            )
            if not request.validate_only and ctx.broker.cleaner is not None:
                ctx.broker.cleaner.wake()  # a new compacted topic: the cleaner looks now, not after its backoff
        except KafkaError as exc:
            results.append(
                rb.entity(
                    "CreatableTopicResult",
                    name=topic.name,
                    topic_id=ZERO_UUID,
                    error_code=error_code_for(exc),
                    error_message=error_message_for(exc),
                    topic_config_error_code=0,
                    num_partitions=-1,
                    replication_factor=-1,
                    configs=(),
                )
            )
            continue
        configs = () if not rb.has("CreatableTopicConfigs") else tuple(  # v5+ only
            rb.entity(
                "CreatableTopicConfigs",
                name=e.name,
                value=e.value,
                read_only=e.read_only,
                config_source=int(e.source),
                is_sensitive=e.is_sensitive,
            )
            for e in _describe(ctx.broker, meta)
        )
        config_error = ErrorCode.NONE
        if not ctx.authorize_topic(AclOperation.DESCRIBE_CONFIGS, meta.name):
            configs, config_error = (), ErrorCode.TOPIC_AUTHORIZATION_FAILED
        results.append(
            rb.entity(
                "CreatableTopicResult",
                name=meta.name,
                # Kafka assigns an id even when it only validates (a fresh one each time).
                topic_id=meta.topic_id if meta.topic_id != ZERO_UUID else uuid.uuid4(),
                error_code=0,
                error_message=None,
                topic_config_error_code=config_error,
                num_partitions=meta.partitions,
                replication_factor=1,
                configs=configs,
            )
        )
    for name in dict.fromkeys(t.name for t in request.topics if counts[t.name] > 1):
        results.append(rb.entity(
            "CreatableTopicResult", name=name, topic_id=ZERO_UUID, error_code=InvalidRequestError.error_code,
            error_message="Duplicate topic name.", topic_config_error_code=0, num_partitions=-1,
            replication_factor=-1, configs=(),
        ))
    for name in (n for n in counts if counts[n] == 1 and n not in creatable):
        results.append(rb.entity(
            "CreatableTopicResult", name=name, topic_id=ZERO_UUID, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            error_message="Authorization failed.", topic_config_error_code=0, num_partitions=-1,
            replication_factor=-1, configs=(),
        ))
    return rb.entity("CreateTopicsResponse", throttle_time=0, topics=tuple(results))


def _describe(broker: Broker, meta: Any) -> list[Any]:
    """The configs of the new topic as DescribeConfigs would list them (v5+ responses);
    after validate_only the topic does not exist, so describe its would-be overrides."""
    if broker.topics.get(meta.name) is None:
        return broker.topics.describe_overrides(meta.configs)
    return broker.topics.describe_configs(meta.name)
