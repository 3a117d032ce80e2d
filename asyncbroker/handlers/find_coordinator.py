"""FindCoordinator (key 10): this node coordinates every group.

Like Kafka, the first lookup of a group coordinator creates
`__consumer_offsets` (offsets.topic.num.partitions partitions, compacted).
Transaction coordinator lookups are answered with this node as well; the
InitProducerId that follows refuses transactional ids, so a transactional
client fails fast instead of retrying lookups until it times out.
"""

from __future__ import annotations

from typing import Any

from wire.errors import ErrorCode
from wire.messages import ApiKey

from asyncbroker.group_coordinator import group_coordinator_for
from asyncbroker.handlers import error_code_for, error_message_for
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.FIND_COORDINATOR
MIN_VERSION = 0
MAX_VERSION = 6

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1


async def handle(broker: Any, header: Any, request: Any) -> Any:
    version = header.api_version
    b = ResponseBuilder(API_KEY, version)
    key_type = getattr(request, "key_type", GROUP_KEY_TYPE)
    error: int = ErrorCode.NONE
    message: str | None = None
    if key_type == GROUP_KEY_TYPE:
        try:
            coordinator = await group_coordinator_for(broker)
            await coordinator.offsets_topic.ensure_created()
        except Exception as exc:  # noqa: BLE001 - mapped at the boundary
            error = error_code_for(exc)
            if error not in (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS):
                error = ErrorCode.COORDINATOR_NOT_AVAILABLE
            message = error_message_for(exc)
    elif key_type != TRANSACTION_KEY_TYPE:
        error, message = ErrorCode.INVALID_REQUEST, f"Unsupported key type {key_type}"

    def fields(key: str | None) -> dict[str, Any]:
        ok = error == ErrorCode.NONE
        return dict(
            key=key, error_code=error, error_message=message,
            node_id=broker.node_id if ok else -1,
            host=broker.advertised_host if ok else "",
            port=broker.advertised_port if ok else -1,
        )

    if version >= 4:
        coordinators = tuple(b.entity("Coordinator", **fields(k)) for k in request.coordinator_keys)
        return b.entity("FindCoordinatorResponse", throttle_time=0, coordinators=coordinators)
    return b.entity("FindCoordinatorResponse", throttle_time=0, **fields(None))
