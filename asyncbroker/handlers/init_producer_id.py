"""InitProducerId (key 22): producer ids for idempotent and transactional producers.

Idempotence is on by default in the Java client (3.0+) and kafka-python 3.x, so without
this API they refuse to produce. Without a transactional id every request gets a fresh
producer id at epoch 0 (a producer id and epoch sent along, KIP-360 v3+, are only checked
for being both set or both unset), here, as Kafka's coordinator hands it out without its
state: an idempotent producer does not start the transaction coordinator (its modules,
about 0.3 MB, and its timers). With one, the transaction coordinator answers: the id's
producer id with its epoch bumped, fencing any earlier producer of the same id.

A single node needs no controller-allocated id blocks: ids come from
`Broker.allocate_producer_id` (clock based, so they stay unique across restarts).
"""

from __future__ import annotations

from typing import Any

from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation, ResourceType
from asyncbroker.handlers import error_code_for, millis
from asyncbroker.handlers.add_partitions_to_txn import older_fenced
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.INIT_PRODUCER_ID

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    version = header.api_version
    b = ResponseBuilder(API_KEY, version)
    pid = getattr(request, "producer_id", NO_PRODUCER_ID)
    epoch = getattr(request, "producer_epoch", NO_PRODUCER_EPOCH)
    # First of all, as in Kafka: WRITE on the transactional id; an idempotent producer needs
    # IDEMPOTENT_WRITE on the cluster or WRITE on some topic.
    if request.transactional_id is not None:
        if not ctx.authorize_transactional_id(AclOperation.WRITE, request.transactional_id):
            return _error(b, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    elif not (ctx.authorize_cluster(AclOperation.IDEMPOTENT_WRITE)
              or ctx.authorize_by_resource_type(AclOperation.WRITE, ResourceType.TOPIC)):
        return _error(b, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    if (pid == NO_PRODUCER_ID) != (epoch == NO_PRODUCER_EPOCH):
        # Kafka refuses a producer id without an epoch (or the reverse) before anything else.
        return _error(b, ErrorCode.INVALID_REQUEST)
    if request.transactional_id is None:
        return _answer(b, ctx.broker.allocate_producer_id(), 0)
    from asyncbroker.transaction_coordinator import ProducerIdAndEpoch  # with the coordinator, on first use

    expected = None if pid == NO_PRODUCER_ID else ProducerIdAndEpoch(pid, epoch)
    timeout = request.transaction_timeout
    timeout_ms = millis(timeout)
    try:
        got = await ctx.broker.transaction_coordinator.handle_init_producer_id(request.transactional_id, timeout_ms,
                                                                           expected)
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        return _error(b, older_fenced(error_code_for(exc), version, 4))
    return _answer(b, got.producer_id, got.producer_epoch)


def _answer(b: ResponseBuilder, producer_id: int, producer_epoch: int) -> Any:
    return b.entity("InitProducerIdResponse", throttle_time=0, error_code=ErrorCode.NONE, producer_id=producer_id,
                    producer_epoch=producer_epoch)


def _error(b: ResponseBuilder, code: ErrorCode) -> Any:
    return b.entity("InitProducerIdResponse", throttle_time=0, error_code=code, producer_id=NO_PRODUCER_ID,
                    producer_epoch=NO_PRODUCER_EPOCH)
