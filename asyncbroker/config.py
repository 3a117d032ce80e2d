"""Broker configuration: Kafka's broker keys, their defaults, and how they are loaded.

Sources, later ones winning: the embedded defaults, a `server.properties`
file, `ASYNCBROKER_<KEY>` environment variables (the Kafka key upper-cased,
dots as underscores: `ASYNCBROKER_LOG_DIRS`), then `--override key=value`.
An unknown key or an invalid value raises `ConfigException` naming the key,
so a typo stops startup instead of being silently ignored.

The topic-level defaults (`log.segment.bytes` -> `segment.bytes`, ...) are
handed to storage as a `LogConfig` by `KafkaConfig.log_config_defaults()`;
`TOPIC_DEFAULT_SYNONYMS` records which broker keys feed which topic key (the
synonyms DescribeConfigs reports).
"""
from __future__ import annotations

import enum
import re
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from storage.config_def import (
    BROKER_KEYS,
    BROKER_SYNONYMS,
    TOPIC_KEYS,
    ConfigException,
    ConfigKey,
    ConfigType,
    broker_default,
    format_value,
    parse_value,
    resolve_topic_default,
)
from storage.java_properties import parse_properties as parse_properties  # re-exported: moved to storage
from storage.log_config import LogConfig
from wire.errors import InvalidConfigurationError

ENV_PREFIX = "ASYNCBROKER_"


class ConfigSource(enum.IntEnum):
    """Where a described value comes from (DescribeConfigs config_source / synonym source)."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


class ConfigResourceType(enum.IntEnum):
    """Kafka's ConfigResource.Type ids (resource_type in Describe/AlterConfigs)."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


def env_name(key: ConfigKey) -> str:
    """The environment variable that sets a broker key: ASYNCBROKER_LOG_DIRS for log.dirs."""
    return ENV_PREFIX + key.name.upper().replace(".", "_").replace("-", "_")


_BY_ENV: dict[str, str] = {env_name(k): k.name for k in BROKER_KEYS.values()}

# topic key -> broker keys that supply its default, highest precedence first
# (the synonyms DescribeConfigs lists after a topic override).
TOPIC_DEFAULT_SYNONYMS: dict[str, tuple[str, ...]] = {
    name: key.synonyms for name, key in TOPIC_KEYS.items() if key.synonyms}


# The broker keys Kafka 4.4 reconfigures at runtime (IncrementalAlterConfigs on a BROKER
# resource): the broker defaults of topic keys, the cleaner's and thread pools' knobs. The
# rest answer "Cannot update these configs dynamically". Found by asking Kafka 4.4 itself.
DYNAMIC_BROKER_KEYS: frozenset[str] = frozenset(name for name, key in BROKER_KEYS.items() if key.dynamic)
# Dynamic keys that only a named broker may take, never the cluster-wide default ("").
PER_BROKER_ONLY_KEYS: frozenset[str] = frozenset(name for name, key in BROKER_KEYS.items() if key.per_broker_only)
# Kafka 4.4's KRaft controller writes min.insync.replicas as a cluster-wide dynamic default
# when it formats a cluster with eligible leader replicas (the 4.x default), so DescribeConfigs
# reports that key from DYNAMIC_DEFAULT_BROKER_CONFIG, for the broker and for every topic
# without an override, and refuses to alter it per broker. A single node here behaves as that
# cluster does: the default holds this broker's configured min.insync.replicas.
CLUSTER_DEFAULT_KEYS: tuple[str, ...] = ("min.insync.replicas",)
# Keys Kafka requires (no built-in default) that asyncbroker defaults for convenience: their
# built-in default is not a DescribeConfigs layer.
NO_KAFKA_DEFAULT: frozenset[str] = frozenset({"node.id"})


class ConfigSynonym(msgspec.Struct, frozen=True):
    """A key whose value feeds a described config, and where that value comes from."""

    name: str
    value: str | None
    source: ConfigSource


class ConfigEntry(msgspec.Struct, frozen=True):
    """One described config (a row of DescribeConfigs), version-agnostic."""

    name: str
    value: str | None
    source: ConfigSource
    read_only: bool
    is_sensitive: bool
    synonyms: tuple[ConfigSynonym, ...]
    type: ConfigType
    documentation: str | None


# ---------------------------------------------------------------- parsing


class Endpoint(msgspec.Struct, frozen=True):
    """One entry of `listeners`/`advertised.listeners`: NAME://host:port."""

    listener_name: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener_name}://{host}:{self.port}"


_ENDPOINT = re.compile(r"^([A-Za-z0-9_-]+)://(\[[0-9A-Fa-f:.]+\]|[^:\[\]/]*):(\d+)$")
_WILDCARD_HOSTS = ("", "0.0.0.0", "::")


def parse_endpoints(key: str, entries: Sequence[str]) -> list[Endpoint]:
    result: list[Endpoint] = []
    for entry in entries:
        m = _ENDPOINT.match(entry)
        if not m or not 0 <= int(m.group(3)) <= 65535:
            raise ConfigException(
                key, f"Invalid value {entry} for configuration {key}: expected NAME://host:port, e.g. PLAINTEXT://127.0.0.1:9092"
            )
        host = m.group(2)
        if host.startswith("["):
            host = host[1:-1]
        result.append(Endpoint(m.group(1).upper(), host, int(m.group(3))))
    names = [e.listener_name for e in result]
    if len(set(names)) != len(names):
        raise ConfigException(key, f"Invalid value {','.join(entries)} for configuration {key}: each listener must have a different name")
    return result


# ---------------------------------------------------------------- the config


# The security protocols listeners serve here.
SERVED_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SERVED_SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
# Kafka's per-listener JAAS key, the one pattern key of the broker config.
_LISTENER_JAAS = re.compile(r"^listener\.name\.([A-Za-z0-9_-]+)\.([A-Za-z0-9-]+)\.sasl\.jaas\.config$")
# A listener's own connection limits, in place of the broker-wide values for that listener alone.
_LISTENER_CONNECTION_LIMIT = re.compile(
    r"^listener\.name\.([A-Za-z0-9_-]+)\.(max\.connections|max\.connection\.creation\.rate)$")


