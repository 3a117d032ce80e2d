"""Changes to broker configs (BROKER resources of IncrementalAlterConfigs and AlterConfigs),
checked as Kafka 4.4 checks them.

The resource is this node ("1") or the cluster-wide default (""). Kafka refuses
keys it cannot reconfigure at runtime, values that do not parse or validate,
per-broker keys at the cluster level and, with eligible leader replicas on,
a per-broker min.insync.replicas; keys it does not know are custom configs and
pass. The texts and codes are Kafka's. asyncbroker validates like Kafka but
does not apply broker configs at runtime: a change that passes validation is
refused with BrokerConfigNotAppliedError unless the request only validates.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from wire.errors import InvalidConfigurationError, InvalidRequestError

from asyncbroker.config import (
    BROKER_CONFIG_KEYS,
    DYNAMIC_BROKER_KEYS,
    PER_BROKER_ONLY_KEYS,
    ConfigException,
    parse_value,
)

DELETE = 1  # AlterConfigOp.DELETE: no value to check


class BrokerConfigNotAppliedError(InvalidRequestError):
    """A valid dynamic broker config change that asyncbroker does not apply at runtime."""


# Kafka's texts for a BROKER resource naming another node, which differ from API to API.
ALTER_MISMATCH = "Unexpected broker id, expected {node}, but received {name}"
DESCRIBE_MISMATCH = "Unexpected broker id, expected {node} or empty string, but received {name}"
LOGGER_MISMATCH = "Unexpected broker id, expected {node} but received {name}"
ALTER_NOT_AN_INT = "Node id must be an integer, but it is: {name}"
DESCRIBE_NOT_AN_INT = "Broker id must be an integer, but it is: {name}"


def check_broker_id(name: str, node_id: int, mismatch: str, not_an_int: str) -> None:
    """A BROKER resource names this node by its id; anything else gets Kafka's error."""
    if not re.fullmatch(r"-?[0-9]+", name):
        raise InvalidRequestError(not_an_int.format(name=name))
    if int(name) != node_id:
        raise InvalidRequestError(mismatch.format(node=node_id, name=name))


def check_broker_changes(resource_name: str, node_id: int, changes: Sequence[tuple[str, int, str | None]],
                         validate_only: bool) -> None:
    """Raise Kafka's error for the first problem of these (key, op, value) changes."""
    if resource_name != "":
        check_broker_id(resource_name, node_id, ALTER_MISMATCH, ALTER_NOT_AN_INT)
    names = [key for key, _, _ in changes]
    static = [key for key in names if key in BROKER_CONFIG_KEYS and key not in DYNAMIC_BROKER_KEYS]
    if static:
        raise InvalidRequestError(f"Cannot update these configs dynamically: [{', '.join(static)}]")
    for key, op, value in changes:
        if op == DELETE or key not in BROKER_CONFIG_KEYS or value is None:
            continue
        definition = BROKER_CONFIG_KEYS[key]
        try:
            parsed = parse_value(definition, value)
            if definition.validator is not None:
                definition.validator(key, parsed)
        except ConfigException as exc:
            raise InvalidRequestError(str(exc)) from None
    if resource_name == "":
        cluster_level = [key for key in names if key in PER_BROKER_ONLY_KEYS]
        if cluster_level:
            raise InvalidRequestError(
                "Cannot update these configs at default cluster level, broker id must be specified: "
                f"[{', '.join(cluster_level)}]")
    elif "min.insync.replicas" in names:
        # Kafka's controller: with eligible leader replicas, only the cluster default may change...
        raise InvalidConfigurationError("Broker-level min.insync.replicas cannot be altered while ELR is enabled.")
    if resource_name == "" and any(key == "min.insync.replicas" and op == DELETE for key, op, _ in changes):
        # ... and it may not go away.
        raise InvalidConfigurationError("Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")
    if not validate_only:
        raise BrokerConfigNotAppliedError(
            "asyncbroker does not change broker configs at runtime; set them in server.properties: "
            f"[{', '.join(names)}]")
