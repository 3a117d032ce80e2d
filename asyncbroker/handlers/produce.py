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

This handler makes KafkaApis' checks; the ReplicaManager makes the rest
(acks, internal topics, KIP-890's transaction verification) and appends,
on the event loop when the append provably cannot block, else in one
executor hop (see asyncbroker/replica_manager.py).

Most requests carry one batch for one partition: _append_one_partition
answers those without the general path's per-partition maps (its Python was
a third of a small Produce's round trip), and leaves every other request, and
every check's failure, to the general path.

acks: 1 and -1 are answered after the append (on one node the ISR is this
node; with flush.messages=1 storage has fsynced by then); acks=0 gets no
response, and a failed acks=0 request closes the connection so the client
notices. Any other acks value is INVALID_REQUIRED_ACKS for every partition
that passed the checks before it.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from storage.topic_partition import TopicPartition
from wire.compression import CODEC_IDS, CompressionType
from wire.headers import RequestHeader
from wire.errors import (
    CorruptRecordError,
    ErrorCode,
    InvalidRecordError,
    KafkaError,
    TransactionalIdAuthorizationFailedError,
    UnknownServerError,
    UnsupportedCompressionTypeError,
)
from wire.records import (
    ATTRIBUTES_OFFSET,
    BATCH_HEADER_SIZE,
    COMPRESSION_CODEC_MASK,
    BatchSpan,
    Buffer,
    MAGIC_V2,
    TRANSACTIONAL_FLAG_MASK,
    batch_span_at,
)
from wire.messages import ApiKey
from wire.produce_request import ProduceRequest
from wire.response_encoders import ProduceTopicResult, encode_produce_one_partition, encode_produce_response

from asyncbroker.acl_binding import AclOperation
from asyncbroker.connection import CloseConnection
from asyncbroker.encoded_response import EncodedResponse
from asyncbroker.handlers import error_code_for
from asyncbroker.replica_manager import PartitionResult
from asyncbroker.request_context import RequestContext

API_KEY = ApiKey.PRODUCE

log = logging.getLogger(__name__)


class _WholeRequestError(Exception):
    """A typed error Kafka answers for every partition of the request at once (its generic
    error answer), with the error's message unless that is withheld (Kafka's ApiError sends
    none for UNKNOWN_SERVER_ERROR or an error's default message)."""

    def __init__(self, cause: KafkaError, *, send_message: bool) -> None:
        super().__init__(cause.message)
        self.cause = cause
        self.send_message = send_message


def _probe_first_batches(request: ProduceRequest) -> tuple[bool, list[BatchSpan | None]]:
    """Kafka's RequestUtils.hasTransactionalRecords, run before anything else: the first batch
    of each partition is framed (a bad size or magic fails the whole request, with the
    framing error's message) until one is transactional. Returns that answer and the first
    batches it framed, in request order, for the record checks to reuse."""
    framed: list[BatchSpan | None] = []
    for topic in request.topic_data:
        for pd in topic.partition_data:
            if pd.records is None:
                framed.append(None)
                continue
            try:
                first = batch_span_at(pd.records, 0)
            except CorruptRecordError as exc:
                raise _WholeRequestError(exc, send_message=True) from None
            framed.append(first)
            if (first is not None and first.magic == MAGIC_V2 and first.size >= BATCH_HEADER_SIZE
                    and pd.records[first.position + ATTRIBUTES_OFFSET + 1] & TRANSACTIONAL_FLAG_MASK):
                return True, framed
    return False, framed


def _validate_records(version: int, records: Buffer | None, first: BatchSpan | None) -> Buffer:
    """Kafka's ProduceRequest.validateRecords (v3+): exactly one batch of magic 2 per partition,
    no zstd before v7. `first` is the first batch as the probe framed it. Returns the batch
    without stray trailing bytes (Kafka's framing drops them). Errors carry no message in the
    answer, as in Kafka."""
    if first is None or records is None:
        raise InvalidRecordError(
            f"Produce requests with version {version} must have at least one record batch per partition")
    if first.magic != MAGIC_V2:
        raise InvalidRecordError(
            f"Produce requests with version {version} are only allowed to contain record batches with magic version 2")
    if version < 7:
        codec = records[first.position + ATTRIBUTES_OFFSET + 1] & COMPRESSION_CODEC_MASK
        if codec not in CODEC_IDS:
            # Kafka's CompressionType.forId throws outside its ApiException handling here.
            raise _WholeRequestError(UnknownServerError(f"Unknown compression type id: {codec}"),
                                     send_message=False)
        if codec == CompressionType.ZSTD:
            raise UnsupportedCompressionTypeError(
                f"Produce requests with version {version} are not allowed to use ZStandard compression")
    if first.size != len(records) and batch_span_at(records, first.size) is not None:
        # (framing the next batch may raise CorruptRecordError)
        raise InvalidRecordError(
            f"Produce requests with version {version} are only allowed to contain exactly one record batch per partition")
    return records if first.size == len(records) else records[: first.size]


async def handle(ctx: RequestContext, header: RequestHeader, request: ProduceRequest) -> Any:
    """KafkaApis.handleProduceRequest's order: request-wide framing and transactional checks,
    then per partition unknown topic/partition and record validation, then acks, internal
    topics and the append. Results are keyed by partition and merged as Kafka merges its
    maps: a partition named twice answers once, the later entry and the rejection winning."""
    version = header.api_version
    acks = request.acks
    if len(request.topic_data) == 1 and request.transactional_id is None and (acks == -1 or acks == 1):
        answer = _append_one_partition(ctx, version, request)
        if answer is not None:
            return answer
    try:
        transactional, framed = _probe_first_batches(request)
        if transactional and (
                request.transactional_id is None
                or not ctx.authorize_transactional_id(AclOperation.WRITE, request.transactional_id)):
            raise _WholeRequestError(TransactionalIdAuthorizationFailedError(
                "Transactional records need a transactional id its producer may WRITE"), send_message=False)
        rejected, to_append = _check_partitions(ctx, version, request, framed)
    except _WholeRequestError as exc:
        rejected, to_append = {}, {}
        for topic in request.topic_data:
            for pd in topic.partition_data:
                r = PartitionResult(pd.index, error_code_for(exc.cause))
                r.error_message = exc.cause.message if exc.send_message else None
                rejected[TopicPartition(topic.name, pd.index)] = r

    appended = await ctx.broker.replica_manager.append_records(
        to_append, acks=acks, transactional_id=request.transactional_id, produce_version=version)
    session = ctx.session
    if ctx.broker.quota_managers.quotas:
        # producer_byte_rate counts the whole request, appended or not (Kafka's request.sizeInBytes).
        session.throttle_ms = ctx.broker.quota_managers.produce.record_and_get_throttle_time_ms(
            session.quota_user, header.client_id or "", session.request_size, time.monotonic() * 1000)

    # Kafka merges its maps: the appended partitions (a rejection of the same partition
    # winning), then the ones refused before the append.
    topics_out: dict[str, list[PartitionResult]] = {}
    for tp, result in appended.items():
        topics_out.setdefault(tp.topic, []).append(rejected.pop(tp, result) if rejected else result)
    for tp, result in rejected.items():
        topics_out.setdefault(tp.topic, []).append(result)
    if acks == 0:
        failed = [f"{n}-{r.index}: {ErrorCode(r.error_code).name}" for n, rs in topics_out.items() for r in rs
                  if r.error_code]
        if failed:
            raise CloseConnection(f"acks=0 produce failed ({', '.join(failed)})")
        return None
    return _response(version, list(topics_out.items()), session.throttle_ms)


def _append_one_partition(ctx: RequestContext, version: int, request: ProduceRequest) -> EncodedResponse | None:
    """The usual Produce, answered without the general path's per-partition maps: one batch
    for one partition of a topic here, no transactional id, acks 1 or -1 (the caller checked
    those), appended on the event loop (ReplicaManager.try_append_inline).

    Every check below only decides whether the request is that usual one; None sends it to
    the general path, which makes the same checks in Kafka's order and answers their errors.
    Both paths answer a request alike (tests/unit/asyncbroker/test_produce_handler.py compares
    them).
    """
    topic = request.topic_data[0]
    if len(topic.partition_data) != 1 or version < 7:  # (before v7: codec checks, in the general path)
        return None
    broker = ctx.broker
    if broker.authorizer is not None or broker.quota_managers.quotas:
        return None
    pd = topic.partition_data[0]
    records = pd.records
    meta = broker.topics.get(topic.name)
    if records is None or meta is None or not 0 <= pd.index < meta.partitions:
        return None
    try:
        first = batch_span_at(records, 0)
    except CorruptRecordError:
        return None
    # One whole batch of magic 2 (no stray bytes to cut), not transactional.
    if first is None or first.magic != MAGIC_V2 or first.size != len(records) or first.size < BATCH_HEADER_SIZE \
            or records[ATTRIBUTES_OFFSET + 1] & TRANSACTIONAL_FLAG_MASK:
        return None
    result = broker.replica_manager.try_append_inline(TopicPartition(topic.name, pd.index), records)
    if result is None:
        return None
    body = encode_produce_one_partition(version, topic.name, result, ctx.session.throttle_ms)
    return EncodedResponse([body], len(body))


def _check_partitions(ctx: RequestContext, version: int, request: ProduceRequest, framed: list[BatchSpan | None]
                      ) -> tuple[dict[TopicPartition, PartitionResult], dict[TopicPartition, Buffer]]:
    """Per partition, before any append: WRITE on the topic, an unknown topic or partition
    (Produce never creates topics: clients ask Metadata for that), then the records' framing
    rules (`framed`: the first batches the probe framed, in request order; a transactional
    batch ends the probe early, and the partitions after it are framed here). Returns the
    rejected partitions (merged in Kafka's order: unauthorized, unknown, invalid) and the
    records to append (the last valid entry of a partition)."""
    broker = ctx.broker
    log_of = broker.replica_manager.log_of
    unauthorized: dict[TopicPartition, PartitionResult] = {}
    unknown: dict[TopicPartition, PartitionResult] = {}
    invalid: dict[TopicPartition, PartitionResult] = {}
    to_append: dict[TopicPartition, Buffer] = {}
    seen = -1  # the partition's place in request order, as `framed` lists them
    for topic in request.topic_data:
        name = topic.name
        meta = broker.topics.get(name)
        may_write = broker.authorizer is None or ctx.authorize_topic(AclOperation.WRITE, name)
        for pd in topic.partition_data:
            seen += 1
            key = TopicPartition(name, pd.index)
            if not may_write:
                unauthorized[key] = PartitionResult(pd.index, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                continue
            if meta is None or not 0 <= pd.index < meta.partitions or log_of(key) is None:
                unknown[key] = PartitionResult(pd.index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            try:
                records = pd.records
                if seen < len(framed):
                    first = framed[seen]
                else:  # after the probe's transactional batch: framed now (a framing error is this partition's)
                    first = batch_span_at(records, 0) if records is not None else None
                to_append[key] = _validate_records(version, records, first)
            except KafkaError as exc:
                invalid[key] = PartitionResult(pd.index, error_code_for(exc))
    if not (unauthorized or unknown or invalid):
        return {}, to_append
    return {**unauthorized, **unknown, **invalid}, to_append


def _response(version: int, topics_out: list[tuple[str, list[PartitionResult]]], throttle_ms: int) -> EncodedResponse:
    # (PartitionResult is the answer's partition entry: encoded as it is)
    body = encode_produce_response(version, [ProduceTopicResult(name, results) for name, results in topics_out],
                                   throttle_time_ms=throttle_ms)
    return EncodedResponse([body], len(body))
