"""LogConfig: Kafka key names, defaults, parsing and validation naming the key."""
from __future__ import annotations

import pytest

from storage.config_def import LONG_MAX, TOPIC_KEYS, java_double, parse_java_double
from storage.log_config import LogConfig
from storage.topic_name import validate_topic_name
from storage.topic_partition import TopicPartition
from wire.errors import InvalidConfigurationError, InvalidTopicError


def test_every_key_is_a_field_with_the_same_default() -> None:
    config = LogConfig()
    assert set(TOPIC_KEYS) == {f.replace("_", ".") for f in LogConfig.__struct_fields__}
    for key in TOPIC_KEYS.values():
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
    assert TOPIC_KEYS["segment.bytes"].broker_key == "log.segment.bytes"


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


# -- Kafka's parsing and texts (the differential scenarios compare them with Kafka 4.4) --------


@pytest.mark.parametrize(("value", "text"), [
    (2.0, "2.0"), (0.5, "0.5"), (99999999999.0, "9.9999999999E10"), (-1e20, "-1.0E20"), (1e-5, "1.0E-5"),
    (1e7, "1.0E7"), (9999999.0, "9999999.0"), (float("nan"), "NaN"), (float("-inf"), "-Infinity"), (-0.0, "-0.0"),
])
def test_java_double_prints_as_java(value: float, text: str) -> None:
    assert java_double(value) == text


@pytest.mark.parametrize("text", ["NaN", "1e-1", "0x1p-2", ".5", "5.", "0.5d", "1.5F", "-Infinity", "+3"])
def test_java_double_grammar_accepts(text: str) -> None:
    parse_java_double(text)


@pytest.mark.parametrize("text", ["nan", "inf", "1_0", "", ".", "e5", "0x1p", "1e", "Infinityd", "0x1.8"])
def test_java_double_grammar_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_java_double(text)


@pytest.mark.parametrize(("props", "message"), [
    ({"min.cleanable.dirty.ratio": "2"}, "Invalid value 2.0 for configuration min.cleanable.dirty.ratio: "
                                         "Value must be no more than 1"),
    ({"segment.bytes": " 7 "}, "Invalid value 7 for configuration segment.bytes: Value must be at least 1048576"),
    ({"preallocate": " 7 "}, "Invalid value  7  for configuration preallocate: Expected value to be either true or false"),
    ({"retention.ms": "1_000"}, "Invalid value 1_000 for configuration retention.ms: Not a number of type LONG"),
    ({"cleanup.policy": "compact,wat"}, "Invalid value wat for configuration cleanup.policy: "
                                        "String must be one of: compact, delete"),
    ({"compression.gzip.level": "0"}, "Invalid value 0 for configuration compression.gzip.level: "
                                      "Value must be between 1 and 9 or equal to -1"),
    ({"leader.replication.throttled.replicas": "0:1,x"},
     "Invalid value [0:1, x] for configuration leader.replication.throttled.replicas: "
     "leader.replication.throttled.replicas must be the literal '*' or a list of replicas in the following "
     "format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."),
])
def test_invalid_values_get_kafkas_messages(props: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigurationError) as info:
        LogConfig.from_props(props)
    assert info.value.message == message


def test_every_kafka_44_topic_key_is_known_with_its_default() -> None:
    kafka_44 = {
        "cleanup.policy": "delete", "compression.gzip.level": "-1", "compression.lz4.level": "9",
        "compression.type": "producer", "compression.zstd.level": "3", "delete.retention.ms": "86400000",
        "errors.deadletterqueue.group.enable": "false", "file.delete.delay.ms": "60000",
        "flush.messages": "9223372036854775807", "flush.ms": "9223372036854775807",
        "follower.replication.throttled.replicas": "", "index.interval.bytes": "4096",
        "leader.replication.throttled.replicas": "", "local.retention.bytes": "-2", "local.retention.ms": "-2",
        "max.compaction.lag.ms": "9223372036854775807", "max.decompressed.message.bytes": "2147483639",
        "max.message.bytes": "1048588", "message.timestamp.after.max.ms": "3600000",
        "message.timestamp.before.max.ms": "9223372036854775807", "message.timestamp.type": "CreateTime",
        "min.cleanable.dirty.ratio": "0.5", "min.compaction.lag.ms": "0", "min.insync.replicas": "1",
        "preallocate": "false", "remote.copy.lag.bytes": "-1", "remote.copy.lag.ms": "0",
        "remote.log.copy.disable": "false", "remote.log.delete.on.disable": "false", "remote.storage.enable": "false",
        "retention.bytes": "-1", "retention.ms": "604800000", "segment.bytes": "1073741824",
        "segment.index.bytes": "10485760", "segment.jitter.ms": "0", "segment.ms": "604800000",
        "unclean.leader.election.enable": "false",
    }
    assert LogConfig().to_props() == kafka_44
