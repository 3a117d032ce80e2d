"""The differential harness: one scenario, sent to Apache Kafka 4.4 and to asyncbroker.

A scenario is a function of a `ScenarioRun`. It sends kio requests over a raw
socket (`run.call(...)`), with topic names given symbolically (`run.topic("a")`
is unique to the run, so scenarios share one Kafka and one asyncbroker for the
whole session) and record batches built byte for byte by the scenario. Each
answer is turned into plain data and normalised, then kept in the run's
transcript. `compare` runs the scenario on both brokers and asserts that the
two transcripts are equal, step by step and field by field.

Normalised, because they must differ between two brokers:
- cluster ids, topic ids (replaced by the symbolic name of their topic, or by
  their order of appearance), the run's topic-name suffix;
- listener host and port;
- throttle times;
- LogAppendTime stamps (the batch's, each record's, and the batch CRC that covers them);
- the delete horizon the cleaner stamps into a batch's baseTimestamp (and the CRC);
- values the broker generates that a scenario names with `run.alias` (member ids);
- anything a scenario names in `normalise=` for one step, with its reason.

Everything else is compared, error messages included: clients show them to
users. A difference that is accepted is listed in KNOWN_DIFFERENCES.md with an
id, and the scenario declares it (`known={"KD-<n>": {...paths...}}`): the test
then asserts that exactly those paths differ, so the list cannot rot.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import enum
import re
import struct
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from kio.index import load_payload_module
from kio.static.constants import EntityType

from asyncbroker.response_builder import build
from side_by_side import side_by_side
from wire.headers import encode_request_header, response_header_version
from wire.messages import decode_response, encode_request
from wire.records import (
    BATCH_HEADER_SIZE,
    CompressionType,
    Record,
    TimestampType,
    build_batch,
    decode_records,
    read_batch_header,
)

import socket

ZERO_UUID = uuid.UUID(int=0)
DEFAULT_TIMEOUT_MS = 30_000
# Record timestamps are fixed for the whole session (both brokers see the same bytes) and
# recent: the start of the current hour, inside retention.ms and never in the future.
BASE_TIMESTAMP = (time.time_ns() // 1_000_000 // 3_600_000) * 3_600_000


# -- building requests ------------------------------------------------------------


def entity(api_key: int, version: int, class_name: str, /, **values: Any) -> Any:
    """A request entity (or a nested one) of one version, from version-agnostic values:
    fields the version lacks are dropped, plain ints become kio's typed fields."""
    module = load_payload_module(api_key, version, EntityType.request)
    return build(getattr(module, class_name), **values)


def request_class_name(api_key: int, version: int) -> str:
    module = load_payload_module(api_key, version, EntityType.request)
    names = [n for n in dir(module) if n.endswith("Request") and not n.startswith("_")]
    top = [n for n in names if getattr(getattr(module, n), "__api_key__", None) == api_key
           and getattr(getattr(module, n), "__type__", None) == EntityType.request]
    if len(top) != 1:
        raise LookupError(f"no single request class in {module.__name__}: {top or names}")
    return top[0]


def batch(records: Iterable[tuple[bytes | None, bytes | None]] | int, *, base_timestamp: int = BASE_TIMESTAMP,
          compression: CompressionType = CompressionType.NONE, headers: tuple[tuple[str, bytes | None], ...] = (),
          producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
          transactional: bool = False, timestamp_step: int = 1, value_size: int | None = None) -> bytes:
    """A fixed record batch: (key, value) pairs (or a count of generated ones), timestamps
    base_timestamp + i * timestamp_step."""
    if isinstance(records, int):
        size = value_size or 8
        pairs: list[tuple[bytes | None, bytes | None]] = [
            (f"k{i}".encode(), (f"v{i}-".encode() * size)[:size]) for i in range(records)
        ]
    else:
        pairs = list(records)
    recs = [
        Record(offset=i, timestamp=base_timestamp + i * timestamp_step, key=k, value=v, headers=headers)
        for i, (k, v) in enumerate(pairs)
    ]
    return build_batch(recs, compression=compression, producer_id=producer_id, producer_epoch=producer_epoch,
                       base_sequence=base_sequence, is_transactional=transactional)


