"""InitProducerId (key 22): producer ids for idempotent producers.

Idempotence is on by default in the Java client (3.0+) and kafka-python
3.x, so without this API they refuse to produce. A single node needs no
controller-allocated id blocks: ids come from `Broker.allocate_producer_id`
(wall-clock based, so they stay unique across restarts). Storage's producer
state then deduplicates and orders by sequence number. Transactions need a
transaction coordinator, which this broker does not have: a transactional
id is refused.
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

MAX_EPOCH = 32767

log = logging.getLogger(__name__)


async def handle(broker: Any, header: Any, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)
    if request.transactional_id is not None:
        log.warning("Refusing InitProducerId for transactional id %r: transactions are not supported",
                    request.transactional_id)
        return b.entity("InitProducerIdResponse", throttle_time=0, error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                        producer_id=-1, producer_epoch=-1)
    pid = getattr(request, "producer_id", -1)
    epoch = getattr(request, "producer_epoch", -1)
    if pid >= 0 and 0 <= epoch < MAX_EPOCH - 1:
        # KIP-360: an idempotent producer bumps its epoch to recover from errors.
        new_pid, new_epoch = pid, epoch + 1
    else:
        new_pid, new_epoch = broker.allocate_producer_id(), 0
    return b.entity("InitProducerIdResponse", throttle_time=0, error_code=ErrorCode.NONE,
                    producer_id=new_pid, producer_epoch=new_epoch)
