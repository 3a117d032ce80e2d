"""CreateTopics (API 19): create topics with configs, or only validate them (validate_only).

Each topic gets its own result; one bad topic never fails the others. The
checks (name, existence, partitions, replication factor on one node, configs)
live in TopicManager; this module adds the request-level rules Kafka applies
(duplicate names, manual assignments) and builds the per-version response.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from wire.errors import (
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    KafkaError,
)
from wire.messages import ApiKey

from asyncbroker.handlers import error_code_for, error_message_for
from asyncbroker.response_builder import ResponseBuilder
from asyncbroker.topics import ZERO_UUID

API_KEY = ApiKey.CREATE_TOPICS
MIN_VERSION = 2
MAX_VERSION = 7


def _partitions_from_assignments(broker: Any, topic: Any) -> int:
    """Manual assignment: partitions 0..n-1, each on exactly this node."""
    if topic.num_partitions != -1 or topic.replication_factor != -1:
        raise InvalidRequestError(
            "Both numPartitions or replicationFactor and replicasAssignments were set. "
            "Both cannot be used at the same time."
        )
    indexes = sorted(a.partition_index for a in topic.assignments)
    if indexes != list(range(len(indexes))):
        raise InvalidReplicaAssignmentError("Partitions should be a consecutive 0-based integer sequence")
    for a in topic.assignments:
        if not a.broker_ids:
            raise InvalidReplicaAssignmentError("The manual partition assignment includes an empty replica list.")
        if len(a.broker_ids) > 1:
            raise InvalidReplicationFactorError(
                f"Unable to replicate the partition {len(a.broker_ids)} time(s): only 1 broker(s) are registered."
            )
        if a.broker_ids[0] != broker.node_id:
            raise InvalidReplicaAssignmentError(
                f"The manual partition assignment includes broker {a.broker_ids[0]}, but no such broker is registered."
            )
    return len(indexes)


async def handle(broker: Any, header: Any, request: Any) -> Any:
    rb = ResponseBuilder(API_KEY, header.api_version)
    counts = Counter(t.name for t in request.topics)
    results = []
    for topic in request.topics:
        try:
            if counts[topic.name] > 1:
                raise InvalidRequestError("Found multiple entries for this topic.")
            num_partitions = topic.num_partitions
            if topic.assignments:
                num_partitions = _partitions_from_assignments(broker, topic)
            meta = await broker.topics.create_topic(
                topic.name,
                num_partitions,
                topic.replication_factor if not topic.assignments else -1,
                {c.name: c.value for c in topic.configs},
                validate_only=request.validate_only,
            )
            if not request.validate_only and getattr(broker, "cleaner", None) is not None:
                broker.cleaner.wake()  # a new compacted topic: the cleaner looks now, not after its backoff
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
            for e in _describe(broker, meta)
        )
        results.append(
            rb.entity(
                "CreatableTopicResult",
                name=meta.name,
                topic_id=meta.topic_id,
                error_code=0,
                error_message=None,
                topic_config_error_code=0,
                num_partitions=meta.partitions,
                replication_factor=1,
                configs=configs,
            )
        )
    return rb.entity("CreateTopicsResponse", throttle_time=0, topics=tuple(results))


def _describe(broker: Any, meta: Any) -> list[Any]:
    """The configs of the new topic as DescribeConfigs would list them (v5+ responses);
    after validate_only the topic does not exist, so describe its would-be overrides."""
    if broker.topics.get(meta.name) is None:
        return broker.topics.describe_overrides(meta.configs)
    return broker.topics.describe_configs(meta.name)
