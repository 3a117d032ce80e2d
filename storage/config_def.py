"""The config definition table: every broker and topic key asyncbroker knows, declared once.

Each `ConfigKey` holds what Kafka's ConfigDef holds for a key (name, type, default,
validator, documentation) and what the broker needs around it: the broker keys a
topic key falls back to (its DescribeConfigs synonyms, highest precedence first),
whether IncrementalAlterConfigs may change a broker key at runtime, and whether a
key is accepted only for compatibility. Everything else is derived from this table:

- `asyncbroker.config.KafkaConfig` (broker keys) and `storage.log_config.LogConfig`
  (topic keys) are typed views of it: one field per key, named with dots as
  underscores, whose default is read from here (tests/unit/storage/test_config_def.py
  checks that every key has its field, with the matching type, and every field its key).
- A topic key's default is its broker synonyms' default, resolved as Kafka resolves
  them (`resolve_topic_default`), so `log.segment.bytes`'s 1 GiB is written once.
- `cleaner.cleaner_config.CleanerConfig` reads the `log.cleaner.*` keys from here.

It lives in storage, the lowest layer that reads configuration (the topic keys), so
the cleaner and the service can share it without an import running upward.
Documentation is written here, never copied from Kafka; a key whose behaviour is not
built says what asyncbroker does with it, so a user reading DescribeConfigs is not misled.
"""
from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

import msgspec

from wire.errors import InvalidConfigurationError

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1
DOUBLE_MAX = 1.7976931348623157e308


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


class ConfigScope(enum.Enum):
    """Which resource a key configures (the same name may exist in both: compression.type)."""

    BROKER = "broker"
    TOPIC = "topic"
    GROUP = "group"


class ConfigException(InvalidConfigurationError):
    """A key is unknown or its value is invalid (Kafka's ConfigException), naming the key.

    It is an InvalidConfigurationError, so a request that carries the value answers
    INVALID_CONFIG; at startup the CLI prints the message and exits."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


# ---------------------------------------------------------------- Java's value texts


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


_JAVA_DECIMAL = re.compile(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?)")
_JAVA_HEX = re.compile(r"[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+[fFdD]?")


class NotParsable(ValueError):
    """The text is not a value of the key's type (Kafka names the raw text, untrimmed)."""


def parse_java_double(text: str) -> float:
    """Double.parseDouble's grammar, which Kafka's DOUBLE configs use: "NaN" and "Infinity"
    spelled so, decimal and hexadecimal forms with an optional f/d suffix; not Python's
    "nan", "inf" or "1_0"."""
    if _JAVA_DECIMAL.fullmatch(text):
        return float(text.rstrip("fFdD") if not text.endswith("Infinity") else text.replace("Infinity", "inf"))
    if _JAVA_HEX.fullmatch(text):
        return float.fromhex(text.rstrip("fFdD"))
    raise NotParsable("Not a number of type DOUBLE")


# ---------------------------------------------------------------- validators
# A validator returns None for a good value or the reason it is refused; Kafka's message is
# then "Invalid value <value> for configuration <key>: <reason>". A list validator that
# refuses one item raises ItemProblem, since Kafka's ValidList names the item, not the list.


class ItemProblem(Exception):
    """One item of a list value is refused."""

    def __init__(self, item: str, message: str) -> None:
        super().__init__(message)
        self.item = item
        self.message = message


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


class AtLeast(msgspec.Struct, frozen=True):
    minimum: float

    def __call__(self, value: Any) -> str | None:
        return f"Value must be at least {_num(self.minimum)}" if value < self.minimum else None


def parse_host_counts(text: str) -> dict[str, int]:
    """`host:count,host:count` (max.connections.per.ip.overrides; an IPv6 host keeps its
    colons, brackets optional); ValueError naming the entry that is not host:count."""
    out: dict[str, int] = {}
    for entry in (x.strip() for x in text.split(",") if x.strip()):
        host, sep, count = entry.rpartition(":")
        if not sep or not host or not count.isdigit():
            raise ValueError(f"expected host:count, got {entry}")
        out[host.strip("[]")] = int(count)
    return out


class HostCounts(msgspec.Struct, frozen=True):
    """A value parse_host_counts reads."""

    def __call__(self, value: Any) -> str | None:
        try:
            parse_host_counts(str(value))
        except ValueError as exc:
            return str(exc)
        return None


class Between(msgspec.Struct, frozen=True):
    """Kafka's Range.between: the lower bound is checked (and named) first."""

    low: float
    high: float

    def __call__(self, value: Any) -> str | None:
        if value < self.low:
            return f"Value must be at least {_num(self.low)}"
        if value > self.high:
            return f"Value must be no more than {_num(self.high)}"
        return None


class OneOf(msgspec.Struct, frozen=True):
    """A string (or each item of a list) from a fixed set; `case_sensitive=False` like
    Kafka's CaseInsensitiveValidString."""

    values: tuple[str, ...]
    case_sensitive: bool = True

    def __call__(self, value: Any) -> str | None:
        allowed = self.values if self.case_sensitive else tuple(v.lower() for v in self.values)
        reason = f"String must be one of: {', '.join(self.values)}"
        if isinstance(value, (list, tuple)):
            for item in value:
                if (item if self.case_sensitive else item.lower()) not in allowed:
                    raise ItemProblem(item, reason)
            return None
        return None if (value if self.case_sensitive else value.lower()) in allowed else reason


_ISO_DURATION = re.compile(r"-?P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?", re.IGNORECASE)


class ShareAutoOffsetReset(msgspec.Struct, frozen=True):
    """share.auto.offset.reset: earliest, latest or by_duration:<PnDTnHnMn.nS> (not negative)."""

    def __call__(self, value: Any) -> str | None:
        text = str(value).strip().lower()
        if text in ("earliest", "latest"):
            return None
        if text.startswith("by_duration:"):
            duration = text[len("by_duration:"):]
            m = _ISO_DURATION.fullmatch(duration)
            if m is not None and duration not in ("p", "pt") and not duration.startswith("-") and any(m.groups()):
                return None
        return (f"Invalid value `{value}` for configuration share.auto.offset.reset. The value must be either "
                "'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.")


class GzipLevel(msgspec.Struct, frozen=True):
    """compression.gzip.level: 1..9, or -1 for the codec's default."""

    def __call__(self, value: Any) -> str | None:
        return None if value == -1 or 1 <= value <= 9 else "Value must be between 1 and 9 or equal to -1"


_REPLICA = re.compile(r"\s*\d+\s*:\s*\d+\s*")


class ThrottledReplicas(msgspec.Struct, frozen=True):
    """`*` or partition:broker pairs (the *.replication.throttled.replicas keys)."""

    name: str

    def __call__(self, value: Any) -> str | None:
        if tuple(value) == ("*",) or all(_REPLICA.fullmatch(item) for item in value):
            return None
        return (f"{self.name} must be the literal '*' or a list of replicas in the following format: "
                "[partitionId]:[brokerId],[partitionId]:[brokerId],...")


Validator = Callable[[Any], "str | None"]


# ---------------------------------------------------------------- the key


