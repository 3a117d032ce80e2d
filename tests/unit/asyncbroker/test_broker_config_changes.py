"""Broker config changes: Kafka's checks (texts verified against Kafka 4.4 by the differential
scenarios) and the dynamic layers they produce."""

from __future__ import annotations

import pytest

from asyncbroker.broker_config_changes import (
    APPEND,
    DELETE,
    SET,
    SUBTRACT,
    BrokerConfigNotAppliedError,
    changed_layers,
    check_broker_changes,
    read_dynamic_configs,
    write_dynamic_configs,
)
from asyncbroker.config import ConfigSource, KafkaConfig
from wire.errors import InvalidConfigurationError, InvalidRequestError


@pytest.mark.parametrize(("resource", "changes", "error", "message"), [
    ("2", [("log.retention.ms", SET, "1")], InvalidRequestError, "Unexpected broker id, expected 1, but received 2"),
    ("x", [], InvalidRequestError, "Node id must be an integer, but it is: x"),
    ("1", [("num.partitions", SET, "3")], InvalidRequestError, "Cannot update these configs dynamically: [num.partitions]"),
    ("", [("message.max.bytes", SET, "x")], InvalidRequestError,
     "Invalid value x for configuration message.max.bytes: Not a number of type INT"),
    ("", [("listeners", SET, "PLAINTEXT://:9092")], InvalidRequestError,
     "Cannot update these configs at default cluster level, broker id must be specified: [listeners]"),
    ("1", [("min.insync.replicas", SET, "1")], InvalidConfigurationError,
     "Broker-level min.insync.replicas cannot be altered while ELR is enabled."),
    ("", [("min.insync.replicas", DELETE, None)], InvalidConfigurationError,
     "Cluster-level min.insync.replicas cannot be removed while ELR is enabled."),
    ("1", [("log.retention.ms", APPEND, "5")], InvalidConfigurationError,
     "Config value append is not allowed for config key: log.retention.ms"),
])
def test_refused_changes(resource: str, changes: list, error: type, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(error) as info:
        check_broker_changes(resource, 1, changes, validate_only=True)
    assert info.value.message == message


def test_unknown_keys_pass_validation_but_are_not_applied() -> None:
    check_broker_changes("1", 1, [("custom.key", SET, "x")], validate_only=True)
    with pytest.raises(BrokerConfigNotAppliedError):
        check_broker_changes("1", 1, [("custom.key", SET, "x")], validate_only=False)
    with pytest.raises(BrokerConfigNotAppliedError):
        check_broker_changes("1", 1, [("log.cleaner.threads", SET, "2")], validate_only=False)
    check_broker_changes("", 1, [("log.retention.ms", SET, "1000")], validate_only=False)  # applied: no error


def test_layers_and_what_describe_shows(tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = KafkaConfig.load(None, [f"log.dirs={tmp_path}", "log.cleanup.policy=delete"], {})
    broker, cluster = changed_layers(config, "", [("log.retention.ms", SET, "1000"),
                                                  ("log.cleanup.policy", APPEND, "compact,compact")])
    assert cluster == {"log.retention.ms": "1000", "log.cleanup.policy": "delete,compact"} and broker == {}
    config.dynamic_cluster = cluster
    config.dynamic_broker, _ = changed_layers(config, "1", [("log.retention.ms", SET, "2000")])
    defaults = config.log_config_defaults()
    assert defaults.retention_ms == 2000 and defaults.cleanup_policy == ("delete", "compact")
    (entry,) = config.describe(["log.retention.ms"])
    assert entry.value == "2000" and [(s.value, s.source) for s in entry.synonyms] == [
        ("2000", ConfigSource.DYNAMIC_BROKER_CONFIG), ("1000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("168", ConfigSource.DEFAULT_CONFIG)]
    broker, cluster = changed_layers(config, "", [("log.cleanup.policy", SUBTRACT, "delete"),
                                                  ("log.retention.ms", DELETE, None)])
    assert cluster == {"log.cleanup.policy": "compact"} and broker == {"log.retention.ms": "2000"}
    write_dynamic_configs([tmp_path], broker, cluster)
    assert read_dynamic_configs([tmp_path], 1) == (broker, cluster)
    assert read_dynamic_configs([tmp_path / "absent"], 1) == ({}, {})
