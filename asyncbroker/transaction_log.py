"""The key and value formats of the records in `__transaction_state`.

One compacted record per transactional id holds its producer id, epoch and transaction
state, so the coordinator can be rebuilt by replaying the topic. A directory written by
Apache Kafka must load here and the reverse, so the bytes follow Kafka 4.4's schemas
(transaction-coordinator/.../common/message/TransactionLog{Key,Value}.json):

    key   = int16 0 (the TRANSACTION_LOG record type), then TransactionalId: string
    value = int16 version, then
              ProducerId int64, ProducerEpoch int16, TransactionTimeoutMs int32,
              TransactionStatus int8, TransactionPartitions [Topic string,
              PartitionIds [int32]] (null unless the state is not Empty),
              TransactionLastUpdateTimestampMs int64, TransactionStartTimestampMs int64
            version 1 is flexible (compact strings/arrays) and adds tagged fields, each
            written only when it differs from its default:
              0 PreviousProducerId int64 (-1), 1 NextProducerId int64 (-1),
              2 ClientTransactionVersion int16 (0), 3 NextProducerEpoch int16 (-1)
            a null value is a tombstone (the transactional id expired)

Kafka writes version 1 from transaction.version 1 on, version 0 below it.
"""
from __future__ import annotations

import io
from typing import Any, Callable, Iterable, TypeVar

import msgspec
from kio.serial import readers, writers
from kio.serial.errors import BufferUnderflow
from kio.static.primitive import i8, i16, i32, i64, uvarint

from asyncbroker.transaction_state import TransactionState
from storage.topic_partition import TopicPartition

__all__ = [
    "TRANSACTION_LOG_RECORD_TYPE",
    "TransactionLogFormatError",
    "TransactionLogValue",
    "TxnRecord",
    "TxnTombstone",
    "UnknownKeyVersion",
    "UnknownValueVersion",
    "encode_key",
    "encode_value",
    "read",
    "value_version_for",
]

TRANSACTION_LOG_RECORD_TYPE = 0
HIGHEST_VALUE_VERSION = 1

_T = TypeVar("_T")


class TransactionLogFormatError(ValueError):
    """A `__transaction_state` key or value that does not follow the schema."""


class TransactionLogValue(msgspec.Struct, frozen=True):
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    state: TransactionState
    partitions: tuple[TopicPartition, ...]
    last_update_timestamp_ms: int
    start_timestamp_ms: int
    previous_producer_id: int = -1
    next_producer_id: int = -1
    next_producer_epoch: int = -1
    client_transaction_version: int = 0


class TxnRecord(msgspec.Struct, frozen=True):
    transactional_id: str
    value: TransactionLogValue


class TxnTombstone(msgspec.Struct, frozen=True):
    transactional_id: str


class UnknownKeyVersion(msgspec.Struct, frozen=True):
    """A record type another coordinator writes; a loader skips it, as Kafka's does."""

    version: int


class UnknownValueVersion(msgspec.Struct, frozen=True):
    transactional_id: str
    version: int


def value_version_for(transaction_version: int) -> int:
    """transaction.version 1 and 2 write the flexible value; 0 the original one."""
    return 1 if transaction_version >= 1 else 0


# ------------------------------------------------------------------ writing


def encode_key(transactional_id: str) -> bytes:
    out = io.BytesIO()
    writers.write_int16(out, i16(TRANSACTION_LOG_RECORD_TYPE))
    writers.write_legacy_string(out, transactional_id)
    return out.getvalue()


def encode_value(value: TransactionLogValue, version: int) -> bytes:
    """The value bytes at `version` (see value_version_for)."""
    if not 0 <= version <= HIGHEST_VALUE_VERSION:
        raise TransactionLogFormatError(f"no TransactionLogValue version {version}")
    if value.state == TransactionState.EMPTY and value.partitions:
        # The invariant Kafka's writer checks too: an Empty transaction has no partitions.
        raise TransactionLogFormatError(f"an Empty transaction cannot hold partitions: {value}")
    flexible = version >= 1
    out = io.BytesIO()
    writers.write_int16(out, i16(version))
    writers.write_int64(out, i64(value.producer_id))
    writers.write_int16(out, i16(value.producer_epoch))
    writers.write_int32(out, i32(value.transaction_timeout_ms))
    writers.write_int8(out, i8(int(value.state)))
    groups = None if value.state == TransactionState.EMPTY else _by_topic(value.partitions)
    _write_array_length(out, None if groups is None else len(groups), flexible)
    for topic, partition_ids in (groups or {}).items():
        (writers.write_compact_string if flexible else writers.write_legacy_string)(out, topic)
        _write_array_length(out, len(partition_ids), flexible)
        for partition in partition_ids:
            writers.write_int32(out, i32(partition))
        if flexible:
            writers.write_empty_tagged_fields(out)
    writers.write_int64(out, i64(value.last_update_timestamp_ms))
    writers.write_int64(out, i64(value.start_timestamp_ms))
    if flexible:
        _write_tagged_fields(out, value)
    return out.getvalue()


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for tp in partitions:
        groups.setdefault(tp.topic, []).append(tp.partition)
    return groups


