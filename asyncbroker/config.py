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
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from storage.log_config import TOPIC_CONFIG_KEYS, LogConfig, java_double, java_number, parse_java_double
from wire.errors import InvalidConfigurationError

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1
DOUBLE_MAX = 1.7976931348623157e308
ENV_PREFIX = "ASYNCBROKER_"


class ConfigException(ValueError):
    """A configuration key is unknown or its value is invalid (Kafka's ConfigException)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


class ConfigType(enum.IntEnum):
    """Kafka's ConfigDef types, numbered as DescribeConfigs reports them (config_type)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


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


# ---------------------------------------------------------------- validators


class AtLeast(msgspec.Struct, frozen=True):
    minimum: float

    def __call__(self, key: str, value: Any) -> None:
        if value is not None and value < self.minimum:
            raise ConfigException(
                key, f"Invalid value {java_number(value)} for configuration {key}: Value must be at least {_num(self.minimum)}"
            )


class Between(msgspec.Struct, frozen=True):
    low: float
    high: float

    def __call__(self, key: str, value: Any) -> None:
        # Kafka's Range names the bound that was crossed, the lower one first.
        if value is not None and value < self.low:
            raise ConfigException(
                key, f"Invalid value {java_number(value)} for configuration {key}: Value must be at least {_num(self.low)}"
            )
        if value is not None and value > self.high:
            raise ConfigException(
                key, f"Invalid value {java_number(value)} for configuration {key}: Value must be no more than {_num(self.high)}"
            )


class OneOf(msgspec.Struct, frozen=True):
    """A string from a fixed set; `case_sensitive=False` like Kafka's CaseInsensitiveValidString."""

    values: tuple[str, ...]
    case_sensitive: bool = True

    def __call__(self, key: str, value: Any) -> None:
        if value is None:
            return
        items = value if isinstance(value, list) else [value]
        allowed = self.values if self.case_sensitive else tuple(v.lower() for v in self.values)
        for item in items:
            probe = item if self.case_sensitive else item.lower()
            if probe not in allowed:
                raise ConfigException(
                    key,
                    f"Invalid value {item} for configuration {key}: String must be one of: {', '.join(self.values)}",
                )


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


Validator = Callable[[str, Any], None]


class ConfigKey(msgspec.Struct, frozen=True):
    """One broker key: its type, default (already parsed), validator and documentation."""

    name: str
    type: ConfigType
    default: Any
    doc: str
    validator: Validator | None = None
    # Set when the key is accepted for compatibility with Kafka's server.properties
    # but has no effect on a single-node broker.
    inert: bool = False
    # Kafka defines the key as internal: accepted, never listed by DescribeConfigs.
    internal: bool = False

    @property
    def field(self) -> str:
        return self.name.replace(".", "_")

    @property
    def env_name(self) -> str:
        return ENV_PREFIX + self.name.upper().replace(".", "_").replace("-", "_")


def _k(name: str, type_: ConfigType, default: Any, doc: str, validator: Validator | None = None,
       inert: bool = False, internal: bool = False) -> ConfigKey:
    return ConfigKey(name, type_, default, doc, validator, inert, internal)


B, S, I, L, D, LS, P = (ConfigType.BOOLEAN, ConfigType.STRING, ConfigType.INT, ConfigType.LONG,
                        ConfigType.DOUBLE, ConfigType.LIST, ConfigType.PASSWORD)

COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