def listener_limit_key(name: str) -> tuple[str, str] | None:
    """(listener in upper case, broker-wide key) of a listener's own connection limit key
    (listener.name.<l>.max.connections, listener.name.<l>.max.connection.creation.rate), else None."""
    m = _LISTENER_CONNECTION_LIMIT.match(name)
    return (m.group(1).upper(), m.group(2)) if m is not None else None


# ... and its per-listener server callback handler (which validator OAUTHBEARER tokens get).
_LISTENER_HANDLER = re.compile(
    r"^listener\.name\.([A-Za-z0-9_-]+)\.([A-Za-z0-9-]+)\.sasl\.server\.callback\.handler\.class$")
OAUTHBEARER_UNSECURED_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerUnsecuredValidatorCallbackHandler"
OAUTHBEARER_JWKS_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"


# The remote storage backends built in (remote.log.storage.manager.class.name) are named in
# storage.remote_storage_manager (the offline readers of a log dir's remote tier need them too).


class KafkaConfig(msgspec.Struct, kw_only=True):
    """Parsed broker configuration; field names are the Kafka keys with dots as underscores."""

    node_id: int = broker_default("node.id")
    broker_id: int = broker_default("broker.id")
    listeners: list[str] = broker_default("listeners")
    advertised_listeners: list[str] | None = broker_default("advertised.listeners")
    listener_security_protocol_map: list[str] = broker_default("listener.security.protocol.map")
    controller_listener_names: list[str] = broker_default("controller.listener.names")
    inter_broker_listener_name: str | None = broker_default("inter.broker.listener.name")
    security_inter_broker_protocol: str = broker_default("security.inter.broker.protocol")
    process_roles: list[str] = broker_default("process.roles")
    controller_quorum_voters: list[str] = broker_default("controller.quorum.voters")
    controller_quorum_bootstrap_servers: list[str] = broker_default("controller.quorum.bootstrap.servers")
    num_network_threads: int = broker_default("num.network.threads")
    num_io_threads: int = broker_default("num.io.threads")
    socket_send_buffer_bytes: int = broker_default("socket.send.buffer.bytes")
    socket_receive_buffer_bytes: int = broker_default("socket.receive.buffer.bytes")
    socket_listen_backlog_size: int = broker_default("socket.listen.backlog.size")
    socket_request_max_bytes: int = broker_default("socket.request.max.bytes")
    connections_max_idle_ms: int = broker_default("connections.max.idle.ms")
    connection_failed_authentication_delay_ms: int = broker_default("connection.failed.authentication.delay.ms")
    queued_max_requests: int = broker_default("queued.max.requests")
    queued_max_request_bytes: int = broker_default("queued.max.request.bytes")
    max_connections: int = broker_default("max.connections")
    max_connection_creation_rate: int = broker_default("max.connection.creation.rate")
    max_connections_per_ip: int = broker_default("max.connections.per.ip")
    max_connections_per_ip_overrides: str = broker_default("max.connections.per.ip.overrides")
    sasl_enabled_mechanisms: list[str] = broker_default("sasl.enabled.mechanisms")
    sasl_mechanism_inter_broker_protocol: str = broker_default("sasl.mechanism.inter.broker.protocol")
    sasl_server_max_receive_size: int = broker_default("sasl.server.max.receive.size")
    sasl_oauthbearer_jwks_endpoint_url: str | None = broker_default("sasl.oauthbearer.jwks.endpoint.url")
    sasl_oauthbearer_jwks_endpoint_refresh_ms: int = broker_default("sasl.oauthbearer.jwks.endpoint.refresh.ms")
    sasl_oauthbearer_expected_audience: list[str] = broker_default("sasl.oauthbearer.expected.audience")
    sasl_oauthbearer_expected_issuer: str | None = broker_default("sasl.oauthbearer.expected.issuer")
    sasl_oauthbearer_scope_claim_name: str = broker_default("sasl.oauthbearer.scope.claim.name")
    sasl_oauthbearer_sub_claim_name: str = broker_default("sasl.oauthbearer.sub.claim.name")
    sasl_oauthbearer_clock_skew_seconds: int = broker_default("sasl.oauthbearer.clock.skew.seconds")
    connections_max_reauth_ms: int = broker_default("connections.max.reauth.ms")
    quota_window_num: int = broker_default("quota.window.num")
    quota_window_size_seconds: int = broker_default("quota.window.size.seconds")
    authorizer_class_name: str = broker_default("authorizer.class.name")
    super_users: str = broker_default("super.users")
    allow_everyone_if_no_acl_found: bool = broker_default("allow.everyone.if.no.acl.found")
    ssl_keystore_type: str = broker_default("ssl.keystore.type")
    ssl_keystore_location: str | None = broker_default("ssl.keystore.location")
    ssl_keystore_password: str | None = broker_default("ssl.keystore.password")
    ssl_key_password: str | None = broker_default("ssl.key.password")
    ssl_keystore_key: str | None = broker_default("ssl.keystore.key")
    ssl_keystore_certificate_chain: str | None = broker_default("ssl.keystore.certificate.chain")
    ssl_truststore_type: str = broker_default("ssl.truststore.type")
    ssl_truststore_location: str | None = broker_default("ssl.truststore.location")
    ssl_truststore_password: str | None = broker_default("ssl.truststore.password")
    ssl_truststore_certificates: str | None = broker_default("ssl.truststore.certificates")
    ssl_client_auth: str = broker_default("ssl.client.auth")
    ssl_enabled_protocols: list[str] = broker_default("ssl.enabled.protocols")
    ssl_protocol: str = broker_default("ssl.protocol")
    ssl_cipher_suites: list[str] = broker_default("ssl.cipher.suites")
    ssl_endpoint_identification_algorithm: str = broker_default("ssl.endpoint.identification.algorithm")
    ssl_principal_mapping_rules: str = broker_default("ssl.principal.mapping.rules")
    num_partitions: int = broker_default("num.partitions")
    default_replication_factor: int = broker_default("default.replication.factor")
    auto_create_topics_enable: bool = broker_default("auto.create.topics.enable")
    delete_topic_enable: bool = broker_default("delete.topic.enable")
    message_max_bytes: int = broker_default("message.max.bytes")
    max_decompressed_message_bytes: int = broker_default("max.decompressed.message.bytes")
    fetch_max_bytes: int = broker_default("fetch.max.bytes")
    max_incremental_fetch_session_cache_slots: int = broker_default("max.incremental.fetch.session.cache.slots")
    min_insync_replicas: int = broker_default("min.insync.replicas")
    unclean_leader_election_enable: bool = broker_default("unclean.leader.election.enable")
    compression_type: str = broker_default("compression.type")
    compression_gzip_level: int = broker_default("compression.gzip.level")
    compression_lz4_level: int = broker_default("compression.lz4.level")
    compression_zstd_level: int = broker_default("compression.zstd.level")
    offsets_topic_num_partitions: int = broker_default("offsets.topic.num.partitions")
    offsets_topic_replication_factor: int = broker_default("offsets.topic.replication.factor")
    offsets_topic_segment_bytes: int = broker_default("offsets.topic.segment.bytes")
    offsets_retention_minutes: int = broker_default("offsets.retention.minutes")
    transaction_state_log_replication_factor: int = broker_default("transaction.state.log.replication.factor")
    transaction_state_log_min_isr: int = broker_default("transaction.state.log.min.isr")
    share_coordinator_state_topic_replication_factor: int = broker_default("share.coordinator.state.topic.replication.factor")
    share_coordinator_state_topic_min_isr: int = broker_default("share.coordinator.state.topic.min.isr")
    group_initial_rebalance_delay_ms: int = broker_default("group.initial.rebalance.delay.ms")
    group_min_session_timeout_ms: int = broker_default("group.min.session.timeout.ms")
    group_max_session_timeout_ms: int = broker_default("group.max.session.timeout.ms")
    group_max_size: int = broker_default("group.max.size")
    group_consumer_heartbeat_interval_ms: int = broker_default("group.consumer.heartbeat.interval.ms")
    group_consumer_session_timeout_ms: int = broker_default("group.consumer.session.timeout.ms")
    group_consumer_assignors: list[str] = broker_default("group.consumer.assignors")
    group_consumer_max_size: int = broker_default("group.consumer.max.size")
    group_consumer_assignment_interval_ms: int = broker_default("group.consumer.assignment.interval.ms")
    group_consumer_regex_refresh_interval_ms: int = broker_default("group.consumer.regex.refresh.interval.ms")
    group_consumer_min_heartbeat_interval_ms: int = broker_default("group.consumer.min.heartbeat.interval.ms")
    group_consumer_max_heartbeat_interval_ms: int = broker_default("group.consumer.max.heartbeat.interval.ms")
    group_consumer_min_session_timeout_ms: int = broker_default("group.consumer.min.session.timeout.ms")
    group_consumer_max_session_timeout_ms: int = broker_default("group.consumer.max.session.timeout.ms")
    group_consumer_min_assignment_interval_ms: int = broker_default("group.consumer.min.assignment.interval.ms")
    group_consumer_max_assignment_interval_ms: int = broker_default("group.consumer.max.assignment.interval.ms")
    group_consumer_migration_policy: str = broker_default("group.consumer.migration.policy")
    group_share_session_timeout_ms: int = broker_default("group.share.session.timeout.ms")
    group_share_min_session_timeout_ms: int = broker_default("group.share.min.session.timeout.ms")
    group_share_max_session_timeout_ms: int = broker_default("group.share.max.session.timeout.ms")
    group_share_heartbeat_interval_ms: int = broker_default("group.share.heartbeat.interval.ms")
    group_share_min_heartbeat_interval_ms: int = broker_default("group.share.min.heartbeat.interval.ms")
    group_share_max_heartbeat_interval_ms: int = broker_default("group.share.max.heartbeat.interval.ms")
    group_share_max_size: int = broker_default("group.share.max.size")
    group_share_assignment_interval_ms: int = broker_default("group.share.assignment.interval.ms")
    group_share_min_assignment_interval_ms: int = broker_default("group.share.min.assignment.interval.ms")
    group_share_max_assignment_interval_ms: int = broker_default("group.share.max.assignment.interval.ms")
    group_share_assignor_offload_enable: bool = broker_default("group.share.assignor.offload.enable")
    group_share_initialize_retry_interval_ms: int = broker_default("group.share.initialize.retry.interval.ms")
    group_share_delivery_count_limit: int = broker_default("group.share.delivery.count.limit")
    group_share_min_delivery_count_limit: int = broker_default("group.share.min.delivery.count.limit")
    group_share_max_delivery_count_limit: int = broker_default("group.share.max.delivery.count.limit")
    group_share_record_lock_duration_ms: int = broker_default("group.share.record.lock.duration.ms")
    group_share_min_record_lock_duration_ms: int = broker_default("group.share.min.record.lock.duration.ms")
    group_share_max_record_lock_duration_ms: int = broker_default("group.share.max.record.lock.duration.ms")
    group_share_partition_max_record_locks: int = broker_default("group.share.partition.max.record.locks")
    group_share_min_partition_max_record_locks: int = broker_default("group.share.min.partition.max.record.locks")
    group_share_max_partition_max_record_locks: int = broker_default("group.share.max.partition.max.record.locks")
    group_share_max_share_sessions: int = broker_default("group.share.max.share.sessions")
    share_fetch_purgatory_purge_interval_requests: int = broker_default("share.fetch.purgatory.purge.interval.requests")
    group_share_assignors: list[str] = broker_default("group.share.assignors")
    share_coordinator_state_topic_num_partitions: int = broker_default("share.coordinator.state.topic.num.partitions")
    share_coordinator_state_topic_segment_bytes: int = broker_default("share.coordinator.state.topic.segment.bytes")
    offsets_retention_check_interval_ms: int = broker_default("offsets.retention.check.interval.ms")
    offset_metadata_max_bytes: int = broker_default("offset.metadata.max.bytes")
    producer_id_expiration_ms: int = broker_default("producer.id.expiration.ms")
    producer_id_expiration_check_interval_ms: int = broker_default("producer.id.expiration.check.interval.ms")
    transactional_id_expiration_ms: int = broker_default("transactional.id.expiration.ms")
    transaction_max_timeout_ms: int = broker_default("transaction.max.timeout.ms")
    transaction_state_log_num_partitions: int = broker_default("transaction.state.log.num.partitions")
    transaction_state_log_segment_bytes: int = broker_default("transaction.state.log.segment.bytes")
    transaction_state_log_load_buffer_size: int = broker_default("transaction.state.log.load.buffer.size")
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = broker_default("transaction.abort.timed.out.transaction.cleanup.interval.ms")
    transaction_remove_expired_transaction_cleanup_interval_ms: int = broker_default("transaction.remove.expired.transaction.cleanup.interval.ms")
    transaction_partition_verification_enable: bool = broker_default("transaction.partition.verification.enable")
    log_dirs: list[str] = msgspec.field(default_factory=lambda: ["./data"])
    log_dir: str = broker_default("log.dir")
    num_recovery_threads_per_data_dir: int = broker_default("num.recovery.threads.per.data.dir")
    log_initial_task_delay_ms: int = broker_default("log.initial.task.delay.ms")
    log_retention_check_interval_ms: int = broker_default("log.retention.check.interval.ms")
    log_flush_scheduler_interval_ms: int = broker_default("log.flush.scheduler.interval.ms")
    log_flush_offset_checkpoint_interval_ms: int = broker_default("log.flush.offset.checkpoint.interval.ms")
    log_flush_start_offset_checkpoint_interval_ms: int = broker_default("log.flush.start.offset.checkpoint.interval.ms")
    replica_high_watermark_checkpoint_interval_ms: int = broker_default("replica.high.watermark.checkpoint.interval.ms")
    log_segment_bytes: int = broker_default("log.segment.bytes")
    log_roll_ms: int | None = broker_default("log.roll.ms")
    log_roll_hours: int = broker_default("log.roll.hours")
    log_roll_jitter_ms: int | None = broker_default("log.roll.jitter.ms")
    log_roll_jitter_hours: int = broker_default("log.roll.jitter.hours")
    log_index_size_max_bytes: int = broker_default("log.index.size.max.bytes")
    log_index_interval_bytes: int = broker_default("log.index.interval.bytes")
    log_flush_interval_messages: int = broker_default("log.flush.interval.messages")
    log_flush_interval_ms: int | None = broker_default("log.flush.interval.ms")
    log_retention_ms: int | None = broker_default("log.retention.ms")
    log_retention_minutes: int | None = broker_default("log.retention.minutes")
    log_retention_hours: int = broker_default("log.retention.hours")
    log_retention_bytes: int = broker_default("log.retention.bytes")
    log_remote_copy_lag_bytes: int = broker_default("log.remote.copy.lag.bytes")
    log_remote_copy_lag_ms: int = broker_default("log.remote.copy.lag.ms")
    log_local_retention_ms: int = broker_default("log.local.retention.ms")
    log_local_retention_bytes: int = broker_default("log.local.retention.bytes")
    log_cleanup_policy: list[str] = broker_default("log.cleanup.policy")
    log_segment_delete_delay_ms: int = broker_default("log.segment.delete.delay.ms")
    log_preallocate: bool = broker_default("log.preallocate")
    log_message_timestamp_type: str = broker_default("log.message.timestamp.type")
    log_message_timestamp_before_max_ms: int = broker_default("log.message.timestamp.before.max.ms")
    log_message_timestamp_after_max_ms: int = broker_default("log.message.timestamp.after.max.ms")
    log_cleaner_enable: bool = broker_default("log.cleaner.enable")
    log_cleaner_threads: int = broker_default("log.cleaner.threads")
    log_cleaner_dedupe_buffer_size: int = broker_default("log.cleaner.dedupe.buffer.size")
    log_cleaner_io_buffer_load_factor: float = broker_default("log.cleaner.io.buffer.load.factor")
    log_cleaner_io_buffer_size: int = broker_default("log.cleaner.io.buffer.size")
    remote_log_storage_system_enable: bool = broker_default("remote.log.storage.system.enable")
    remote_log_storage_manager_class_name: str | None = broker_default("remote.log.storage.manager.class.name")
    remote_log_storage_manager_class_path: str | None = broker_default("remote.log.storage.manager.class.path")
    remote_log_storage_manager_impl_prefix: str = broker_default("remote.log.storage.manager.impl.prefix")
    remote_log_metadata_manager_class_name: str = broker_default("remote.log.metadata.manager.class.name")
    remote_log_metadata_manager_class_path: str | None = broker_default("remote.log.metadata.manager.class.path")
    remote_log_metadata_manager_impl_prefix: str = broker_default("remote.log.metadata.manager.impl.prefix")
    remote_log_metadata_manager_listener_name: str | None = broker_default("remote.log.metadata.manager.listener.name")
    remote_log_manager_task_interval_ms: int = broker_default("remote.log.manager.task.interval.ms")
    remote_log_manager_task_retry_backoff_ms: int = broker_default("remote.log.manager.task.retry.backoff.ms")
    remote_log_manager_task_retry_backoff_max_ms: int = broker_default("remote.log.manager.task.retry.backoff.max.ms")
    remote_log_manager_copy_max_bytes_per_second: int = broker_default("remote.log.manager.copy.max.bytes.per.second")
    remote_log_manager_fetch_max_bytes_per_second: int = broker_default("remote.log.manager.fetch.max.bytes.per.second")
    remote_log_manager_copier_thread_pool_size: int = broker_default("remote.log.manager.copier.thread.pool.size")
    remote_log_manager_expiration_thread_pool_size: int = broker_default("remote.log.manager.expiration.thread.pool.size")
    remote_log_reader_threads: int = broker_default("remote.log.reader.threads")
    remote_log_reader_max_pending_tasks: int = broker_default("remote.log.reader.max.pending.tasks")
    remote_log_index_file_cache_total_size_bytes: int = broker_default("remote.log.index.file.cache.total.size.bytes")
    remote_log_metadata_custom_metadata_max_bytes: int = broker_default("remote.log.metadata.custom.metadata.max.bytes")
    remote_fetch_max_wait_ms: int = broker_default("remote.fetch.max.wait.ms")
    remote_list_offsets_request_timeout_ms: int = broker_default("remote.list.offsets.request.timeout.ms")
    log_cleaner_io_max_bytes_per_second: float = broker_default("log.cleaner.io.max.bytes.per.second")
    log_cleaner_backoff_ms: int = broker_default("log.cleaner.backoff.ms")
    log_cleaner_min_cleanable_ratio: float = broker_default("log.cleaner.min.cleanable.ratio")
    log_cleaner_delete_retention_ms: int = broker_default("log.cleaner.delete.retention.ms")
    log_cleaner_min_compaction_lag_ms: int = broker_default("log.cleaner.min.compaction.lag.ms")
    log_cleaner_max_compaction_lag_ms: int = broker_default("log.cleaner.max.compaction.lag.ms")
    # The keys explicitly given (file, environment, overrides) with their raw
    # values: DescribeConfigs reports these as STATIC_BROKER_CONFIG.
    originals: dict[str, str] = msgspec.field(default_factory=dict)
    # The tiered storage plugins' own keys, their prefix (rsm.config., rlmm.config.) removed.
    remote_storage_manager_props: dict[str, str] = msgspec.field(default_factory=dict)
    remote_log_metadata_manager_props: dict[str, str] = msgspec.field(default_factory=dict)
    # listener.name.<listener>.<mechanism>.sasl.jaas.config, by "LISTENER MECHANISM" (upper case).
    listener_jaas_configs: dict[str, str] = msgspec.field(default_factory=dict)
    # listener.name.<listener>.<mechanism>.sasl.server.callback.handler.class, keyed the same way.
    listener_callback_handlers: dict[str, str] = msgspec.field(default_factory=dict)
    # listener.name.<listener>.max.connections / .max.connection.creation.rate as set statically,
    # by key as written; effective_listener_limits adds the dynamic values.
    listener_connection_limits: dict[str, int] = msgspec.field(default_factory=dict)
    # Dynamic broker configs (IncrementalAlterConfigs / AlterConfigs on a BROKER resource),
    # raw values by key: this node's ("1") and the cluster-wide defaults (""). They win over
    # the static values; asyncbroker.broker_config_changes keeps them and persists them.
    dynamic_broker: dict[str, str] = msgspec.field(default_factory=dict)
    dynamic_cluster: dict[str, str] = msgspec.field(default_factory=dict)

    # ---- loading

    @classmethod
    def load(
        cls,
        path: str | Path | None = None,
        overrides: Sequence[str] = (),
        environ: Mapping[str, str] | None = None,
    ) -> KafkaConfig:
        """server.properties, then ASYNCBROKER_* environment, then key=value overrides."""
        import os

        props: dict[str, str] = {}
        origins: dict[str, str] = {}
        if path is not None:
            try:
                text = Path(path).read_text(encoding="utf-8")
            except OSError as e:
                raise ConfigException("", f"Cannot read config file {path}: {e.strerror or e}") from None
            for key, value in parse_properties(text).items():
                props[key] = value
                origins[key] = str(path)
        env = os.environ if environ is None else environ
        for name, value in env.items():
            if not name.startswith(ENV_PREFIX):
                continue
            known = _BY_ENV.get(name)
            if known is None:
                raise ConfigException(name, f"Unknown configuration {name} (environment variable): no broker key matches it")
            props[known] = value
            origins[known] = f"environment variable {name}"
        for item in overrides:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise ConfigException(item, f"Invalid override {item!r}: expected key=value")
            props[key.strip()] = value
            origins[key.strip()] = "--override"
        try:
            return cls.from_props(props)
        except ConfigException as e:
            origin = origins.get(e.key)
            if origin is None:
                raise
            raise ConfigException(e.key, f"{e} (set by {origin})") from None

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> KafkaConfig:
        """Validate every key and value; the first problem raises ConfigException naming its key."""
        values: dict[str, Any] = {}
        jaas: dict[str, str] = {}
        handlers: dict[str, str] = {}
        listener_limits: dict[str, int] = {}
        rsm_prefix = props.get("remote.log.storage.manager.impl.prefix", "rsm.config.")
        rlmm_prefix = props.get("remote.log.metadata.manager.impl.prefix", "rlmm.config.")
        plugin_props: dict[str, dict[str, str]] = {rsm_prefix: {}, rlmm_prefix: {}}
        for name, raw in props.items():
            prefix = next((p for p in (rsm_prefix, rlmm_prefix) if p and name.startswith(p)), None)
            if prefix is not None:
                plugin_props[prefix][name[len(prefix):]] = raw
                continue
            if (m := _LISTENER_JAAS.match(name)) is not None:
                jaas[f"{m.group(1).upper()} {m.group(2).upper()}"] = raw
                continue
            if (m := _LISTENER_CONNECTION_LIMIT.match(name)) is not None:
                listener_limits[name] = parse_value(BROKER_KEYS[m.group(2)], raw, name)
                continue
            if (m := _LISTENER_HANDLER.match(name)) is not None:
                if m.group(2).upper() != "OAUTHBEARER" or raw.strip() not in (OAUTHBEARER_UNSECURED_HANDLER,
                                                                               OAUTHBEARER_JWKS_HANDLER):
                    raise ConfigException(name, f"Invalid value {raw} for configuration {name}: the server callback "
                                          f"handlers served are OAUTHBEARER's {OAUTHBEARER_UNSECURED_HANDLER} (the "
                                          f"default) and {OAUTHBEARER_JWKS_HANDLER}")
                handlers[f"{m.group(1).upper()} {m.group(2).upper()}"] = raw.strip()
                continue
            key = BROKER_KEYS.get(name)
            if key is None:
                raise ConfigException(name, f"Unknown configuration {name!r}")
            value = parse_value(key, raw)
            values[key.field] = value
        # A null-able key explicitly set to an empty string means "unset".
        for name in ("log.dirs", "advertised.listeners"):
            field = BROKER_KEYS[name].field
            if values.get(field) == []:
                values.pop(field)
        if "log_dirs" not in values:
            values["log_dirs"] = [values.get("log_dir", "./data")]
        if "node_id" not in values and values.get("broker_id", -1) >= 0:
            values["node_id"] = values["broker_id"]
        originals = {k: props[k] for k in props if _LISTENER_JAAS.match(k) is None and _LISTENER_HANDLER.match(k) is None
                     and _LISTENER_CONNECTION_LIMIT.match(k) is None
                     and not any(p and k.startswith(p) for p in (rsm_prefix, rlmm_prefix))}
        if "broker.id" not in props and "node.id" in props:
            # Kafka copies node.id into broker.id when it builds its config, so broker.id is
            # then a static config with node.id's value.
            values["broker_id"] = values["node_id"]
            originals["broker.id"] = props["node.id"]
        config = cls(**values, originals=originals, listener_jaas_configs=jaas, listener_callback_handlers=handlers,
                     listener_connection_limits=listener_limits,
                     remote_storage_manager_props=plugin_props[rsm_prefix],
                     remote_log_metadata_manager_props=plugin_props[rlmm_prefix])
        config._check()
        return config

    def _check(self) -> None:
        """Cross-key checks (the ones a single key's validator cannot make)."""
        if not self.log_dirs:
            raise ConfigException("log.dirs", "Invalid value for configuration log.dirs: at least one directory is required")
        if self.remote_log_storage_system_enable:
            self._check_remote_storage()
        served = self.served_listeners()
        if not served:
            raise ConfigException("listeners", f"Invalid value {','.join(self.listeners)} for configuration listeners: no listener to serve")
        for e in served:
            protocol = self.security_protocol(e.listener_name)
            if protocol is None:
                raise ConfigException("listener.security.protocol.map",
                                      f"No security protocol defined for listener {e.listener_name} in listener.security.protocol.map")
            if protocol not in SERVED_SECURITY_PROTOCOLS:
                raise ConfigException(
                    "listeners", f"Invalid value {e} for configuration listeners: the {protocol} security protocol "
                    f"is not served (only {', '.join(SERVED_SECURITY_PROTOCOLS)})")
            if protocol.startswith("SASL_"):
                unserved = [m for m in self.sasl_enabled_mechanisms if m not in SERVED_SASL_MECHANISMS]
                if unserved or not self.sasl_enabled_mechanisms:
                    raise ConfigException("sasl.enabled.mechanisms", f"Invalid value {','.join(self.sasl_enabled_mechanisms)} "
                                          f"for configuration sasl.enabled.mechanisms: listener {e.listener_name} is "
                                          f"SASL; the mechanisms served are {', '.join(SERVED_SASL_MECHANISMS)}")
        if OAUTHBEARER_JWKS_HANDLER in self.listener_callback_handlers.values() \
                and not self.sasl_oauthbearer_jwks_endpoint_url:
            raise ConfigException("sasl.oauthbearer.jwks.endpoint.url",
                                  f"sasl.oauthbearer.jwks.endpoint.url is required by {OAUTHBEARER_JWKS_HANDLER}")
        if self.advertised_listeners is not None:
            adv = parse_endpoints("advertised.listeners", self.advertised_listeners)
            names = [e.listener_name for e in parse_endpoints("listeners", self.listeners)]
            unknown = [e.listener_name for e in adv if e.listener_name not in names]
            if unknown:
                # Kafka's KafkaConfig requirement, word for word.
                raise ConfigException(
                    "advertised.listeners",
                    "requirement failed: advertised.listeners listener names must be equal to or a subset of the "
                    f"ones defined in listeners. Found {','.join(e.listener_name for e in adv)}. The valid options "
                    f"based on currently configured listeners are {','.join(names)}")
            for e in adv:
                if e.host in ("0.0.0.0", "::"):
                    raise ConfigException(
                        "advertised.listeners",
                        f"Invalid value {e} for configuration advertised.listeners: cannot use the nonroutable meta-address {e.host}",
                    )
        elif served[0].host in ("0.0.0.0", "::"):
            raise ConfigException(
                "advertised.listeners",
                f"advertised.listeners must be set when listeners binds {served[0].host} "
                "(clients cannot connect to the meta-address)",
            )

        if 0 < self.queued_max_request_bytes < self.socket_request_max_bytes:
            # Kafka's KafkaConfig requirement, word for word (a pool must grant the largest request).
            raise ConfigException("queued.max.request.bytes", "requirement failed: queued.max.request.bytes must be "
                                  "larger or equal to socket.request.max.bytes")
        self._check_consumer_group_bounds()
        self._check_topic_defaults()

    def _check_remote_storage(self) -> None:
        """Tiered storage needs one of the built-in backends and what it reads (Kafka fails to
        start when its plugin class cannot be loaded)."""
        # Imported here: the remote storage modules are paid for only by a broker that tiers.
        from storage.remote_storage_manager import LOCAL_TIERED_STORAGE, S3_REMOTE_STORAGE

        name = self.remote_log_storage_manager_class_name
        prefix = self.remote_log_storage_manager_impl_prefix
        if name not in (LOCAL_TIERED_STORAGE, S3_REMOTE_STORAGE):
            raise ConfigException(
                "remote.log.storage.manager.class.name",
                f"Invalid value {name} for configuration remote.log.storage.manager.class.name: with "
                f"remote.log.storage.system.enable=true it must name a built-in backend: {LOCAL_TIERED_STORAGE} "
                f"(a directory, {prefix}dir) or {S3_REMOTE_STORAGE} ({prefix}s3.bucket and the other {prefix}s3.* keys)")
        if name == LOCAL_TIERED_STORAGE and not self.remote_storage_manager_props.get("dir"):
            raise ConfigException(f"{prefix}dir", f"Missing required configuration {prefix}dir: the directory of "
                                  f"{LOCAL_TIERED_STORAGE}")
        if name == S3_REMOTE_STORAGE and not self.remote_storage_manager_props.get("s3.bucket"):
            raise ConfigException(f"{prefix}s3.bucket", f"Missing required configuration {prefix}s3.bucket: the bucket "
                                  f"of {S3_REMOTE_STORAGE}")

    def _check_consumer_group_bounds(self) -> None:
        """Each group.consumer.* setting within its min/max keys, as Kafka's GroupCoordinatorConfig
        requires (and a heartbeat shorter than the session)."""
        for name in ("heartbeat.interval.ms", "session.timeout.ms", "assignment.interval.ms"):
            value = self.get(f"group.consumer.{name}")
            low, high = self.get(f"group.consumer.min.{name}"), self.get(f"group.consumer.max.{name}")
            if value < low:
                raise ConfigException(f"group.consumer.{name}", f"requirement failed: group.consumer.{name} must be "
                                      f"greater than or equal to group.consumer.min.{name}")
            if value > high:
                raise ConfigException(f"group.consumer.{name}", f"requirement failed: group.consumer.{name} must be "
                                      f"less than or equal to group.consumer.max.{name}")
        if self.group_consumer_heartbeat_interval_ms >= self.group_consumer_session_timeout_ms:
            raise ConfigException("group.consumer.heartbeat.interval.ms",
                                  "requirement failed: group.consumer.heartbeat.interval.ms must be less than "
                                  "group.consumer.session.timeout.ms")

    def _check_topic_defaults(self) -> None:
        """The log.* keys must also be valid as the topic keys they feed."""
        for topic_key, value in self.topic_config_defaults().items():
            try:
                LogConfig.from_props({topic_key: value}, None)
            except InvalidConfigurationError as e:
                synonyms = TOPIC_DEFAULT_SYNONYMS[topic_key]
                broker_key = next((k for k in synonyms if self.is_explicit(k)), synonyms[0])
                raise ConfigException(broker_key, f"Invalid value for configuration {broker_key}: {e.message}") from None
        try:
            self.log_config_defaults()
        except InvalidConfigurationError as e:
            raise ConfigException("log.*", f"Inconsistent log.* configuration: {e.message}") from None

    # ---- listeners

    def security_protocols(self) -> dict[str, str]:
        result: dict[str, str] = {}
        for item in self.listener_security_protocol_map:
            name, _, proto = item.partition(":")
            result[name.strip().upper()] = proto.strip().upper()
        return result

    def security_protocol(self, listener_name: str) -> str | None:
        """The security protocol of a listener (listener.security.protocol.map); None when
        the map does not name it, unless the name is itself a protocol's."""
        known = self.security_protocols()
        if listener_name in known:
            return known[listener_name]
        return listener_name if listener_name in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL") else None

    def advertised_endpoint(self, listener: Endpoint) -> tuple[str, int]:
        """(host, port) Metadata gives clients that reached `listener`: its advertised.listeners
        entry, else the listener itself (the local host name for a wildcard host)."""
        if self.advertised_listeners:
            for e in parse_endpoints("advertised.listeners", self.advertised_listeners):
                if e.listener_name == listener.listener_name:
                    return (e.host or socket.getfqdn(), e.port)
        # An empty host binds every interface; Kafka advertises the local host name then.
        return (listener.host or socket.getfqdn(), listener.port)

    def protected_listener(self) -> str | None:
        """The inter-broker listener while the broker serves more than one: held to its own
        connection limits only, not to all listeners' together (Kafka's protectedListener)."""
        if len(self.served_listeners()) <= 1:
            return None
        return (self.inter_broker_listener_name or self.security_inter_broker_protocol).upper()

    def effective_listener_limits(self) -> dict[str, dict[str, int]]:
        """Each listener's own connection limits in force, by listener (upper case) then
        broker-wide key: the static values under the cluster-wide dynamic ones, under this
        node's (values checked when they were set)."""
        limits: dict[str, dict[str, int]] = {}
        for _name, (listener, key), value in self._listener_limit_items():
            limits.setdefault(listener, {})[key] = int(value)
        return limits

    def _listener_limit_items(self) -> list[tuple[str, tuple[str, str], int | str]]:
        """The listener connection limit keys set statically, then cluster-wide, then on this
        node (the later layers win): each key, its (listener, broker-wide key), its value."""
        return [(name, limit, value)
                for layer in (self.listener_connection_limits, self.dynamic_cluster, self.dynamic_broker)
                for name, value in layer.items() if (limit := listener_limit_key(name)) is not None]

    def served_listeners(self) -> list[Endpoint]:
        """The listeners this broker accepts clients on (controller listeners excluded)."""
        controller = {n.upper() for n in self.controller_listener_names}
        return [e for e in parse_endpoints("listeners", self.listeners) if e.listener_name not in controller]

    def listener_host_port(self) -> tuple[str, int]:
        """(host, port) to bind; '0.0.0.0' when the listener's host is empty."""
        e = self.served_listeners()[0]
        return (e.host or "0.0.0.0", e.port)

    def advertised_host_port(self) -> tuple[str, int]:
        """(host, port) clients of the first listener are told to use (advertised_endpoint)."""
        return self.advertised_endpoint(self.served_listeners()[0])

    # ---- topic defaults

    def topic_config_defaults(self) -> dict[str, str]:
        """Topic key -> default value (string) as this broker's log.* keys define it: a dynamic
        value of the key's primary broker synonym, else its synonyms resolved as Kafka does
        (log.retention.ms, then .minutes, then .hours)."""
        out: dict[str, str] = {}
        for topic_key, key in TOPIC_KEYS.items():
            if not key.synonyms:  # no broker-wide default (the replication throttles)
                continue
            dynamic = self.dynamic_value(key.synonyms[0])
            if dynamic is not None:
                out[topic_key] = dynamic  # a dynamic value of the primary key wins over the family
                continue
            text = format_value(resolve_topic_default(key, self.get))
            if text is not None:
                out[topic_key] = text
        return out

    def log_config_defaults(self) -> LogConfig:
        """The broker-wide defaults for every topic as storage's LogConfig."""
        return LogConfig.from_props(self.topic_config_defaults(), None)

    # ---- introspection (DescribeConfigs BROKER)

    def get(self, name: str) -> Any:
        """Value of a broker key by its Kafka name."""
        return getattr(self, BROKER_KEYS[name].field)

    def effective(self, name: str) -> Any:
        """The value in force for broker key `name`: its dynamic value (this node's, else the
        cluster-wide default) over the static one."""
        raw = self.dynamic_value(name)
        return self.get(name) if raw is None else parse_value(BROKER_KEYS[name], raw)

    def is_explicit(self, name: str) -> bool:
        return name in self.originals

    def cluster_defaults(self) -> dict[str, str]:
        """The cluster-wide dynamic defaults (the BROKER resource named ""): the ones Kafka's
        controller writes itself (CLUSTER_DEFAULT_KEYS), then those set since."""
        written = {name: format_value(self.get(name)) or "" for name in CLUSTER_DEFAULT_KEYS}
        return {**written, **self.dynamic_cluster}

    def dynamic_value(self, name: str) -> str | None:
        """The raw dynamic value of a broker key: this node's, else the cluster-wide default."""
        if name in self.dynamic_broker:
            return self.dynamic_broker[name]
        return self.cluster_defaults().get(name)

    def synonyms(self, name: str) -> tuple[ConfigSynonym, ...]:
        """The values behind broker key `name`, as Kafka lists them: layer by layer (this
        node's dynamic value, the cluster-wide dynamic default, the static value from the
        file, environment or --override, the built-in default), each layer over the key's
        family (log.retention.ms/.minutes/.hours), then everything before the first entry of
        `name` itself dropped, so a family member's value never shows without the key's own."""
        limit = listener_limit_key(name)
        # A listener's own limit is a synonym of the broker-wide key: that one's values follow.
        family = (name, limit[1]) if limit is not None else BROKER_SYNONYMS.get(name, (name,))
        defaults = self.cluster_defaults()
        out: list[ConfigSynonym] = [ConfigSynonym(k, self.dynamic_broker[k], ConfigSource.DYNAMIC_BROKER_CONFIG)
                                    for k in family if k in self.dynamic_broker]
        out += [ConfigSynonym(k, defaults[k], ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG) for k in family if k in defaults]
        out += [ConfigSynonym(k, self._static_value(k), ConfigSource.STATIC_BROKER_CONFIG)
                for k in family if self.is_explicit(k) or k in self.listener_connection_limits]
        out += [ConfigSynonym(k, format_value(BROKER_KEYS[k].default), ConfigSource.DEFAULT_CONFIG)
                for k in family if k in BROKER_KEYS and BROKER_KEYS[k].default is not None and k not in NO_KAFKA_DEFAULT]
        while out and out[0].name != name:
            out.pop(0)
        return tuple(out)

    def _static_value(self, name: str) -> str | None:
        if name in self.listener_connection_limits:
            return str(self.listener_connection_limits[name])
        return format_value(self.get(name))

    def describe(self, names: Sequence[str] | None = None) -> list[ConfigEntry]:
        """DescribeConfigs for this broker's BROKER resource: every key (or `names`); the keys
        Kafka reconfigures at runtime are not read-only. A listener's own connection limit is
        described where set, read-only (as Kafka describes keys outside its definitions) and
        typed as the broker-wide key."""
        limits = {name for name, _, _ in self._listener_limit_items()}
        wanted = [*BROKER_KEYS, *limits] if names is None else [n for n in names if n in BROKER_KEYS or n in limits]
        entries: list[ConfigEntry] = []
        for name in sorted(wanted):
            limit = listener_limit_key(name)
            if limit is not None:
                synonyms = self.synonyms(name)
                entries.append(ConfigEntry(
                    name=name, value=synonyms[0].value, source=synonyms[0].source, read_only=True, is_sensitive=False,
                    synonyms=synonyms, type=BROKER_KEYS[limit[1]].type, documentation=None))
                continue
            key = BROKER_KEYS[name]
            if key.internal:
                continue
            synonyms = self.synonyms(name)
            entries.append(
                ConfigEntry(
                    name=name,
                    value=self.dynamic_value(name) if self.dynamic_value(name) is not None
                    else format_value(self.get(name)),
                    source=synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
                    read_only=name not in DYNAMIC_BROKER_KEYS,
                    is_sensitive=key.type is ConfigType.PASSWORD,
                    synonyms=synonyms,
                    type=key.type,
                    documentation=key.doc,
                )
            )
        return entries

    def describe_cluster_defaults(self, names: Sequence[str] | None = None) -> list[ConfigEntry]:
        """DescribeConfigs for the BROKER resource "" (cluster-wide dynamic defaults)."""
        entries: list[ConfigEntry] = []
        for name, value in sorted(self.cluster_defaults().items()):
            if names is not None and name not in names:
                continue
            limit = listener_limit_key(name)
            key = BROKER_KEYS[name if limit is None else limit[1]]
            entries.append(ConfigEntry(
                name=name, value=value, source=ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, read_only=limit is not None,
                is_sensitive=False, synonyms=(ConfigSynonym(name, value, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),),
                type=key.type, documentation=key.doc if limit is None else None,
            ))
        return entries

