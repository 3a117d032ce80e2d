"""ListTransactions (key 66): transactional ids by state, producer id, (v1+) how long their
transaction has been open and (v2+) a regular expression their id must match whole."""

from __future__ import annotations

from typing import Any

from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.handlers import error_code_for
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.LIST_TRANSACTIONS


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)
    try:
        listed, unknown = ctx.broker.transaction_coordinator.handle_list_transactions(
            set(request.producer_id_filters), set(request.state_filters), getattr(request, "duration_filter", -1),
            getattr(request, "transactional_id_pattern", None))
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        return b.entity("ListTransactionsResponse", throttle_time=0, error_code=error_code_for(exc),
                        unknown_state_filters=(), transaction_states=())
    listed = [t for t in listed
              if ctx.authorize_transactional_id(AclOperation.DESCRIBE, t.transactional_id, log_denial=False)]
    return b.entity("ListTransactionsResponse", throttle_time=0, error_code=ErrorCode.NONE,
                    unknown_state_filters=tuple(unknown),
                    transaction_states=tuple(b.entity("TransactionState", transactional_id=t.transactional_id,
                                                      producer_id=t.producer_id, transaction_state=t.state)
                                             for t in listed))
