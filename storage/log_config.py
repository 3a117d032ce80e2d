"""LogConfig: every topic-level key, with Kafka's names, defaults, validation and broker fallbacks."""
from __future__ import annotations

import random
import re
from decimal import Decimal
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import msgspec

from wire.errors import InvalidConfigurationError

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class ConfigKey:
    """One topic-level key: its type, default, validator, doc and the broker key that supplies its default."""

    name: str
    type: str  # "long" | "int" | "double" | "boolean" | "string" | "list"
    default: Any
    validator: Callable[[Any], str | None] | None
    doc: str
    broker_key: str | None
    field: str


def java_number(value: Any) -> str:
    """A parsed value as Java's toString prints it in Kafka's ConfigException messages
    ("Invalid value 2.0 ...", "Invalid value 9.9999999999E10 ..."), since clients show them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


def java_double(x: float) -> str:
    """Double.toString: plain between 1e-3 and 1e7, else d.dddE<n>, shortest digits either way."""
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if str(x).startswith("-") else "0.0"
    if 1e-3 <= abs(x) < 1e7:
        text = repr(x)
        return text if "." in text else text + ".0"
    sign, digits, exponent = Decimal(repr(x)).normalize().as_tuple()
    mantissa = str(digits[0]) + "." + ("".join(map(str, digits[1:])) or "0")
    return f"{'-' if sign else ''}{mantissa}E{len(digits) - 1 + int(exponent)}"


def _at_least(lo: int) -> Callable[[Any], str | None]:
    return lambda v: None if v >= lo else f"Value must be at least {lo}"


def _between(lo: int, hi: int) -> Callable[[Any], str | None]:
    """Kafka's Range.between: the lower bound is checked (and named) first."""
    def check(v: Any) -> str | None:
        if v < lo:
            return f"Value must be at least {lo}"
        if v > hi:
            return f"Value must be no more than {hi}"
        return None

    return check


def _one_of(*choices: str) -> Callable[[Any], str | None]:
    return lambda v: None if v in choices else f"String must be one of: {', '.join(choices)}"


class _ItemProblem(Exception):
    """A list validator that names one item (Kafka's ValidList reports the bad item, not the list)."""

    def __init__(self, item: str, message: str) -> None:
        super().__init__(message)
        self.item = item
        self.message = message


def _list_of(*choices: str) -> Callable[[Any], str | None]:
    def check(v: tuple[str, ...]) -> str | None:
        for item in v:
            if item not in choices:
                raise _ItemProblem(item, f"String must be one of: {', '.join(choices)}")
        return None

    return check


def _gzip_level(v: int) -> str | None:
    return None if v == -1 or 1 <= v <= 9 else "Value must be between 1 and 9 or equal to -1"


_REPLICA = re.compile(r"\s*\d+\s*:\s*\d+\s*")


def _throttled_replicas(name: str) -> Callable[[Any], str | None]:
    def check(v: tuple[str, ...]) -> str | None:
        if v == ("*",) or all(_REPLICA.fullmatch(item) for item in v):
            return None
        return (f"{name} must be the literal '*' or a list of replicas in the following format: "
                "[partitionId]:[brokerId],[partitionId]:[brokerId],...")

    return check


_KEYS: list[ConfigKey] = []


def _key(name: str, type_: str, default: Any, validator: Callable[[Any], str | None] | None,
         broker_key: str | None, doc: str) -> None:
    _KEYS.append(ConfigKey(name, type_, default, validator, doc, broker_key, name.replace(".", "_")))


# Documentation is written here (never Kafka's text); a key whose behaviour is not built says
# what asyncbroker does with it, so a user reading DescribeConfigs is not misled.
_key("cleanup.policy", "list", ("delete",), _list_of("compact", "delete"), "log.cleanup.policy",
     "Reclamation policy: delete old segments, compact by key, or both.")
_key("compression.type", "string", "producer",
     _one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"), "compression.type",
     "Final compression codec of the topic; 'producer' keeps the producer's codec.")
_key("compression.gzip.level", "int", -1, _gzip_level, "compression.gzip.level", "gzip level when recompressing.")
_key("compression.lz4.level", "int", 9, _between(1, 17), "compression.lz4.level", "lz4 level when recompressing.")
_key("compression.zstd.level", "int", 3, _between(-131072, 22), "compression.zstd.level",
     "zstd level when recompressing.")
