"""Produce (key 0): append each partition's record batches and report offsets.

Checks come in Kafka's order (KafkaApis.handleProduceRequest, then
ReplicaManager), because which error a client sees depends on it: the first
batch of every partition is framed before anything else (a size or magic no
format has fails the whole request, with the framing error's message, and a
transactional batch needs a transactional id); then per partition an unknown
topic or partition (Produce never creates topics: clients do that through
Metadata), the v3+ record rules (one batch, of magic 2, no zstd before v7);
then acks, internal topics, and the append. Storage validates the batch
(base offset, size, CRC, counts, keys on compacted topics, timestamps) and
raises typed errors; each partition's error is reported on its own. As in
Kafka, only rejected records (v8+ record errors) come with a message, and a
failed append reports the log start offset unless the error is one Kafka
treats as "known" (unknown partition, sizes, corrupt data, storage).

Appends that provably cannot block are done on the event loop: storage's
nonblocking append refuses (AppendWouldBlock, nothing changed) when the
log's lock is taken or the append would roll a segment, write the
leader-epoch checkpoint or fsync, and only logs whose validation is per
batch (not compacted, no topic codec to recompress to, no bound on old
timestamps) and requests of at most INLINE_APPEND_MAX_BYTES qualify, so the
loop's cost stays bounded. Everything else goes to the IO threads in one
executor hop (see broker.py). The hop costs a thread wake-up each way, which
on a VM was most of a small produce's round trip.

acks: 1 and -1 are answered after the append (on one node the ISR is this
node; with flush.messages=1 storage has fsynced by then); acks=0 gets no
response, and a failed acks=0 request closes the connection so the client
notices. Any other acks value is INVALID_REQUIRED_ACKS for every partition
that passed the checks before it.
"""

from __future__ import annotations

import logging
from typing import Any

from storage.errors import AppendWouldBlock
from storage.topic_partition import TopicPartition
from wire.compression import CompressionType
from wire.errors import (
    CorruptRecordError,
    ErrorCode,
    InvalidRecordError,
    InvalidRequiredAcksError,
    InvalidTopicError,
    KafkaError,
    TransactionalIdAuthorizationFailedError,
    UnknownServerError,
    UnsupportedCompressionTypeError,
)
from wire.records import (
    ATTRIBUTES_OFFSET,
    BATCH_HEADER_SIZE,
    COMPRESSION_CODEC_MASK,
    MAGIC_V2,
    TRANSACTIONAL_FLAG_MASK,
    batch_spans,
    read_batch_header,
)
from wire.messages import ApiKey
from wire.response_encoders import ProducePartitionResult, ProduceTopicResult, encode_produce_response

from asyncbroker.connection import CloseConnection
from asyncbroker.handlers import error_code_for, error_message_for
from asyncbroker.leader_epoch import LEADER_EPOCH
from asyncbroker.metrics import METRICS
from asyncbroker.encoded_response import EncodedResponse

API_KEY = ApiKey.PRODUCE
MIN_VERSION = 3
MAX_VERSION = 12

log = logging.getLogger(__name__)


# Errors Kafka's ReplicaManager reports without the partition's log start offset (its
# appendToLocalLog treats these as "known" failures and answers UNKNOWN_LOG_APPEND_INFO).
_NO_LOG_START_OFFSET = frozenset({
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.MESSAGE_TOO_LARGE,
    ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.CORRUPT_MESSAGE, ErrorCode.KAFKA_STORAGE_ERROR,
})


class PartitionResult:
    """What one partition's append produced: offsets, or an error."""

    __slots__ = ("index", "error", "message", "base_offset", "log_append_time", "log_start_offset", "record_errors")

    def __init__(self, index: int, error: int = ErrorCode.NONE) -> None:
        self.index = index
        self.error: int = error
        self.message: str | None = None
        self.base_offset = -1
        self.log_append_time = -1
        self.log_start_offset = -1
        self.record_errors: list[tuple[int, str | None]] = []

    def fail(self, exc: BaseException, log_start_offset: int = -1) -> None:
        """An append that failed. Kafka sends a message only for rejected records (the
        record errors of v8+); the log start offset unless the error is a "known" one."""
        self.error = error_code_for(exc)
        self.record_errors = list(getattr(exc, "record_errors", None) or [])
        self.message = error_message_for(exc) if self.record_errors else None
        if self.error not in _NO_LOG_START_OFFSET:
            self.log_start_offset = log_start_offset