FETCH_API_KEY = 1


# -- raw connection -------------------------------------------------------------


class Connection:
    """A blocking Kafka connection that sends kio requests and decodes the answers."""

    def __init__(self, bootstrap: str, timeout: float = 30.0, client_id: str = "oracle") -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.client_id = client_id
        self._correlation = 0

    def close(self) -> None:
        self.sock.close()

    def send(self, request: Any) -> int:
        self._correlation += 1
        header = encode_request_header(request.__api_key__, request.__version__, self._correlation, self.client_id)
        body = header + encode_request(request)
        self.sock.sendall(struct.pack(">i", len(body)) + body)
        return self._correlation

    def authenticate_plain(self, user: str, password: str) -> None:
        """SaslHandshake v1 and SaslAuthenticate v2 with PLAIN, as clients on a SASL listener
        begin; raises when the broker refuses."""
        for api_key, version, cls, fields in (
                (17, 1, "SaslHandshakeRequest", {"mechanism": "PLAIN"}),
                (36, 2, "SaslAuthenticateRequest", {"auth_bytes": f"\0{user}\0{password}".encode()})):
            request = entity(api_key, version, cls, **fields)
            answer = self.receive(api_key, version, self.send(request))
            if answer.error_code != 0:
                raise AssertionError(f"SASL PLAIN as {user} refused: {answer}")

    def send_raw(self, api_key: int, version: int, body: bytes) -> int:
        """A request whose body the scenario wrote itself (malformed input)."""
        self._correlation += 1
        header = encode_request_header(api_key, version, self._correlation, self.client_id)
        payload = header + body
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)
        return self._correlation

    def receive(self, api_key: int, version: int, correlation_id: int) -> Any:
        size = struct.unpack(">i", self._recv_exact(4))[0]
        frame = self._recv_exact(size)
        got = struct.unpack_from(">i", frame, 0)[0]
        if got != correlation_id:
            raise AssertionError(f"correlation id {got} != {correlation_id}")
        offset = 4 + (1 if response_header_version(api_key, version) >= 1 else 0)
        return decode_response(api_key, version, frame[offset:])

    def closed_by_peer(self, timeout: float = 5.0) -> bool:
        """True when the broker closes the connection within `timeout`."""
        self.sock.settimeout(timeout)
        try:
            while True:
                if not self.sock.recv(65536):
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False

    def _recv_exact(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(n)
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)


# -- normalising answers -----------------------------------------------------------