def _write_array_length(out: io.BytesIO, n: int | None, flexible: bool) -> None:
    if flexible:
        writers.write_compact_array_length(out, n)
    else:
        writers.write_legacy_array_length(out, i32(-1 if n is None else n))


def _write_tagged_fields(out: io.BytesIO, value: TransactionLogValue) -> None:
    # Ascending tag order, and only fields away from their defaults, as Kafka's generated writer.
    fields: list[tuple[int, Callable[[Any, Any], None], int]] = []
    if value.previous_producer_id != -1:
        fields.append((0, writers.write_int64, value.previous_producer_id))
    if value.next_producer_id != -1:
        fields.append((1, writers.write_int64, value.next_producer_id))
    if value.client_transaction_version != 0:
        fields.append((2, writers.write_int16, value.client_transaction_version))
    if value.next_producer_epoch != -1:
        fields.append((3, writers.write_int16, value.next_producer_epoch))
    writers.write_unsigned_varint(out, uvarint(len(fields)))
    for tag, write, field in fields:
        writers.write_tagged_field(out, uvarint(tag), write, field)


# ------------------------------------------------------------------ reading


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, read: Callable[[bytes, int], tuple[_T, int]]) -> _T:
        try:
            value, size = read(self.data, self.pos)
        except (BufferUnderflow, UnicodeDecodeError, ValueError) as exc:
            raise TransactionLogFormatError(f"malformed __transaction_state record: {exc}") from None
        self.pos += size
        return value

    def skip_tagged_fields(self) -> dict[int, bytes]:
        fields: dict[int, bytes] = {}
        for _ in range(self.take(readers.read_unsigned_varint)):
            tag = self.take(readers.read_unsigned_varint)
            size = self.take(readers.read_unsigned_varint)
            if self.pos + size > len(self.data):
                raise TransactionLogFormatError("malformed __transaction_state record: truncated tagged field")
            fields[tag] = self.data[self.pos:self.pos + size]
            self.pos += size
        return fields


def read(key: bytes, value: bytes | None) -> TxnRecord | TxnTombstone | UnknownKeyVersion | UnknownValueVersion:
    """One `__transaction_state` record; TransactionLogFormatError when the bytes are malformed."""
    r = _Reader(key)
    key_version = r.take(readers.read_int16)
    if key_version != TRANSACTION_LOG_RECORD_TYPE:
        return UnknownKeyVersion(key_version)
    transactional_id = r.take(readers.read_legacy_string)
    if value is None:
        return TxnTombstone(transactional_id)
    r = _Reader(value)
    version = r.take(readers.read_int16)
    if not 0 <= version <= HIGHEST_VALUE_VERSION:
        return UnknownValueVersion(transactional_id, version)
    flexible = version >= 1
    read_string = readers.read_compact_string if flexible else readers.read_legacy_string
    read_length = readers.read_compact_array_length if flexible else readers.read_legacy_array_length
    producer_id = r.take(readers.read_int64)
    producer_epoch = r.take(readers.read_int16)
    timeout_ms = r.take(readers.read_int32)
    status = r.take(readers.read_int8)
    try:
        state = TransactionState(status)
    except ValueError:
        raise TransactionLogFormatError(
            f"Unknown transaction state id {status} from the transaction status message") from None
    partitions: list[TopicPartition] = []
    count = r.take(read_length)
    for _ in range(max(count or 0, 0)):
        topic = r.take(read_string)
        for _ in range(max(r.take(read_length) or 0, 0)):
            partitions.append(TopicPartition(topic, r.take(readers.read_int32)))
        if flexible:
            r.skip_tagged_fields()
    last_update = r.take(readers.read_int64)
    start = r.take(readers.read_int64)
    tagged = r.skip_tagged_fields() if flexible else {}
    if state == TransactionState.EMPTY:
        partitions = []  # Kafka's loader ignores partitions of an Empty transaction
    return TxnRecord(transactional_id, TransactionLogValue(
        producer_id, producer_epoch, timeout_ms, state, tuple(partitions), last_update, start,
        previous_producer_id=_tagged(tagged, 0, readers.read_int64, -1),
        next_producer_id=_tagged(tagged, 1, readers.read_int64, -1),
        next_producer_epoch=_tagged(tagged, 3, readers.read_int16, -1),
        client_transaction_version=_tagged(tagged, 2, readers.read_int16, 0),
    ))


def _tagged(fields: dict[int, bytes], tag: int, read_field: Callable[[bytes, int], tuple[int, int]],
            default: int) -> int:
    if tag not in fields:
        return default
    return _Reader(fields[tag]).take(read_field)