class _Append:
    __slots__ = ("tp", "log", "records", "result", "appended_bytes", "appended_records")

    def __init__(self, tp: TopicPartition, log: Any, records: bytes, result: PartitionResult) -> None:
        self.tp = tp
        self.log = log
        self.records = records
        self.result = result
        self.appended_bytes = 0
        self.appended_records = 0


_CODEC_IDS = frozenset(int(c) for c in CompressionType)

INLINE_APPEND_MAX_BYTES = 256 * 1024
"""Bytes of records one request may append on the loop (CRC work ~15 us at this size)."""


def _append(a: _Append, *, nonblocking: bool) -> None:
    try:
        info = a.log.append_as_leader(a.records, leader_epoch=LEADER_EPOCH, nonblocking=nonblocking)
    except AppendWouldBlock:
        raise
    except Exception as exc:  # noqa: BLE001 - mapped per partition at the boundary
        a.result.fail(exc, a.log.log_start_offset)
        return
    r = a.result
    r.base_offset = info.first_offset
    r.log_append_time = info.log_append_time
    r.log_start_offset = info.log_start_offset
    r.record_errors = list(info.record_errors or [])
    a.appended_bytes = info.valid_bytes
    a.appended_records = info.num_messages


def _append_inline(appends: list[_Append]) -> list[_Append]:
    """Loop side: append what cannot block; returns the appends left for an IO thread."""
    left: list[_Append] = []
    budget = INLINE_APPEND_MAX_BYTES
    for a in appends:
        config = a.log.config
        size = len(a.records)
        if size > budget or config.compact or config.compression_type != "producer" or config.checks_record_timestamps:
            left.append(a)  # record-level validation or recompression: CPU that grows with the records
            continue
        try:
            _append(a, nonblocking=True)
        except AppendWouldBlock:
            left.append(a)
            continue
        budget -= size
    return left


def _append_all(appends: list[_Append]) -> None:
    """Executor side: append every partition; errors stay per partition."""
    for a in appends:
        _append(a, nonblocking=False)


class _WholeRequestError(Exception):
    """A typed error Kafka answers for every partition of the request at once (its generic
    error answer), with the error's message unless that is withheld (Kafka's ApiError sends
    none for UNKNOWN_SERVER_ERROR or an error's default message)."""

    def __init__(self, cause: KafkaError, *, send_message: bool) -> None:
        super().__init__(cause.message)
        self.cause = cause
        self.send_message = send_message


def _probe_first_batches(request: Any) -> bool:
    """Kafka's RequestUtils.hasTransactionalRecords, run before anything else: the first batch
    of each partition is framed (a bad size or magic fails the whole request, with the
    framing error's message) until one is transactional."""
    for topic in request.topic_data:
        for pd in topic.partition_data:
            if pd.records is None:
                continue
            try:
                first = next(batch_spans(pd.records), None)
            except CorruptRecordError as exc:
                raise _WholeRequestError(exc, send_message=True) from None
            if (first is not None and first.magic == MAGIC_V2 and first.size >= BATCH_HEADER_SIZE
                    and pd.records[first.position + ATTRIBUTES_OFFSET + 1] & TRANSACTIONAL_FLAG_MASK):
                return True
    return False