def records_view(data: bytes | memoryview | None) -> Any:
    """A Records field as comparable data: each whole batch's header fields and records,
    and the size of a trailing partial batch."""
    if data is None:
        return None
    buf = bytes(data)
    batches: list[dict[str, Any]] = []
    pos = 0
    while pos + 12 <= len(buf):
        (length,) = struct.unpack_from(">i", buf, pos + 8)
        end = pos + 12 + length
        if length < BATCH_HEADER_SIZE - 12 or end > len(buf):
            break
        try:
            h = read_batch_header(buf, pos)
        except Exception:  # noqa: BLE001 - a request may carry a batch of another magic on purpose
            break
        log_append = h.timestamp_type == TimestampType.LOG_APPEND_TIME
        view: dict[str, Any] = {
            "base_offset": h.base_offset, "length": h.batch_length,
            "partition_leader_epoch": h.partition_leader_epoch, "magic": h.magic,
            # The CRC covers maxTimestamp, which is the broker's clock under LogAppendTime.
            "crc": "<crc>" if log_append else h.crc,
            "attributes": h.attributes, "last_offset_delta": h.last_offset_delta,
            "base_timestamp": h.base_timestamp,
            "max_timestamp": "<log-append-time>" if log_append else h.max_timestamp,
            "producer_id": h.producer_id, "producer_epoch": h.producer_epoch,
            "base_sequence": h.base_sequence, "records_count": h.records_count,
        }
        try:
            view["records"] = [
                # Under LogAppendTime every record's timestamp is the batch's, the broker's clock.
                {"offset": r.offset, "timestamp": "<log-append-time>" if log_append else r.timestamp,
                 "key": _bytes(r.key), "value": _bytes(r.value),
                 "headers": [[k, _bytes(v)] for k, v in r.headers]}
                for r in decode_records(buf, pos)
            ]
        except Exception as exc:  # noqa: BLE001 - a batch we cannot decode is itself a result
            view["records"] = f"<undecodable: {type(exc).__name__}>"
        if h.has_delete_horizon:
            # The cleaner stamps a delete horizon into baseTimestamp: its clock at that clean
            # plus delete.retention.ms, so it differs between brokers (and so does the CRC).
            view["base_timestamp"], view["crc"] = "<delete-horizon>", "<crc>"
        batches.append(view)
        pos = end
    out: dict[str, Any] = {"batches": batches}
    if pos < len(buf):
        out["trailing_partial_bytes"] = len(buf) - pos
    return out


def _bytes(b: bytes | None) -> Any:
    if b is None:
        return None
    try:
        return b.decode("utf-8") if len(b) <= 64 else f"<{len(b)} bytes: {b[:16].hex()}...>"
    except UnicodeDecodeError:
        return f"0x{b.hex()}" if len(b) <= 64 else f"<{len(b)} bytes: {b[:16].hex()}...>"


_NORMALISED_KEYS: dict[str, Any] = {
    "throttle_time": 0,
    "throttle_time_ms": 0,
    "cluster_id": "<cluster-id>",
    "host": "<host>",
    "port": "<port>",
}


_REQUEST_DESCRIPTION = re.compile(r"Request Request\(.*\) (needs \w+ permission\.|is not authorized\.)")


class Normaliser:
    """Turns kio entities into plain data and removes what must differ between brokers."""

    def __init__(self, topic_suffix: str, topic_ids: dict[uuid.UUID, str]) -> None:
        self.suffix = topic_suffix
        self.topic_ids = topic_ids  # id -> symbolic name, learned from answers
        self._pattern = re.compile(re.escape(topic_suffix))
        # Values a broker generates (member ids, ...) -> the symbolic name a scenario gave them.
        self.aliases: dict[str, str] = {}
        # Fetch session ids a broker generated -> the scenario's names for them.
        self.session_ids: dict[int, str] = {}

    def __call__(self, value: Any, key: str | None = None) -> Any:
        if key in _NORMALISED_KEYS and value is not None:
            return _NORMALISED_KEYS[key]
        if key == "session_id" and value in self.session_ids:
            return self.session_ids[value]
        if key == "records" and isinstance(value, (bytes, bytearray, memoryview)):
            return records_view(value)
        if key in ("log_append_time", "log_append_time_ms"):
            return value if value is None or _ms(value) == -1 else "<log-append-time>"
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: self(getattr(value, f.name), f.name) for f in dataclasses.fields(value)}
        if isinstance(value, (tuple, list)):
            return [self(v, key) for v in value]
        if isinstance(value, uuid.UUID):
            if value == ZERO_UUID:
                return "<zero-uuid>"
            return f"<topic-id {self.topic_ids.get(value, '?')}>"
        if isinstance(value, enum.Enum):
            return value.name
        if isinstance(value, datetime.timedelta):
            return int(value.total_seconds() * 1000)
        if isinstance(value, datetime.datetime):
            return int(value.timestamp() * 1000)
        if isinstance(value, str):
            for generated, symbol in self.aliases.items():
                value = value.replace(generated, symbol)
            # Kafka's "Request Request(processor=1, connectionId=<local>-<peer>-<n>, session=...,
            # buffer=..., envelope=...) needs ALTER permission.": the request as the broker's network
            # layer prints itself (its thread, ports, object hashes) differs between brokers.
            value = _REQUEST_DESCRIPTION.sub(r"Request <request> \1", value)
            return self._pattern.sub("", value)
        if isinstance(value, (bytes, bytearray, memoryview)):
            # Opaque bytes can carry topic names too (consumer protocol metadata).
            return _bytes(bytes(value).replace(self.suffix.encode(), b""))
        return value

    def learn_topic_ids(self, value: Any) -> None:
        """Remember name <-> id pairs found anywhere in an answer (Metadata, CreateTopics, ...)."""
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            names = {f.name for f in dataclasses.fields(value)}
            if "topic_id" in names and ("name" in names or "topic" in names):
                tid = getattr(value, "topic_id")
                name = getattr(value, "name", None) if "name" in names else getattr(value, "topic", None)
                if isinstance(tid, uuid.UUID) and tid != ZERO_UUID and isinstance(name, str):
                    self.topic_ids.setdefault(tid, self._pattern.sub("", name))
            for f in dataclasses.fields(value):
                self.learn_topic_ids(getattr(value, f.name))
        elif isinstance(value, (tuple, list)):
            for v in value:
                self.learn_topic_ids(v)


