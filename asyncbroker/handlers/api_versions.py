"""ApiVersions (key 18): the APIs and version ranges this broker serves.

The list is the handler registry itself, so a client is never offered an API
we do not implement. No feature tags are sent in v3+: librdkafka 2.0.x
(Debian's kcat 1.7.1) misparses the SupportedFeatures/FinalizedFeatures
tagged fields and then refuses the broker, and no client needs them from a
single node without KRaft feature levels.
"""

from __future__ import annotations

from typing import Any

from wire.errors import ErrorCode
from wire.messages import ApiKey

from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.API_VERSIONS
MIN_VERSION = 0
MAX_VERSION = 4


async def handle(broker: Any, header: Any, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)
    keys = tuple(
        b.entity("ApiVersion", api_key=key, min_version=lo, max_version=hi)
        for key, (lo, hi) in broker.handlers.supported_versions().items()
    )
    return b.entity("ApiVersionsResponse", error_code=ErrorCode.NONE, api_keys=keys, throttle_time=0)