def _validate_records(version: int, records: bytes | None) -> bytes:
    """Kafka's ProduceRequest.validateRecords (v3+): exactly one batch of magic 2 per partition,
    no zstd before v7. Returns the batch without stray trailing bytes (Kafka's framing drops
    them). Errors carry no message in the answer, as in Kafka."""
    spans = batch_spans(records or b"")
    first = next(spans, None)
    if first is None:
        raise InvalidRecordError(
            f"Produce requests with version {version} must have at least one record batch per partition")
    if first.magic != MAGIC_V2:
        raise InvalidRecordError(
            f"Produce requests with version {version} are only allowed to contain record batches with magic version 2")
    if version < 7:
        codec = records[first.position + ATTRIBUTES_OFFSET + 1] & COMPRESSION_CODEC_MASK  # type: ignore[index]
        if codec not in _CODEC_IDS:
            # Kafka's CompressionType.forId throws outside its ApiException handling here.
            raise _WholeRequestError(UnknownServerError(f"Unknown compression type id: {codec}"),
                                     send_message=False)
        if codec == CompressionType.ZSTD:
            raise UnsupportedCompressionTypeError(
                f"Produce requests with version {version} are not allowed to use ZStandard compression")
    if next(spans, None) is not None:  # framing the next batch may raise CorruptRecordError
        raise InvalidRecordError(
            f"Produce requests with version {version} are only allowed to contain exactly one record batch per partition")
    assert records is not None
    return records if first.size == len(records) else records[: first.size]


async def handle(broker: Any, header: Any, request: Any) -> Any:
    """KafkaApis.handleProduceRequest's order: request-wide framing and transactional checks,
    then per partition unknown topic/partition and record validation, then acks, internal
    topics and the append. Results are keyed by partition and merged as Kafka merges its
    maps: a partition named twice answers once, the later entry and the rejection winning."""
    version = header.api_version
    acks = request.acks
    try:
        if _probe_first_batches(request) and request.transactional_id is None:
            raise _WholeRequestError(TransactionalIdAuthorizationFailedError(
                "Transactional records need a transactional id"), send_message=False)
        rejected, to_append = _check_partitions(broker, version, request)
    except _WholeRequestError as exc:
        rejected, to_append = {}, {}
        for topic in request.topic_data:
            for pd in topic.partition_data:
                r = PartitionResult(pd.index, error_code_for(exc.cause))
                r.message = exc.cause.message if exc.send_message else None
                rejected[(topic.name, pd.index)] = r

    if request.transactional_id is not None and to_append:
        rejected.update(await _verify_transaction(broker, version, request.transactional_id, to_append))
        for key in rejected:
            to_append.pop(key, None)

    appended: dict[tuple[str, int], PartitionResult] = {}
    appends: list[_Append] = []
    for (name, index), records in to_append.items():
        r = appended[(name, index)] = PartitionResult(index)
        if acks not in (0, 1, -1):
            r.fail(InvalidRequiredAcksError(f"Invalid required acks: {acks}"))
            continue
        meta = broker.topics.get(name)
        if meta is not None and meta.is_internal:
            # Internal topics (__consumer_offsets, ...) are written by their coordinators only.
            r.fail(InvalidTopicError(f"Cannot append to internal topic {name}"))
            continue
        tp = TopicPartition(name, index)
        appends.append(_Append(tp, broker.get_log(tp), records, r))

    if appends:
        blocking = _append_inline(appends)
        if blocking:
            await broker.run_blocking(_append_all, blocking)
        waiters = broker.fetch_waiters
        for a in appends:
            if a.appended_bytes:
                waiters.on_append(a.tp, a.appended_bytes)
                METRICS.messages_in(a.tp.topic, a.appended_records)
            elif a.result.error != ErrorCode.NONE:
                log.debug("Produce to %s failed: %s %s", a.tp, ErrorCode(a.result.error).name, a.result.message)

    topics_out: dict[str, list[PartitionResult]] = {}
    for (name, _index), r in {**appended, **rejected}.items():
        topics_out.setdefault(name, []).append(r)
    if acks == 0:
        failed = [f"{n}-{r.index}: {ErrorCode(r.error).name}" for n, rs in topics_out.items() for r in rs if r.error]
        if failed:
            raise CloseConnection(f"acks=0 produce failed ({', '.join(failed)})")
        return None
    return _response(version, list(topics_out.items()))


# Coordinator answers a producer retries: on older clients these were never sent by Produce,
# so Kafka hands them NOT_ENOUGH_REPLICAS, which every producer treats as retriable.
_RETRIABLE_VERIFICATION = frozenset({
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
    ErrorCode.CONCURRENT_TRANSACTIONS,
})