def _ms(value: Any) -> int:
    if isinstance(value, datetime.datetime):
        return int(value.timestamp() * 1000)
    return int(value)


def _sort_produce(answer: dict[str, Any]) -> None:
    """Kafka builds a ProduceResponse from a hash map of partitions: the order of its topics
    and partitions is not the request's and carries no meaning (clients match by name and
    index), so both sides are compared sorted."""
    answer["responses"].sort(key=lambda t: t["name"])
    for t in answer["responses"]:
        t["partition_responses"].sort(key=lambda p: p["index"])


def _sort_list_offsets(answer: dict[str, Any]) -> None:
    """Kafka answers ListOffsets from a hash map of partitions too (see _sort_produce)."""
    answer["topics"].sort(key=lambda t: t["name"])
    for t in answer["topics"]:
        t["partitions"].sort(key=lambda p: p["partition_index"])


def _sort_delete_records(answer: dict[str, Any]) -> None:
    """Kafka answers DeleteRecords from a hash map of partitions too (see _sort_produce)."""
    answer["topics"].sort(key=lambda t: t["name"])
    for t in answer["topics"]:
        t["partitions"].sort(key=lambda p: p["partition_index"])


def _name_key(entry: dict[str, Any]) -> tuple[bool, str, str]:
    """Entries by name, the nameless ones (by topic id) after them by their symbolic id."""
    name = entry.get("name")
    return (name is None, name or "", str(entry.get("topic_id")))


def _sort_metadata(answer: dict[str, Any]) -> None:
    """Kafka answers Metadata for a requested set of names from a hash set: the order of
    its topics carries no meaning (clients index them by name or id)."""
    answer["topics"].sort(key=_name_key)


def _sort_delete_topics(answer: dict[str, Any]) -> None:
    """Kafka resolves DeleteTopics' names and ids through hash maps before answering."""
    answer["responses"].sort(key=_name_key)


def _sort_describe_configs(answer: dict[str, Any]) -> None:
    """Kafka lists a resource's configs from a hash map (a Properties object): the order of
    the entries carries no meaning. Synonyms keep their order, which is their precedence."""
    for result in answer["results"]:
        result["configs"].sort(key=lambda c: c["name"])


def _sort_create_partitions(answer: dict[str, Any]) -> None:
    """Kafka's controller answers CreatePartitions topic by topic from a hash map."""
    answer["results"].sort(key=lambda r: r["name"])


