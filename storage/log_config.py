"""LogConfig: the topic-level settings of one log, the typed view of the topic keys.

The keys themselves (names, types, defaults, validators, documentation and the broker
keys they fall back to) are declared once, in storage/config_def.py; this struct has one
field per topic key, and the derived values the engine reads (`compact`, `max_index_size`).
"""
from __future__ import annotations

from typing import Any, Mapping

import msgspec

from storage.config_def import (
    BROKER_KEYS,
    LONG_MAX,
    TOPIC_KEYS,
    format_value,
    parse_value,
    resolve_topic_default,
    topic_default,
)
from wire.errors import InvalidConfigurationError

__all__ = ["LogConfig", "LONG_MAX"]


class LogConfig(msgspec.Struct, frozen=True):
    """Topic-level log settings. Construct directly in tests (no validation), or via from_props."""

    cleanup_policy: tuple[str, ...] = topic_default("cleanup.policy")
    compression_type: str = topic_default("compression.type")
    compression_gzip_level: int = topic_default("compression.gzip.level")
    compression_lz4_level: int = topic_default("compression.lz4.level")
    compression_zstd_level: int = topic_default("compression.zstd.level")
    delete_retention_ms: int = topic_default("delete.retention.ms")
    errors_deadletterqueue_group_enable: bool = topic_default("errors.deadletterqueue.group.enable")
    file_delete_delay_ms: int = topic_default("file.delete.delay.ms")
    flush_messages: int = topic_default("flush.messages")
    flush_ms: int = topic_default("flush.ms")
    follower_replication_throttled_replicas: tuple[str, ...] = topic_default("follower.replication.throttled.replicas")
    index_interval_bytes: int = topic_default("index.interval.bytes")
    leader_replication_throttled_replicas: tuple[str, ...] = topic_default("leader.replication.throttled.replicas")
    local_retention_bytes: int = topic_default("local.retention.bytes")
    local_retention_ms: int = topic_default("local.retention.ms")
    max_compaction_lag_ms: int = topic_default("max.compaction.lag.ms")
    max_decompressed_message_bytes: int = topic_default("max.decompressed.message.bytes")
    max_message_bytes: int = topic_default("max.message.bytes")
    message_timestamp_after_max_ms: int = topic_default("message.timestamp.after.max.ms")
    message_timestamp_before_max_ms: int = topic_default("message.timestamp.before.max.ms")
    message_timestamp_type: str = topic_default("message.timestamp.type")
    min_cleanable_dirty_ratio: float = topic_default("min.cleanable.dirty.ratio")
    min_compaction_lag_ms: int = topic_default("min.compaction.lag.ms")
    min_insync_replicas: int = topic_default("min.insync.replicas")
    preallocate: bool = topic_default("preallocate")
    remote_copy_lag_bytes: int = topic_default("remote.copy.lag.bytes")
    remote_copy_lag_ms: int = topic_default("remote.copy.lag.ms")
    remote_log_copy_disable: bool = topic_default("remote.log.copy.disable")
    remote_log_delete_on_disable: bool = topic_default("remote.log.delete.on.disable")
    remote_storage_enable: bool = topic_default("remote.storage.enable")
    retention_bytes: int = topic_default("retention.bytes")
    retention_ms: int = topic_default("retention.ms")
    segment_bytes: int = topic_default("segment.bytes")
    internal_segment_bytes: int | None = topic_default("internal.segment.bytes")
    segment_index_bytes: int = topic_default("segment.index.bytes")
    segment_jitter_ms: int = topic_default("segment.jitter.ms")
    segment_ms: int = topic_default("segment.ms")
    unclean_leader_election_enable: bool = topic_default("unclean.leader.election.enable")

    # -- derived values used by the engine --------------------------------------------------
    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def max_index_size(self) -> int:
        return self.segment_index_bytes

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @property
    def checks_record_timestamps(self) -> bool:
        """message.timestamp.before.max.ms is set (not "forever") on a CreateTime topic: the
        validator then reads every record's timestamp, not just the batch header."""
        return not self.log_append_time and self.message_timestamp_before_max_ms < LONG_MAX

    def random_segment_jitter(self) -> int:
        """A per-segment jitter in [0, min(segment.jitter.ms, segment.ms)) that staggers time-based rolls."""
        bound = min(self.segment_jitter_ms, self.segment_ms)
        if bound <= 0:  # segment.jitter.ms's default
            return 0
        import random  # here: a broker that never jitters its rolls does not hold the module

        return random.randrange(bound)

    # -- conversion --------------------------------------------------------------------------
    @classmethod
    def from_props(cls, props: Mapping[str, Any], defaults: "LogConfig | None" = None) -> "LogConfig":
        """Overlay Kafka-named topic properties on `defaults`; a bad value or unknown key names the key."""
        values = msgspec.structs.asdict(defaults if defaults is not None else cls())
        for name, raw in props.items():
            key = TOPIC_KEYS.get(name)
            if key is None:
                raise InvalidConfigurationError(f"Unknown topic config name: {name}")
            values[key.field] = parse_value(key, raw)
        config = cls(**values)
        config.validate()
        return config

    @classmethod
    def from_broker_props(cls, props: Mapping[str, Any]) -> "LogConfig":
        """Topic defaults from broker (server.properties) keys such as log.segment.bytes / log.retention.hours,
        each checked as the topic key it feeds and named as given."""
        def given(name: str) -> Any:
            return parse_value(BROKER_KEYS[name], props[name]) if name in props else None

        values = msgspec.structs.asdict(cls())
        for key in TOPIC_KEYS.values():
            value = resolve_topic_default(key, given)
            if value is not None:
                shown = next(name for name in key.synonyms if name in props)
                values[key.field] = parse_value(key, value, shown=shown)
        config = cls(**values)
        config.validate()
        return config

    def to_props(self) -> dict[str, str]:
        """All keys with Kafka's names and string values."""
        return {key.name: format_value(getattr(self, key.field)) or "" for key in TOPIC_KEYS.values()
                if not (key.internal and getattr(self, key.field) is None)}  # an internal key only when set

    def overrides(self, base: "LogConfig") -> dict[str, str]:
        """The keys whose value differs from `base` (what a topic override file stores)."""
        return {
            key.name: format_value(getattr(self, key.field)) or ""
            for key in TOPIC_KEYS.values()
            if getattr(self, key.field) != getattr(base, key.field)
        }

    @property
    def segment_size(self) -> int:
        """The size at which segments roll: internal.segment.bytes when set, else segment.bytes."""
        return self.segment_bytes if self.internal_segment_bytes is None else self.internal_segment_bytes

    def validate(self) -> None:
        """Cross-key rules (the per-key ones run while parsing)."""
        if self.min_compaction_lag_ms > self.max_compaction_lag_ms:
            raise InvalidConfigurationError(
                f"conflict topic config setting min.compaction.lag.ms ({self.min_compaction_lag_ms}) > "
                f"max.compaction.lag.ms ({self.max_compaction_lag_ms})"
            )

    def validate_remote_storage(self, *, system_enabled: bool, was_remote: bool) -> None:
        """A topic's tiered storage rules, in Kafka 4.4's order (LogConfig.validateTopicLogConfigValues):
        only with remote.storage.enable, except that turning it off needs remote.log.delete.on.disable."""
        if not self.remote_storage_enable:
            if was_remote and not self.remote_log_delete_on_disable:
                raise InvalidConfigurationError(
                    "It is invalid to disable remote storage without deleting remote data. If you want to keep the "
                    "remote data and turn to read only, please set `remote.storage.enable=true,"
                    "remote.log.copy.disable=true`. If you want to disable remote storage and delete all remote data, "
                    "please set `remote.storage.enable=false,remote.log.delete.on.disable=true`.")
            return
        if not system_enabled:
            raise InvalidConfigurationError(
                "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote "
                "log storage.")
        if self.cleanup_policy and self.cleanup_policy != ("delete",):
            raise InvalidConfigurationError("Remote log storage only supports topics with cleanup.policy=delete or "
                                            "cleanup.policy being an empty list.")
        for total_key, local_key, total, local, bounded in (
                ("retention.bytes", "local.retention.bytes", self.retention_bytes, self.local_retention_bytes,
                 self.retention_bytes > -1),
                ("retention.ms", "local.retention.ms", self.retention_ms, self.local_retention_ms,
                 self.retention_ms != -1)):
            if bounded and local != -2:
                if local == -1:
                    raise InvalidConfigurationError(f"Invalid value -1 for configuration {local_key}: Value must not "
                                                    f"be -1 as {total_key} value is set as {total}.")
                if local > total:
                    raise InvalidConfigurationError(f"Invalid value {local} for configuration {local_key}: Value must "
                                                    f"not be more than {total_key} property value: {total}")
        for lag_key, local_key, lag, total, local in (
                ("remote.copy.lag.bytes", "local.retention.bytes", self.remote_copy_lag_bytes, self.retention_bytes,
                 self.local_retention_bytes),
                ("remote.copy.lag.ms", "local.retention.ms", self.remote_copy_lag_ms, self.retention_ms,
                 self.local_retention_ms)):
            effective = total if local == -2 else local
            if lag > 0 and effective >= 0 and lag > effective:
                raise InvalidConfigurationError(f"Invalid value {lag} for configuration {lag_key}: Value must not "
                                                f"exceed {local_key} (effective value: {effective})")
        if self.remote_log_copy_disable:
            for name, total, local in (("bytes", self.retention_bytes, self.local_retention_bytes),
                                       ("ms", self.retention_ms, self.local_retention_ms)):
                if local != -2 and local != total:
                    raise InvalidConfigurationError(
                        f"When `remote.log.copy.disable` is set to true, the `local.retention.{name}` and "
                        f"`retention.{name}` must be set to the identical value because there will be no more logs "
                        "copied to the remote storage.")