_KEYS: list[ConfigKey] = [
    # -- identity and network
    _k("node.id", I, 1, "The id of this node; reported in Metadata and DescribeCluster.", AtLeast(0)),
    _k("broker.id", I, -1, "Older name of node.id; used only when node.id is not set.", AtLeast(-1)),
    _k("listeners", LS, ["PLAINTEXT://127.0.0.1:9092"],
       "Where the broker accepts connections, as NAME://host:port. An empty host or 0.0.0.0 binds every interface."),
    _k("advertised.listeners", LS, None,
       "The address clients are told to connect to (Metadata). Defaults to listeners; must be set when "
       "listeners binds 0.0.0.0, e.g. inside a container."),
    _k("listener.security.protocol.map", LS,
       ["CONTROLLER:PLAINTEXT", "PLAINTEXT:PLAINTEXT", "SSL:SSL", "SASL_PLAINTEXT:SASL_PLAINTEXT", "SASL_SSL:SASL_SSL"],
       "Maps listener names to security protocols; only PLAINTEXT is served."),
    _k("controller.listener.names", LS, [], "Listener names used by a KRaft controller; such listeners are not served.", inert=True),
    _k("inter.broker.listener.name", S, None, "Accepted for compatibility; a single node has no inter-broker traffic.", inert=True),
    _k("process.roles", LS, ["broker", "controller"], "Accepted for compatibility; this node is both broker and controller.", inert=True),
    _k("controller.quorum.voters", LS, [], "Accepted for compatibility; there is no controller quorum.", inert=True),
    _k("controller.quorum.bootstrap.servers", LS, [], "Accepted for compatibility; there is no controller quorum.", inert=True),
    _k("num.network.threads", I, 3, "Accepted for compatibility; connections are served by one event loop.", AtLeast(1), inert=True),
    _k("num.io.threads", I, 8, "Threads of the pool that runs blocking disk work (appends, reads, fsync).", AtLeast(1)),
    _k("socket.send.buffer.bytes", I, 102400, "SO_SNDBUF for client sockets; -1 keeps the OS default.", AtLeast(-1)),
    _k("socket.receive.buffer.bytes", I, 102400, "SO_RCVBUF for client sockets; -1 keeps the OS default.", AtLeast(-1)),
    _k("socket.request.max.bytes", I, 104857600, "The largest request frame accepted; larger frames close the connection.", AtLeast(1)),
    _k("connections.max.idle.ms", L, 600000, "Idle connections are closed after this many milliseconds."),
    _k("queued.max.requests", I, 500, "Pipelined requests read ahead per connection before reading pauses.", AtLeast(1)),
    # -- topics
    _k("num.partitions", I, 1, "Partitions of a topic created without an explicit count.", AtLeast(1)),
    _k("default.replication.factor", I, 1, "Replication factor of topics created without one; a single node supports only 1.", Between(1, 1)),
    _k("auto.create.topics.enable", B, True, "Create a topic on first Metadata/Produce reference to it."),
    _k("delete.topic.enable", B, True, "Whether DeleteTopics is allowed."),
    _k("message.max.bytes", I, 1048588, "Largest record batch accepted (broker default of max.message.bytes).", AtLeast(0)),
    _k("max.decompressed.message.bytes", I, 2147483639,
       "Default of the topic key max.decompressed.message.bytes; stored and described, not enforced yet.", Between(1, 2147483639)),
    _k("fetch.max.bytes", I, 57671680, "Upper bound on the bytes returned by one Fetch.", AtLeast(1024)),
    _k("min.insync.replicas", I, 1, "Default of the topic key min.insync.replicas.", AtLeast(1)),
    _k("unclean.leader.election.enable", B, False, "Default of the topic key; no effect on a single node."),
    _k("compression.type", S, "producer", "Default compression of stored batches; 'producer' keeps what the producer sent.",
       OneOf(COMPRESSION_TYPES, case_sensitive=False)),
    _k("compression.gzip.level", I, -1, "gzip level when the broker compresses (-1: codec default).", Between(-1, 9)),
    _k("compression.lz4.level", I, 9, "lz4 level when the broker compresses.", Between(1, 17)),
    _k("compression.zstd.level", I, 3, "zstd level when the broker compresses.", Between(-131072, 22)),
    _k("offsets.topic.num.partitions", I, 50, "Partitions of __consumer_offsets.", AtLeast(1)),
    _k("offsets.topic.replication.factor", I, 1, "Replication of __consumer_offsets; only 1 on one node.", AtLeast(1), inert=True),
    _k("offsets.topic.segment.bytes", I, 104857600, "segment.bytes of __consumer_offsets.", AtLeast(1)),
    _k("offsets.retention.minutes", I, 10080, "Committed offsets of empty groups are kept this long.", AtLeast(1)),
    _k("transaction.state.log.replication.factor", I, 1, "Accepted for compatibility.", AtLeast(1), inert=True),
    _k("transaction.state.log.min.isr", I, 1, "Accepted for compatibility.", AtLeast(1), inert=True),
    _k("share.coordinator.state.topic.replication.factor", I, 1, "Accepted for compatibility.", AtLeast(1), inert=True),
    _k("share.coordinator.state.topic.min.isr", I, 1, "Accepted for compatibility.", AtLeast(1), inert=True),
    _k("group.initial.rebalance.delay.ms", I, 3000, "Delay before the first rebalance of a new group.", AtLeast(0)),
    _k("group.min.session.timeout.ms", I, 6000, "Smallest session timeout a group member may ask for."),
    _k("group.max.session.timeout.ms", I, 1800000, "Largest session timeout a group member may ask for."),
    _k("group.max.size", I, INT_MAX, "Most members a classic group may have.", AtLeast(1)),
    _k("offsets.retention.check.interval.ms", L, 600000, "Period of the expired-offsets cleanup.", AtLeast(1)),
    _k("offset.metadata.max.bytes", I, 4096, "Largest metadata string of a committed offset."),
    _k("producer.id.expiration.ms", I, 86400000,
       "Producer state of an idle producer id is dropped after this long.", AtLeast(1)),
    _k("producer.id.expiration.check.interval.ms", I, 600000, "Period of the producer id expiration check.", AtLeast(1),
       internal=True),
    _k("transactional.id.expiration.ms", I, 604800000,
       "A transactional id with no transaction for this long is removed by the transaction coordinator.", AtLeast(1)),
    _k("transaction.max.timeout.ms", I, 900000, "Largest transaction.timeout.ms a producer may ask for.", AtLeast(1)),
    _k("transaction.state.log.num.partitions", I, 50, "Partitions of __transaction_state.", AtLeast(1)),
    _k("transaction.state.log.segment.bytes", I, 104857600, "segment.bytes of __transaction_state.", AtLeast(1)),
    _k("transaction.state.log.load.buffer.size", I, 5242880,
       "Accepted for compatibility; __transaction_state is read in chunks of its own size.", AtLeast(1), inert=True),
    _k("transaction.abort.timed.out.transaction.cleanup.interval.ms", I, 10000,
       "Period of the check that aborts transactions open past their timeout.", AtLeast(1)),
    _k("transaction.remove.expired.transaction.cleanup.interval.ms", I, 3600000,
       "Period of the removal of expired transactional ids.", AtLeast(1)),
    _k("transaction.partition.verification.enable", B, True,
       "Check that a transactional produce's partition is in its transaction (KIP-890)."),
    # -- log directories and background tasks
    _k("log.dirs", LS, None, "Directories holding the partition logs (comma-separated). Defaults to log.dir."),
    _k("log.dir", S, "./data", "The log directory used when log.dirs is not set."),
    _k("num.recovery.threads.per.data.dir", I, 2, "Threads per log dir loading/recovering logs at startup and closing them at shutdown.", AtLeast(1)),
    _k("log.initial.task.delay.ms", L, 30000, "Delay before the background log tasks first run.", AtLeast(0)),
    _k("log.retention.check.interval.ms", L, 300000, "Period of the retention task.", AtLeast(1)),
    _k("log.flush.scheduler.interval.ms", L, LONG_MAX, "Period of the task that flushes logs whose flush.ms has elapsed."),
    _k("log.flush.offset.checkpoint.interval.ms", I, 60000, "Period of the recovery-point checkpoint task.", AtLeast(0)),
    _k("log.flush.start.offset.checkpoint.interval.ms", I, 60000, "Period of the log-start-offset checkpoint task.", AtLeast(0)),
    _k("replica.high.watermark.checkpoint.interval.ms", L, 5000, "Period of the high-watermark checkpoint task.", AtLeast(1)),
    # -- topic defaults (log.* keys feed topic-level keys)
    _k("log.segment.bytes", I, 1073741824, "Default segment.bytes: the size at which a segment is rolled.", AtLeast(1024 * 1024)),
    _k("log.roll.ms", L, None, "Default segment.ms; takes precedence over log.roll.hours."),
    _k("log.roll.hours", I, 168, "Default segment.ms, in hours.", AtLeast(1)),
    _k("log.roll.jitter.ms", L, None, "Default segment.jitter.ms; takes precedence over log.roll.jitter.hours."),
    _k("log.roll.jitter.hours", I, 0, "Default segment.jitter.ms, in hours.", AtLeast(0)),
    _k("log.index.size.max.bytes", I, 10485760, "Default segment.index.bytes: the preallocated size of an index file.", AtLeast(4)),
    _k("log.index.interval.bytes", I, 4096, "Default index.interval.bytes: log bytes between offset index entries.", AtLeast(0)),
    _k("log.flush.interval.messages", L, LONG_MAX, "Default flush.messages: fsync after this many messages.", AtLeast(1)),
    _k("log.flush.interval.ms", L, None, "Default flush.ms; when unset log.flush.scheduler.interval.ms is used."),
    _k("log.retention.ms", L, None, "Default retention.ms; -1 keeps data forever. Takes precedence over minutes/hours."),
    _k("log.retention.minutes", I, None, "Default retention.ms, in minutes; takes precedence over hours."),
    _k("log.retention.hours", I, 168, "Default retention.ms, in hours."),
    _k("log.retention.bytes", L, -1, "Default retention.bytes: per-partition size bound; -1 for none."),
    _k("log.local.retention.ms", L, -2, "Default local.retention.ms (tiered storage; -2 follows retention.ms).", AtLeast(-2)),
    _k("log.remote.copy.lag.bytes", L, -1, "Default remote.copy.lag.bytes (tiered storage, which asyncbroker has not).", AtLeast(-1)),
    _k("log.remote.copy.lag.ms", L, 0, "Default remote.copy.lag.ms (tiered storage, which asyncbroker has not).", AtLeast(-1)),
    _k("log.local.retention.bytes", L, -2, "Default local.retention.bytes (tiered storage; -2 follows retention.bytes).", AtLeast(-2)),
    _k("log.cleanup.policy", LS, ["delete"], "Default cleanup.policy: delete, compact or both.", OneOf(("delete", "compact"))),
    _k("log.segment.delete.delay.ms", L, 60000, "Default file.delete.delay.ms: delay before a deleted segment's files are unlinked.", AtLeast(0)),
    _k("log.preallocate", B, False, "Default preallocate: create segment files at full size."),
    _k("log.message.timestamp.type", S, "CreateTime", "Default message.timestamp.type.", OneOf(("CreateTime", "LogAppendTime"))),
    _k("log.message.timestamp.before.max.ms", L, LONG_MAX, "Default message.timestamp.before.max.ms.", AtLeast(0)),
    _k("log.message.timestamp.after.max.ms", L, 3600000, "Default message.timestamp.after.max.ms.", AtLeast(0)),
    # -- cleaner
    _k("log.cleaner.enable", B, True, "Deprecated; the cleaner always runs."),
    _k("log.cleaner.threads", I, 1, "Cleaner worker processes.", AtLeast(0)),
    _k("log.cleaner.dedupe.buffer.size", L, 134217728, "Memory for the offset maps across all cleaner threads."),
    _k("log.cleaner.io.buffer.load.factor", D, 0.9, "How full the offset map may get before a pass stops."),
    _k("log.cleaner.io.buffer.size", I, 524288, "Read+write buffer memory across all cleaner threads.", AtLeast(0)),
    _k("log.cleaner.io.max.bytes.per.second", D, DOUBLE_MAX, "I/O throttle shared by the cleaner threads."),
    _k("log.cleaner.backoff.ms", L, 15000, "Pause when no log needs cleaning.", AtLeast(0)),
    _k("log.cleaner.min.cleanable.ratio", D, 0.5, "Default min.cleanable.dirty.ratio.", Between(0, 1)),
    _k("log.cleaner.delete.retention.ms", L, 86400000, "Default delete.retention.ms: how long tombstones are kept.", AtLeast(0)),
    _k("log.cleaner.min.compaction.lag.ms", L, 0, "Default min.compaction.lag.ms.", AtLeast(0)),
    _k("log.cleaner.max.compaction.lag.ms", L, LONG_MAX, "Default max.compaction.lag.ms.", AtLeast(1)),
]

