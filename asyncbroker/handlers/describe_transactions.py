"""DescribeTransactions (key 65): the state of each named transactional id (kafka-transactions.sh)."""

from __future__ import annotations

from typing import Any

from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.handlers import error_code_for
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.DESCRIBE_TRANSACTIONS


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)
    states = []
    for txn_id in request.transactional_ids:
        if not ctx.authorize_transactional_id(AclOperation.DESCRIBE, txn_id):
            states.append(b.entity("TransactionState", error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                   transactional_id=txn_id, transaction_state="", transaction_timeout=0,
                                   transaction_start_time=0, producer_id=0, producer_epoch=0, topics=()))
            continue
        try:
            d = ctx.broker.transaction_coordinator.handle_describe_transactions(txn_id)
        except Exception as exc:  # noqa: BLE001 - mapped at the boundary
            states.append(b.entity("TransactionState", error_code=error_code_for(exc), transactional_id=txn_id,
                                   transaction_state="", transaction_timeout=0, transaction_start_time=0,
                                   producer_id=0, producer_epoch=0, topics=()))
            continue
        topics: dict[str, list[int]] = {}
        for tp in d.partitions:
            if not ctx.authorize_topic(AclOperation.DESCRIBE, tp.topic, log_denial=False):
                continue  # only the partitions the principal may describe are shown
            topics.setdefault(tp.topic, []).append(tp.partition)
        states.append(b.entity(
            "TransactionState", error_code=ErrorCode.NONE, transactional_id=txn_id, transaction_state=d.state,
            transaction_timeout=d.transaction_timeout_ms, transaction_start_time=d.transaction_start_time_ms,
            producer_id=d.producer_id, producer_epoch=d.producer_epoch,
            topics=tuple(b.entity("TopicData", topic=t, partitions=tuple(p)) for t, p in topics.items())))
    return b.entity("DescribeTransactionsResponse", throttle_time=0, transaction_states=tuple(states))
