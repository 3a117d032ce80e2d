"""CleanerConfig: the broker-level `log.cleaner.*` tunables (Kafka's CleanerConfig).

A typed view of those keys of storage's config table (storage/config_def.py), which
declares their names, types, defaults and documentation once; this struct names them as
the cleaner thinks of them. Topic-level compaction keys (min.cleanable.dirty.ratio,
delete.retention.ms, min/max.compaction.lag.ms) live in storage's LogConfig; these are
the knobs of the worker pool itself.
"""
from __future__ import annotations

from typing import Any, Mapping

import msgspec

from storage.config_def import BROKER_KEYS, DOUBLE_MAX, broker_default, parse_value
from wire.errors import InvalidConfigurationError

__all__ = ["CleanerConfig", "CLEANER_CONFIG_KEYS", "DOUBLE_MAX"]

MAX_BUFFER_BYTES = 2**31 - 1


class CleanerConfig(msgspec.Struct, frozen=True):
    """Kafka's defaults; `from_props` reads Kafka key names (server.properties style)."""

    num_threads: int = broker_default("log.cleaner.threads")
    """log.cleaner.threads: worker processes (Kafka's CleanerThreads)."""
    dedupe_buffer_size: int = broker_default("log.cleaner.dedupe.buffer.size")
    """log.cleaner.dedupe.buffer.size: offset-map memory across all workers."""
    dedupe_buffer_load_factor: float = broker_default("log.cleaner.io.buffer.load.factor")
    """log.cleaner.io.buffer.load.factor: how full a map may get before pass 1 stops."""
    io_buffer_size: int = broker_default("log.cleaner.io.buffer.size")
    """log.cleaner.io.buffer.size: read+write buffer memory across all workers."""
    max_message_size: int = broker_default("message.max.bytes")
    """message.max.bytes: the largest batch the I/O buffers must be able to grow to."""
    max_io_bytes_per_second: float = broker_default("log.cleaner.io.max.bytes.per.second")
    """log.cleaner.io.max.bytes.per.second: read+write throttle shared by all workers."""
    backoff_ms: int = broker_default("log.cleaner.backoff.ms")
    """log.cleaner.backoff.ms: sleep when no log needs cleaning."""
    enable_cleaner: bool = broker_default("log.cleaner.enable")
    """log.cleaner.enable (deprecated in Kafka 4.1; the cleaner always runs there)."""
    # Not a Kafka key: the offset map's hash, which Kafka fixes to MD5 as well.
    hash_algorithm: str = "MD5"

    @property
    def map_memory_per_thread(self) -> int:
        """Each worker's offset map: dedupe buffer / threads, capped at 2 GiB like Kafka."""
        return min(self.dedupe_buffer_size // max(1, self.num_threads), MAX_BUFFER_BYTES)

    @property
    def io_buffer_per_thread(self) -> int:
        """Each of a worker's two I/O buffers (read, write) gets half of its share (Kafka's split)."""
        return max(1, self.io_buffer_size // max(1, self.num_threads) // 2)

    @classmethod
    def from_props(cls, props: Mapping[str, Any]) -> "CleanerConfig":
        """Build from Kafka-named broker properties; unknown keys are ignored (they belong to
        other subsystems), bad values raise InvalidConfigurationError naming the key."""
        values = {field: parse_value(BROKER_KEYS[key], props[key])
                  for key, field in CLEANER_CONFIG_KEYS.items() if key in props}
        config = cls(**values)
        config.validate()
        return config

    @classmethod
    def from_broker_config(cls, broker_config: Any) -> "CleanerConfig":
        """Read the `log_cleaner_*` attributes of the service's KafkaConfig (duck-typed: the
        cleaner package must not import the service)."""
        values: dict[str, Any] = {}
        for key, field in CLEANER_CONFIG_KEYS.items():
            attr = key.replace(".", "_")
            if hasattr(broker_config, attr):
                values[field] = getattr(broker_config, attr)
        config = cls(**values)
        config.validate()
        return config

    def validate(self) -> None:
        if self.num_threads < 0:
            raise InvalidConfigurationError("log.cleaner.threads must be at least 0")
        if self.dedupe_buffer_size < 24 * max(1, self.num_threads) and self.num_threads > 0:
            raise InvalidConfigurationError(
                f"log.cleaner.dedupe.buffer.size {self.dedupe_buffer_size} is too small for "
                f"{self.num_threads} cleaner threads")
        if not 0.0 < self.dedupe_buffer_load_factor <= 1.0:
            raise InvalidConfigurationError("log.cleaner.io.buffer.load.factor must be in (0, 1]")
        if self.io_buffer_size < 0:
            raise InvalidConfigurationError("log.cleaner.io.buffer.size must be at least 0")
        if self.max_io_bytes_per_second <= 0:
            raise InvalidConfigurationError("log.cleaner.io.max.bytes.per.second must be positive")
        if self.backoff_ms < 0:
            raise InvalidConfigurationError("log.cleaner.backoff.ms must be at least 0")


CLEANER_CONFIG_KEYS: dict[str, str] = {
    "log.cleaner.threads": "num_threads",
    "log.cleaner.dedupe.buffer.size": "dedupe_buffer_size",
    "log.cleaner.io.buffer.load.factor": "dedupe_buffer_load_factor",
    "log.cleaner.io.buffer.size": "io_buffer_size",
    "message.max.bytes": "max_message_size",
    "log.cleaner.io.max.bytes.per.second": "max_io_bytes_per_second",
    "log.cleaner.backoff.ms": "backoff_ms",
    "log.cleaner.enable": "enable_cleaner",
}
"""Kafka broker key -> CleanerConfig field."""