_key("delete.retention.ms", "long", 86_400_000, _at_least(0), "log.cleaner.delete.retention.ms",
     "How long tombstones and markers survive after entering the clean section.")
_key("errors.deadletterqueue.group.enable", "boolean", False, None, None,
     "Whether groups may send records they cannot process to a dead-letter queue on this topic. "
     "Accepted and stored; asyncbroker has no dead-letter queues, so it changes nothing here.")
_key("file.delete.delay.ms", "long", 60_000, _at_least(0), "log.segment.delete.delay.ms",
     "Delay between renaming a file to .deleted and unlinking it.")
_key("flush.messages", "long", LONG_MAX, _at_least(1), "log.flush.interval.messages",
     "fsync after this many appended messages.")
_key("flush.ms", "long", LONG_MAX, _at_least(0), "log.flush.interval.ms",
     "fsync when the oldest unflushed data is older than this.")
_key("follower.replication.throttled.replicas", "list", (), _throttled_replicas("follower.replication.throttled.replicas"),
     "follower.replication.throttled.replicas",
     "Replicas throttled on the follower side. Accepted and stored; a single node has no followers.")
_key("index.interval.bytes", "int", 4096, _at_least(0), "log.index.interval.bytes",
     "Bytes of log between two sparse index entries.")
_key("leader.replication.throttled.replicas", "list", (), _throttled_replicas("leader.replication.throttled.replicas"),
     "leader.replication.throttled.replicas",
     "Replicas throttled on the leader side. Accepted and stored; a single node replicates to no one.")
_key("local.retention.bytes", "long", -2, _at_least(-2), "log.local.retention.bytes",
     "Local retention size for tiered topics; -2 means retention.bytes.")
_key("local.retention.ms", "long", -2, _at_least(-2), "log.local.retention.ms",
     "Local retention time for tiered topics; -2 means retention.ms.")
_key("max.compaction.lag.ms", "long", LONG_MAX, _at_least(1), "log.cleaner.max.compaction.lag.ms",
     "Longest a record may stay uncompacted.")
_key("max.decompressed.message.bytes", "int", 2_147_483_639, _between(1, 2_147_483_639), "max.decompressed.message.bytes",
     "Largest size a compressed batch may reach once decompressed. Accepted and stored; asyncbroker "
     "decompresses only batches it must inspect and does not enforce this bound yet.")
_key("max.message.bytes", "int", 1_048_588, _at_least(0), "message.max.bytes",
     "Largest record batch the topic accepts.")
_key("message.timestamp.after.max.ms", "long", 3_600_000, _at_least(0), "log.message.timestamp.after.max.ms",
     "How far in the future a CreateTime timestamp may be.")
_key("message.timestamp.before.max.ms", "long", LONG_MAX, _at_least(0), "log.message.timestamp.before.max.ms",
     "How far in the past a CreateTime timestamp may be.")
_key("message.timestamp.type", "string", "CreateTime", _one_of("CreateTime", "LogAppendTime"),
     "log.message.timestamp.type", "Whether record timestamps come from the producer or the broker.")
_key("min.cleanable.dirty.ratio", "double", 0.5, _between(0, 1), "log.cleaner.min.cleanable.ratio",
     "Dirty ratio above which a compacted log is eligible for cleaning.")
_key("min.compaction.lag.ms", "long", 0, _at_least(0), "log.cleaner.min.compaction.lag.ms",
     "Minimum age before a record may be compacted.")
_key("min.insync.replicas", "int", 1, _at_least(1), "min.insync.replicas",
     "Replicas that must acknowledge an acks=all write.")
_key("preallocate", "boolean", False, None, "log.preallocate",
     "Preallocate the segment file to segment.bytes on creation.")
_key("remote.copy.lag.bytes", "long", -1, _at_least(-1), "log.remote.copy.lag.bytes",
     "How many bytes a tiered topic's local log may run ahead of remote storage before its segments "
     "are copied. Accepted and stored; asyncbroker has no remote storage.")
_key("remote.copy.lag.ms", "long", 0, _at_least(-1), "log.remote.copy.lag.ms",
     "How long a tiered topic's closed segments may wait before they are copied to remote storage. "
     "Accepted and stored; asyncbroker has no remote storage.")
_key("remote.log.copy.disable", "boolean", False, None, None,
     "Stop copying segments to remote storage. Accepted and stored; asyncbroker has no remote storage.")
_key("remote.log.delete.on.disable", "boolean", False, None, None,
     "Delete remote data when remote storage is disabled. Accepted and stored; asyncbroker has no remote storage.")
