"""Changes to broker configs (BROKER resources of IncrementalAlterConfigs and AlterConfigs):
checked as Kafka 4.4 checks them, kept as dynamic layers of the KafkaConfig, persisted.

The resource is this node ("1") or the cluster-wide default (""). Kafka refuses
keys it cannot reconfigure at runtime, values that do not parse or validate,
per-broker keys at the cluster level and, with eligible leader replicas on,
a per-broker min.insync.replicas; keys it does not know are custom configs and
pass. The texts and codes are Kafka's.

asyncbroker applies the dynamic keys that are topic defaults (log.retention.ms,
message.max.bytes, log.cleanup.policy, ..., and the cluster's
min.insync.replicas): TopicManager pushes the new defaults to every log. It
applies the cleaner's backoff and I/O throttle too (the running cleaner reads
them again), and the connection limits, each listener's own too (the server's
ConnectionQuotas). The other keys Kafka reconfigures (cleaner and thread pool sizes,
listeners, producer.id.expiration.ms) and custom keys are validated but not
applied: such a change is refused with BrokerConfigNotAppliedError unless it
only validates.
The layers live in asyncbroker-broker-configs.json in every log dir, beside
storage's topic config overrides, and are read back at startup.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path

from storage.log_dir_file import LogDirFile, encode_json
from storage.cluster_metadata import read_cluster_metadata
from storage.config_def import BROKER_KEYS, ConfigException, ConfigType, format_value, parse_value
from wire.errors import InvalidConfigurationError, InvalidRequestError

from asyncbroker.config import (
    CLUSTER_DEFAULT_KEYS,
    DYNAMIC_BROKER_KEYS,
    PER_BROKER_ONLY_KEYS,
    TOPIC_DEFAULT_SYNONYMS,
    KafkaConfig,
    listener_limit_key,
)

log = logging.getLogger(__name__)

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3  # AlterConfigOp ids
BROKER_CONFIGS_FILE = "asyncbroker-broker-configs.json"
# The dynamic keys asyncbroker applies at runtime: the broker defaults of topic keys, and
# the cleaner knobs a running cleaner takes without new workers.
CLEANER_APPLIED_KEYS: tuple[str, ...] = ("log.cleaner.backoff.ms", "log.cleaner.io.max.bytes.per.second")
# The connection limits the server's ConnectionQuotas takes at once.
CONNECTION_QUOTA_KEYS: tuple[str, ...] = ("max.connections", "max.connections.per.ip",
                                          "max.connections.per.ip.overrides", "max.connection.creation.rate")
APPLIED_KEYS: frozenset[str] = frozenset(
    {synonyms[0] for synonyms in TOPIC_DEFAULT_SYNONYMS.values()} | set(CLUSTER_DEFAULT_KEYS)
    | set(CLEANER_APPLIED_KEYS) | set(CONNECTION_QUOTA_KEYS))


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
    static = [key for key in names if key in BROKER_KEYS and key not in DYNAMIC_BROKER_KEYS]
    if static:
        raise InvalidRequestError(f"Cannot update these configs dynamically: [{', '.join(static)}]")
    for key, op, value in changes:
        if op in (APPEND, SUBTRACT) and key not in BROKER_KEYS:
            # A list operation needs the key's definition; a listener's limit or a custom key has none.
            raise InvalidConfigurationError(f"Unknown config name: {key}")
        limit = listener_limit_key(key)
        if op == DELETE or (key not in BROKER_KEYS and limit is None) or value is None:
            continue
        definition = BROKER_KEYS[key if limit is None else limit[1]]  # a listener's limit: the broker-wide key's
        if op in (APPEND, SUBTRACT) and definition.type is not ConfigType.LIST:
            # Kafka's broker-side wording (topics get "Can't APPEND to key ...").
            raise InvalidConfigurationError(
                f"Config value {'append' if op == APPEND else 'subtract'} is not allowed for config key: {key}")
        try:
            parsed = parse_value(definition, value)  # Kafka's messages name the broker-wide key
        except ConfigException as exc:
            raise InvalidRequestError(str(exc)) from None
        if limit is not None and parsed <= 0:
            # The listener's quota refuses it (Kafka's validateReconfiguration), in these words.
            raise InvalidRequestError(f"Invalid value org.apache.kafka.common.config.ConfigException: Invalid "
                                      f"{limit[1]} {parsed} for configuration Invalid dynamic configuration")
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
    not_applied = [key for key in names if key not in APPLIED_KEYS and listener_limit_key(key) is None]
    if not validate_only and not_applied:
        raise BrokerConfigNotAppliedError(
            "asyncbroker does not change these broker configs at runtime; set them in server.properties: "
            f"[{', '.join(not_applied)}]")


def changed_layers(config: KafkaConfig, resource_name: str, changes: Sequence[tuple[str, int, str | None]]
                   ) -> tuple[dict[str, str], dict[str, str]]:
    """The dynamic layers (this node's, the cluster's) once `changes` are applied to the one
    `resource_name` names; checked changes only (check_broker_changes)."""
    layer = dict(config.dynamic_broker if resource_name else config.dynamic_cluster)
    for key, op, value in changes:
        if op == SET:
            layer[key] = value or ""
        elif op == DELETE:
            layer.pop(key, None)
        else:
            current = layer.get(key)
            if current is None:
                current = config.dynamic_value(key) or format_value(config.get(key)) or ""
            items = [item.strip() for item in current.split(",") if item.strip()]
            given = [item.strip() for item in (value or "").split(",") if item.strip()]
            if op == APPEND:
                items += [item for item in dict.fromkeys(given) if item not in items]
            else:
                items = [item for item in items if item not in given]
            layer[key] = ",".join(items)
    if resource_name:
        return layer, dict(config.dynamic_cluster)
    return dict(config.dynamic_broker), layer


def read_dynamic_configs(log_dirs: Sequence[str | Path], node_id: int
                         ) -> tuple[dict[str, str], dict[str, str]]:
    """The persisted layers (the newest copy among the log dirs). A log dir Kafka wrote,
    without our file, has them in its metadata log: this node's and the cluster-wide ones,
    keeping the keys that are dynamic here too. None when never written."""
    data = LogDirFile(log_dirs, BROKER_CONFIGS_FILE).newest_json()
    if data is not None:
        return ({str(k): str(v) for k, v in data.get("broker", {}).items()},
                {str(k): str(v) for k, v in data.get("cluster", {}).items()})
    for d in log_dirs:
        image = read_cluster_metadata(Path(d))
        if image is not None:
            return (_dynamic_only(image.broker_configs.get(str(node_id), {}), d),
                    _dynamic_only(image.broker_configs.get("", {}), d))
    return {}, {}


def _dynamic_only(layer: dict[str, str], log_dir: str | Path) -> dict[str, str]:
    kept = {k: v for k, v in layer.items() if k in DYNAMIC_BROKER_KEYS or listener_limit_key(k) is not None}
    if len(kept) < len(layer):
        log.warning("Ignoring dynamic broker configs from Kafka's metadata log in %s that are not dynamic "
                    "here: %s", log_dir, sorted(set(layer) - set(kept)))
    return kept


def write_dynamic_configs(log_dirs: Sequence[str | Path], broker: dict[str, str], cluster: dict[str, str]) -> None:
    """Persist the layers in every log dir, atomically (blocking: run it on the executor)."""
    LogDirFile(log_dirs, BROKER_CONFIGS_FILE).write(encode_json({"broker": broker, "cluster": cluster}))