def _sort_describe_log_dirs(answer: dict[str, Any]) -> None:
    """Kafka lists a log dir's topics and partitions from hash maps."""
    for result in answer["results"]:
        result["topics"].sort(key=lambda t: t["name"])
        for topic in result["topics"]:
            topic["partitions"].sort(key=lambda p: p["partition_index"])


def _sort_scram_results(answer: dict[str, Any]) -> None:
    """Kafka's controller answers the SCRAM admin APIs user by user from hash maps."""
    answer["results"].sort(key=lambda r: r["user"])


def _sort_describe_acls(answer: dict[str, Any]) -> None:
    """Kafka's authorizer keeps ACLs in hash maps and groups them by resource in another."""
    answer["resources"].sort(key=lambda r: (r["resource_type"], r["resource_name"], r["pattern_type"]))
    for resource in answer["resources"]:
        resource["acls"].sort(key=repr)


def _sort_delete_acls(answer: dict[str, Any]) -> None:
    """Kafka's controller finds the ACLs a filter matches by walking a hash map."""
    for result in answer["filter_results"]:
        result["matching_acls"].sort(key=repr)


def _sort_alter_client_quotas(answer: dict[str, Any]) -> None:
    """Kafka's controller answers AlterClientQuotas entity by entity from a hash map."""
    answer["entries"].sort(key=lambda e: repr(e["entity"]))


def _sort_assignment(assignment: dict[str, Any] | None) -> None:
    if assignment:
        assignment["topic_partitions"].sort(key=lambda t: repr(t["topic_id"]))
        for t in assignment["topic_partitions"]:
            t["partitions"].sort()


def _sort_consumer_group_heartbeat(answer: dict[str, Any]) -> None:
    """Kafka builds a member's assignment from hash maps (topics and partition sets)."""
    _sort_assignment(answer.get("assignment"))


def _sort_consumer_group_describe(answer: dict[str, Any]) -> None:
    """Kafka lists a group's members, and their assignments, from hash maps."""
    answer["groups"].sort(key=lambda g: g["group_id"])
    for group in answer["groups"]:
        group["members"].sort(key=lambda m: m["member_id"])
        for member in group["members"]:
            member["subscribed_topic_names"].sort()  # a set in Kafka
            _sort_assignment(member["assignment"])
            if "target_assignment" in member:  # ShareGroupDescribe has none
                _sort_assignment(member["target_assignment"])


def _sort_describe_share_group_offsets(answer: dict[str, Any]) -> None:
    """Kafka gathers the share state summaries of a group's partitions from hash maps."""
    for group in answer["groups"]:
        group["topics"].sort(key=lambda t: (t["topic_name"], repr(t["topic_id"])))
        for t in group["topics"]:
            t["partitions"].sort(key=lambda p: p["partition_index"])


# API key -> how to put the unordered collections of its answer in a canonical order.
UNORDERED: dict[int, Callable[[dict[str, Any]], None]] = {
    0: _sort_produce, 2: _sort_list_offsets, 3: _sort_metadata, 20: _sort_delete_topics,
    21: _sort_delete_records, 32: _sort_describe_configs, 35: _sort_describe_log_dirs, 37: _sort_create_partitions,
    29: _sort_describe_acls, 31: _sort_delete_acls, 49: _sort_alter_client_quotas, 50: _sort_scram_results, 51: _sort_scram_results,
    68: _sort_consumer_group_heartbeat, 69: _sort_consumer_group_describe,
    76: _sort_consumer_group_heartbeat, 77: _sort_consumer_group_describe, 90: _sort_describe_share_group_offsets,
}


# -- one run of a scenario on one broker -------------------------------------------


@dataclasses.dataclass
class Step:
    label: str
    request: Any
    response: Any