_key("remote.storage.enable", "boolean", False, None, None,
     "Tiered storage for the topic. Accepted and stored; asyncbroker keeps every segment local.")
_key("retention.bytes", "long", -1, None, "log.retention.bytes", "Largest size of the log before old segments go.")
_key("retention.ms", "long", 604_800_000, _at_least(-1), "log.retention.ms",
     "Age after which old segments are deleted; -1 keeps them forever.")
_key("segment.bytes", "int", 1_073_741_824, _at_least(1_048_576), "log.segment.bytes",
     "Size at which the active segment rolls.")
_key("segment.index.bytes", "int", 10_485_760, _at_least(4), "log.index.size.max.bytes",
     "Preallocated size of each offset/time index.")
_key("segment.jitter.ms", "long", 0, _at_least(0), "log.roll.jitter.ms",
     "Random jitter subtracted from segment.ms.")
_key("segment.ms", "long", 604_800_000, _at_least(1), "log.roll.ms",
     "Age at which a non-empty active segment rolls.")
_key("unclean.leader.election.enable", "boolean", False, None, "unclean.leader.election.enable",
     "Allow an out-of-sync replica to become leader. Accepted and stored; a single node's replica is always in sync.")

TOPIC_CONFIG_KEYS: dict[str, ConfigKey] = {k.name: k for k in _KEYS}
"""Kafka key -> its definition (type, default, validator, doc, broker key, python field)."""

_INTEGER = re.compile(r"[+-]?[0-9]+")


class _NotParsable(ValueError):
    """The text is not a value of the key's type (Kafka names the raw text, untrimmed)."""


def _parse(key: ConfigKey, raw: Any) -> Any:
    """Parse a property value into the key's type as Kafka's ConfigDef.parseType does."""
    if not isinstance(raw, str):
        if key.type == "list" and isinstance(raw, (list, tuple)):
            return tuple(str(x).strip() for x in raw)
        if key.type == "boolean" and isinstance(raw, bool):
            return raw
        if key.type in ("long", "int") and isinstance(raw, int) and not isinstance(raw, bool):
            return raw
        if key.type == "double" and isinstance(raw, (int, float)) and not isinstance(raw, bool):
            return float(raw)
        raw = str(raw)
    text = raw.strip()
    if key.type in ("long", "int"):
        bits = 63 if key.type == "long" else 31
        if not _INTEGER.fullmatch(text) or not -(2**bits) <= int(text) < 2**bits:
            raise _NotParsable(f"Not a number of type {key.type.upper()}")
        return int(text)
    if key.type == "double":
        return parse_java_double(text)
    if key.type == "boolean":
        lowered = text.lower()
        if lowered not in ("true", "false"):
            raise _NotParsable("Expected value to be either true or false")
        return lowered == "true"
    if key.type == "list":
        return tuple(x.strip() for x in text.split(",") if x.strip())
    return text


_JAVA_DECIMAL = re.compile(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?)")
_JAVA_HEX = re.compile(r"[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+[fFdD]?")


def parse_java_double(text: str) -> float:
    """Double.parseDouble's grammar, which Kafka's DOUBLE configs use: "NaN" and "Infinity"
    spelled so, decimal and hexadecimal forms with an optional f/d suffix; not Python's
    "nan", "inf" or "1_0"."""
    if _JAVA_DECIMAL.fullmatch(text):
        return float(text.rstrip("fFdD") if not text.endswith("Infinity") else text.replace("Infinity", "inf"))
    if _JAVA_HEX.fullmatch(text):
        return float.fromhex(text.rstrip("fFdD"))
    raise _NotParsable("Not a number of type DOUBLE")


def _format(key: ConfigKey, value: Any) -> str:
    if key.type == "boolean":
        return "true" if value else "false"
    if key.type == "list":
        return ",".join(value)
    return str(value)