async def _verify_transaction(broker: Any, version: int, transactional_id: str,
                              to_append: dict[tuple[str, int], bytes]) -> dict[tuple[str, int], PartitionResult]:
    """KIP-890: a transactional batch may only land in a partition of its open transaction.

    A partition where the producer already has an open transaction needs no check. Otherwise
    a v12+ producer (transactions v2) has the partition added to its transaction here, and an
    older one must have added it itself (AddPartitionsToTxn), else TRANSACTION_ABORTABLE.
    """
    config = broker.config
    dynamic = config.dynamic_value("transaction.partition.verification.enable")
    if not (config.transaction_partition_verification_enable if dynamic is None else dynamic.lower() == "true"):
        return {}
    coordinator = broker.transaction_coordinator
    to_check: dict[tuple[str, int], tuple[int, int]] = {}
    for key, records in to_append.items():
        header = read_batch_header(records, 0)
        if not header.is_transactional:
            continue
        entry = broker.get_log(TopicPartition(*key)).producer_state_manager.last_entry(header.producer_id)
        if entry is not None and entry.current_txn_first_offset >= 0 and entry.producer_epoch == header.producer_epoch:
            continue  # already in a transaction on this partition
        to_check[key] = (header.producer_id, header.producer_epoch)
    rejected: dict[tuple[str, int], PartitionResult] = {}
    for key, (producer_id, producer_epoch) in to_check.items():
        tp = TopicPartition(*key)
        if version >= 12:
            try:
                await coordinator.handle_add_partitions_to_transaction(transactional_id, producer_id, producer_epoch,
                                                                       [tp], 2)
                code = ErrorCode.NONE
            except Exception as exc:  # noqa: BLE001 - mapped at the boundary
                code = error_code_for(exc)
        else:
            code = coordinator.handle_verify_partitions_in_transaction(transactional_id, producer_id,
                                                                       producer_epoch, [tp])[tp]
        if code in _RETRIABLE_VERIFICATION:
            code = ErrorCode.NOT_ENOUGH_REPLICAS
        elif code == ErrorCode.PRODUCER_FENCED:
            code = ErrorCode.INVALID_PRODUCER_EPOCH  # what Produce has always answered a stale epoch
        elif code == ErrorCode.TRANSACTION_ABORTABLE and version < 11:
            code = ErrorCode.INVALID_TXN_STATE  # TRANSACTION_ABORTABLE is known from Produce v11 (KIP-1050)
        if code != ErrorCode.NONE:
            result = rejected[key] = PartitionResult(key[1], code)
            if code == ErrorCode.INVALID_TXN_STATE:
                result.message = "Partition was not added to the transaction"
    return rejected


def _check_partitions(broker: Any, version: int, request: Any
                      ) -> tuple[dict[tuple[str, int], PartitionResult], dict[tuple[str, int], bytes]]:
    """Per partition, before any append: an unknown topic or partition (Produce never creates
    topics: clients ask Metadata for that), then the records' framing rules. Returns the
    rejected partitions and the records to append (the last valid entry of a partition)."""
    unknown: dict[tuple[str, int], PartitionResult] = {}
    invalid: dict[tuple[str, int], PartitionResult] = {}
    to_append: dict[tuple[str, int], bytes] = {}
    for topic in request.topic_data:
        name = topic.name
        meta = broker.topics.get(name)
        for pd in topic.partition_data:
            key = (name, pd.index)
            if meta is None or not 0 <= pd.index < meta.partitions or broker.get_log(TopicPartition(*key)) is None:
                unknown[key] = PartitionResult(pd.index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            try:
                to_append[key] = _validate_records(version, pd.records)
            except KafkaError as exc:
                invalid[key] = PartitionResult(pd.index, error_code_for(exc))
    return {**unknown, **invalid}, to_append


def _response(version: int, topics_out: list[tuple[str, list[PartitionResult]]]) -> EncodedResponse:
    body = encode_produce_response(version, [
        ProduceTopicResult(name, [
            ProducePartitionResult(
                r.index, r.error, r.base_offset, r.log_append_time, r.log_start_offset,
                r.record_errors, r.message if r.error else None,
            )
            for r in results
        ])
        for name, results in topics_out
    ])
    return EncodedResponse([body], len(body))
