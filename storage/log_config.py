"""LogConfig: the topic-level settings of one log, the typed view of the topic keys.

The keys themselves (names, types, defaults, validators, documentation and the broker
keys they fall back to) are declared once, in storage/config_def.py; this struct has one
field per topic key, and the derived values the engine reads (`compact`, `max_index_size`).
"""
from __future__ import annotations

import random
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
        return 0 if bound <= 0 else random.randrange(bound)

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
        return {key.name: format_value(getattr(self, key.field)) or "" for key in TOPIC_KEYS.values()}

    def overrides(self, base: "LogConfig") -> dict[str, str]:
        """The keys whose value differs from `base` (what a topic override file stores)."""
        return {
            key.name: format_value(getattr(self, key.field)) or ""
            for key in TOPIC_KEYS.values()
            if getattr(self, key.field) != getattr(base, key.field)
        }

    def validate(self) -> None:
        """Cross-key rules (the per-key ones run while parsing)."""
        if self.min_compaction_lag_ms > self.max_compaction_lag_ms:
            raise InvalidConfigurationError(
                f"conflict topic config setting min.compaction.lag.ms ({self.min_compaction_lag_ms}) > "
                f"max.compaction.lag.ms ({self.max_compaction_lag_ms})"
            )
        # Kafka relates local to total retention only for tiered topics.
        if (self.remote_storage_enable and self.delete and self.retention_ms != -1 and 0 <= self.local_retention_ms
                and self.local_retention_ms > self.retention_ms):
            raise InvalidConfigurationError(
                f"Invalid value {self.local_retention_ms} for configuration local.retention.ms: "
                f"Value must not be more than retention.ms property value: {self.retention_ms}"
            )

