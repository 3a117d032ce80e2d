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

from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.init_producer_id import InitProducerIdRequest, InitProducerIdResponse, encode_init_producer_id_response
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation, ResourceType
from asyncbroker.encoded_response import EncodedResponse
from asyncbroker.handlers import error_code_for
from asyncbroker.request_context import RequestContext

API_KEY = ApiKey.INIT_PRODUCER_ID

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


async def handle(ctx: RequestContext, header: RequestHeader, request: InitProducerIdRequest) -> EncodedResponse:
    version = header.api_version
    pid, epoch = request.producer_id, request.producer_epoch
    # First of all, as in Kafka: WRITE on the transactional id; an idempotent producer needs
    # IDEMPOTENT_WRITE on the cluster or WRITE on some topic.
    if request.transactional_id is not None:
        if not ctx.authorize_transactional_id(AclOperation.WRITE, request.transactional_id):
            return _error(version, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    elif not (ctx.authorize_cluster(AclOperation.IDEMPOTENT_WRITE)
              or ctx.authorize_by_resource_type(AclOperation.WRITE, ResourceType.TOPIC)):
        return _error(version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    if (pid == NO_PRODUCER_ID) != (epoch == NO_PRODUCER_EPOCH):
        # Kafka refuses a producer id without an epoch (or the reverse) before anything else.
        return _error(version, ErrorCode.INVALID_REQUEST)
    if request.transactional_id is None:
        return _answer(version, ctx.broker.allocate_producer_id(), 0)
    from asyncbroker.handlers.add_partitions_to_txn import older_fenced  # with transactions, on first use
    from asyncbroker.transaction_coordinator import ProducerIdAndEpoch

    expected = None if pid == NO_PRODUCER_ID else ProducerIdAndEpoch(pid, epoch)
    try:
        got = await ctx.broker.transaction_coordinator.handle_init_producer_id(
            request.transactional_id, request.transaction_timeout, expected)
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        return _error(version, older_fenced(error_code_for(exc), version, 4))
    return _answer(version, got.producer_id, got.producer_epoch)


def _answer(version: int, producer_id: int, producer_epoch: int) -> EncodedResponse:
    body = encode_init_producer_id_response(version, InitProducerIdResponse(
        error_code=ErrorCode.NONE, producer_id=producer_id, producer_epoch=producer_epoch))
    return EncodedResponse([body], len(body))


def _error(version: int, code: int) -> EncodedResponse:
    body = encode_init_producer_id_response(version, InitProducerIdResponse(error_code=code))
    return EncodedResponse([body], len(body))