BROKER_CONFIG_KEYS: dict[str, ConfigKey] = {k.name: k for k in _KEYS}
_BY_ENV: dict[str, str] = {k.env_name: k.name for k in _KEYS}

# topic key -> broker keys that supply its default, highest precedence first
# (the synonyms DescribeConfigs lists after a topic override).
TOPIC_DEFAULT_SYNONYMS: dict[str, tuple[str, ...]] = {
    "cleanup.policy": ("log.cleanup.policy",),
    "compression.type": ("compression.type",),
    "compression.gzip.level": ("compression.gzip.level",),
    "compression.lz4.level": ("compression.lz4.level",),
    "compression.zstd.level": ("compression.zstd.level",),
    "delete.retention.ms": ("log.cleaner.delete.retention.ms",),
    "file.delete.delay.ms": ("log.segment.delete.delay.ms",),
    "flush.messages": ("log.flush.interval.messages",),
    "flush.ms": ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    "index.interval.bytes": ("log.index.interval.bytes",),
    "local.retention.bytes": ("log.local.retention.bytes",),
    "local.retention.ms": ("log.local.retention.ms",),
    "max.compaction.lag.ms": ("log.cleaner.max.compaction.lag.ms",),
    "max.decompressed.message.bytes": ("max.decompressed.message.bytes",),
    "max.message.bytes": ("message.max.bytes",),
    "message.timestamp.after.max.ms": ("log.message.timestamp.after.max.ms",),
    "message.timestamp.before.max.ms": ("log.message.timestamp.before.max.ms",),
    "message.timestamp.type": ("log.message.timestamp.type",),
    "min.cleanable.dirty.ratio": ("log.cleaner.min.cleanable.ratio",),
    "min.compaction.lag.ms": ("log.cleaner.min.compaction.lag.ms",),
    "min.insync.replicas": ("min.insync.replicas",),
    "preallocate": ("log.preallocate",),
    "remote.copy.lag.bytes": ("log.remote.copy.lag.bytes",),
    "remote.copy.lag.ms": ("log.remote.copy.lag.ms",),
    "retention.bytes": ("log.retention.bytes",),
    "retention.ms": ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    "segment.bytes": ("log.segment.bytes",),
    "segment.index.bytes": ("log.index.size.max.bytes",),
    "segment.jitter.ms": ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    "segment.ms": ("log.roll.ms", "log.roll.hours"),
    "unclean.leader.election.enable": ("unclean.leader.election.enable",),
}


