"""DescribeConfigs (API 32): topic configs, this broker's configs, the cluster-wide defaults,
group configs (asyncbroker/group_configs.py).

A topic key reports its override as DYNAMIC_TOPIC_CONFIG, else the layers of
the broker key that supplies its default (the cluster-wide dynamic default,
STATIC_BROKER_CONFIG when set in server.properties, the environment or
--override, DEFAULT_CONFIG), with the synonyms when include_synonyms is set
and the documentation when asked (v3+), as Kafka answers. Broker keys Kafka
reconfigures at runtime are described as not read-only.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from storage.topic_name import validate_topic_name
from wire.headers import RequestHeader
from wire.error_messages import default_message
from wire.errors import (
    INVALID_REQUEST_MESSAGE,
    ErrorCode,
    InvalidRequestError,
    KafkaError,
    UnknownTopicOrPartitionError,
)
from wire.messages import ApiKey

from asyncbroker.broker_config_changes import (
    DESCRIBE_MISMATCH,
    DESCRIBE_NOT_AN_INT,
    LOGGER_MISMATCH,
    check_broker_id,
)
from asyncbroker.acl_binding import AclOperation
from asyncbroker.config import ConfigEntry, ConfigResourceType
from asyncbroker.handlers import error_code_for, error_message_for
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

if TYPE_CHECKING:
    from asyncbroker.broker import Broker

API_KEY = ApiKey.DESCRIBE_CONFIGS


def describe_resource(broker: Broker, resource_type: int, name: str, keys: tuple[str, ...] | None) -> list[ConfigEntry]:
    """The config entries of one resource; typed KafkaErrors for a bad resource."""
    if resource_type == ConfigResourceType.TOPIC:
        validate_topic_name(name)
        if broker.topics.get(name) is None:
            raise UnknownTopicOrPartitionError(f"Topic {name} not found.")
        return broker.topics.describe_configs(name, keys)
    if resource_type == ConfigResourceType.BROKER:
        if name == "":
            return broker.config.describe_cluster_defaults(keys)
        check_broker_id(name, broker.node_id, DESCRIBE_MISMATCH, DESCRIBE_NOT_AN_INT)
        return broker.config.describe(keys)
    if resource_type == ConfigResourceType.GROUP:
        return broker.group_coordinator.group_configs.describe(name, keys)
    if resource_type == ConfigResourceType.BROKER_LOGGER:
        check_broker_id(name, broker.node_id, LOGGER_MISMATCH, DESCRIBE_NOT_AN_INT)
        raise InvalidRequestError("BROKER_LOGGER resources are not served by asyncbroker")
    raise InvalidRequestError(INVALID_REQUEST_MESSAGE)


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    rb = ResponseBuilder(API_KEY, header.api_version)
    synonyms_wanted = bool(getattr(request, "include_synonyms", False))
    docs_wanted = bool(getattr(request, "include_documentation", False))
    results = []
    refused = []
    for resource in request.resources:
        refusal = ctx.config_resource_refusal(AclOperation.DESCRIBE_CONFIGS, resource.resource_type,
                                              resource.resource_name)
        if refusal is not None:
            # Answered after the resources described, as Kafka does.
            code = refusal.error_code
            refused.append(rb.entity("DescribeConfigsResult", error_code=code, error_message=default_message(code),
                                     resource_type=resource.resource_type, resource_name=resource.resource_name,
                                     configs=()))
            continue
        keys = resource.configuration_keys
        message: str | None
        try:
            # null and an empty list both mean every key, as in Kafka.
            entries = describe_resource(ctx.broker, resource.resource_type, resource.resource_name,
                                        tuple(keys) or None if keys is not None else None)
            code, message = ErrorCode.NONE, ""  # Kafka sends "" rather than null here
        except KafkaError as exc:
            entries, code = [], error_code_for(exc)
            # Kafka names no reason for an unknown topic here: its text is "".
            message = "" if isinstance(exc, UnknownTopicOrPartitionError) else error_message_for(exc)
        configs = tuple(
            rb.entity(
                "DescribeConfigsResourceResult",
                name=e.name,
                value=e.value,
                read_only=e.read_only,
                config_source=int(e.source),
                is_sensitive=e.is_sensitive,
                synonyms=tuple(
                    rb.entity("DescribeConfigsSynonym", name=s.name, value=s.value, source=int(s.source))
                    for s in e.synonyms
                ) if synonyms_wanted else (),
                config_type=int(e.type),
                documentation=e.documentation if docs_wanted else None,
            )
            for e in entries
        )
        results.append(
            rb.entity(
                "DescribeConfigsResult",
                error_code=code,
                error_message=message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
                configs=configs,
            )
        )
    return rb.entity("DescribeConfigsResponse", throttle_time=0, results=(*results, *refused))