class ScenarioRun:
    """A scenario's view of one broker: calls, symbolic topic names, the transcript."""

    def __init__(self, broker: str, bootstrap: str, run_id: str, sasl_bootstrap: str | None = None) -> None:
        self.broker = broker  # "kafka" or "asyncbroker"
        self.bootstrap = bootstrap
        # A SASL_PLAINTEXT listener with PLAIN users "<name>" / "<name>-secret" (connect_as).
        self.sasl_bootstrap = sasl_bootstrap
        self.run_id = run_id
        self.suffix = f"-{run_id}"
        self.transcript: list[Step] = []
        self.topic_ids: dict[uuid.UUID, str] = {}
        self.normalise = Normaliser(self.suffix, self.topic_ids)
        self._connections: list[Connection] = []
        self._user_connections: dict[str, Connection] = {}
        self.conn = self.connect()

    # names

    def topic(self, symbol: str) -> str:
        return f"{symbol}{self.suffix}"

    def group(self, symbol: str) -> str:
        return f"{symbol}{self.suffix}"

    def alias(self, generated: str, symbol: str) -> None:
        """Show a value the broker generated (a member id) as `symbol` in the transcript,
        wherever it appears, error messages included: two brokers never generate the same."""
        if generated:
            self.normalise.aliases.setdefault(generated, symbol)

    def alias_session(self, session_id: int, symbol: str) -> None:
        """Show a fetch session id the broker generated as `symbol` (ids are random); 0, the
        answer of a broker that opened no session, stays 0."""
        if session_id:
            self.normalise.session_ids.setdefault(session_id, symbol)

    def topic_id(self, symbol: str) -> uuid.UUID:
        for tid, name in self.topic_ids.items():
            if name == symbol:
                return tid
        raise KeyError(f"no topic id learned for {symbol!r} yet")

    # connections

    def connect(self, client_id: str = "oracle") -> Connection:
        conn = Connection(self.bootstrap, client_id=client_id)
        self._connections.append(conn)
        return conn

    def reconnect(self) -> None:
        """Replace the run's current connection with a new one of the same kind, after the broker
        closed it: inside `as_user`, one authenticated as that user again (and kept for that
        user's later blocks), not a plain one, which would be the listener's own principal."""
        old = self.conn
        old.close()
        user = next((u for u, c in self._user_connections.items() if c is old), None)
        if user is None:
            self.conn = self.connect()
        else:
            self.conn = self._user_connections[user] = self.connect_as(user)

    def connect_as(self, user: str, client_id: str = "oracle") -> Connection:
        """A connection to the SASL listener, authenticated as User:<user>."""
        assert self.sasl_bootstrap is not None, "this scenario's brokers have no SASL listener"
        conn = Connection(self.sasl_bootstrap, client_id=client_id)
        self._connections.append(conn)
        conn.authenticate_plain(user, f"{user}-secret")
        return conn

    @contextlib.contextmanager
    def as_user(self, user: str) -> Iterator[Connection]:
        """Within the block, steps that use the run's connection go through one authenticated
        as User:<user> (one per user and run, kept for later blocks)."""
        conn = self._user_connections.get(user)
        if conn is None:
            conn = self._user_connections[user] = self.connect_as(user)
        previous, self.conn = self.conn, conn
        try:
            yield conn
        finally:
            self.conn = previous

    def close(self) -> None:
        for c in self._connections:
            c.close()

    # requests

    def call(self, api_key: int, version: int, /, _label: str | None = None, _conn: Connection | None = None,
             _record: bool = True, **fields: Any) -> Any:
        """Send `<Api>Request` of `version` built from `fields`; record and return the answer."""
        request = entity(api_key, version, request_class_name(api_key, version), **fields)
        return self.send(request, label=_label, conn=_conn, record=_record)

    def send(self, request: Any, *, label: str | None = None, conn: Connection | None = None,
             record: bool = True) -> Any:
        c = conn or self.conn
        cid = c.send(request)
        try:
            response = c.receive(request.__api_key__, request.__version__, cid)
        except ConnectionError:
            if not (self.broker == "kafka" and request.__api_key__ == FETCH_API_KEY and c is self.conn):
                raise
            # With the oracle's log.segment.delete.delay.ms=0, Kafka closes a segment's file as
            # soon as its cleaner or retention replaces the segment, and a Fetch answer being
            # sent from that file fails mid-frame: Kafka drops the connection (the race
            # KAFKA-19571 describes). A consumer reconnects and fetches again; so does the run,
            # once. asyncbroker closing a connection stays a failure.
            self.reconnect()
            c = self.conn
            cid = c.send(request)
            response = c.receive(request.__api_key__, request.__version__, cid)
        self.normalise.learn_topic_ids(response)
        if record:
            self.record(label or type(request).__name__ + f" v{request.__version__}", request, response)
        return response

    def note_answer_within(self, label: str, request: Any, conn: Connection, seconds: float) -> None:
        """Send `request` and note its answer, or None when none comes within `seconds` (a
        request Kafka never answers); `conn` is not usable afterwards."""
        correlation = conn.send(request)
        conn.sock.settimeout(seconds)
        try:
            answer = self.normalise(conn.receive(request.__api_key__, request.__version__, correlation))
        except TimeoutError:
            answer = None
        self.note(label, answer)

    def record(self, label: str, request: Any, response: Any) -> None:
        self.normalise.learn_topic_ids(request)
        answer = self.normalise(response)
        api_key = getattr(response, "__api_key__", None)
        if api_key in UNORDERED:
            UNORDERED[api_key](answer)
        self.transcript.append(Step(label, self.normalise(request), answer))

    def note(self, label: str, value: Any) -> None:
        """Record a value the scenario derived (surviving records, a closed connection, ...)."""
        self.transcript.append(Step(label, None, self.normalise(value)))

    # waiting on conditions

    def wait_until(self, condition: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            result = condition()
            if result:
                return result
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.broker}: timed out after {timeout}s waiting for {what}")
            time.sleep(0.05)  # polling a condition, bounded by the deadline


