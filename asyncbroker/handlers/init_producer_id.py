"""InitProducerId (key 22): producer ids for idempotent producers.

Idempotence is on by default in the Java client (3.0+) and kafka-python
3.x, so without this API they refuse to produce. A single node needs no
controller-allocated id blocks: ids come from `Broker.allocate_producer_id`
(wall-clock based, so they stay unique across restarts). Storage's producer
state then deduplicates and orders by sequence number.

Without a transactional id Kafka hands out a fresh producer id with epoch 0
on every request: a producer id and epoch sent along (KIP-360, v3+) are only
checked for being both set or both unset, never bumped. Transactions need a
transaction coordinator, which this broker does not have: a transactional id
is refused.
"""

from __future__ import annotations

import logging
from typing import Any

from wire.errors import ErrorCode
from wire.messages import ApiKey

from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.INIT_PRODUCER_ID
MIN_VERSION = 0
MAX_VERSION = 5

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1

log = logging.getLogger(__name__)


async def handle(broker: Any, header: Any, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)
    pid = getattr(request, "producer_id", NO_PRODUCER_ID)
    epoch = getattr(request, "producer_epoch", NO_PRODUCER_EPOCH)
    if (pid == NO_PRODUCER_ID) != (epoch == NO_PRODUCER_EPOCH) or request.transactional_id == "":
        # Kafka refuses a producer id without an epoch (or the reverse), and an empty
        # transactional id, before anything else.
        return b.entity("InitProducerIdResponse", throttle_time=0, error_code=ErrorCode.INVALID_REQUEST,
                        producer_id=NO_PRODUCER_ID, producer_epoch=NO_PRODUCER_EPOCH)
    if request.transactional_id is not None:
        log.warning("Refusing InitProducerId for transactional id %r: transactions are not supported",
                    request.transactional_id)
        return b.entity("InitProducerIdResponse", throttle_time=0,
                        error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                        producer_id=NO_PRODUCER_ID, producer_epoch=NO_PRODUCER_EPOCH)
    return b.entity("InitProducerIdResponse", throttle_time=0, error_code=ErrorCode.NONE,
                    producer_id=broker.allocate_producer_id(), producer_epoch=0)
