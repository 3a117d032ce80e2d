"""KafkaConfig: Kafka's broker keys, properties files, env and CLI overrides, errors naming the key."""
from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from asyncbroker.config import ConfigSource, KafkaConfig, parse_properties
from storage.config_def import BROKER_KEYS, TOPIC_KEYS, ConfigException
from storage.log_config import LogConfig

# Apache Kafka 4's config/server.properties (KRaft combined mode), comments trimmed.
KAFKA_SERVER_PROPERTIES = """\
############################# Server Basics #############################
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=localhost:9093

############################# Socket Server Settings #############################
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600

############################# Log Basics #############################
log.dirs=/tmp/kraft-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
"""


def test_embedded_defaults() -> None:
    c = KafkaConfig.load(None, (), {})
    assert c.listener_host_port() == ("127.0.0.1", 9092)
    assert c.advertised_host_port() == ("127.0.0.1", 9092)
    assert c.log_dirs == ["./data"]
    assert c.num_partitions == 1 and c.auto_create_topics_enable is True
    assert c.message_max_bytes == 1048588 and c.socket_request_max_bytes == 104857600
    assert c.originals == {}


def test_every_key_is_a_field_with_its_default() -> None:
    fields = set(KafkaConfig.__struct_fields__)
    default = KafkaConfig()
    for key in BROKER_KEYS.values():
        assert key.field in fields, key.name
        if key.name != "log.dirs":  # resolved from log.dir
            assert getattr(default, key.field) == key.default, key.name


def test_seed_log_defaults() -> None:
    """The defaults the seeds' configuration tables list."""
    c = KafkaConfig.load(None, (), {})
    assert c.log_cleaner_threads == 1
    assert c.log_cleaner_dedupe_buffer_size == 134217728
    assert c.log_cleaner_io_buffer_load_factor == 0.9
    assert c.log_cleaner_io_buffer_size == 524288
    assert c.log_cleaner_backoff_ms == 15000
    assert c.log_cleaner_enable is True
    assert c.log_retention_check_interval_ms == 300000
    assert c.num_recovery_threads_per_data_dir == 2
    assert c.log_flush_offset_checkpoint_interval_ms == 60000
    assert c.log_initial_task_delay_ms == 30000
    d = c.log_config_defaults()
    assert d.retention_ms == 604800000 and d.retention_bytes == -1
    assert d.segment_bytes == 1073741824 and d.segment_ms == 604800000
    assert d.segment_index_bytes == 10485760 and d.index_interval_bytes == 4096
    assert d.file_delete_delay_ms == 60000 and d.delete_retention_ms == 86400000
    assert d.min_cleanable_dirty_ratio == 0.5 and d.min_compaction_lag_ms == 0
    assert d.max_compaction_lag_ms == 2**63 - 1 and d.flush_ms == 2**63 - 1
    assert d.flush_messages == 2**63 - 1 and d.preallocate is False
    assert d.cleanup_policy == ("delete",)
    assert d.max_message_bytes == 1048588


def test_log_keys_feed_topic_defaults() -> None:
    c = KafkaConfig.load(None, [
        "log.segment.bytes=2097152", "log.retention.minutes=5", "log.roll.hours=2",
        "log.cleanup.policy=compact,delete", "message.max.bytes=2000", "log.segment.delete.delay.ms=10",
        "log.cleaner.min.cleanable.ratio=0.25", "log.message.timestamp.type=LogAppendTime",
    ], {})
    d = c.log_config_defaults()
    assert d.segment_bytes == 2097152
    assert d.retention_ms == 300000
    assert d.segment_ms == 7200000
    assert d.cleanup_policy == ("compact", "delete")
    assert d.max_message_bytes == 2000
    assert d.file_delete_delay_ms == 10
    assert d.min_cleanable_dirty_ratio == 0.25
    assert d.message_timestamp_type == "LogAppendTime"
    # log.retention.ms beats minutes beats hours, as in Kafka.
    c2 = KafkaConfig.load(None, ["log.retention.ms=1234", "log.retention.minutes=5", "log.retention.hours=1"], {})
    assert c2.log_config_defaults().retention_ms == 1234
    assert KafkaConfig.load(None, ["log.retention.hours=-1"], {}).log_config_defaults().retention_ms == -1


def test_topic_defaults_cover_storage_keys_with_broker_fallback() -> None:
    c = KafkaConfig.load(None, (), {})
    props = c.topic_config_defaults()
    for name, key in TOPIC_KEYS.items():
        # Replication throttles have no broker-wide default in Kafka.
        if key.broker_key is not None and not name.endswith("throttled.replicas"):
            assert name in props, name
    assert LogConfig.from_props({k: v for k, v in props.items() if k in TOPIC_KEYS}) == LogConfig()