# -- comparing --------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Difference:
    step: int
    label: str
    path: str
    kafka: Any
    asyncbroker: Any

    def __str__(self) -> str:
        return f"step {self.step} ({self.label}) {self.path}: kafka={self.kafka!r} asyncbroker={self.asyncbroker!r}"


def diff(a: Any, b: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[tuple[str, Any, Any]] = []
        for k in list(a) + [k for k in b if k not in a]:
            out += diff(a.get(k, "<absent>"), b.get(k, "<absent>"), f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        keyed = _keyed(a) if a else None
        if keyed is not None and (not b or _keyed(b) == keyed):
            # Named entries (configs, topics): report the names in order once, then compare
            # entries of the same name, so one extra entry does not shift every later one.
            names_a = [x[keyed] for x in a]
            names_b = [x[keyed] for x in b]
            out = [] if names_a == names_b else [(f"{path}[{keyed}s]", names_a, names_b)]
            by_name = {x[keyed]: x for x in b}
            for x in a:
                if x[keyed] in by_name:
                    out += diff(x, by_name[x[keyed]], f"{path}[{x[keyed]}]")
            return out
        if len(a) != len(b):
            return [(f"{path}[len]", len(a), len(b))] + [
                d for i, (x, y) in enumerate(zip(a, b)) for d in diff(x, y, f"{path}[{i}]")
            ]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in diff(x, y, f"{path}[{i}]")]
    return [] if a == b else [(path, a, b)]


def _keyed(items: list[Any]) -> str | None:
    """The field that names each entry of a list of entities ("name"), if every entry has a
    distinct one."""
    if not all(isinstance(x, dict) for x in items):
        return None
    for key in ("name",):
        values = [x.get(key) for x in items]
        if all(isinstance(v, str) for v in values) and len(set(values)) == len(values):
            return key
    return None


def compare_transcripts(kafka: list[Step], ours: list[Step]) -> list[Difference]:
    out: list[Difference] = []
    if len(kafka) != len(ours):
        out.append(Difference(-1, "transcript", "[len]", [s.label for s in kafka], [s.label for s in ours]))
    for i, (k, o) in enumerate(zip(kafka, ours)):
        if k.label != o.label:
            out.append(Difference(i, k.label, "label", k.label, o.label))
            continue
        for path, a, b in diff(k.response, o.response):
            out.append(Difference(i, k.label, path, a, b))
    return out


Scenario = Callable[[ScenarioRun], None]


def run_scenario(scenario: Scenario, broker: str, bootstrap: str, sasl_bootstrap: str | None = None) -> ScenarioRun:
    run = ScenarioRun(broker, bootstrap, uuid.uuid4().hex[:10], sasl_bootstrap)
    try:
        scenario(run)
    finally:
        run.close()
        save_transcript(run)
    return run


def save_transcript(run: ScenarioRun) -> Path | None:
    """With ORACLE_TRANSCRIPTS=<dir> in the environment: write the run's normalised transcript
    there as JSON (<test>.<broker>.json), to read what a broker answered without a diff (also
    when the scenario failed half-way)."""
    import json
    import os

    directory = os.environ.get("ORACLE_TRANSCRIPTS")
    if not directory:
        return None
    test = os.environ.get("PYTEST_CURRENT_TEST", "scenario").split(" ")[0]
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", test.rsplit("/", 1)[-1])
    path = Path(directory) / f"{stem}.{run.broker}.json"
    n = 1
    while path.exists():  # a test comparing several scenarios
        n += 1
        path = Path(directory) / f"{stem}-{n}.{run.broker}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    steps = [{"step": i, "label": s.label, "request": s.request, "response": s.response}
             for i, s in enumerate(run.transcript)]
    path.write_text(json.dumps(steps, indent=1, default=repr))
    return path


