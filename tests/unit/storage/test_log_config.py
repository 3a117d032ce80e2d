"""LogConfig: Kafka key names, defaults, parsing and validation naming the key."""
from __future__ import annotations

import pytest

from storage.log_config import LONG_MAX, TOPIC_CONFIG_KEYS, LogConfig
from storage.topic_name import validate_topic_name
from storage.topic_partition import TopicPartition
from wire.errors import InvalidConfigurationError, InvalidTopicError


def test_every_key_is_a_field_with_the_same_default() -> None:
    config = LogConfig()
    assert set(TOPIC_CONFIG_KEYS) == {f.replace("_", ".") for f in LogConfig.__struct_fields__}
    for key in TOPIC_CONFIG_KEYS.values():
        assert getattr(config, key.field) == key.default, key.name


def test_kafka_defaults() -> None:
    c = LogConfig()
    assert c.segment_bytes == 1073741824 and c.segment_ms == 604800000
    assert c.segment_index_bytes == 10485760 and c.index_interval_bytes == 4096
    assert c.flush_messages == LONG_MAX and c.flush_ms == LONG_MAX
    assert c.retention_ms == 604800000 and c.retention_bytes == -1
    assert c.cleanup_policy == ("delete",) and c.compression_type == "producer"
    assert c.max_message_bytes == 1048588 and c.min_cleanable_dirty_ratio == 0.5
    assert c.message_timestamp_type == "CreateTime" and c.file_delete_delay_ms == 60000
    assert TOPIC_CONFIG_KEYS["segment.bytes"].broker_key == "log.segment.bytes"


def test_from_props_parses_types() -> None:
    c = LogConfig.from_props({"cleanup.policy": "compact, delete", "preallocate": "TRUE",
                              "min.cleanable.dirty.ratio": "0.25", "segment.ms": "1000"})
    assert c.compact and c.delete and c.preallocate and c.min_cleanable_dirty_ratio == 0.25
    assert c.segment_ms == 1000
    again = LogConfig.from_props(c.to_props())
    assert again == c
    assert c.overrides(LogConfig()) == {"cleanup.policy": "compact,delete", "preallocate": "true",
                                        "min.cleanable.dirty.ratio": "0.25", "segment.ms": "1000"}


def test_from_props_overlays_defaults() -> None:
    base = LogConfig.from_props({"retention.ms": "5"})
    c = LogConfig.from_props({"segment.ms": "7"}, base)
    assert (c.retention_ms, c.segment_ms) == (5, 7)


@pytest.mark.parametrize("key,value", [
    ("segment.bytes", "100"), ("segment.bytes", "abc"), ("cleanup.policy", "compact,shred"),
    ("compression.type", "brotli"), ("min.cleanable.dirty.ratio", "1.5"), ("preallocate", "yes"),
    ("message.timestamp.type", "Now"), ("retention.ms", "-2"), ("compression.gzip.level", "0"),
    ("flush.messages", "0"), ("no.such.key", "1"), ("segment.bytes", str(2**31)),
])
def test_bad_values_name_the_key(key: str, value: str) -> None:
    with pytest.raises(InvalidConfigurationError, match=key.replace(".", r"\.")):
        LogConfig.from_props({key: value})


def test_cross_key_validation() -> None:
    with pytest.raises(InvalidConfigurationError, match="min.compaction.lag.ms"):
        LogConfig.from_props({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"})


def test_broker_props() -> None:
    c = LogConfig.from_broker_props({"log.segment.bytes": "2000000", "log.retention.hours": "1",
                                     "log.roll.hours": "2", "message.max.bytes": "100"})
    assert c.segment_bytes == 2000000 and c.retention_ms == 3_600_000 and c.segment_ms == 7_200_000
    assert c.max_message_bytes == 100
    c = LogConfig.from_broker_props({"log.retention.ms": "5", "log.retention.hours": "1"})
    assert c.retention_ms == 5


@pytest.mark.parametrize("name", ["", ".", "..", "a" * 250, "with space", "slash/name", "ünï"])
def test_invalid_topic_names(name: str) -> None:
    with pytest.raises(InvalidTopicError):
        validate_topic_name(name)


def test_valid_topic_names() -> None:
    for name in ["orders", "a.b_c-D9", "x" * 249, "__consumer_offsets"]:
        validate_topic_name(name)


def test_topic_partition_dir_names() -> None:
    tp = TopicPartition("my-topic", 12)
    assert tp.dir_name == "my-topic-12" and str(tp) == "my-topic-12"
    assert TopicPartition.from_dir_name("my-topic-12") == tp
    assert TopicPartition.from_dir_name("my-topic-12.0123abcd-delete") == tp
    with pytest.raises(ValueError):
        TopicPartition.from_dir_name("nopartition")