class ConfigKey(msgspec.Struct, frozen=True):
    """One key of the table."""

    name: str
    scope: ConfigScope
    type: ConfigType
    default: Any
    doc: str
    validator: Validator | None = None
    # Topic keys: the broker keys that supply the default, highest precedence first
    # (log.retention.ms, .minutes, .hours); DescribeConfigs lists them as synonyms.
    synonyms: tuple[str, ...] = ()
    # Broker keys IncrementalAlterConfigs changes at runtime (found by asking Kafka 4.4);
    # the rest answer "Cannot update these configs dynamically".
    dynamic: bool = False
    # Dynamic keys that only a named broker may take, never the cluster-wide default ("").
    per_broker_only: bool = False
    # Accepted for compatibility with Kafka's server.properties; no effect on one node.
    inert: bool = False
    # Kafka defines the key as internal: accepted, never listed by DescribeConfigs.
    internal: bool = False

    @property
    def field(self) -> str:
        """The attribute of the typed view (KafkaConfig, LogConfig) that holds the value."""
        return self.name.replace(".", "_")

    @property
    def broker_key(self) -> str | None:
        """The broker key a topic key is named after in DescribeConfigs' first synonym."""
        return self.synonyms[0] if self.synonyms else None


_TABLE: list[ConfigKey] = []
_DERIVED = object()  # a topic key's default: its broker synonyms', resolved


def _broker(name: str, type_: ConfigType, default: Any, doc: str, validator: Validator | None = None, *,
            dynamic: bool = False, per_broker_only: bool = False, inert: bool = False,
            internal: bool = False) -> ConfigKey:
    key = ConfigKey(name, ConfigScope.BROKER, type_, default, doc, validator, (), dynamic, per_broker_only,
                    inert, internal)
    _TABLE.append(key)
    return key


def _topic(name: str, type_: ConfigType, doc: str, validator: Validator | None = None, *,
           synonyms: tuple[str, ...] = (), default: Any = _DERIVED, internal: bool = False) -> None:
    _TABLE.append(ConfigKey(name, ConfigScope.TOPIC, type_, default, doc, validator, synonyms, internal=internal))


def _group(name: str, type_: ConfigType, doc: str, validator: Validator | None = None, *,
           synonyms: tuple[str, ...] = (), default: Any = _DERIVED, internal: bool = False) -> None:
    _TABLE.append(ConfigKey(name, ConfigScope.GROUP, type_, default, doc, validator, synonyms, internal=internal))


B, S, I, L, D, LS, P = (ConfigType.BOOLEAN, ConfigType.STRING, ConfigType.INT, ConfigType.LONG,
                        ConfigType.DOUBLE, ConfigType.LIST, ConfigType.PASSWORD)

COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

# ---------------------------------------------------------------- broker keys

