"""AddPartitionsToTxn (key 24): a producer adds partitions to its open transaction.

v0-v3 carry one transaction (from clients); v4+ carry a batch of them, each either adding
or, with verify_only (KIP-890), asking whether its partitions are already in the
transaction. One unknown partition fails its whole transaction: the unknown ones get
UNKNOWN_TOPIC_OR_PARTITION and the rest OPERATION_NOT_ATTEMPTED, as Kafka answers; the
coordinator's answer applies to every partition of the transaction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from storage.topic_partition import TopicPartition
from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.handlers import error_code_for
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

if TYPE_CHECKING:
    from asyncbroker.broker import Broker

API_KEY = ApiKey.ADD_PARTITIONS_TO_TXN


def older_fenced(code: ErrorCode, version: int, first_version_knowing_fenced: int) -> ErrorCode:
    """Clients before PRODUCER_FENCED existed understand INVALID_PRODUCER_EPOCH instead."""
    if code == ErrorCode.PRODUCER_FENCED and version < first_version_knowing_fenced:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return code


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    version = header.api_version
    b = ResponseBuilder(API_KEY, version)
    if version >= 4 and not ctx.authorize_cluster(AclOperation.CLUSTER_ACTION):
        # v4+ is the brokers' verification request (KIP-890): a client may not send it.
        return b.entity("AddPartitionsToTxnResponse", throttle_time=0,
                        error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results_by_transaction=())
    if version < 4:
        txns = [(request.v3_and_below_transactional_id, request.v3_and_below_producer_id,
                 request.v3_and_below_producer_epoch, False, request.v3_and_below_topics)]
    else:
        txns = [(t.transactional_id, t.producer_id, t.producer_epoch, t.verify_only, t.topics)
                for t in request.transactions]
    results = []
    for txn_id, producer_id, producer_epoch, verify_only, topics in txns:
        partitions = [TopicPartition(t.name, p) for t in topics for p in t.partitions]
        if version < 4 and not ctx.authorize_transactional_id(AclOperation.WRITE, txn_id):
            errors = dict.fromkeys(partitions, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        else:
            errors = await _one_transaction(ctx, version, txn_id, producer_id, producer_epoch, verify_only,
                                            partitions)
        results.append((txn_id, _by_topic(b, errors)))
    if version < 4:
        return b.entity("AddPartitionsToTxnResponse", throttle_time=0, results_by_topic_v3_and_below=results[0][1])
    return b.entity("AddPartitionsToTxnResponse", throttle_time=0, error_code=ErrorCode.NONE,
                    results_by_transaction=tuple(
                        b.entity("AddPartitionsToTxnResult", transactional_id=txn_id, topic_results=topics)
                        for txn_id, topics in results))


async def _one_transaction(ctx: RequestContext, version: int, txn_id: str, producer_id: int, producer_epoch: int,
                           verify_only: bool, partitions: list[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
    """Any partition refused (a topic its producer may not WRITE, then an unknown partition)
    fails the whole transaction's request: the others are OPERATION_NOT_ATTEMPTED."""
    broker = ctx.broker
    may_write = {tp.topic: version >= 4 or ctx.authorize_topic(AclOperation.WRITE, tp.topic) for tp in partitions}
    unauthorized = {tp for tp in partitions if not may_write[tp.topic]}
    unknown = {tp for tp in partitions if tp not in unauthorized and not _hosted(broker, tp)}
    if unknown or unauthorized:
        return {tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED if tp in unauthorized
                else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else ErrorCode.OPERATION_NOT_ATTEMPTED
                for tp in partitions}
    coordinator = broker.transaction_coordinator
    if verify_only:
        return coordinator.handle_verify_partitions_in_transaction(txn_id, producer_id, producer_epoch, partitions)
    try:
        # v5 clients speak transactions v2 (KIP-890 part 2).
        await coordinator.handle_add_partitions_to_transaction(txn_id, producer_id, producer_epoch, partitions,
                                                               2 if version >= 5 else 0)
        code = ErrorCode.NONE
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        code = older_fenced(error_code_for(exc), version, 2)
    return dict.fromkeys(partitions, code)


def _hosted(broker: Broker, tp: TopicPartition) -> bool:
    meta = broker.topics.get(tp.topic)
    return meta is not None and 0 <= tp.partition < meta.partitions


def _by_topic(b: ResponseBuilder, errors: dict[TopicPartition, ErrorCode]) -> tuple[Any, ...]:
    topics: dict[str, list[Any]] = {}
    for tp, code in errors.items():
        topics.setdefault(tp.topic, []).append(
            b.entity("AddPartitionsToTxnPartitionResult", partition_index=tp.partition, partition_error_code=code))
    return tuple(b.entity("AddPartitionsToTxnTopicResult", name=name, results_by_partition=tuple(parts))
                 for name, parts in topics.items())
