"""The config definition table is the one declaration of every key: the typed views
(KafkaConfig, LogConfig, CleanerConfig) have a field per key, with the key's type and
default, and nothing else is declared beside it."""
from __future__ import annotations

import types
import typing
from typing import Any

import msgspec
import pytest

from asyncbroker.config import DYNAMIC_BROKER_KEYS, TOPIC_DEFAULT_SYNONYMS, KafkaConfig
from cleaner.cleaner_config import CLEANER_CONFIG_KEYS, CleanerConfig
from storage.config_def import (
    BROKER_KEYS,
    BROKER_SYNONYMS,
    TOPIC_KEYS,
    ConfigException,
    ConfigKey,
    ConfigScope,
    ConfigType,
    parse_value,
)
from storage.log_config import LogConfig

_PYTHON_TYPES: dict[ConfigType, Any] = {
    ConfigType.BOOLEAN: bool, ConfigType.STRING: str, ConfigType.PASSWORD: str, ConfigType.INT: int,
    ConfigType.SHORT: int, ConfigType.LONG: int, ConfigType.DOUBLE: float,
}
# Fields of KafkaConfig that hold no key: what was given, and the dynamic layers.
# Not keys of the table: what was set, the dynamic layers, and the pattern keys by listener
# (listener.name.<listener>.<mechanism>.sasl.jaas.config and .sasl.server.callback.handler.class,
# listener.name.<listener>.max.connections and .max.connection.creation.rate).
_BOOKKEEPING = {"originals", "dynamic_broker", "dynamic_cluster", "listener_jaas_configs", "listener_callback_handlers",
                "listener_connection_limits", "remote_storage_manager_props", "remote_log_metadata_manager_props"}


def _expected_type(key: ConfigKey) -> Any:
    if key.type is ConfigType.LIST:
        base: Any = list[str] if key.scope is ConfigScope.BROKER else tuple[str, ...]
    else:
        base = _PYTHON_TYPES[key.type]
    return base | None if key.default is None else base


def _field_types(struct: type[msgspec.Struct]) -> dict[str, Any]:
    return typing.get_type_hints(struct)


def _same_type(a: Any, b: Any) -> bool:
    if isinstance(a, types.UnionType) or isinstance(b, types.UnionType):
        return set(typing.get_args(a) or (a,)) == set(typing.get_args(b) or (b,))
    return bool(a == b)


@pytest.mark.parametrize("struct,keys,extra", [
    (KafkaConfig, BROKER_KEYS, _BOOKKEEPING),
    (LogConfig, TOPIC_KEYS, set()),
])
def test_typed_view_has_one_field_per_key_with_its_type_and_default(
        struct: type[msgspec.Struct], keys: dict[str, ConfigKey], extra: set[str]) -> None:
    hints = _field_types(struct)
    assert set(struct.__struct_fields__) - extra == {key.field for key in keys.values()}
    instance = struct()
    for key in keys.values():
        if key.name == "log.dirs":  # never None: resolved from log.dir when not given
            assert hints[key.field] == list[str] and instance.log_dirs == [BROKER_KEYS["log.dir"].default]
            continue
        assert _same_type(hints[key.field], _expected_type(key)), key.name
        assert getattr(instance, key.field) == key.default, key.name


def test_cleaner_config_is_a_view_of_the_cleaner_keys() -> None:
    config = CleanerConfig()
    assert set(CLEANER_CONFIG_KEYS.values()) == set(CleanerConfig.__struct_fields__) - {"hash_algorithm"}
    for name, field in CLEANER_CONFIG_KEYS.items():
        assert getattr(config, field) == BROKER_KEYS[name].default, name
        assert _same_type(_field_types(CleanerConfig)[field], _expected_type(BROKER_KEYS[name])), name


def test_topic_defaults_come_from_their_broker_synonyms() -> None:
    """The topic default is the broker default, in the topic key's unit (declared once)."""
    assert TOPIC_KEYS["segment.bytes"].default == BROKER_KEYS["log.segment.bytes"].default
    assert TOPIC_KEYS["retention.ms"].default == BROKER_KEYS["log.retention.hours"].default * 3_600_000
    assert TOPIC_KEYS["segment.ms"].default == BROKER_KEYS["log.roll.hours"].default * 3_600_000
    assert TOPIC_KEYS["cleanup.policy"].default == tuple(BROKER_KEYS["log.cleanup.policy"].default)
    assert TOPIC_KEYS["flush.ms"].default == BROKER_KEYS["log.flush.scheduler.interval.ms"].default
    for key in TOPIC_KEYS.values():
        assert all(name in BROKER_KEYS for name in key.synonyms), key.name


def test_synonyms_and_dynamic_keys_are_derived_from_the_table() -> None:
    assert TOPIC_DEFAULT_SYNONYMS["retention.ms"] == ("log.retention.ms", "log.retention.minutes", "log.retention.hours")
    assert BROKER_SYNONYMS["log.roll.hours"] == ("log.roll.ms", "log.roll.hours")
    assert "follower.replication.throttled.replicas" not in TOPIC_DEFAULT_SYNONYMS
    # Kafka 4.4 changes the primary broker synonym of every topic key at runtime, never a
    # family member in other units, and never a static key such as node.id.
    for synonyms in TOPIC_DEFAULT_SYNONYMS.values():
        assert synonyms[0] in DYNAMIC_BROKER_KEYS
    assert "log.retention.hours" not in DYNAMIC_BROKER_KEYS and "node.id" not in DYNAMIC_BROKER_KEYS


@pytest.mark.parametrize("key,raw,message", [
    (BROKER_KEYS["log.segment.bytes"], "12", "Invalid value 12 for configuration log.segment.bytes: "
                                              "Value must be at least 1048576"),
    (TOPIC_KEYS["segment.bytes"], " x ", "Invalid value  x  for configuration segment.bytes: Not a number of type INT"),
    (TOPIC_KEYS["cleanup.policy"], "compact,shred", "Invalid value shred for configuration cleanup.policy: "
                                                    "String must be one of: compact, delete"),
    (TOPIC_KEYS["min.cleanable.dirty.ratio"], "2", "Invalid value 2.0 for configuration min.cleanable.dirty.ratio: "
                                                   "Value must be no more than 1"),
    (BROKER_KEYS["log.cleaner.io.buffer.load.factor"], "NaN", "Invalid value NaN for configuration "
                                                              "log.cleaner.io.buffer.load.factor: Not a number of type DOUBLE"),
])
def test_one_parser_for_both_scopes_with_kafkas_messages(key: ConfigKey, raw: str, message: str) -> None:
    with pytest.raises(ConfigException) as info:
        parse_value(key, raw)
    assert str(info.value) == message and info.value.key == key.name


def test_list_values_take_the_form_of_their_view() -> None:
    assert parse_value(BROKER_KEYS["log.cleanup.policy"], "compact, delete") == ["compact", "delete"]
    assert parse_value(TOPIC_KEYS["cleanup.policy"], "compact, delete") == ("compact", "delete")
    # Compression names are case-insensitive as a broker default, as in Kafka.
    assert parse_value(BROKER_KEYS["compression.type"], "ZSTD") == "ZSTD"