_BROKER_KEYS = [
    # -- identity and network
    _broker("node.id", I, 1, "The id of this node; reported in Metadata and DescribeCluster.", AtLeast(0)),
    _broker("broker.id", I, -1, "Older name of node.id; used only when node.id is not set.", AtLeast(-1)),
    _broker("listeners", LS, ["PLAINTEXT://127.0.0.1:9092"],
            "Where the broker accepts connections, as NAME://host:port. An empty host or 0.0.0.0 binds every interface.", dynamic=True, per_broker_only=True),
    _broker("advertised.listeners", LS, None,
            "The address clients are told to connect to (Metadata). Defaults to listeners; must be set when "
            "listeners binds 0.0.0.0, e.g. inside a container."),
    _broker("listener.security.protocol.map", LS,
            ["CONTROLLER:PLAINTEXT", "PLAINTEXT:PLAINTEXT", "SSL:SSL", "SASL_PLAINTEXT:SASL_PLAINTEXT", "SASL_SSL:SASL_SSL"],
            "Maps listener names to security protocols; PLAINTEXT and SSL are served.", dynamic=True, per_broker_only=True),
    _broker("controller.listener.names", LS, [], "Listener names used by a KRaft controller; such listeners are not served.", inert=True),
    _broker("inter.broker.listener.name", S, None, "The inter-broker listener; a single node has no inter-broker "
            "traffic, but with several listeners this one is held to its own max.connections and "
            "max.connection.creation.rate only, not to the other listeners' together, as on Kafka."),
    _broker("security.inter.broker.protocol", S, "PLAINTEXT", "Names the inter-broker listener when "
            "inter.broker.listener.name is unset (the listener named after the protocol).",
            OneOf(("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"))),
    _broker("process.roles", LS, ["broker", "controller"], "Accepted for compatibility; this node is both broker and controller.", inert=True),
    _broker("controller.quorum.voters", LS, [], "Accepted for compatibility; there is no controller quorum.", inert=True),
    _broker("controller.quorum.bootstrap.servers", LS, [], "Accepted for compatibility; there is no controller quorum.", inert=True),
    _broker("num.network.threads", I, 3, "Accepted for compatibility; connections are served by one event loop.", AtLeast(1), inert=True, dynamic=True),
    _broker("num.io.threads", I, 8, "Threads of the pool that runs blocking disk work (appends, reads, fsync).", AtLeast(1), dynamic=True),
    _broker("socket.send.buffer.bytes", I, 102400, "SO_SNDBUF for client sockets; -1 keeps the OS default.", AtLeast(-1)),
    _broker("socket.receive.buffer.bytes", I, 102400, "SO_RCVBUF for client sockets; -1 keeps the OS default.", AtLeast(-1)),
    _broker("socket.listen.backlog.size", I, 50, "The most pending connections a listening socket queues "
            "(the kernel's somaxconn caps it).", AtLeast(1)),
    _broker("socket.request.max.bytes", I, 104857600, "The largest request frame accepted; larger frames close the connection.", AtLeast(1)),
    _broker("connections.max.idle.ms", L, 600000, "Idle connections are closed after this many milliseconds."),
    _broker("connection.failed.authentication.delay.ms", I, 100, "A failed authentication is answered, and its "
            "connection closed, this many milliseconds late (keep it below connections.max.idle.ms).", AtLeast(0)),
    # -- SASL, for SASL_PLAINTEXT and SASL_SSL listeners (asyncbroker.sasl_authenticator); each
    # listener's JAAS config is the pattern key listener.name.<listener>.<mechanism>.sasl.jaas.config
    _broker("sasl.enabled.mechanisms", LS, ["GSSAPI"], "SASL mechanisms SASL listeners offer: PLAIN, SCRAM-SHA-256, "
            "SCRAM-SHA-512, OAUTHBEARER with unsecured tokens (GSSAPI, Kafka's default, is not served).",
            dynamic=True, per_broker_only=True),
    _broker("connections.max.reauth.ms", L, 0, "When positive, a SASL session lasts this long (or until its token "
            "expires): the client re-authenticates on the same connection before then (KIP-368), or the "
            "connection closes at its next request. 0: sessions never expire."),
    # OAUTHBEARER with signed tokens (listener.name.<l>.oauthbearer.sasl.server.callback.handler.class=
    # org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler)
    _broker("sasl.oauthbearer.jwks.endpoint.url", S, None, "Where the keys that sign tokens are published: an "
            "https:// or http:// URL of a JWKS, or a file:// one."),
    _broker("sasl.oauthbearer.jwks.endpoint.refresh.ms", L, 3600000, "How often the JWKS is fetched again (a "
            "token signed by an unknown key makes it sooner).", AtLeast(1)),
    _broker("sasl.oauthbearer.expected.audience", LS, [], "Audiences a token must name one of (its aud claim); "
            "empty: not checked."),
    _broker("sasl.oauthbearer.expected.issuer", S, None, "The issuer a token must name (its iss claim); unset: "
            "not checked."),
    _broker("sasl.oauthbearer.scope.claim.name", S, "scope", "The claim that holds a token's scopes."),
    _broker("sasl.oauthbearer.sub.claim.name", S, "sub", "The claim that names a token's principal."),
    _broker("sasl.oauthbearer.clock.skew.seconds", I, 30, "The clock difference allowed when checking a token's "
            "times.", AtLeast(0)),
    _broker("sasl.server.max.receive.size", I, 524288, "The largest frame a SASL connection may send before it has "
            "authenticated: a client that never finishes its handshake holds almost nothing.", AtLeast(1)),
    # -- client quotas (asyncbroker.client_quota_manager): the window rates are measured over
    _broker("quota.window.num", I, 11, "The number of samples a client's rate is measured over.", AtLeast(1)),
    _broker("quota.window.size.seconds", I, 1, "The time span of each sample of a client's rate.", AtLeast(1)),
    # -- authorization (asyncbroker.standard_authorizer): Kafka's StandardAuthorizer or none
    _broker("authorizer.class.name", S, "", "org.apache.kafka.metadata.authorizer.StandardAuthorizer turns ACLs on "
            "(asyncbroker's own implementation of its rules); empty: every principal may do everything and the "
            "ACL APIs answer SECURITY_DISABLED.", OneOf(("", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"))),
    _broker("super.users", S, "", "Principals every ACL check allows, separated by semicolons "
            "(User:admin;User:CN=broker).", internal=True),
    _broker("allow.everyone.if.no.acl.found", B, False, "Whether a resource no ACL names is open to every "
            "principal (true) or to none but super users (false).", internal=True),
    _broker("sasl.mechanism.inter.broker.protocol", S, "GSSAPI",
            "Accepted for compatibility; a single node has no inter-broker traffic.", inert=True, dynamic=True,
            per_broker_only=True),
    # -- TLS, for SSL listeners (asyncbroker.ssl_factory)
    _broker("ssl.keystore.type", S, "JKS", "Format of the key store: PEM (the private key and its certificate chain "
            "in one file, or inline) or PKCS12. JKS, Kafka's default, is Java's own and is not read here.", dynamic=True, per_broker_only=True),
    _broker("ssl.keystore.location", S, None, "The key store file of SSL listeners.", dynamic=True, per_broker_only=True),
    _broker("ssl.keystore.password", P, None, "Password of the key store (PKCS12), or of the PEM private key.", dynamic=True, per_broker_only=True),
    _broker("ssl.key.password", P, None, "Password of the private key in the key store, when it is encrypted.", dynamic=True, per_broker_only=True),
    _broker("ssl.keystore.key", P, None, "The private key in PEM, inline (with ssl.keystore.certificate.chain).", dynamic=True, per_broker_only=True),
    _broker("ssl.keystore.certificate.chain", P, None, "The certificate chain in PEM, inline.", dynamic=True, per_broker_only=True),
    _broker("ssl.truststore.type", S, "JKS", "Format of the trust store: PEM or PKCS12 (JKS is not read here).", dynamic=True, per_broker_only=True),
    _broker("ssl.truststore.location", S, None, "The trust store file: the CAs client certificates must chain to.", dynamic=True, per_broker_only=True),
    _broker("ssl.truststore.password", P, None, "Password of the trust store (PKCS12).", dynamic=True, per_broker_only=True),
    _broker("ssl.truststore.certificates", P, None, "The trusted CA certificates in PEM, inline.", dynamic=True, per_broker_only=True),
    _broker("ssl.client.auth", S, "none", "Whether clients of SSL listeners present a certificate: required, "
            "requested or none. The certificate's subject becomes the principal.",
            OneOf(("required", "requested", "none")), dynamic=True, per_broker_only=True),
    _broker("ssl.enabled.protocols", LS, ["TLSv1.2", "TLSv1.3"], "TLS versions SSL listeners accept.", dynamic=True, per_broker_only=True),
    _broker("ssl.protocol", S, "TLSv1.3", "Accepted for compatibility; the versions come from ssl.enabled.protocols.",
            inert=True, dynamic=True, per_broker_only=True),
    _broker("ssl.cipher.suites", LS, [], "Cipher suites (OpenSSL names) for TLS 1.2; empty: OpenSSL's defaults.", dynamic=True, per_broker_only=True),
    _broker("ssl.endpoint.identification.algorithm", S, "https",
            "Accepted for compatibility; it applies to clients, which verify the broker's host name.", inert=True, dynamic=True, per_broker_only=True),
    _broker("ssl.principal.mapping.rules", S, "DEFAULT",
            "Rules mapping a certificate's subject to a principal; only DEFAULT (the whole subject) is served.",
            OneOf(("DEFAULT",))),
    _broker("max.connections", I, 2147483647, "Connections the broker holds on all listeners together; at the limit "
            "it stops accepting until one closes.", AtLeast(0), dynamic=True),
    _broker("max.connection.creation.rate", I, 2147483647, "New connections per second the broker accepts, on "
            "all listeners together and on each alone; over it the acceptor waits before serving (KIP-612). "
            "With more than one listener, the inter-broker one counts only its own.", AtLeast(0), dynamic=True),
    _broker("max.connections.per.ip", I, 2147483647, "Connections one client address may hold; more are closed at once.",
            AtLeast(0), dynamic=True),
    _broker("max.connections.per.ip.overrides", S, "", "Per-address exceptions to max.connections.per.ip, as "
            "host:count,host:count.", HostCounts(), dynamic=True),
    _broker("queued.max.requests", I, 500, "Accepted for compatibility; there is no broker-wide request queue: "
            "each connection reads ahead at most 32 requests or 4 MiB of them, then pauses.", AtLeast(1), inert=True),
    _broker("queued.max.request.bytes", L, -1, "Bytes of received requests all connections together may hold "
            "(-1 or 0: no bound). A connection whose next request finds none left stops reading until answered "
            "requests return theirs; a request is granted while any is left, so at least socket.request.max.bytes."),
    # -- topics
    _broker("num.partitions", I, 1, "Partitions of a topic created without an explicit count.", AtLeast(1)),
    _broker("default.replication.factor", I, 1, "Replication factor of topics created without one; a single node supports only 1.", Between(1, 1)),
    _broker("auto.create.topics.enable", B, True, "Create a topic on first Metadata/Produce reference to it."),
    _broker("delete.topic.enable", B, True, "Whether DeleteTopics is allowed."),
    _broker("message.max.bytes", I, 1048588, "Largest record batch accepted (broker default of max.message.bytes).", AtLeast(0), dynamic=True),
    _broker("max.decompressed.message.bytes", I, 2147483639,
            "Default of the topic key max.decompressed.message.bytes; stored and described, not enforced yet.", Between(1, 2147483639), dynamic=True),
    _broker("fetch.max.bytes", I, 57671680, "Upper bound on the bytes returned by one Fetch.", AtLeast(1024)),
    _broker("max.incremental.fetch.session.cache.slots", I, 1000, "Incremental fetch sessions (KIP-227) the broker "
            "keeps, split over 8 cache shards; a consumer gets none (and fetches in full) while its shard is full.",
            AtLeast(0)),
    _broker("min.insync.replicas", I, 1, "Default of the topic key min.insync.replicas.", AtLeast(1), dynamic=True),
    _broker("unclean.leader.election.enable", B, False, "Default of the topic key; no effect on a single node.", dynamic=True),
    _broker("compression.type", S, "producer", "Default compression of stored batches; 'producer' keeps what the producer sent.",
            OneOf(COMPRESSION_TYPES, case_sensitive=False), dynamic=True),
    _broker("compression.gzip.level", I, -1, "gzip level when the broker compresses (-1: codec default).", Between(-1, 9), dynamic=True),
    _broker("compression.lz4.level", I, 9, "lz4 level when the broker compresses.", Between(1, 17), dynamic=True),
    _broker("compression.zstd.level", I, 3, "zstd level when the broker compresses.", Between(-131072, 22), dynamic=True),
    _broker("offsets.topic.num.partitions", I, 50, "Partitions of __consumer_offsets.", AtLeast(1)),
    _broker("offsets.topic.replication.factor", I, 1, "Replication of __consumer_offsets; only 1 on one node.", AtLeast(1), inert=True),
    _broker("offsets.topic.segment.bytes", I, 104857600, "segment.bytes of __consumer_offsets.", AtLeast(1)),
    _broker("offsets.retention.minutes", I, 10080, "Committed offsets of empty groups are kept this long.", AtLeast(1)),
    _broker("transaction.state.log.replication.factor", I, 1, "Accepted for compatibility.", AtLeast(1), inert=True),
    _broker("transaction.state.log.min.isr", I, 1, "Accepted for compatibility.", AtLeast(1), inert=True),
    _broker("share.coordinator.state.topic.replication.factor", I, 1, "Accepted for compatibility.", AtLeast(1), inert=True),
    _broker("share.coordinator.state.topic.min.isr", I, 1, "Accepted for compatibility.", AtLeast(1), inert=True),
    _broker("group.initial.rebalance.delay.ms", I, 3000, "Delay before the first rebalance of a new group.", AtLeast(0)),
    _broker("group.min.session.timeout.ms", I, 6000, "Smallest session timeout a group member may ask for."),
    _broker("group.max.session.timeout.ms", I, 1800000, "Largest session timeout a group member may ask for."),
    _broker("group.max.size", I, INT_MAX, "Most members a classic group may have.", AtLeast(1)),
    _broker("group.consumer.heartbeat.interval.ms", I, 5000,
            "Heartbeat interval given to members of consumer-protocol groups.", AtLeast(1)),
    _broker("group.consumer.min.heartbeat.interval.ms", I, 5000,
            "Smallest heartbeat interval of consumer-protocol groups.", AtLeast(1)),
    _broker("group.consumer.max.heartbeat.interval.ms", I, 15000,
            "Largest heartbeat interval of consumer-protocol groups.", AtLeast(1)),
    _broker("group.consumer.session.timeout.ms", I, 45000,
            "A consumer-protocol member not heard from for this long is removed.", AtLeast(1)),
    _broker("group.consumer.min.session.timeout.ms", I, 45000,
            "Smallest session timeout of consumer-protocol groups.", AtLeast(1)),
    _broker("group.consumer.max.session.timeout.ms", I, 60000,
            "Largest session timeout of consumer-protocol groups.", AtLeast(1)),
    _broker("group.consumer.assignors", LS, ["uniform", "range"],
            "Server-side assignors offered to consumer-protocol groups; the first is the default.",
            OneOf(("uniform", "range"))),
    _broker("group.consumer.max.size", I, INT_MAX, "Most members a consumer-protocol group may have.", AtLeast(1)),
    _broker("group.consumer.assignment.interval.ms", I, 1000,
            "Least time between two target assignments of a consumer-protocol group.", AtLeast(0), dynamic=True),
    _broker("group.consumer.regex.refresh.interval.ms", I, 600000,
            "Longest time a consumer-protocol group's subscription regexes go unresolved while they "
            "are used (a topic created or deleted resolves them sooner).", AtLeast(10000), internal=True),
    _broker("group.consumer.min.assignment.interval.ms", I, 0,
            "Smallest assignment interval of consumer-protocol groups.", AtLeast(0)),
    _broker("group.consumer.max.assignment.interval.ms", I, 15000,
            "Largest assignment interval of consumer-protocol groups.", AtLeast(0)),
    _broker("group.consumer.migration.policy", S, "bidirectional",
            "Which online conversions between classic and consumer-protocol groups are allowed; classic "
            "members may join consumer-protocol groups unless it is disabled.",
            OneOf(("disabled", "upgrade", "downgrade", "bidirectional"), case_sensitive=False)),
    # -- share groups (KIP-932)
    _broker("group.share.session.timeout.ms", I, 45000,
            "A share group member not heard from for this long is removed.", AtLeast(1)),
    _broker("group.share.min.session.timeout.ms", I, 45000, "Smallest session timeout of share groups.", AtLeast(1)),
    _broker("group.share.max.session.timeout.ms", I, 60000, "Largest session timeout of share groups.", AtLeast(1)),
    _broker("group.share.heartbeat.interval.ms", I, 5000,
            "Heartbeat interval given to members of share groups.", AtLeast(1)),
    _broker("group.share.min.heartbeat.interval.ms", I, 5000, "Smallest heartbeat interval of share groups.",
            AtLeast(1)),
    _broker("group.share.max.heartbeat.interval.ms", I, 15000, "Largest heartbeat interval of share groups.",
            AtLeast(1)),
    _broker("group.share.max.size", I, 200, "Most members a share group may have.", Between(1, 1000)),
    _broker("group.share.assignors", LS, ["simple"], "The server-side assignor of share groups.", OneOf(("simple",))),
    _broker("group.share.assignment.interval.ms", I, 1000,
            "Least time between two target assignments of a share group.", AtLeast(0), dynamic=True),
    _broker("group.share.min.assignment.interval.ms", I, 0, "Smallest assignment interval of share groups.",
            AtLeast(0)),
    _broker("group.share.max.assignment.interval.ms", I, 15000, "Largest assignment interval of share groups.",
            AtLeast(0)),
    _broker("group.share.assignor.offload.enable", B, True, "Kafka assigns off its coordinator thread; accepted.",
            dynamic=True, internal=True),
    _broker("group.share.initialize.retry.interval.ms", I, 30000,
            "How soon a failed initialization of a share group's partitions is retried.", AtLeast(1), internal=True),
    _broker("group.share.delivery.count.limit", I, 5,
            "Deliveries of a record to a share group before it is archived.", Between(2, 10)),
    _broker("group.share.min.delivery.count.limit", I, 2,
            "Smallest delivery count limit a share group may be given.", Between(2, 5)),
    _broker("group.share.max.delivery.count.limit", I, 10,
            "Largest delivery count limit a share group may be given.", Between(5, 25)),
    _broker("group.share.record.lock.duration.ms", I, 30000,
            "How long a share group member holds the records it acquired before they are released.",
            Between(1000, 3600000)),
    _broker("group.share.min.record.lock.duration.ms", I, 15000,
            "Smallest record lock duration a share group may be given.", Between(1000, 30000)),
    _broker("group.share.max.record.lock.duration.ms", I, 60000,
            "Largest record lock duration a share group may be given.", Between(30000, 3600000)),
    _broker("group.share.partition.max.record.locks", I, 2000,
            "Most records of one partition a share group may have acquired at once.", Between(100, 10000)),
    _broker("group.share.min.partition.max.record.locks", I, 100,
            "Smallest record lock limit a share group may be given.", Between(100, 2000)),
    _broker("group.share.max.partition.max.record.locks", I, 4000,
            "Largest record lock limit a share group may be given.", Between(2000, 10000)),
    _broker("group.share.max.share.sessions", I, 2000, "Most share sessions this broker keeps.", AtLeast(1)),
    # -- tiered storage (KIP-405): RemoteLogManager and its plugins
    _broker("remote.log.storage.system.enable", B, False,
            "Tiered storage on this broker: topics may set remote.storage.enable.", dynamic=False),
    _broker("remote.log.storage.manager.class.name", S, None,
            "The remote storage backend: org.apache.kafka.server.log.remote.storage.LocalTieredStorage (a "
            "directory, rsm.config.dir) or asyncbroker.S3RemoteStorageManager (rsm.config.s3.*)."),
    _broker("remote.log.storage.manager.class.path", S, None, "Accepted for compatibility: backends are built in.",
            inert=True),
    _broker("remote.log.storage.manager.impl.prefix", S, "rsm.config.",
            "Prefix of the keys passed to the remote storage backend."),
    _broker("remote.log.metadata.manager.class.name", S,
            "org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager",
            "Where remote segment metadata lives: the topic-based manager (__remote_log_metadata) is the one built in."),
    _broker("remote.log.metadata.manager.class.path", S, None, "Accepted for compatibility.", inert=True),
    _broker("remote.log.metadata.manager.impl.prefix", S, "rlmm.config.",
            "Prefix of the keys passed to the remote log metadata manager."),
    _broker("remote.log.metadata.manager.listener.name", S, None,
            "Accepted for compatibility: the metadata manager writes its topic in process.", inert=True),
    _broker("remote.log.manager.task.interval.ms", L, 30000,
            "Period of each tiered partition's copy and expiration tasks.", AtLeast(1)),
    # Kafka 4.4 does not describe these two (not among its listed keys): internal here too.
    _broker("remote.log.manager.task.retry.backoff.ms", L, 500, "First back-off after a failed remote copy.", AtLeast(1),
            internal=True),
    _broker("remote.log.manager.task.retry.backoff.max.ms", L, 30000, "Largest back-off after failed remote copies.",
            AtLeast(1), internal=True),
    _broker("remote.log.manager.copy.max.bytes.per.second", L, LONG_MAX,
            "Most bytes per second copied to remote storage.", AtLeast(1), dynamic=True),
    _broker("remote.log.manager.fetch.max.bytes.per.second", L, LONG_MAX,
            "Most bytes per second read from remote storage.", AtLeast(1), dynamic=True),
    _broker("remote.log.manager.copier.thread.pool.size", I, 10, "Threads copying segments to remote storage.",
            AtLeast(1), dynamic=True),
    _broker("remote.log.manager.expiration.thread.pool.size", I, 10,
            "Threads deleting expired remote segments.", AtLeast(1), dynamic=True),
    _broker("remote.log.reader.threads", I, 10, "Threads reading remote storage for fetches.", AtLeast(1),
            dynamic=True),
    _broker("remote.log.reader.max.pending.tasks", I, 100, "Most remote reads queued.", AtLeast(1)),
    _broker("remote.log.index.file.cache.total.size.bytes", L, 1073741824,
            "Bound of the cache of remote segments' offset and time indexes.", AtLeast(1), dynamic=True),
    _broker("remote.log.metadata.custom.metadata.max.bytes", I, 128,
            "Largest custom metadata a remote storage backend may return for a segment.", AtLeast(0)),
    _broker("remote.fetch.max.wait.ms", I, 500, "Longest a fetch waits for a remote read.", AtLeast(1), dynamic=True),
    _broker("remote.list.offsets.request.timeout.ms", L, 30000,
            "Longest a ListOffsets waits for a remote timestamp search.", AtLeast(1), dynamic=True),
    _broker("share.coordinator.state.topic.num.partitions", I, 50,
            "Partitions of __share_group_state, where share groups keep their records' states.", AtLeast(1)),
    _broker("share.coordinator.state.topic.segment.bytes", I, 104857600,
            "Segment size of __share_group_state.", AtLeast(1)),
    _broker("share.fetch.purgatory.purge.interval.requests", I, 1000,
            "Accepted for compatibility: share fetches wait on the partitions they read.", inert=True),
    _broker("offsets.retention.check.interval.ms", L, 600000, "Period of the expired-offsets cleanup.", AtLeast(1)),
    _broker("offset.metadata.max.bytes", I, 4096, "Largest metadata string of a committed offset."),
    _broker("producer.id.expiration.ms", I, 86400000,
            "Producer state of an idle producer id is dropped after this long.", AtLeast(1), dynamic=True),
    _broker("producer.id.expiration.check.interval.ms", I, 600000, "Period of the producer id expiration check.", AtLeast(1),
            internal=True),
    _broker("transactional.id.expiration.ms", I, 604800000,
            "A transactional id with no transaction for this long is removed by the transaction coordinator.", AtLeast(1)),
    _broker("transaction.max.timeout.ms", I, 900000, "Largest transaction.timeout.ms a producer may ask for.", AtLeast(1)),
    _broker("transaction.state.log.num.partitions", I, 50, "Partitions of __transaction_state.", AtLeast(1)),
    _broker("transaction.state.log.segment.bytes", I, 104857600, "segment.bytes of __transaction_state.", AtLeast(1)),
    _broker("transaction.state.log.load.buffer.size", I, 5242880,
            "Accepted for compatibility; __transaction_state is read in chunks of its own size.", AtLeast(1), inert=True),
    _broker("transaction.abort.timed.out.transaction.cleanup.interval.ms", I, 10000,
            "Period of the check that aborts transactions open past their timeout.", AtLeast(1)),
    _broker("transaction.remove.expired.transaction.cleanup.interval.ms", I, 3600000,
            "Period of the removal of expired transactional ids.", AtLeast(1)),
    _broker("transaction.partition.verification.enable", B, True,
            "Check that a transactional produce's partition is in its transaction (KIP-890).", dynamic=True),
    # -- log directories and background tasks
    _broker("log.dirs", LS, None, "Directories holding the partition logs (comma-separated). Defaults to log.dir."),
    _broker("log.dir", S, "./data", "The log directory used when log.dirs is not set."),
    _broker("num.recovery.threads.per.data.dir", I, 2, "Threads per log dir loading/recovering logs at startup and closing them at shutdown.", AtLeast(1), dynamic=True),
    _broker("log.initial.task.delay.ms", L, 30000, "Delay before the background log tasks first run.", AtLeast(0)),
    _broker("log.retention.check.interval.ms", L, 300000, "Period of the retention task.", AtLeast(1)),
    _broker("log.flush.scheduler.interval.ms", L, LONG_MAX, "Period of the task that flushes logs whose flush.ms has elapsed."),
    _broker("log.flush.offset.checkpoint.interval.ms", I, 60000, "Period of the recovery-point checkpoint task.", AtLeast(0)),
    _broker("log.flush.start.offset.checkpoint.interval.ms", I, 60000, "Period of the log-start-offset checkpoint task.", AtLeast(0)),
    _broker("replica.high.watermark.checkpoint.interval.ms", L, 5000, "Period of the high-watermark checkpoint task.", AtLeast(1)),
    # -- topic defaults (log.* keys feed topic-level keys)
    _broker("log.segment.bytes", I, 1073741824, "Default segment.bytes: the size at which a segment is rolled.", AtLeast(1024 * 1024), dynamic=True),
    _broker("log.roll.ms", L, None, "Default segment.ms; takes precedence over log.roll.hours.", dynamic=True),
    _broker("log.roll.hours", I, 168, "Default segment.ms, in hours.", AtLeast(1)),
    _broker("log.roll.jitter.ms", L, None, "Default segment.jitter.ms; takes precedence over log.roll.jitter.hours.", dynamic=True),
    _broker("log.roll.jitter.hours", I, 0, "Default segment.jitter.ms, in hours.", AtLeast(0)),
    _broker("log.index.size.max.bytes", I, 10485760, "Default segment.index.bytes: the preallocated size of an index file.", AtLeast(4), dynamic=True),
    _broker("log.index.interval.bytes", I, 4096, "Default index.interval.bytes: log bytes between offset index entries.", AtLeast(0), dynamic=True),
    _broker("log.flush.interval.messages", L, LONG_MAX, "Default flush.messages: fsync after this many messages.", AtLeast(1), dynamic=True),
    _broker("log.flush.interval.ms", L, None, "Default flush.ms; when unset log.flush.scheduler.interval.ms is used.", dynamic=True),
    _broker("log.retention.ms", L, None, "Default retention.ms; -1 keeps data forever. Takes precedence over minutes/hours.", dynamic=True),
    _broker("log.retention.minutes", I, None, "Default retention.ms, in minutes; takes precedence over hours."),
    _broker("log.retention.hours", I, 168, "Default retention.ms, in hours."),
    _broker("log.retention.bytes", L, -1, "Default retention.bytes: per-partition size bound; -1 for none.", dynamic=True),
    _broker("log.local.retention.ms", L, -2, "Default local.retention.ms (tiered storage; -2 follows retention.ms).", AtLeast(-2), dynamic=True),
    _broker("log.remote.copy.lag.bytes", L, -1, "Default remote.copy.lag.bytes (tiered storage).", AtLeast(-1), dynamic=True),
    _broker("log.remote.copy.lag.ms", L, 0, "Default remote.copy.lag.ms (tiered storage).", AtLeast(-1), dynamic=True),
    _broker("log.local.retention.bytes", L, -2, "Default local.retention.bytes (tiered storage; -2 follows retention.bytes).", AtLeast(-2), dynamic=True),
    _broker("log.cleanup.policy", LS, ["delete"], "Default cleanup.policy: delete, compact or both.", OneOf(("delete", "compact")), dynamic=True),
    _broker("log.segment.delete.delay.ms", L, 60000, "Default file.delete.delay.ms: delay before a deleted segment's files are unlinked.", AtLeast(0), dynamic=True),
    _broker("log.preallocate", B, False, "Default preallocate: create segment files at full size.", dynamic=True),
    _broker("log.message.timestamp.type", S, "CreateTime", "Default message.timestamp.type.", OneOf(("CreateTime", "LogAppendTime")), dynamic=True),
    _broker("log.message.timestamp.before.max.ms", L, LONG_MAX, "Default message.timestamp.before.max.ms.", AtLeast(0), dynamic=True),
    _broker("log.message.timestamp.after.max.ms", L, 3600000, "Default message.timestamp.after.max.ms.", AtLeast(0), dynamic=True),
    # -- cleaner
    _broker("log.cleaner.enable", B, True, "Deprecated; the cleaner always runs."),
    _broker("log.cleaner.threads", I, 1, "Cleaner worker processes.", AtLeast(0), dynamic=True),
    _broker("log.cleaner.dedupe.buffer.size", L, 134217728, "Memory for the offset maps across all cleaner threads.", dynamic=True),
    _broker("log.cleaner.io.buffer.load.factor", D, 0.9, "How full the offset map may get before a pass stops.", dynamic=True),
    _broker("log.cleaner.io.buffer.size", I, 524288, "Read+write buffer memory across all cleaner threads.", AtLeast(0), dynamic=True),
    _broker("log.cleaner.io.max.bytes.per.second", D, DOUBLE_MAX, "I/O throttle shared by the cleaner threads.", dynamic=True),
    _broker("log.cleaner.backoff.ms", L, 15000, "Pause when no log needs cleaning.", AtLeast(0), dynamic=True),
    _broker("log.cleaner.min.cleanable.ratio", D, 0.5, "Default min.cleanable.dirty.ratio.", Between(0, 1), dynamic=True),
    _broker("log.cleaner.delete.retention.ms", L, 86400000, "Default delete.retention.ms: how long tombstones are kept.", AtLeast(0), dynamic=True),
    _broker("log.cleaner.min.compaction.lag.ms", L, 0, "Default min.compaction.lag.ms.", AtLeast(0), dynamic=True),
    _broker("log.cleaner.max.compaction.lag.ms", L, LONG_MAX, "Default max.compaction.lag.ms.", AtLeast(1), dynamic=True),]

# ---------------------------------------------------------------- topic keys

_topic("cleanup.policy", LS, "Reclamation policy: delete old segments, compact by key, or both.",
       OneOf(("compact", "delete")), synonyms=("log.cleanup.policy",))
_topic("compression.type", S, "Final compression codec of the topic; 'producer' keeps the producer's codec.",
       OneOf(COMPRESSION_TYPES), synonyms=("compression.type",))
_topic("compression.gzip.level", I, "gzip level when recompressing.", GzipLevel(),
       synonyms=("compression.gzip.level",))
_topic("compression.lz4.level", I, "lz4 level when recompressing.", Between(1, 17), synonyms=("compression.lz4.level",))
_topic("compression.zstd.level", I, "zstd level when recompressing.", Between(-131072, 22),
       synonyms=("compression.zstd.level",))
_topic("delete.retention.ms", L, "How long tombstones and markers survive after entering the clean section.",
       AtLeast(0), synonyms=("log.cleaner.delete.retention.ms",))
_topic("errors.deadletterqueue.group.enable", B,
       "Whether groups may send records they cannot process to a dead-letter queue on this topic. "
       "Accepted and stored; asyncbroker has no dead-letter queues, so it changes nothing here.", default=False)
_topic("file.delete.delay.ms", L, "Delay between renaming a file to .deleted and unlinking it.", AtLeast(0),
       synonyms=("log.segment.delete.delay.ms",))
_topic("flush.messages", L, "fsync after this many appended messages.", AtLeast(1),
       synonyms=("log.flush.interval.messages",))
_topic("flush.ms", L, "fsync when the oldest unflushed data is older than this.", AtLeast(0),
       synonyms=("log.flush.interval.ms", "log.flush.scheduler.interval.ms"))
# Kafka gives the replication throttles no broker-wide default.
_topic("follower.replication.throttled.replicas", LS,
       "Replicas throttled on the follower side. Accepted and stored; a single node has no followers.",
       ThrottledReplicas("follower.replication.throttled.replicas"), default=())
_topic("index.interval.bytes", I, "Bytes of log between two sparse index entries.", AtLeast(0),
       synonyms=("log.index.interval.bytes",))
_topic("leader.replication.throttled.replicas", LS,
       "Replicas throttled on the leader side. Accepted and stored; a single node replicates to no one.",
       ThrottledReplicas("leader.replication.throttled.replicas"), default=())
_topic("local.retention.bytes", L, "Local retention size for tiered topics; -2 means retention.bytes.", AtLeast(-2),
       synonyms=("log.local.retention.bytes",))
_topic("local.retention.ms", L, "Local retention time for tiered topics; -2 means retention.ms.", AtLeast(-2),
       synonyms=("log.local.retention.ms",))
_topic("max.compaction.lag.ms", L, "Longest a record may stay uncompacted.", AtLeast(1),
       synonyms=("log.cleaner.max.compaction.lag.ms",))
_topic("max.decompressed.message.bytes", I,
       "Largest size a compressed batch may reach once decompressed. Accepted and stored; asyncbroker "
       "decompresses only batches it must inspect and does not enforce this bound yet.", Between(1, 2_147_483_639),
       synonyms=("max.decompressed.message.bytes",))
_topic("max.message.bytes", I, "Largest record batch the topic accepts.", AtLeast(0), synonyms=("message.max.bytes",))
_topic("message.timestamp.after.max.ms", L, "How far in the future a CreateTime timestamp may be.", AtLeast(0),
       synonyms=("log.message.timestamp.after.max.ms",))
_topic("message.timestamp.before.max.ms", L, "How far in the past a CreateTime timestamp may be.", AtLeast(0),
       synonyms=("log.message.timestamp.before.max.ms",))
_topic("message.timestamp.type", S, "Whether record timestamps come from the producer or the broker.",
       OneOf(("CreateTime", "LogAppendTime")), synonyms=("log.message.timestamp.type",))
_topic("min.cleanable.dirty.ratio", D, "Dirty ratio above which a compacted log is eligible for cleaning.",
       Between(0, 1), synonyms=("log.cleaner.min.cleanable.ratio",))
_topic("min.compaction.lag.ms", L, "Minimum age before a record may be compacted.", AtLeast(0),
       synonyms=("log.cleaner.min.compaction.lag.ms",))
_topic("min.insync.replicas", I, "Replicas that must acknowledge an acks=all write.", AtLeast(1),
       synonyms=("min.insync.replicas",))
_topic("preallocate", B, "Preallocate the segment file to segment.bytes on creation.", synonyms=("log.preallocate",))
_topic("remote.copy.lag.bytes", L,
       "How many bytes of a tiered topic's local log may follow a rolled segment before it is copied to "
       "remote storage (with remote.copy.lag.ms; 0 copies at once, -1 never by size).", AtLeast(-1),
       synonyms=("log.remote.copy.lag.bytes",))
_topic("remote.copy.lag.ms", L,
       "How old a tiered topic's rolled segment must be before it is copied to remote storage (with "
       "remote.copy.lag.bytes; 0 copies at once, -1 never by age).", AtLeast(-1), synonyms=("log.remote.copy.lag.ms",))
_topic("remote.log.copy.disable", B,
       "Stop copying segments to remote storage; what is remote stays readable, and retention.* applies "
       "locally again.",
       default=False)
_topic("remote.log.delete.on.disable", B,
       "Required to turn remote.storage.enable off: the topic's remote segments are then deleted.",
       default=False)
_topic("remote.storage.enable", B,
       "Tiered storage for the topic: rolled segments go to remote storage, local.retention.* bounds the "
       "local log (needs remote.log.storage.system.enable).", default=False)
_topic("retention.bytes", L, "Largest size of the log before old segments go.", synonyms=("log.retention.bytes",))
_topic("retention.ms", L, "Age after which old segments are deleted; -1 keeps them forever.", AtLeast(-1),
       synonyms=("log.retention.ms", "log.retention.minutes", "log.retention.hours"))
_topic("segment.bytes", I, "Size at which the active segment rolls.", AtLeast(1_048_576),
       synonyms=("log.segment.bytes",))
# Kafka's internal key for tests: a segment size below segment.bytes' 1 MiB floor. Described only
# when set, as Kafka describes it.
_topic("internal.segment.bytes", I, "Segment size for testing, overriding segment.bytes when set.", default=None,
       internal=True)
_topic("segment.index.bytes", I, "Preallocated size of each offset/time index.", AtLeast(4),
       synonyms=("log.index.size.max.bytes",))
_topic("segment.jitter.ms", L, "Random jitter subtracted from segment.ms.", AtLeast(0),
       synonyms=("log.roll.jitter.ms", "log.roll.jitter.hours"))
_topic("segment.ms", L, "Age at which a non-empty active segment rolls.", AtLeast(1),
       synonyms=("log.roll.ms", "log.roll.hours"))
_topic("unclean.leader.election.enable", B,
       "Allow an out-of-sync replica to become leader. Accepted and stored; a single node's replica is always in sync.",
       synonyms=("unclean.leader.election.enable",))

# ---------------------------------------------------------------- group keys
# A group's own settings (DescribeConfigs / IncrementalAlterConfigs on GROUP resources): each
# defaults to the broker key it is named after, and must lie within that key's min/max bounds.

_group("consumer.session.timeout.ms", I, "How long a member of this consumer-protocol group may go without "
       "heartbeating before it is removed.", AtLeast(1), synonyms=("group.consumer.session.timeout.ms",))
_group("consumer.heartbeat.interval.ms", I, "The heartbeat interval told to the members of this "
       "consumer-protocol group.", AtLeast(1), synonyms=("group.consumer.heartbeat.interval.ms",))
_group("consumer.assignment.interval.ms", I, "Least time between two target assignments of this "
       "consumer-protocol group.", AtLeast(0), synonyms=("group.consumer.assignment.interval.ms",))
_group("consumer.assignor.offload.enable", B, "Kafka computes assignments off its coordinator thread; "
       "accepted, the assignors here are quick.", default=True, internal=True)
_group("share.session.timeout.ms", I, "How long a member of this share group may go without heartbeating "
       "before it is removed.", AtLeast(1), synonyms=("group.share.session.timeout.ms",))
_group("share.heartbeat.interval.ms", I, "The heartbeat interval told to the members of this share group.",
       AtLeast(1), synonyms=("group.share.heartbeat.interval.ms",))
_group("share.assignment.interval.ms", I, "Least time between two target assignments of this share group.",
       AtLeast(0), synonyms=("group.share.assignment.interval.ms",))
_group("share.assignor.offload.enable", B, "Accepted, as consumer.assignor.offload.enable.", default=True,
       internal=True)
_group("share.record.lock.duration.ms", I, "How long a member of this share group holds the records it "
       "acquired before they are released.", AtLeast(1000), synonyms=("group.share.record.lock.duration.ms",))
_group("share.delivery.count.limit", I, "Deliveries of a record to this share group before it is archived.",
       AtLeast(2), synonyms=("group.share.delivery.count.limit",))
_group("share.partition.max.record.locks", I, "Most records of one partition this share group may have acquired "
       "at once.", AtLeast(100), synonyms=("group.share.partition.max.record.locks",))
_group("share.auto.offset.reset", S, "Where this share group starts reading a partition it has not read "
       "before: earliest, latest, or by_duration:<ISO-8601 duration> back from now.", ShareAutoOffsetReset(),
       default="latest")
_group("share.isolation.level", S, "Whether this share group reads transactional records before they commit "
       "(read_uncommitted) or not.", OneOf(("read_committed", "read_uncommitted")), default="read_uncommitted")
_group("share.renew.acknowledge.enable", B, "Whether members may renew the lock of records they hold.",
       default=True)

BROKER_KEYS: dict[str, ConfigKey] = {k.name: k for k in _TABLE if k.scope is ConfigScope.BROKER}
"""Kafka broker key -> its definition."""

# Broker keys of one family name one setting in different units; the first one set wins.
_UNIT_MS = {".hours": 3_600_000, ".minutes": 60_000}


def resolve_topic_default(key: ConfigKey, broker_value: Callable[[str], Any]) -> Any:
    """A topic key's default from its broker synonyms' values, as Kafka resolves them: the
    first synonym with a value wins, converted from its unit (log.retention.hours -> ms);
    a negative retention means "forever" (-1). `broker_value(name)` is the value of a broker
    key (None when unset). Lists become tuples, the topic form of a list."""
    for name in key.synonyms:
        value = broker_value(name)
        if value is None:
            continue
        for suffix, factor in _UNIT_MS.items():
            if name.endswith(suffix):
                value = value * factor
        if key.name == "retention.ms" and value < 0:
            value = -1
        return tuple(value) if isinstance(value, list) else value
    return None


def _with_derived_default(key: ConfigKey) -> ConfigKey:
    if key.default is not _DERIVED:
        return key
    default = resolve_topic_default(key, lambda name: BROKER_KEYS[name].default)
    if default is None:
        raise AssertionError(f"topic key {key.name}: no broker synonym supplies a default")
    return msgspec.structs.replace(key, default=default)


TOPIC_KEYS: dict[str, ConfigKey] = {k.name: _with_derived_default(k) for k in _TABLE if k.scope is ConfigScope.TOPIC}
"""Kafka topic key -> its definition, with the default its broker synonyms give it."""

GROUP_KEYS: dict[str, ConfigKey] = {k.name: _with_derived_default(k) for k in _TABLE if k.scope is ConfigScope.GROUP}
"""Kafka group config key -> its definition, with the default its broker key gives it."""

BROKER_SYNONYMS: dict[str, tuple[str, ...]] = {
    name: key.synonyms for key in TOPIC_KEYS.values() if len(key.synonyms) > 1 for name in key.synonyms}
"""Broker keys that name one setting in different units -> the whole family, highest
precedence first (Kafka lists the family as each member's synonyms)."""


# ---------------------------------------------------------------- parsing

_INTEGER = re.compile(r"[+-]?\d+")
_LIMITS = {ConfigType.INT: 2**31, ConfigType.SHORT: 2**15, ConfigType.LONG: 2**63}
_EXPECTED = {
    ConfigType.BOOLEAN: "Expected value to be either true or false",
    ConfigType.INT: "Not a number of type INT",
    ConfigType.SHORT: "Not a number of type SHORT",
    ConfigType.LONG: "Not a number of type LONG",
    ConfigType.DOUBLE: "Not a number of type DOUBLE",
}


def _parse(key: ConfigKey, raw: Any) -> Any:
    """Parse a property value into the key's type as Kafka's ConfigDef.parseType does. A
    LIST is a list in a broker config and a tuple in a (frozen) topic config."""
    as_list = list if key.scope is ConfigScope.BROKER else tuple
    t = key.type
    if not isinstance(raw, str):
        # Already typed (a value copied from another config): checked, not re-parsed.
        if t is ConfigType.LIST and isinstance(raw, (list, tuple)):
            return as_list(str(x).strip() for x in raw)
        if t is ConfigType.BOOLEAN and isinstance(raw, bool):
            return raw
        if t in _LIMITS and isinstance(raw, int) and not isinstance(raw, bool):
            return raw
        if t is ConfigType.DOUBLE and isinstance(raw, (int, float)) and not isinstance(raw, bool):
            return float(raw)
        raw = str(raw)
    text = raw.strip()
    if t is ConfigType.BOOLEAN:
        if text.lower() not in ("true", "false"):
            raise NotParsable(_EXPECTED[t])
        return text.lower() == "true"
    if t in _LIMITS:
        if not _INTEGER.fullmatch(text) or not -_LIMITS[t] <= int(text) < _LIMITS[t]:
            raise NotParsable(_EXPECTED[t])
        return int(text)
    if t is ConfigType.DOUBLE:
        value = parse_java_double(text)  # Java's grammar: no "inf", "nan" or "1_0"
        if value != value and key.scope is ConfigScope.BROKER:
            raise NotParsable(_EXPECTED[t])  # no broker setting is meaningful as NaN
        return value
    if t is ConfigType.LIST:
        return as_list(item.strip() for item in text.split(",") if item.strip())
    return text


def parse_value(key: ConfigKey, raw: Any, shown: str | None = None) -> Any:
    """Parse and validate one value; ConfigException with Kafka's text otherwise: a value
    that does not parse is named as given, one that breaks its validator as parsed (Java's
    toString). `shown` names the key in the message when it was set under another name
    (a broker synonym)."""
    name = shown or key.name
    try:
        value = _parse(key, raw)
    except NotParsable as exc:
        raise ConfigException(name, f"Invalid value {raw} for configuration {name}: {exc}") from None
    if key.validator is not None and value is not None:
        try:
            problem = key.validator(value)
        except ItemProblem as item:
            raise ConfigException(name, f"Invalid value {item.item} for configuration {name}: {item.message}") from None
        if problem is not None:
            raise ConfigException(name, f"Invalid value {java_number(value)} for configuration {name}: {problem}")
    return value


def format_value(value: Any) -> str | None:
    """A parsed value as Kafka prints it in DescribeConfigs and in topic override files."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    if isinstance(value, float):
        return java_double(value)  # 1.7976931348623157E308, as Java prints it
    return str(value)


def field_default(key: ConfigKey) -> Any:
    """The default of a typed view's field: the key's default, a fresh list per instance for
    a mutable one (msgspec refuses a shared mutable default)."""
    if isinstance(key.default, list):
        items = list(key.default)
        return msgspec.field(default_factory=lambda: list(items))
    return key.default


def broker_default(name: str) -> Any:
    """The field default of broker key `name` (for KafkaConfig and CleanerConfig)."""
    return field_default(BROKER_KEYS[name])


def topic_default(name: str) -> Any:
    """The field default of topic key `name` (for LogConfig)."""
    return field_default(TOPIC_KEYS[name])


__all__ = [
    "AtLeast", "B", "BROKER_KEYS", "BROKER_SYNONYMS", "Between", "COMPRESSION_TYPES", "ConfigException", "ConfigKey",
    "ConfigScope", "ConfigType", "DOUBLE_MAX", "GzipLevel", "INT_MAX", "ItemProblem", "LONG_MAX", "NotParsable",
    "OneOf", "TOPIC_KEYS", "ThrottledReplicas", "broker_default", "field_default", "format_value", "java_double",
    "java_number", "parse_java_double", "parse_value", "resolve_topic_default", "topic_default",
]