# Broker keys that share a meaning, highest precedence first (Kafka's broker synonyms: each
# key of a family lists the whole family).
_SYNONYM_FAMILIES: tuple[tuple[str, ...], ...] = (
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
)
BROKER_SYNONYMS: dict[str, tuple[str, ...]] = {name: family for family in _SYNONYM_FAMILIES for name in family}

# The broker keys Kafka 4.4 reconfigures at runtime (IncrementalAlterConfigs on a BROKER
# resource): the broker defaults of topic keys, the cleaner's and thread pools' knobs. The
# rest answer "Cannot update these configs dynamically". Found by asking Kafka 4.4 itself.
DYNAMIC_BROKER_KEYS: frozenset[str] = frozenset({
    *(synonyms[0] for synonyms in TOPIC_DEFAULT_SYNONYMS.values()),
    "log.cleaner.backoff.ms", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.buffer.size", "log.cleaner.io.max.bytes.per.second", "log.cleaner.threads",
    "num.io.threads", "num.network.threads", "num.recovery.threads.per.data.dir", "producer.id.expiration.ms",
    "listeners", "listener.security.protocol.map", "transaction.partition.verification.enable",
})
# Dynamic keys that only a named broker may take, never the cluster-wide default ("").
PER_BROKER_ONLY_KEYS: frozenset[str] = frozenset({"listeners", "listener.security.protocol.map"})
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


