"""EndTxn (key 26): commit or abort the producer's transaction.

v5 means the client speaks transactions v2: the answer carries the producer id and epoch
it continues with (the epoch moves on at every EndTxn). Before v5 the epoch stays and the
answer carries none.
"""

from __future__ import annotations

from typing import Any

from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.messages import ApiKey
from wire.records import ControlRecordType

from asyncbroker.acl_binding import AclOperation
from asyncbroker.handlers import error_code_for
from asyncbroker.handlers.add_partitions_to_txn import older_fenced
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.END_TXN


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    version = header.api_version
    b = ResponseBuilder(API_KEY, version)
    result = ControlRecordType.COMMIT if request.committed else ControlRecordType.ABORT
    if not ctx.authorize_transactional_id(AclOperation.WRITE, request.transactional_id):
        return b.entity("EndTxnResponse", throttle_time=0, error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                        producer_id=-1, producer_epoch=-1)
    try:
        answer = await ctx.broker.transaction_coordinator.handle_end_transaction(
            request.transactional_id, request.producer_id, request.producer_epoch, result, 2 if version >= 5 else 0)
        return b.entity("EndTxnResponse", throttle_time=0, error_code=ErrorCode.NONE,
                        producer_id=answer.producer_id, producer_epoch=answer.producer_epoch)
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        return b.entity("EndTxnResponse", throttle_time=0, error_code=older_fenced(error_code_for(exc), version, 2),
                        producer_id=-1, producer_epoch=-1)
