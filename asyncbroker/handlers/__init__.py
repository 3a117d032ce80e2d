"""The handler registry: one module per Kafka API, discovered at startup.

Each handler module defines `API_KEY`, `MIN_VERSION`, `MAX_VERSION` and
`async def handle(ctx, header, request)` (ctx: a RequestContext). ApiVersions advertises exactly
the registered ranges, clamped to the versions kio has schemas for, because
clients pick versions from that list and must never be offered one we cannot
decode. `error_code_for` is the single place where typed exceptions become
Kafka error codes.
"""

from __future__ import annotations

import datetime
import importlib
import logging
import pkgutil
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from wire.errors import ErrorCode, KafkaError
from wire.messages import kio_version_range

log = logging.getLogger(__name__)

# (ctx: RequestContext, header: RequestHeader, request: kio request entity) -> response
HandleFn = Callable[[Any, Any, Any], Awaitable[Any]]


class HandlerSpec(msgspec.Struct, frozen=True):
    """One API as served here: its key, the version range we answer, the coroutine."""

    api_key: int
    min_version: int
    max_version: int
    handle: Any  # HandleFn; msgspec cannot type-check callables
    name: str


class HandlerRegistry:
    """API key -> HandlerSpec for every handler module in this package."""

    def __init__(self, specs: dict[int, HandlerSpec]) -> None:
        self._specs = specs

    @classmethod
    def discover(cls) -> "HandlerRegistry":
        specs: dict[int, HandlerSpec] = {}
        for info in pkgutil.iter_modules(__path__):
            module = importlib.import_module(f"{__name__}.{info.name}")
            api_key = getattr(module, "API_KEY", None)
            if api_key is None:
                continue
            kio_range = kio_version_range(int(api_key))
            if kio_range is None:
                log.warning("Handler %s: kio has no schema for API key %s; not served", info.name, api_key)
                continue
            lo = max(int(module.MIN_VERSION), kio_range[0])
            hi = min(int(module.MAX_VERSION), kio_range[1])
            if lo > hi:
                log.warning("Handler %s: no version in common with kio; not served", info.name)
                continue
            if int(api_key) in specs:
                raise RuntimeError(f"two handler modules for API key {api_key}: {specs[int(api_key)].name}, {info.name}")
            specs[int(api_key)] = HandlerSpec(int(api_key), lo, hi, module.handle, info.name)
        return cls(specs)

    def get(self, api_key: int) -> HandlerSpec | None:
        return self._specs.get(api_key)

    def supported_versions(self) -> dict[int, tuple[int, int]]:
        return {k: (s.min_version, s.max_version) for k, s in sorted(self._specs.items())}


def error_code_for(exc: BaseException) -> ErrorCode:
    """The one boundary where exceptions become Kafka error codes.

    Typed errors carry their code; anything else is a bug on our side, logged
    with its traceback and reported as UNKNOWN_SERVER_ERROR like Kafka does.
    """
    if isinstance(exc, KafkaError):
        return exc.error_code
    log.error("Unexpected error while handling a request", exc_info=exc)
    return ErrorCode.UNKNOWN_SERVER_ERROR


def error_message_for(exc: BaseException) -> str | None:
    if isinstance(exc, KafkaError):
        return exc.wire_message
    return None


def millis(value: Any) -> int:
    """A duration field of a decoded request (kio gives timedeltas) in milliseconds."""
    if isinstance(value, datetime.timedelta):
        return (value.days * 86_400_000) + (value.seconds * 1000) + (value.microseconds // 1000)
    return int(value)
