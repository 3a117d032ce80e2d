"""LogValidator: checks a produce request's batches and assigns offsets by patching headers.

The per-batch cost is constant (header + CRC); records are decoded only when a rule needs
their contents: keys on compacted topics, or recompression to the topic's codec.
"""
from __future__ import annotations

import msgspec

from storage.log_config import LogConfig
from wire.compression import CompressionType
from wire.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    RecordTooLargeError,
)
from wire.records import (
    LOG_OVERHEAD,
    BatchHeader,
    TimestampType,
    all_records_have_keys,
    assign_offsets,
    build_batch,
    decode_records,
    iter_batch_headers,
    validate_batch,
)

_TOPIC_CODECS = {
    "uncompressed": CompressionType.NONE,
    "gzip": CompressionType.GZIP,
    "snappy": CompressionType.SNAPPY,
    "lz4": CompressionType.LZ4,
    "zstd": CompressionType.ZSTD,
}


class ValidationResult(msgspec.Struct):
    records: bytearray
    batches: list[tuple[BatchHeader, int]]  # headers after offset assignment, positions in `records`
    first_offset: int
    last_offset: int
    max_timestamp: int
    shallow_offset_of_max_timestamp: int
    log_append_time: int
    num_messages: int
    recompressed: bool


def _fail(exc_type: type, message: str, batch_index: int) -> Exception:
    """The typed error, carrying Kafka's per-record errors list [(index, message)] for the response."""
    exc = exc_type(message)
    exc.record_errors = [(batch_index, message)]  # type: ignore[attr-defined]
    return exc


def _invalid_records(errors: list[tuple[int, str]]) -> Exception:
    """Kafka's LogValidator.processRecordErrors: one InvalidRecordException for every record
    error of a batch, its message naming the count and showing the first three."""
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
    exc = InvalidRecordError(f"One or more records have been rejected due to {len(errors)} record errors in total, "
                             f"and only showing the first three errors at most: [{shown}]")
    exc.record_errors = list(errors)  # type: ignore[attr-defined]
    return exc


class LogValidator:
    def __init__(self, config: LogConfig, topic_partition: object = "") -> None:
        self.config = config
        self.topic_partition = topic_partition  # named in record errors, as Kafka names it

    def validate_and_assign_offsets(self, records: bytes | bytearray | memoryview, offset_counter: int,
                                    now_ms: int, partition_leader_epoch: int, *,
                                    from_client: bool = True) -> ValidationResult:
        config = self.config
        buf = records if isinstance(records, bytearray) else bytearray(records)
        batches = [bp for bp in iter_batch_headers(buf, strict=True)]
        if not batches:
            raise CorruptRecordError("produce request carries no record batch")
        target_codec = _TOPIC_CODECS.get(config.compression_type)  # None = keep the producer's codec
        log_append = config.log_append_time
        needs_recompression = False

        for index, (header, pos) in enumerate(batches):
            size = header.batch_length + LOG_OVERHEAD
            if size > config.max_message_bytes:
                # Not a record error in Kafka (UnifiedLog checks it): no record_errors, and the
                # Produce answer carries the code alone.
                raise RecordTooLargeError(
                    f"The record batch size in the append to {self.topic_partition} is {size} bytes which exceeds "
                    f"the maximum configured value of {config.max_message_bytes}.")
            validate_batch(buf, pos, from_client=from_client)
            if from_client and header.is_control:
                raise _fail(InvalidRecordError, "Clients are not allowed to write control records", index)
            if not log_append and not header.is_control:
                self._check_timestamps(header, now_ms, index)
            if config.compact and not header.is_control and not all_records_have_keys(buf, pos):
                # One record error per keyless record, indexed within the batch (Kafka's batchIndex).
                message = f"Compacted topic cannot accept message without key in topic partition {self.topic_partition}"
                raise _invalid_records([(i, message) for i, r in enumerate(decode_records(buf, pos))
                                        if r.key is None])
            if target_codec is not None and header.compression != target_codec and not header.is_control:
                needs_recompression = True

        if needs_recompression:
            buf, batches = self._recompress(buf, batches, target_codec)  # type: ignore[arg-type]

        first_offset = offset_counter
        max_ts, max_ts_offset, num_messages = -1, offset_counter, 0
        assigned: list[tuple[BatchHeader, int]] = []
        append_time = now_ms if log_append else None
        for header, pos in batches:
            assign_offsets(buf, pos, offset_counter, partition_leader_epoch, append_time)
            last = offset_counter + header.last_offset_delta
            batch_max_ts = now_ms if log_append else header.max_timestamp
            new_header = msgspec.structs.replace(
                header, base_offset=offset_counter, partition_leader_epoch=partition_leader_epoch,
                max_timestamp=batch_max_ts,
                attributes=header.attributes | (0x08 if log_append else 0),
            )
            assigned.append((new_header, pos))
            if batch_max_ts > max_ts:
                max_ts, max_ts_offset = batch_max_ts, last
            num_messages += header.records_count
            offset_counter = last + 1
        return ValidationResult(
            records=buf, batches=assigned, first_offset=first_offset, last_offset=offset_counter - 1,
            max_timestamp=max_ts, shallow_offset_of_max_timestamp=max_ts_offset,
            log_append_time=now_ms if log_append else -1, num_messages=num_messages,
            recompressed=needs_recompression,
        )

    def _check_timestamps(self, header: BatchHeader, now_ms: int, index: int) -> None:
        """CreateTime bounds, checked on the batch's first and max timestamps (no per-record decode)."""
        config = self.config
        if header.timestamp_type != TimestampType.CREATE_TIME:
            return
        for ts in (header.base_timestamp, header.max_timestamp):
            if ts < 0:
                continue
            if now_ms - ts > config.message_timestamp_before_max_ms:
                raise _fail(InvalidTimestampError,
                            f"Timestamp {ts} of message is out of range. The timestamp should be within "
                            f"[{now_ms - config.message_timestamp_before_max_ms}, "
                            f"{now_ms + config.message_timestamp_after_max_ms}]", index)
            if ts - now_ms > config.message_timestamp_after_max_ms:
                raise _fail(InvalidTimestampError,
                            f"Timestamp {ts} of message is out of range. The timestamp should be within "
                            f"[{now_ms - config.message_timestamp_before_max_ms}, "
                            f"{now_ms + config.message_timestamp_after_max_ms}]", index)

    def _recompress(self, buf: bytearray, batches: list[tuple[BatchHeader, int]],
                    codec: CompressionType) -> tuple[bytearray, list[tuple[BatchHeader, int]]]:
        """Rewrite batches whose codec differs from the topic's compression.type."""
        from wire.records import read_batch_header

        out = bytearray()
        new_batches: list[tuple[BatchHeader, int]] = []
        for header, pos in batches:
            size = header.batch_length + LOG_OVERHEAD
            if header.compression == codec or header.is_control:
                chunk = bytes(buf[pos : pos + size])
            else:
                chunk = build_batch(
                    decode_records(buf, pos),
                    base_offset=header.base_offset,
                    compression=codec,
                    timestamp_type=header.timestamp_type,
                    producer_id=header.producer_id,
                    producer_epoch=header.producer_epoch,
                    base_sequence=header.base_sequence,
                    is_transactional=header.is_transactional,
                    partition_leader_epoch=header.partition_leader_epoch,
                    last_offset_delta=header.last_offset_delta,
                )
            new_pos = len(out)
            out += chunk
            new_batches.append((read_batch_header(out, new_pos), new_pos))
        return out, new_batches
