"""ShareFetch (key 78): records handed out to a member of a share group (KIP-932), with the
acknowledgements of records it received before; see asyncbroker/share_partition_manager.py.

v2 (share.version 2) adds share_acquire_mode and is_renew_ack: a renew request carries
acknowledgements only (RENEW among them) and must ask for nothing, its byte, record and wait
limits all 0, or Kafka refuses it whole with INVALID_REQUEST. Errors of the whole request
carry no message and no lock timeout (Kafka's getErrorResponse)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wire.errors import ErrorCode, GroupAuthorizationFailedError, InvalidRequestError
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.handlers import error_code_for, millis
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder
from asyncbroker.share_partition import ShareAcquireMode

if TYPE_CHECKING:  # the manager comes with the share coordinator, on first use
    from asyncbroker.share_partition_manager import AckBatch, TopicIdPartition

API_KEY = ApiKey.SHARE_FETCH


def partition_data(b: ResponseBuilder, answer: Any, *, fetch: bool) -> Any:
    """One partition's answer. Kafka fills current_leader and node_endpoints only for a
    partition that moved (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH), which a single node
    never answers: they stay at their zero values, as Kafka's are then."""
    leader = b.entity("LeaderIdAndEpoch", leader_id=0, leader_epoch=0)
    if not fetch:  # ShareAcknowledge: the partition's error is its acknowledgement's
        return b.entity("PartitionData", partition_index=answer.index, error_code=answer.acknowledge_error,
                        error_message=answer.acknowledge_message, current_leader=leader)
    common = dict(partition_index=answer.index, error_code=answer.error, error_message=None, current_leader=leader)
    return b.entity("PartitionData", **common, acknowledge_error_code=answer.acknowledge_error,
                    acknowledge_error_message=answer.acknowledge_message, records=answer.records,
                    acquired_records=tuple(b.entity("AcquiredRecords", first_offset=a.first, last_offset=a.last,
                                                    delivery_count=a.delivery_count) for a in answer.acquired))


def by_topic(b: ResponseBuilder, answers: list[Any], entity: str, *, fetch: bool) -> tuple[Any, ...]:
    topics: dict[Any, list[Any]] = {}
    for a in answers:
        topics.setdefault(a.topic_id, []).append(partition_data(b, a, fetch=fetch))
    return tuple(b.entity(entity, topic_id=t, partitions=tuple(p)) for t, p in topics.items())


def acknowledgements(topics: Any) -> dict[TopicIdPartition, list[AckBatch]]:
    return {(t.topic_id, p.partition_index): [(a.first_offset, a.last_offset, tuple(a.acknowledge_types))
                                              for a in p.acknowledgement_batches]
            for t in topics for p in t.partitions if p.acknowledgement_batches}


def renew_request_error(request: Any) -> str | None:
    """Why a renew ShareFetch (is_renew_ack) is refused: it must ask for no records, no bytes
    and no waiting (Kafka's message, logged there; the answer carries none)."""
    wrong = [f"{name} must be set to 0, " for name, value in (
        ("maxBytes", request.max_bytes), ("minBytes", request.min_bytes), ("maxRecords", request.max_records),
        ("maxWaitMs", millis(request.max_wait))) if value != 0]
    return "".join(wrong) + "if isRenewAck is true." if wrong else None


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)
    renew = bool(getattr(request, "is_renew_ack", False))
    try:
        if not request.group_id or not request.member_id:
            raise InvalidRequestError("ShareFetch needs a group id and a member id")
        if not ctx.authorize_group(AclOperation.READ, request.group_id):
            raise GroupAuthorizationFailedError()
        refused = renew_request_error(request) if renew else None
        if refused is not None:
            raise InvalidRequestError(refused)
        lock_ms = ctx.broker.group_coordinator.group_configs.value(request.group_id, "share.record.lock.duration.ms")
        answers = await ctx.broker.share_partitions.fetch(
            group_id=request.group_id, member_id=request.member_id, epoch=request.share_session_epoch,
            wanted=[(t.topic_id, p.partition_index) for t in request.topics for p in t.partitions],
            forgotten=[(t.topic_id, p) for t in request.forgotten_topics_data for p in t.partitions],
            acks=acknowledgements(request.topics), max_wait_ms=millis(request.max_wait), min_bytes=request.min_bytes,
            max_bytes=request.max_bytes, max_records=request.max_records, batch_size=request.batch_size,
            acquire_mode=int(getattr(request, "share_acquire_mode", ShareAcquireMode.BATCH_OPTIMIZED)), renew=renew,
            renew_types=header.api_version >= 2, connection_id=ctx.connection_id)
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        return b.entity("ShareFetchResponse", throttle_time=0, error_code=error_code_for(exc), error_message=None,
                        acquisition_lock_timeout=0, responses=(), node_endpoints=())
    return b.entity("ShareFetchResponse", throttle_time=0, error_code=ErrorCode.NONE, error_message=None,
                    acquisition_lock_timeout=lock_ms,
                    responses=by_topic(b, answers, "ShareFetchableTopicResponse", fetch=True), node_endpoints=())
