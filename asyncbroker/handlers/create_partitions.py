"""CreatePartitions (API 37): grow a topic's partition count (never shrink).

The checks, in Kafka's order and with its texts, live in TopicManager; this
module adds the request-level rule (a name given twice gets one result).
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from wire.errors import ErrorCode, InvalidRequestError, KafkaError, UnknownTopicOrPartitionError
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.handlers import error_code_for, error_message_for
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.CREATE_PARTITIONS


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    rb = ResponseBuilder(API_KEY, header.api_version)
    counts = Counter(t.name for t in request.topics)
    results = [
        rb.entity("CreatePartitionsTopicResult", name=name, error_code=InvalidRequestError.error_code,
                  error_message="Duplicate topic name.")
        for name in dict.fromkeys(t.name for t in request.topics if counts[t.name] > 1)
    ]
    # ALTER on each topic; the refused are answered after the duplicates, before the rest.
    refused = {n for n in counts if counts[n] == 1 and not ctx.authorize_topic(AclOperation.ALTER, n)}
    results += [rb.entity("CreatePartitionsTopicResult", name=name, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                          error_message=None)
                for name in counts if name in refused]
    for topic in request.topics:
        if counts[topic.name] > 1 or topic.name in refused:
            continue  # answered once above
        try:
            assignments = None if topic.assignments is None else [list(a.broker_ids) for a in topic.assignments]
            if ctx.mutations_limited(header.client_id or ""):
                # After the change is found valid, before it is made (Kafka's controller's order).
                await ctx.broker.topics.create_partitions(topic.name, topic.count, True, assignments)
                current = ctx.broker.topics.get(topic.name)
                assert current is not None  # it was just found valid to grow
                ctx.record_mutations(header.client_id or "", topic.count - current.partitions,
                                     strict=header.api_version >= 3)
            await ctx.broker.topics.create_partitions(topic.name, topic.count, request.validate_only, assignments)
            code, message = ErrorCode.NONE, None
        except KafkaError as exc:
            code = error_code_for(exc)
            # Kafka names no reason for an unknown topic here.
            message = None if isinstance(exc, UnknownTopicOrPartitionError) else error_message_for(exc)
        results.append(rb.entity("CreatePartitionsTopicResult", name=topic.name, error_code=code, error_message=message))
    return rb.entity("CreatePartitionsResponse", throttle_time=0, results=tuple(results))
