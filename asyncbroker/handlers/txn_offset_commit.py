"""TxnOffsetCommit (key 28): a transactional producer commits a consumer group's offsets
inside its transaction (consume-transform-produce). They are written to
`__consumer_offsets` as the producer's transactional records and take effect with its
COMMIT marker; an abort drops them.

Partitions of unknown topics are UNKNOWN_TOPIC_OR_PARTITION, as Kafka checks against its
metadata; group and member problems apply to every partition.
"""

from __future__ import annotations

from typing import Any

from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.handlers import error_code_for
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.TXN_OFFSET_COMMIT


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    version = header.api_version
    b = ResponseBuilder(API_KEY, version)
    answered: dict[str, list[tuple[int, int]]] = {}
    items: list[tuple[str, int, int, int, str | None]] = []
    # WRITE on the transactional id, READ on the group, then READ on each topic; a refusal of
    # the first two fails every partition.
    refusal = (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
               if not ctx.authorize_transactional_id(AclOperation.WRITE, request.transactional_id)
               else ErrorCode.GROUP_AUTHORIZATION_FAILED if not ctx.authorize_group(AclOperation.READ, request.group_id)
               else None)
    for t in request.topics:
        meta = ctx.broker.topics.get(t.name)
        topic_refusal = refusal
        if topic_refusal is None and not ctx.authorize_topic(AclOperation.READ, t.name):
            topic_refusal = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        for p in t.partitions:
            if topic_refusal is not None:
                answered.setdefault(t.name, []).append((p.partition_index, topic_refusal))
            elif meta is None or not 0 <= p.partition_index < meta.partitions:
                answered.setdefault(t.name, []).append((p.partition_index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            else:
                items.append((t.name, p.partition_index, p.committed_offset,
                              getattr(p, "committed_leader_epoch", -1), p.committed_metadata))
    if items:
        try:
            coordinator = await ctx.broker.loaded_group_coordinator()
            results = await coordinator.commit_transactional_offsets(
                group_id=request.group_id, transactional_id=request.transactional_id,
                producer_id=request.producer_id, producer_epoch=request.producer_epoch,
                member_id=getattr(request, "member_id", ""),
                group_instance_id=getattr(request, "group_instance_id", None),
                generation_id=getattr(request, "generation_id", -1), offsets=items, api_version=version)
        except Exception as exc:  # noqa: BLE001 - mapped at the boundary
            code: int = error_code_for(exc)
            results = {(topic, partition): code for topic, partition, *_ in items}
        for topic, partition, *_ in items:
            code = results.get((topic, partition), ErrorCode.NONE)
            if version < 2 and code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                code = ErrorCode.COORDINATOR_NOT_AVAILABLE  # producers before 2.0 crashed on the loading error
            answered.setdefault(topic, []).append((partition, code))
    return b.entity("TxnOffsetCommitResponse", throttle_time=0, topics=tuple(
        b.entity("TxnOffsetCommitResponseTopic", name=name, partitions=tuple(
            b.entity("TxnOffsetCommitResponsePartition", partition_index=index, error_code=code)
            for index, code in parts))
        for name, parts in answered.items()))
