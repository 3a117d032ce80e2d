"""DescribeProducers (API 61): the active idempotent and transactional producers of partitions.

Answered from each partition's ProducerStateManager, as Kafka's
`Partition.activeProducerState` does: producer id, epoch, last sequence and
timestamp, coordinator epoch (-1 without a transaction marker) and the first
offset of an open transaction (-1 when none). A partition this node does not
host is UNKNOWN_TOPIC_OR_PARTITION without a message, as Kafka answers.
"""

from __future__ import annotations

from typing import Any

from storage.topic_partition import TopicPartition
from wire.error_messages import default_message
from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.DESCRIBE_PRODUCERS


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)
    topics = []
    for t in request.topics:
        partitions = []
        may_read = ctx.authorize_topic(AclOperation.READ, t.name)
        for index in t.partition_indexes:
            if not may_read:
                partitions.append(b.entity("PartitionResponse", partition_index=index,
                                           error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                           error_message=default_message(ErrorCode.TOPIC_AUTHORIZATION_FAILED),
                                           active_producers=()))
                continue
            log_ = ctx.broker.get_log(TopicPartition(t.name, index))
            if log_ is None:
                partitions.append(b.entity("PartitionResponse", partition_index=index,
                                           error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error_message=None,
                                           active_producers=()))
                continue
            producers = tuple(
                b.entity("ProducerState", producer_id=entry.producer_id, producer_epoch=entry.producer_epoch,
                         last_sequence=entry.last_seq, last_timestamp=entry.last_timestamp,
                         coordinator_epoch=entry.coordinator_epoch, current_txn_start_offset=txn_start)
                for entry, txn_start in log_.producer_state_manager.active_producers()
            )
            partitions.append(b.entity("PartitionResponse", partition_index=index, error_code=ErrorCode.NONE,
                                       error_message=None, active_producers=producers))
        topics.append(b.entity("TopicResponse", name=t.name, partitions=tuple(partitions)))
    return b.entity("DescribeProducersResponse", throttle_time=0, topics=tuple(topics))
