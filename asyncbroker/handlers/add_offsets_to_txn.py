"""AddOffsetsToTxn (key 25): the group's `__consumer_offsets` partition joins the transaction,
so the offsets a TxnOffsetCommit writes there commit or abort with it."""

from __future__ import annotations

from typing import Any

from storage.topic_name import OFFSETS_TOPIC
from storage.topic_partition import TopicPartition
from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.handlers import error_code_for
from asyncbroker.handlers.add_partitions_to_txn import older_fenced
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.ADD_OFFSETS_TO_TXN


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)
    if not ctx.authorize_transactional_id(AclOperation.WRITE, request.transactional_id):
        return b.entity("AddOffsetsToTxnResponse", throttle_time=0,
                        error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not ctx.authorize_group(AclOperation.READ, request.group_id):
        return b.entity("AddOffsetsToTxnResponse", throttle_time=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    try:
        groups = await ctx.broker.loaded_group_coordinator()
        await groups.offsets_topic.ensure_created()
        offsets_partition = TopicPartition(OFFSETS_TOPIC, groups.offsets_topic.partition_for(request.group_id))
        await ctx.broker.transaction_coordinator.handle_add_partitions_to_transaction(
            request.transactional_id, request.producer_id, request.producer_epoch, [offsets_partition], 0)
        code = ErrorCode.NONE
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        code = older_fenced(error_code_for(exc), header.api_version, 2)
    return b.entity("AddOffsetsToTxnResponse", throttle_time=0, error_code=code)
