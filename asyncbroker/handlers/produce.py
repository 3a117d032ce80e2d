"""Produce (key 0): append each partition's record batches and report offsets.

Appends that provably cannot block are done on the event loop: storage's
nonblocking append refuses (AppendWouldBlock, nothing changed) when the
log's lock is taken or the append would roll a segment, write the
leader-epoch checkpoint or fsync, and only logs whose validation is per
batch (not compacted, no topic codec to recompress to) and requests of at
most INLINE_APPEND_MAX_BYTES qualify, so the loop's cost stays bounded.
Everything else goes to the IO threads in one executor hop (see broker.py).
The hop costs a thread wake-up each way, which on a VM was most of a small
produce's round trip. Storage validates (CRC, magic,
sizes, timestamps, keys on compacted topics, recompression) and raises typed
errors; each partition's error is reported on its own, as Kafka does, with
per-record errors (v8+) for INVALID_RECORD / INVALID_TIMESTAMP.

acks: 1 and -1 are answered after the append (on one node the ISR is this
node; with flush.messages=1 storage has fsynced by then); acks=0 gets no
response, and a failed acks=0 request closes the connection so the client
notices. Any other acks value is INVALID_REQUIRED_ACKS for every partition.
"""

from __future__ import annotations

import logging
from typing import Any

from storage.errors import AppendWouldBlock
from storage.topic_name import validate_topic_name
from storage.topic_partition import TopicPartition
from wire.errors import (
    ErrorCode,
    InvalidRecordError,
    InvalidTopicError,
    KafkaError,
    UnknownTopicOrPartitionError,
)
from wire.messages import ApiKey
from wire.response_encoders import ProducePartitionResult, ProduceTopicResult, encode_produce_response

from asyncbroker.connection import CloseConnection
from asyncbroker.handlers import error_code_for, error_message_for
from asyncbroker.metrics import METRICS
from asyncbroker.encoded_response import EncodedResponse

API_KEY = ApiKey.PRODUCE
MIN_VERSION = 3
MAX_VERSION = 12

log = logging.getLogger(__name__)


class PartitionResult:
    """What one partition's append produced: offsets, or an error."""

    __slots__ = ("index", "error", "message", "base_offset", "log_append_time", "log_start_offset", "record_errors")

    def __init__(self, index: int) -> None:
        self.index = index
        self.error: int = ErrorCode.NONE
        self.message: str | None = None
        self.base_offset = -1
        self.log_append_time = -1
        self.log_start_offset = -1
        self.record_errors: list[tuple[int, str | None]] = []

    def fail(self, exc: BaseException) -> None:
        self.error = error_code_for(exc)
        self.message = error_message_for(exc)
        self.record_errors = list(getattr(exc, "record_errors", None) or [])


class _Append:
    __slots__ = ("tp", "log", "records", "result", "appended_bytes", "appended_records")

    def __init__(self, tp: TopicPartition, log: Any, records: bytes, result: PartitionResult) -> None:
        self.tp = tp
        self.log = log
        self.records = records
        self.result = result
        self.appended_bytes = 0
        self.appended_records = 0


INLINE_APPEND_MAX_BYTES = 256 * 1024
"""Bytes of records one request may append on the loop (CRC work ~15 us at this size)."""


def _append(a: _Append, *, nonblocking: bool) -> None:
    try:
        info = a.log.append_as_leader(a.records, leader_epoch=0, nonblocking=nonblocking)
    except AppendWouldBlock:
        raise
    except Exception as exc:  # noqa: BLE001 - mapped per partition at the boundary
        a.result.fail(exc)
        if not a.result.record_errors:
            # Kafka's LogAppendResult carries a message only for record validation errors:
            # an oversized or corrupt batch, or a storage error, is answered with its code alone.
            a.result.message = None
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
        if size > budget or config.compact or config.compression_type != "producer":
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


async def handle(broker: Any, header: Any, request: Any) -> Any:
    acks = request.acks
    topics_out: list[tuple[str, list[PartitionResult]]] = []
    appends: list[_Append] = []
    bad_acks = acks not in (0, 1, -1)
    for topic in request.topic_data:
        name = topic.name
        results: list[PartitionResult] = []
        topics_out.append((name, results))
        meta = None if bad_acks else broker.topics.get(name)
        topic_error: BaseException | None = None
        if meta is None and not bad_acks:
            try:
                validate_topic_name(name)
                meta = await broker.auto_create_topic(name)
            except KafkaError as exc:
                topic_error = exc
        elif meta is not None and meta.is_internal:
            # Internal topics (__consumer_offsets) are written by their coordinator only.
            topic_error = InvalidTopicError(f"Cannot append to internal topic {name}")
        for pd in topic.partition_data:
            r = PartitionResult(pd.index)
            results.append(r)
            if bad_acks:
                r.error = ErrorCode.INVALID_REQUIRED_ACKS
                continue
            if topic_error is not None:
                r.fail(topic_error)
                continue
            log_ = broker.get_log(TopicPartition(name, pd.index)) if meta is not None else None
            if log_ is None:
                r.fail(UnknownTopicOrPartitionError(f"This server does not host this topic-partition: {name}-{pd.index}"))
                continue
            if not pd.records:
                r.fail(InvalidRecordError(
                    f"Produce requests with version {header.api_version} must have at least one record batch per partition"
                ))
                continue
            appends.append(_Append(TopicPartition(name, pd.index), log_, pd.records, r))

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

    if acks == 0:
        failed = [f"{n}-{r.index}: {ErrorCode(r.error).name}" for n, rs in topics_out for r in rs if r.error]
        if failed:
            raise CloseConnection(f"acks=0 produce failed ({', '.join(failed)})")
        return None
    return _response(header.api_version, topics_out)


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