def run_kafka_only(scenario: Scenario, kafka_bootstrap: str, sasl_bootstrap: str | None = None) -> ScenarioRun:
    """The scenario against Kafka alone (pytest --kafka-only): its waits and assertions hold on the
    oracle (and its transcript is kept when ORACLE_TRANSCRIPTS is set)."""
    return run_scenario(scenario, "kafka", kafka_bootstrap, sasl_bootstrap)


def compare(scenario: Scenario, kafka_bootstrap: str, asyncbroker_bootstrap: str,
            known: Mapping[str, Iterable[str]] | None = None, *,
            sasl_bootstraps: tuple[str, str] | None = None) -> list[Difference]:
    """Run `scenario` on Kafka and on asyncbroker at once, and assert equal transcripts.

    The two runs share nothing but the scenario function (each has its own ScenarioRun,
    names and connections), and most of a run is waiting on a broker, so they run side by
    side; Kafka's failure is raised first, as its run passing proves the scenario right.
    `known` maps a KNOWN_DIFFERENCES.md id to the step paths ("<step>:<path>")
    that differ because of it; those must differ, and nothing else may.
    """
    kafka_sasl, our_sasl = sasl_bootstraps or (None, None)
    kafka_run, our_run = side_by_side(partial(run_scenario, scenario, "kafka", kafka_bootstrap, kafka_sasl),
                                      partial(run_scenario, scenario, "asyncbroker", asyncbroker_bootstrap, our_sasl))
    differences = compare_transcripts(kafka_run.transcript, our_run.transcript)
    expected = {p for paths in (known or {}).values() for p in paths}
    found = {f"{d.step}:{d.path}" for d in differences}
    unexpected = [d for d in differences if f"{d.step}:{d.path}" not in expected]
    missing = sorted(expected - found)
    if unexpected or missing:
        lines = [str(d) for d in unexpected[:40]]
        if len(unexpected) > 40:
            lines.append(f"... and {len(unexpected) - 40} more")
        if missing:
            lines.append(f"declared known differences that did not occur (update KNOWN_DIFFERENCES.md): {missing}")
        raise AssertionError("asyncbroker differs from Kafka 4.4:\n  " + "\n  ".join(lines))
    return differences
