"""IncrementalAlterConfigs (API 44): SET / DELETE / APPEND / SUBTRACT topic configs.

Changes apply without a restart (TopicManager calls `update_config` on every
partition's Log) and persist in storage's override store. Broker configs are
static here, so altering a BROKER resource is refused like a non-dynamic key
in Kafka.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from storage.topic_name import validate_topic_name
from wire.errors import ErrorCode, InvalidConfigurationError, InvalidRequestError, KafkaError
from wire.messages import ApiKey

from asyncbroker.config import BROKER_CONFIG_KEYS, ConfigResourceType
from asyncbroker.handlers import error_code_for, error_message_for
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.INCREMENTAL_ALTER_CONFIGS
MIN_VERSION = 0
MAX_VERSION = 1


async def _alter(broker: Any, resource: Any, validate_only: bool) -> None:
    ops = [(c.name, c.config_operation, c.value) for c in resource.configs]
    if resource.resource_type == ConfigResourceType.TOPIC:
        validate_topic_name(resource.resource_name)
        await broker.topics.incremental_alter_configs(resource.resource_name, ops, validate_only)
        if not validate_only and getattr(broker, "cleaner", None) is not None:
            broker.cleaner.wake()  # e.g. cleanup.policy=compact or a lower dirty ratio: look now
        return
    if resource.resource_type == ConfigResourceType.BROKER:
        if resource.resource_name not in ("", str(broker.node_id)):
            raise InvalidRequestError(
                f"Unexpected broker id, expected {broker.node_id} or empty string, but received {resource.resource_name}"
            )
        unknown = sorted(name for name, _, _ in ops if name not in BROKER_CONFIG_KEYS)
        if unknown:
            raise InvalidConfigurationError(f"Unknown broker config(s): {', '.join(unknown)}")
        names = ", ".join(sorted(name for name, _, _ in ops))
        raise InvalidRequestError(f"Cannot update these configs dynamically: {names}")
    raise InvalidRequestError(f"Unsupported resource type {resource.resource_type} for IncrementalAlterConfigs")


async def handle(broker: Any, header: Any, request: Any) -> Any:
    rb = ResponseBuilder(API_KEY, header.api_version)
    counts = Counter((r.resource_type, r.resource_name) for r in request.resources)
    responses = []
    for resource in request.resources:
        try:
            if counts[(resource.resource_type, resource.resource_name)] > 1:
                raise InvalidRequestError("Error due to duplicate resources in the request")
            await _alter(broker, resource, request.validate_only)
            code, message = ErrorCode.NONE, None
        except KafkaError as exc:
            code, message = error_code_for(exc), error_message_for(exc)
        responses.append(
            rb.entity(
                "AlterConfigsResourceResponse",
                error_code=code,
                error_message=message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
            )
        )
    return rb.entity("IncrementalAlterConfigsResponse", throttle_time=0, responses=tuple(responses))