def parse_value(key: ConfigKey, raw: str) -> Any:
    """Parse a string as Kafka's ConfigDef does for the key's type; ConfigException otherwise."""
    text = raw.strip()
    t = key.type
    try:
        if t is ConfigType.BOOLEAN:
            low = text.lower()
            if low not in ("true", "false"):
                raise ValueError
            return low == "true"
        if t in (ConfigType.INT, ConfigType.SHORT, ConfigType.LONG):
            if not re.fullmatch(r"[+-]?\d+", text):
                raise ValueError
            value = int(text)
            limit = {ConfigType.INT: 2**31, ConfigType.SHORT: 2**15, ConfigType.LONG: 2**63}[t]
            if not -limit <= value < limit:
                raise ValueError
            return value
        if t is ConfigType.DOUBLE:
            value_f = parse_java_double(text)  # Java's grammar: no "inf", "nan" or "1_0"
            if value_f != value_f:  # NaN: no broker setting is meaningful as NaN
                raise ValueError
            return value_f
        if t is ConfigType.LIST:
            return [item.strip() for item in text.split(",") if item.strip()] if text else []
        return text
    except ValueError:
        expected = {
            ConfigType.BOOLEAN: "Expected value to be either true or false",
            ConfigType.INT: "Not a number of type INT",
            ConfigType.SHORT: "Not a number of type SHORT",
            ConfigType.LONG: "Not a number of type LONG",
            ConfigType.DOUBLE: "Not a number of type DOUBLE",
        }.get(t, "Invalid value")
        raise ConfigException(key.name, f"Invalid value {raw} for configuration {key.name}: {expected}") from None