class LogConfig(msgspec.Struct, frozen=True):
    """Topic-level log settings. Construct directly in tests (no validation), or via from_props."""

    cleanup_policy: tuple[str, ...] = ("delete",)
    compression_type: str = "producer"
    compression_gzip_level: int = -1
    compression_lz4_level: int = 9
    compression_zstd_level: int = 3
    delete_retention_ms: int = 86_400_000
    errors_deadletterqueue_group_enable: bool = False
    file_delete_delay_ms: int = 60_000
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    follower_replication_throttled_replicas: tuple[str, ...] = ()
    index_interval_bytes: int = 4096
    leader_replication_throttled_replicas: tuple[str, ...] = ()
    local_retention_bytes: int = -2
    local_retention_ms: int = -2
    max_compaction_lag_ms: int = LONG_MAX
    max_decompressed_message_bytes: int = 2_147_483_639
    max_message_bytes: int = 1_048_588
    message_timestamp_after_max_ms: int = 3_600_000
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_type: str = "CreateTime"
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    min_insync_replicas: int = 1
    preallocate: bool = False
    remote_copy_lag_bytes: int = -1
    remote_copy_lag_ms: int = 0
    remote_log_copy_disable: bool = False
    remote_log_delete_on_disable: bool = False
    remote_storage_enable: bool = False
    retention_bytes: int = -1
    retention_ms: int = 604_800_000
    segment_bytes: int = 1_073_741_824
    segment_index_bytes: int = 10_485_760
    segment_jitter_ms: int = 0
    segment_ms: int = 604_800_000
    unclean_leader_election_enable: bool = False

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
            key = TOPIC_CONFIG_KEYS.get(name)
            if key is None:
                raise InvalidConfigurationError(f"Unknown topic config name: {name}")
            values[key.field] = _parse_and_validate(key, raw)
        config = cls(**values)
        config.validate()
        return config

    @classmethod
    def from_broker_props(cls, props: Mapping[str, Any]) -> "LogConfig":
        """Topic defaults from broker (server.properties) keys such as log.segment.bytes / log.retention.hours."""
        values = msgspec.structs.asdict(cls())
        for key in _KEYS:
            if key.broker_key is not None and key.broker_key in props:
                values[key.field] = _parse_and_validate(key, props[key.broker_key], shown=key.broker_key)
        # Kafka's precedence: log.retention.ms > .minutes > .hours; log.roll.ms > log.roll.hours.
        retention = TOPIC_CONFIG_KEYS["retention.ms"]
        if "log.retention.ms" not in props:
            if "log.retention.minutes" in props:
                values["retention_ms"] = _int_prop(props, "log.retention.minutes") * 60_000
            elif "log.retention.hours" in props:
                values["retention_ms"] = _int_prop(props, "log.retention.hours") * 3_600_000
            if values["retention_ms"] < 0:
                values["retention_ms"] = -1
        _ = retention
        if "log.roll.ms" not in props and "log.roll.hours" in props:
            values["segment_ms"] = _int_prop(props, "log.roll.hours") * 3_600_000
        if "log.roll.jitter.ms" not in props and "log.roll.jitter.hours" in props:
            values["segment_jitter_ms"] = _int_prop(props, "log.roll.jitter.hours") * 3_600_000
        if "log.flush.interval.ms" not in props and "log.flush.scheduler.interval.ms" in props:
            values["flush_ms"] = _int_prop(props, "log.flush.scheduler.interval.ms")
        config = cls(**values)
        config.validate()
        return config

    def to_props(self) -> dict[str, str]:
        """All keys with Kafka's names and string values."""
        return {key.name: _format(key, getattr(self, key.field)) for key in _KEYS}

    def overrides(self, base: "LogConfig") -> dict[str, str]:
        """The keys whose value differs from `base` (what a topic override file stores)."""
        return {
            key.name: _format(key, getattr(self, key.field))
            for key in _KEYS
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


def _int_prop(props: Mapping[str, Any], name: str) -> int:
    try:
        return int(str(props[name]).strip())
    except ValueError:
        raise InvalidConfigurationError(f"Invalid value {props[name]} for configuration {name}") from None


def _parse_and_validate(key: ConfigKey, raw: Any, shown: str | None = None) -> Any:
    """Kafka's ConfigException text: a value that does not parse is named as given, a value
    that parses but breaks its validator is named as parsed (Java's toString)."""
    name = shown or key.name
    try:
        value = _parse(key, raw)
    except _NotParsable as exc:
        raise InvalidConfigurationError(f"Invalid value {raw} for configuration {name}: {exc}") from None
    if key.validator is not None:
        try:
            problem = key.validator(value)
        except _ItemProblem as item:
            raise InvalidConfigurationError(
                f"Invalid value {item.item} for configuration {name}: {item.message}") from None
        if problem is not None:
            raise InvalidConfigurationError(
                f"Invalid value {java_number(value)} for configuration {name}: {problem}")
    return value
