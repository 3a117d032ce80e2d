"""IncrementalAlterConfigs (API 44): SET / DELETE / APPEND / SUBTRACT topic, broker and group configs.

Topic changes apply without a restart (TopicManager calls `update_config` on
every partition's Log) and persist in storage's override store. Broker changes
are checked as Kafka checks them (asyncbroker.broker_config_changes); those to
topic defaults apply at once, to every log, and persist.
"""
from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from storage.topic_name import validate_topic_name
from wire.errors import ErrorCode, InvalidRequestError, KafkaError, UnknownServerError
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.broker_config_changes import (
    ALTER_MISMATCH,
    ALTER_NOT_AN_INT,
    check_broker_changes,
    check_broker_id,
)
from asyncbroker.acl_binding import AclOperation
from asyncbroker.config import ConfigResourceType
from asyncbroker.handlers import error_code_for, error_message_for
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

if TYPE_CHECKING:
    from asyncbroker.broker import Broker

API_KEY = ApiKey.INCREMENTAL_ALTER_CONFIGS


async def _alter(broker: Broker, resource: Any, validate_only: bool) -> None:
    ops = [(c.name, c.config_operation, c.value) for c in resource.configs]
    if resource.resource_type == ConfigResourceType.TOPIC:
        if resource.resource_name == "":
            raise InvalidRequestError("Default topic resources are not allowed.")
        validate_topic_name(resource.resource_name)
        await broker.topics.incremental_alter_configs(resource.resource_name, ops, validate_only)
        if not validate_only and broker.cleaner is not None:
            broker.cleaner.wake()  # e.g. cleanup.policy=compact or a lower dirty ratio: look now
        return
    if resource.resource_type == ConfigResourceType.BROKER:
        if len({name for name, _, _ in ops}) != len(ops):
            raise InvalidRequestError("Error due to duplicate config keys")
        check_broker_changes(resource.resource_name, broker.node_id, ops, validate_only)
        if not validate_only:
            await broker.topics.alter_broker_configs(resource.resource_name, ops)
        return
    if resource.resource_type == ConfigResourceType.GROUP:
        await broker.group_coordinator.group_configs.incremental_alter(resource.resource_name, ops, validate_only)
        return
    if resource.resource_type == ConfigResourceType.BROKER_LOGGER:
        check_broker_id(resource.resource_name, broker.node_id, ALTER_MISMATCH, ALTER_NOT_AN_INT)
        raise InvalidRequestError("BROKER_LOGGER resources are not served by asyncbroker")
    raise InvalidRequestError(f"Unknown resource type {resource.resource_type}")


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    rb = ResponseBuilder(API_KEY, header.api_version)
    counts = Counter((r.resource_type, r.resource_name) for r in request.resources)
    responses = []
    for resource in request.resources:
        try:
            if counts[(resource.resource_type, resource.resource_name)] > 1:
                raise InvalidRequestError("Each resource must appear at most once.")
            refusal = ctx.config_resource_refusal(AclOperation.ALTER_CONFIGS, resource.resource_type,
                                                  resource.resource_name)
            if refusal is not None:
                raise refusal
            await _alter(ctx.broker, resource, request.validate_only)
            code, message = ErrorCode.NONE, None
        except KafkaError as exc:
            code = error_code_for(exc)
            # Kafka sends no text with UNKNOWN_SERVER_ERROR (an unknown operation id).
            message = None if isinstance(exc, UnknownServerError) else error_message_for(exc)
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
