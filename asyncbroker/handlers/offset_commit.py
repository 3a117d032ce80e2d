"""OffsetCommit (key 8): store a group's consumed positions in `__consumer_offsets`.

Partitions of topics this broker does not have are UNKNOWN_TOPIC_OR_PARTITION
(as Kafka checks against its metadata; v10 names topics by id, and an unknown
id is UNKNOWN_TOPIC_ID); group/member problems apply to every partition of
the request. The answer lists those refused partitions first, in request
order, then the coordinator's, merged into the topics already listed: the
order in which Kafka's broker builds it.
"""

from __future__ import annotations

import uuid

from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.messages import ApiKey
from wire.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    encode_offset_commit_response,
)

from asyncbroker.acl_binding import AclOperation
from asyncbroker.encoded_response import EncodedResponse
from asyncbroker.handlers import error_code_for
from asyncbroker.request_context import RequestContext

API_KEY = ApiKey.OFFSET_COMMIT

TopicKey = str | uuid.UUID  # a name, or (v10) an id


async def handle(ctx: RequestContext, header: RequestHeader, request: OffsetCommitRequest) -> EncodedResponse:
    version = header.api_version
    answered: dict[TopicKey, list[tuple[int, int]]] = {}
    items: list[tuple[str, int, int, int, str | None]] = []
    keys: dict[tuple[str, int], TopicKey] = {}
    # READ on the group, then on each topic (Kafka's order); a refused group fails every partition.
    group_refused = not ctx.authorize_group(AclOperation.READ, request.group_id)
    for t in request.topics:
        key: TopicKey
        if version >= 10:
            key = t.topic_id if t.topic_id is not None else uuid.UUID(int=0)
            meta = ctx.broker.topics.by_id(key)
            missing = ErrorCode.UNKNOWN_TOPIC_ID
            name = meta.name if meta is not None else None
        else:
            key = t.name
            meta = ctx.broker.topics.get(t.name)
            missing = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            name = t.name
        refusal = (ErrorCode.GROUP_AUTHORIZATION_FAILED if group_refused
                   else ErrorCode.TOPIC_AUTHORIZATION_FAILED
                   if name is not None and not ctx.authorize_topic(AclOperation.READ, name) else None)
        for p in t.partitions:
            if refusal is not None and (group_refused or meta is not None or version < 10):
                answered.setdefault(key, []).append((p.partition_index, refusal))
            elif meta is None:
                answered.setdefault(key, []).append((p.partition_index, missing))
            elif not 0 <= p.partition_index < meta.partitions:
                answered.setdefault(key, []).append((p.partition_index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            else:
                keys[(meta.name, p.partition_index)] = key
                items.append((meta.name, p.partition_index, p.committed_offset, p.committed_leader_epoch,
                              p.committed_metadata))
    if items:
        try:
            coordinator = await ctx.broker.loaded_group_coordinator()
            results = await coordinator.commit_offsets(
                group_id=request.group_id,
                member_id=request.member_id,
                group_instance_id=request.group_instance_id,
                generation_id=request.generation_id_or_member_epoch,
                retention_time_ms=request.retention_time,
                offsets=items,
                api_version=version,
            )
        except Exception as exc:  # noqa: BLE001 - mapped at the boundary
            code = error_code_for(exc)
            results = {(topic, partition): code for topic, partition, *_ in items}
        for topic, partition, *_ in items:
            answered.setdefault(keys[(topic, partition)], []).append(
                (partition, results.get((topic, partition), ErrorCode.NONE)))
    body = encode_offset_commit_response(version, OffsetCommitResponse(topics=tuple(
        OffsetCommitResponseTopic(key if isinstance(key, str) else "", key if isinstance(key, uuid.UUID) else None,
                                  tuple(OffsetCommitResponsePartition(i, e) for i, e in partitions))
        for key, partitions in answered.items())))
    return EncodedResponse([body], len(body))