def test_kafka_stock_server_properties_load(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text(KAFKA_SERVER_PROPERTIES)
    c = KafkaConfig.load(str(path), (), {})
    # The CONTROLLER listener is not served; an empty host binds every interface.
    assert c.listener_host_port() == ("0.0.0.0", 9092)
    assert c.advertised_host_port() == ("localhost", 9092)
    assert c.log_dirs == ["/tmp/kraft-combined-logs"]
    assert c.num_recovery_threads_per_data_dir == 1
    assert c.is_explicit("log.retention.hours") and not c.is_explicit("log.retention.ms")


def test_precedence_file_then_env_then_override(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("num.partitions=2\nlog.dirs=/from/file\nmessage.max.bytes=100\n")
    env = {"ASYNCBROKER_NUM_PARTITIONS": "3", "ASYNCBROKER_LOG_DIRS": "/from/env", "PATH": "/usr/bin"}
    c = KafkaConfig.load(str(path), ["num.partitions=4"], env)
    assert c.num_partitions == 4
    assert c.log_dirs == ["/from/env"]
    assert c.message_max_bytes == 100
    assert c.originals["num.partitions"] == "4"


def test_env_name_mapping() -> None:
    env = {
        "ASYNCBROKER_AUTO_CREATE_TOPICS_ENABLE": "false",
        "ASYNCBROKER_LOG_CLEANER_DEDUPE_BUFFER_SIZE": "1024",
        "ASYNCBROKER_LISTENERS": "PLAINTEXT://0.0.0.0:19092",
        "ASYNCBROKER_ADVERTISED_LISTENERS": "PLAINTEXT://broker:19092",
    }
    c = KafkaConfig.load(None, (), env)
    assert c.auto_create_topics_enable is False
    assert c.log_cleaner_dedupe_buffer_size == 1024
    assert c.listener_host_port() == ("0.0.0.0", 19092)
    assert c.advertised_host_port() == ("broker", 19092)


@pytest.mark.parametrize(
    ("overrides", "environ", "key"),
    [
        (["no.such.key=1"], {}, "no.such.key"),
        (["num.partitions=0"], {}, "num.partitions"),
        (["num.partitions=many"], {}, "num.partitions"),
        (["message.max.bytes=99999999999"], {}, "message.max.bytes"),
        (["auto.create.topics.enable=yes"], {}, "auto.create.topics.enable"),
        (["log.cleanup.policy=shred"], {}, "log.cleanup.policy"),
        (["log.segment.bytes=100"], {}, "log.segment.bytes"),
        (["log.message.timestamp.type=Now"], {}, "log.message.timestamp.type"),
        (["listeners=localhost:9092"], {}, "listeners"),
        (["listeners=SASL_PLAINTEXT://127.0.0.1:9093"], {}, "sasl.enabled.mechanisms"),  # GSSAPI, Kafka's default
        (["listeners=X://127.0.0.1:9093", "listener.security.protocol.map=X:KERBEROS"], {}, "listeners"),
        (["listeners=CLIENTS://127.0.0.1:9093"], {}, "listener.security.protocol.map"),
        (["listeners=PLAINTEXT://0.0.0.0:9092"], {}, "advertised.listeners"),
        (["advertised.listeners=PLAINTEXT://0.0.0.0:9092"], {}, "advertised.listeners"),
        (["advertised.listeners=PLAINTEXT://a:9092,SSL://a:9093"], {}, "advertised.listeners"),  # no SSL listener
        (["listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class=com.example.Mine"], {},
         "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class"),
        (["listeners=SASL_PLAINTEXT://127.0.0.1:9093", "sasl.enabled.mechanisms=OAUTHBEARER",
          "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class="
          "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"], {},
         "sasl.oauthbearer.jwks.endpoint.url"),
        (["default.replication.factor=3"], {}, "default.replication.factor"),
        (["log.roll.ms=0"], {}, "log.roll.ms"),
        (["novalue"], {}, "novalue"),
        ([], {"ASYNCBROKER_NOT_A_KEY": "1"}, "ASYNCBROKER_NOT_A_KEY"),
        ([], {"ASYNCBROKER_NUM_PARTITIONS": "-5"}, "num.partitions"),
    ],
)
def test_unknown_or_invalid_key_names_it(overrides: list[str], environ: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigException) as info:
        KafkaConfig.load(None, overrides, environ)
    assert info.value.key == key
    assert key in str(info.value)


def test_unknown_key_in_file_names_key_and_file(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("num.partitions=1\nlog.retention.hourz=5\n")
    with pytest.raises(ConfigException) as info:
        KafkaConfig.load(str(path), (), {})
    assert "log.retention.hourz" in str(info.value)


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigException, match="Cannot read config file"):
        KafkaConfig.load(str(tmp_path / "absent.properties"), (), {})


def test_properties_syntax() -> None:
    text = (
        "# comment\n! also a comment\n"
        "a=1\n"
        "b : two words \n"
        "c 3\n"
        "d=line one \\\n    continued\n"
        "e\\=f=x\\ty\n"
        "   \n"
        "g=\\u0041\n"
        "h=\n"
    )
    assert parse_properties(text) == {
        "a": "1", "b": "two words ", "c": "3", "d": "line one continued", "e=f": "x\ty", "g": "A", "h": "",
    }


def test_port_zero_and_ipv6() -> None:
    c = KafkaConfig.load(None, ["listeners=PLAINTEXT://[::1]:0"], {})
    assert c.listener_host_port() == ("::1", 0)


def test_broker_describe_sources() -> None:
    c = KafkaConfig.load(None, ["log.retention.hours=5"], {})
    entries = {e.name: e for e in c.describe()}
    # Kafka never lists its internal keys.
    assert set(entries) == {name for name, key in BROKER_KEYS.items() if not key.internal}
    hours = entries["log.retention.hours"]
    assert hours.value == "5" and hours.source is ConfigSource.STATIC_BROKER_CONFIG and hours.read_only
    assert [(s.value, s.source) for s in hours.synonyms] == [
        ("5", ConfigSource.STATIC_BROKER_CONFIG), ("168", ConfigSource.DEFAULT_CONFIG)]
    parts = entries["num.partitions"]
    assert parts.value == "1" and parts.source is ConfigSource.DEFAULT_CONFIG
    # As in Kafka, a family member's value is listed only after the key's own, so log.retention.ms,
    # unset, shows no synonym although log.retention.hours supplies the retention; it is dynamic.
    ms = entries["log.retention.ms"]
    assert ms.synonyms == () and ms.value is None and not ms.read_only
    mir = entries["min.insync.replicas"]
    assert mir.source is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG and [s.source for s in mir.synonyms] == [
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, ConfigSource.DEFAULT_CONFIG]


def test_a_static_listener_limit_is_described_as_kafka_describes_it() -> None:
    # As Kafka 4.4 answered with listener.name.plaintext.max.connections=50 and max.connections=900
    # in its server.properties: listed (by name and among every key), read-only, typed as
    # max.connections, with that key's values after its own.
    c = KafkaConfig.load(None, ["listener.name.plaintext.max.connections=50", "max.connections=900"], {})
    named = c.describe(["listener.name.plaintext.max.connections", "max.connections",
                        "listener.name.plaintext.max.connection.creation.rate"])
    assert [e.name for e in named] == ["listener.name.plaintext.max.connections", "max.connections"]
    limit = named[0]
    assert (limit.value, limit.source, limit.read_only, limit.type, limit.documentation) == (
        "50", ConfigSource.STATIC_BROKER_CONFIG, True, BROKER_KEYS["max.connections"].type, None)
    assert [(s.name, s.value, s.source) for s in limit.synonyms] == [
        ("listener.name.plaintext.max.connections", "50", ConfigSource.STATIC_BROKER_CONFIG),
        ("max.connections", "900", ConfigSource.STATIC_BROKER_CONFIG),
        ("max.connections", "2147483647", ConfigSource.DEFAULT_CONFIG)]
    assert [(s.name, s.source) for s in named[1].synonyms] == [  # the broker-wide key lists no listener's
        ("max.connections", ConfigSource.STATIC_BROKER_CONFIG), ("max.connections", ConfigSource.DEFAULT_CONFIG)]
    assert "listener.name.plaintext.max.connections" in {e.name for e in c.describe()}
    assert c.effective_listener_limits() == {"PLAINTEXT": {"max.connections": 50}}


def test_listener_limits_in_force_layer_by_layer() -> None:
    c = KafkaConfig.load(None, ["listener.name.client.max.connections=5",
                                "listener.name.client.max.connection.creation.rate=7"], {})
    c.dynamic_cluster = {"listener.name.client.max.connections": "6", "listener.name.other.max.connections": "9"}
    c.dynamic_broker = {"listener.name.CLIENT.max.connections": "4"}
    assert c.effective_listener_limits() == {
        "CLIENT": {"max.connections": 4, "max.connection.creation.rate": 7}, "OTHER": {"max.connections": 9}}


def test_config_is_a_msgspec_struct() -> None:
    c = KafkaConfig.load(None, ["num.partitions=3"], {})
    assert msgspec.json.decode(msgspec.json.encode(c), type=KafkaConfig) == c