def format_value(value: Any) -> str | None:
    """Render a parsed value as Kafka prints it in DescribeConfigs."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    if isinstance(value, float):
        return java_double(value)  # 1.7976931348623157E308, as Java prints it
    return str(value)


def parse_properties(text: str) -> dict[str, str]:
    """java.util.Properties text format: `#`/`!` comments, `=`/`:`/space separators,
    backslash line continuation and escapes (\\t, \\n, \\uXXXX, \\=...)."""
    out: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].lstrip()
        i += 1
        if not line or line[0] in "#!":
            continue
        # Join continuation lines: an odd number of trailing backslashes continues.
        while _ends_with_continuation(line) and i <= len(lines):
            line = line[:-1] + (lines[i].lstrip() if i < len(lines) else "")
            i += 1
        key_chars: list[str] = []
        j = 0
        while j < len(line):
            c = line[j]
            if c == "\\" and j + 1 < len(line):
                key_chars.append(line[j : j + 2])
                j += 2
                continue
            if c in "=: \t\f":
                break
            key_chars.append(c)
            j += 1
        # Separator: whitespace, then at most one '=' or ':', then whitespace.
        while j < len(line) and line[j] in " \t\f":
            j += 1
        if j < len(line) and line[j] in "=:":
            j += 1
        while j < len(line) and line[j] in " \t\f":
            j += 1
        out[_unescape("".join(key_chars))] = _unescape(line[j:])
    return out


def _ends_with_continuation(line: str) -> bool:
    n = len(line) - len(line.rstrip("\\"))
    return n % 2 == 1


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out: list[str] = []
    j = 0
    while j < len(s):
        c = s[j]
        if c != "\\" or j + 1 >= len(s):
            out.append(c)
            j += 1
            continue
        n = s[j + 1]
        if n == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", s[j + 2 : j + 6] or ""):
            out.append(chr(int(s[j + 2 : j + 6], 16)))
            j += 6
            continue
        out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(n, n))
        j += 2
    return "".join(out)


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


class KafkaConfig(msgspec.Struct, kw_only=True):
    """Parsed broker configuration; field names are the Kafka keys with dots as underscores."""

    node_id: int = 1
    broker_id: int = -1
    listeners: list[str] = msgspec.field(default_factory=lambda: ["PLAINTEXT://127.0.0.1:9092"])
    advertised_listeners: list[str] | None = None
    listener_security_protocol_map: list[str] = msgspec.field(
        default_factory=lambda: list(BROKER_CONFIG_KEYS["listener.security.protocol.map"].default)
    )
    controller_listener_names: list[str] = msgspec.field(default_factory=list)
    inter_broker_listener_name: str | None = None
    process_roles: list[str] = msgspec.field(default_factory=lambda: ["broker", "controller"])
    controller_quorum_voters: list[str] = msgspec.field(default_factory=list)
    controller_quorum_bootstrap_servers: list[str] = msgspec.field(default_factory=list)
    num_network_threads: int = 3
    num_io_threads: int = 8
    socket_send_buffer_bytes: int = 102400
    socket_receive_buffer_bytes: int = 102400
    socket_request_max_bytes: int = 104857600
    connections_max_idle_ms: int = 600000
    queued_max_requests: int = 500
    num_partitions: int = 1
    default_replication_factor: int = 1
    auto_create_topics_enable: bool = True
    delete_topic_enable: bool = True
    message_max_bytes: int = 1048588
    max_decompressed_message_bytes: int = 2147483639
    fetch_max_bytes: int = 57671680
    min_insync_replicas: int = 1
    unclean_leader_election_enable: bool = False
    compression_type: str = "producer"
    compression_gzip_level: int = -1
    compression_lz4_level: int = 9
    compression_zstd_level: int = 3
    offsets_topic_num_partitions: int = 50
    offsets_topic_replication_factor: int = 1
    offsets_topic_segment_bytes: int = 104857600
    offsets_retention_minutes: int = 10080
    transaction_state_log_replication_factor: int = 1
    transaction_state_log_min_isr: int = 1
    share_coordinator_state_topic_replication_factor: int = 1
    share_coordinator_state_topic_min_isr: int = 1
    group_initial_rebalance_delay_ms: int = 3000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_max_size: int = INT_MAX
    offsets_retention_check_interval_ms: int = 600000
    offset_metadata_max_bytes: int = 4096
    producer_id_expiration_ms: int = 86400000
    producer_id_expiration_check_interval_ms: int = 600000
    transactional_id_expiration_ms: int = 604800000
    transaction_max_timeout_ms: int = 900000
    transaction_state_log_num_partitions: int = 50
    transaction_state_log_segment_bytes: int = 104857600
    transaction_state_log_load_buffer_size: int = 5242880
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = 10000
    transaction_remove_expired_transaction_cleanup_interval_ms: int = 3600000
    transaction_partition_verification_enable: bool = True
    log_dirs: list[str] = msgspec.field(default_factory=lambda: ["./data"])
    log_dir: str = "./data"
    num_recovery_threads_per_data_dir: int = 2
    log_initial_task_delay_ms: int = 30000
    log_retention_check_interval_ms: int = 300000
    log_flush_scheduler_interval_ms: int = LONG_MAX
    log_flush_offset_checkpoint_interval_ms: int = 60000
    log_flush_start_offset_checkpoint_interval_ms: int = 60000
    replica_high_watermark_checkpoint_interval_ms: int = 5000
    log_segment_bytes: int = 1073741824
    log_roll_ms: int | None = None
    log_roll_hours: int = 168
    log_roll_jitter_ms: int | None = None
    log_roll_jitter_hours: int = 0
    log_index_size_max_bytes: int = 10485760
    log_index_interval_bytes: int = 4096
    log_flush_interval_messages: int = LONG_MAX
    log_flush_interval_ms: int | None = None
    log_retention_ms: int | None = None
    log_retention_minutes: int | None = None
    log_retention_hours: int = 168
    log_retention_bytes: int = -1
    log_remote_copy_lag_bytes: int = -1
    log_remote_copy_lag_ms: int = 0
    log_local_retention_ms: int = -2
    log_local_retention_bytes: int = -2
    log_cleanup_policy: list[str] = msgspec.field(default_factory=lambda: ["delete"])
    log_segment_delete_delay_ms: int = 60000
    log_preallocate: bool = False
    log_message_timestamp_type: str = "CreateTime"
    log_message_timestamp_before_max_ms: int = LONG_MAX
    log_message_timestamp_after_max_ms: int = 3600000
    log_cleaner_enable: bool = True
    log_cleaner_threads: int = 1
    log_cleaner_dedupe_buffer_size: int = 134217728
    log_cleaner_io_buffer_load_factor: float = 0.9
    log_cleaner_io_buffer_size: int = 524288
    log_cleaner_io_max_bytes_per_second: float = DOUBLE_MAX
    log_cleaner_backoff_ms: int = 15000
    log_cleaner_min_cleanable_ratio: float = 0.5
    log_cleaner_delete_retention_ms: int = 86400000
    log_cleaner_min_compaction_lag_ms: int = 0
    log_cleaner_max_compaction_lag_ms: int = LONG_MAX
    # The keys explicitly given (file, environment, overrides) with their raw
    # values: DescribeConfigs reports these as STATIC_BROKER_CONFIG.
    originals: dict[str, str] = msgspec.field(default_factory=dict)
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
            key = _BY_ENV.get(name)
            if key is None:
                raise ConfigException(name, f"Unknown configuration {name} (environment variable): no broker key matches it")
            props[key] = value
            origins[key] = f"environment variable {name}"
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
        for name, raw in props.items():
            key = BROKER_CONFIG_KEYS.get(name)
            if key is None:
                raise ConfigException(name, f"Unknown configuration {name!r}")
            value = parse_value(key, raw)
            if key.validator is not None:
                key.validator(name, value)
            values[key.field] = value
        # A null-able key explicitly set to an empty string means "unset".
        for name in ("log.dirs", "advertised.listeners"):
            field = BROKER_CONFIG_KEYS[name].field
            if values.get(field) == []:
                values.pop(field)
        if "log_dirs" not in values:
            values["log_dirs"] = [values.get("log_dir", "./data")]
        if "node_id" not in values and values.get("broker_id", -1) >= 0:
            values["node_id"] = values["broker_id"]
        originals = {k: props[k] for k in props}
        if "broker.id" not in props and "node.id" in props:
            # Kafka copies node.id into broker.id when it builds its config, so broker.id is
            # then a static config with node.id's value.
            values["broker_id"] = values["node_id"]
            originals["broker.id"] = props["node.id"]
        config = cls(**values, originals=originals)
        config._check()
        return config

    def _check(self) -> None:
        """Cross-key checks (the ones a single key's validator cannot make)."""
        if not self.log_dirs:
            raise ConfigException("log.dirs", "Invalid value for configuration log.dirs: at least one directory is required")
        served = self.served_listeners()
        if not served:
            raise ConfigException("listeners", f"Invalid value {','.join(self.listeners)} for configuration listeners: no listener to serve")
        proto = self.security_protocols()
        for e in served:
            if proto.get(e.listener_name, e.listener_name) != "PLAINTEXT":
                raise ConfigException(
                    "listeners", f"Invalid value {e} for configuration listeners: only PLAINTEXT listeners are supported"
                )
        if self.advertised_listeners is not None:
            adv = parse_endpoints("advertised.listeners", self.advertised_listeners)
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

        self._check_topic_defaults()

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

    def served_listeners(self) -> list[Endpoint]:
        """The listeners this broker accepts clients on (controller listeners excluded)."""
        controller = {n.upper() for n in self.controller_listener_names}
        return [e for e in parse_endpoints("listeners", self.listeners) if e.listener_name not in controller]

    def listener_host_port(self) -> tuple[str, int]:
        """(host, port) to bind; '0.0.0.0' when the listener's host is empty."""
        e = self.served_listeners()[0]
        return (e.host or "0.0.0.0", e.port)

    def advertised_host_port(self) -> tuple[str, int]:
        """(host, port) clients are told to use in Metadata / DescribeCluster."""
        served = self.served_listeners()[0]
        if self.advertised_listeners:
            adv = parse_endpoints("advertised.listeners", self.advertised_listeners)
            same = [e for e in adv if e.listener_name == served.listener_name]
            chosen = (same or adv)[0]
            return (chosen.host or socket.getfqdn(), chosen.port)
        # An empty host binds every interface; Kafka advertises the local host name then.
        return (served.host or socket.getfqdn(), served.port)

    # ---- topic defaults

    def retention_ms(self) -> int:
        if self.log_retention_ms is not None:
            ms = self.log_retention_ms
        elif self.log_retention_minutes is not None:
            ms = self.log_retention_minutes * 60_000
        else:
            ms = self.log_retention_hours * 3_600_000
        # Kafka treats any negative retention as "unlimited" (-1).
        return -1 if ms < 0 else ms

    def roll_ms(self) -> int:
        return self.log_roll_ms if self.log_roll_ms is not None else self.log_roll_hours * 3_600_000

    def roll_jitter_ms(self) -> int:
        return self.log_roll_jitter_ms if self.log_roll_jitter_ms is not None else self.log_roll_jitter_hours * 3_600_000

    def flush_interval_ms(self) -> int:
        return self.log_flush_interval_ms if self.log_flush_interval_ms is not None else self.log_flush_scheduler_interval_ms

    def topic_config_defaults(self) -> dict[str, str]:
        """Topic key -> default value (string) as this broker's log.* keys define it."""
        resolved: dict[str, Any] = {
            "retention.ms": self.retention_ms(),
            "segment.ms": self.roll_ms(),
            "segment.jitter.ms": self.roll_jitter_ms(),
            "flush.ms": self.flush_interval_ms(),
        }
        out: dict[str, str] = {}
        for topic_key, synonyms in TOPIC_DEFAULT_SYNONYMS.items():
            if topic_key not in TOPIC_CONFIG_KEYS:  # a key storage does not know: not a topic config here
                continue
            dynamic = self.dynamic_value(synonyms[0])
            if dynamic is not None:
                out[topic_key] = dynamic  # a dynamic value of the primary key wins over the family
                continue
            value = resolved[topic_key] if topic_key in resolved else self.get(synonyms[0])
            text = format_value(value)
            if text is not None:
                out[topic_key] = text
        return out

    def log_config_defaults(self) -> LogConfig:
        """The broker-wide defaults for every topic as storage's LogConfig."""
        return LogConfig.from_props(self.topic_config_defaults(), None)

    # ---- introspection (DescribeConfigs BROKER)

    def get(self, name: str) -> Any:
        """Value of a broker key by its Kafka name."""
        return getattr(self, BROKER_CONFIG_KEYS[name].field)

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
        family = BROKER_SYNONYMS.get(name, (name,))
        defaults = self.cluster_defaults()
        out: list[ConfigSynonym] = [ConfigSynonym(k, self.dynamic_broker[k], ConfigSource.DYNAMIC_BROKER_CONFIG)
                                    for k in family if k in self.dynamic_broker]
        out += [ConfigSynonym(k, defaults[k], ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG) for k in family if k in defaults]
        out += [ConfigSynonym(k, format_value(self.get(k)), ConfigSource.STATIC_BROKER_CONFIG)
                for k in family if self.is_explicit(k)]
        out += [ConfigSynonym(k, format_value(BROKER_CONFIG_KEYS[k].default), ConfigSource.DEFAULT_CONFIG)
                for k in family if BROKER_CONFIG_KEYS[k].default is not None and k not in NO_KAFKA_DEFAULT]
        while out and out[0].name != name:
            out.pop(0)
        return tuple(out)

    def describe(self, names: Sequence[str] | None = None) -> list[ConfigEntry]:
        """DescribeConfigs for this broker's BROKER resource: every key (or `names`); the keys
        Kafka reconfigures at runtime are not read-only."""
        wanted = BROKER_CONFIG_KEYS if names is None else [n for n in names if n in BROKER_CONFIG_KEYS]
        entries: list[ConfigEntry] = []
        for name in sorted(wanted):
            key = BROKER_CONFIG_KEYS[name]
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
            key = BROKER_CONFIG_KEYS[name]
            entries.append(ConfigEntry(
                name=name, value=value, source=ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, read_only=False,
                is_sensitive=False, synonyms=(ConfigSynonym(name, value, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),),
                type=key.type, documentation=key.doc,
            ))
        return entries

