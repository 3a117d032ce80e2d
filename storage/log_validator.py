"""LogValidator: checks a produce request's batches and assigns offsets by patching headers.

The per-batch cost is constant (header + CRC); records are decoded only when a rule needs
their contents: keys on compacted topics, timestamps that may break a configured bound, or
recompression to the topic's codec. The checks, their order and their errors are Kafka's
(UnifiedLog.analyzeAndValidateRecords, then LogValidator): batch-level problems are plain
typed errors, per-record ones carry the list of rejected records (`record_errors`), which
Produce v8+ answers report.
"""
from __future__ import annotations

import msgspec

from storage.log_config import LogConfig
from wire.compression import CODEC_IDS, CompressionType
from wire.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    RecordTooLargeError,
    UnknownServerError,
)
from wire.records import (
    BATCH_HEADER_SIZE,
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V2,
    MIN_BATCH_LENGTH,
    MIN_RECORD_SIZE,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    BatchHeader,
    assign_offsets,
    batch_length_at,
    build_batch,
    clear_log_append_time,
    compute_crc,
    decode_columns,
    decode_records,
    iter_batch_headers,
    read_batch_header,
    validate_batch,
)

_TOPIC_CODECS = {
    "uncompressed": CompressionType.NONE,
    "gzip": CompressionType.GZIP,
    "snappy": CompressionType.SNAPPY,
    "lz4": CompressionType.LZ4,
    "zstd": CompressionType.ZSTD,
}


_MIN_LONG, _MAX_LONG = -(2**63), 2**63 - 1


def header_to_restore(records: bytes | bytearray | memoryview) -> bytes | None:
    """What `validate_and_assign_offsets(in_place=True)` may change in `records`, copied before
    it does, for a caller that may have to put it back: an append on the event loop that turns
    out to need a thread (AppendWouldBlock) hands the same records to the blocking append,
    which must read them as the producer sent them.

    Only for writable `records` holding one v2 batch, a client's batch per partition: every
    byte offset assignment patches (base offset, leader epoch, timestamp type, max timestamp,
    CRC) is in its 61-byte header, so saving those spares a copy of the whole batch (a
    megabyte per producer batch). None otherwise: the caller validates a copy."""
    if isinstance(records, bytes) or (isinstance(records, memoryview) and (
            records.readonly or records.format != "B" or not records.c_contiguous)):
        return None
    if len(records) < BATCH_HEADER_SIZE or records[MAGIC_OFFSET] != MAGIC_V2:
        return None
    if batch_length_at(records) + LOG_OVERHEAD != len(records):
        return None
    return bytes(records[:BATCH_HEADER_SIZE])


def restore_header(records: bytes | bytearray | memoryview, saved: bytes) -> None:
    """Put back the header `header_to_restore` saved: `records` reads as before the patch."""
    assert not isinstance(records, bytes)  # (header_to_restore saves only writable records)
    records[: len(saved)] = saved


class ValidationResult(msgspec.Struct):
    records: bytearray | memoryview
    batches: list[tuple[BatchHeader, int]]  # headers after offset assignment, positions in `records`
    first_offset: int
    last_offset: int
    max_timestamp: int
    shallow_offset_of_max_timestamp: int
    log_append_time: int
    num_messages: int
    recompressed: bool


class RecordError(msgspec.Struct, frozen=True):
    """One rejected record of a batch (Kafka's ProduceResponse.RecordError)."""

    batch_index: int
    message: str

    def __str__(self) -> str:
        # Java's RecordError.toString, which Kafka puts in the produce error message.
        return f"RecordError(batchIndex={self.batch_index}, message='{self.message}')"


def _record_validation_error(errors: list[RecordError], any_timestamp_error: bool) -> Exception:
    """Kafka's RecordValidationException: the typed error with the rejected records, which the
    produce answer (v8+) lists; the only produce errors whose message Kafka sends."""
    if any_timestamp_error:
        exc: Exception = InvalidTimestampError("One or more records have been rejected due to invalid timestamp")
    else:
        shown = ", ".join(str(e) for e in errors[:3])
        exc = InvalidRecordError(
            f"One or more records have been rejected due to {len(errors)} record errors in total, and only "
            f"showing the first three errors at most: [{shown}]")
    exc.record_errors = [(e.batch_index, e.message) for e in errors]  # type: ignore[attr-defined]
    return exc


class LogValidator:
    def __init__(self, config: LogConfig) -> None:
        self.config = config
        # What every append reads from the topic's config, derived once per config (a config
        # change makes a new validator): the produce path's per-batch cost is these lookups.
        self._target_codec = _TOPIC_CODECS.get(config.compression_type)  # None = keep the producer's codec
        self._log_append = config.log_append_time
        self._max_message_bytes = config.max_message_bytes
        self._compact = config.compact
        self._before_max_ms = config.message_timestamp_before_max_ms
        self._after_max_ms = config.message_timestamp_after_max_ms
        # Whether a batch is validated from its header alone (no compaction keys, no topic codec
        # to recompress to, no bound on old timestamps): its cost does not grow with its records.
        self.per_batch = not config.compact and self._target_codec is None and not config.checks_record_timestamps
        # Whether a client batch may be validated by _usual_client_batch (CreateTime, per batch).
        self._usual_possible = self.per_batch and not self._log_append

    def validate_and_assign_offsets(self, records: bytes | bytearray | memoryview, offset_counter: int,
                                    now_ms: int, partition_leader_epoch: int, *,
                                    from_client: bool = True, topic_partition: object = "?",
                                    in_place: bool = False) -> ValidationResult:
        """Kafka's UnifiedLog.analyzeAndValidateRecords + LogValidator, in their order, with
        their errors; `topic_partition` names the partition in error messages as Kafka does.

        Offsets, epochs and timestamps are written into a copy of `records`, or with `in_place`
        into `records` itself when it is writable: for a caller that hands its buffer over and
        does not validate the same records again, or first saves what header_to_restore returns
        and puts it back before it does (a megabyte's copy saved per producer batch).
        """
        config = self.config
        tp = topic_partition
        buf: bytearray | memoryview
        if in_place and (isinstance(records, bytearray) or (isinstance(records, memoryview) and not records.readonly)):
            buf = records
        else:
            buf = bytearray(records)
        if from_client and self._usual_possible:
            usual = self._usual_client_batch(buf, offset_counter, now_ms, partition_leader_epoch)
            if usual is not None:
                return usual
        batches: list[tuple[BatchHeader, int]]
        first = read_batch_header(buf, 0) if len(buf) else None
        if first is not None and first.batch_length + LOG_OVERHEAD == len(buf):
            batches = [(first, 0)]  # a client's one batch per partition (Produce v3+): no walk
        else:
            batches = [(bp.header, bp.position) for bp in iter_batch_headers(buf, strict=True)]
        if not batches:
            raise CorruptRecordError("produce request carries no record batch")
        target_codec = self._target_codec
        log_append = self._log_append
        max_message_bytes = self._max_message_bytes
        needs_recompression = False

        for header, pos in batches:
            # analyzeAndValidateRecords: base offset, size, CRC, codec, batch by batch.
            if from_client and header.base_offset != 0:
                raise InvalidRecordError(f"The baseOffset of the record batch in the append to {tp} should be 0, "
                                         f"but it is {header.base_offset}")
            size = header.batch_length + LOG_OVERHEAD
            if size > max_message_bytes:
                raise RecordTooLargeError(f"The record batch size in the append to {tp} is {size} bytes which "
                                          f"exceeds the maximum configured value of {max_message_bytes}.")
            if not from_client:
                validate_batch(buf, pos, from_client=False)
                continue
            if compute_crc(buf, pos, header.batch_length) != header.crc:
                raise CorruptRecordError(f"Record is corrupt (stored crc = {header.crc}) in topic partition {tp}.")
            codec_id = header.attributes & COMPRESSION_CODEC_MASK
            if codec_id not in CODEC_IDS:
                raise UnknownServerError(f"Unknown compression type id: {codec_id}")
            validate_batch(buf, pos, crc_checked=True, header=header)  # structure: counts that fit the bytes
        for header, pos in batches:
            if from_client:
                self._validate_client_batch(header, tp)
            if not header.attributes & CONTROL_FLAG_MASK:  # markers carry keys and the coordinator's clock
                self._validate_records(buf, pos, header, now_ms, tp)
                if target_codec is not None and header.compression != target_codec:
                    needs_recompression = True

        if needs_recompression:
            assert target_codec is not None  # only a topic codec makes a batch need recompression
            buf, batches = self._recompress(buf, batches, target_codec)
            for header, _pos in batches:
                size = header.batch_length + LOG_OVERHEAD
                if size > config.max_message_bytes:
                    raise RecordTooLargeError(
                        f"Message batch size is {size} bytes in append to partition {tp} which exceeds the "
                        f"maximum configured size of {config.max_message_bytes}.")

        first_offset = offset_counter
        max_ts, max_ts_offset, num_messages = -1, offset_counter, 0
        assigned: list[tuple[BatchHeader, int]] = []
        append_time = now_ms if log_append else None
        for header, pos in batches:
            assign_offsets(buf, pos, offset_counter, partition_leader_epoch, append_time)
            attributes = header.attributes
            control = attributes & CONTROL_FLAG_MASK
            if not log_append and attributes & TIMESTAMP_TYPE_MASK and not control:
                # The stored batch carries the topic's timestamp type, whatever the producer set
                # (Kafka's setMaxTimestamp(CREATE_TIME, max)): clear the flag, re-sign the batch.
                clear_log_append_time(buf, pos)
            last = offset_counter + header.last_offset_delta
            batch_max_ts = now_ms if log_append else header.max_timestamp
            if log_append:
                attributes |= TIMESTAMP_TYPE_MASK
            elif not control:
                attributes &= ~TIMESTAMP_TYPE_MASK
            new_header = msgspec.structs.replace(
                header, base_offset=offset_counter, partition_leader_epoch=partition_leader_epoch,
                max_timestamp=batch_max_ts, attributes=attributes,
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

    def _usual_client_batch(self, buf: bytearray | memoryview, offset_counter: int, now_ms: int,
                            partition_leader_epoch: int) -> ValidationResult | None:
        """validate_and_assign_offsets for the usual produce, in one pass over one header: a
        single client batch that its header proves valid, on a CreateTime topic validated per
        batch. None, with `buf` untouched, for anything else: the full validation then decides,
        and raises the precise error. Accepts only what the full validation accepts, with the
        same result (tests/unit/storage/test_log_validator.py compares the two)."""
        size = len(buf)
        if size < BATCH_HEADER_SIZE:
            return None
        (base_offset, batch_length, _epoch, magic, crc, attributes, last_offset_delta, base_timestamp,
         max_timestamp, producer_id, producer_epoch, base_sequence, count) = HEADER_STRUCT.unpack_from(buf, 0)
        codec = attributes & COMPRESSION_CODEC_MASK
        # Each condition is one the full validation checks, in any order: all hold, or None.
        if (magic != MAGIC_V2 or base_offset != 0 or batch_length + LOG_OVERHEAD != size
                or batch_length < MIN_BATCH_LENGTH or size > self._max_message_bytes
                or codec not in CODEC_IDS or attributes & (CONTROL_FLAG_MASK | TIMESTAMP_TYPE_MASK)
                or count < 1 or last_offset_delta + 1 != count
                or (codec == CompressionType.NONE and count * MIN_RECORD_SIZE > batch_length - MIN_BATCH_LENGTH)
                or (producer_id >= 0 and base_sequence < 0)
                # (no record needs reading for its timestamp)
                or now_ms - self._before_max_ms > NO_TIMESTAMP or max_timestamp - now_ms > self._after_max_ms
                or compute_crc(buf, 0, batch_length) != crc):
            return None
        assign_offsets(buf, 0, offset_counter, partition_leader_epoch)
        header = BatchHeader(offset_counter, batch_length, partition_leader_epoch, magic, crc, attributes,
                             last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch,
                             base_sequence, count)
        last = offset_counter + last_offset_delta
        return ValidationResult(
            records=buf, batches=[(header, 0)], first_offset=offset_counter, last_offset=last,
            max_timestamp=max_timestamp if max_timestamp > -1 else -1,
            shallow_offset_of_max_timestamp=last if max_timestamp > -1 else offset_counter,
            log_append_time=-1, num_messages=count, recompressed=False)

    @staticmethod
    def _validate_client_batch(header: BatchHeader, tp: object) -> None:
        """Kafka's LogValidator.validateBatch for client appends (plain errors, no record list)."""
        count_from_offsets = header.last_offset_delta + 1
        if count_from_offsets <= 0:
            raise InvalidRecordError(f"Batch has an invalid offset range: [{header.base_offset}, "
                                     f"{header.base_offset + header.last_offset_delta}] in topic partition {tp}")
        count = header.records_count
        if count <= 0:
            raise InvalidRecordError(f"Invalid reported count for record batch: {count} in topic partition {tp}")
        if count_from_offsets != count:
            raise InvalidRecordError(
                f"Inconsistent batch offset range [{header.base_offset}, "
                f"{header.base_offset + header.last_offset_delta}] and count of records {count} in topic partition {tp}")
        if header.is_control:
            raise InvalidRecordError(f"Clients are not allowed to write control records in topic partition {tp}")
        if header.producer_id >= 0 and header.base_sequence < 0:
            raise InvalidRecordError(f"Invalid sequence number {header.base_sequence} in record batch with producerId "
                                     f"{header.producer_id} in topic partition {tp}")

    def _validate_records(self, buf: bytearray | memoryview, pos: int, header: BatchHeader, now_ms: int, tp: object) -> None:
        """Kafka's per-record rules (keys on compacted topics, timestamp bounds and type), each
        rejected record listed with its index in the batch.

        Records are decoded only when a rule may fail: on a compacted topic, when the batch's
        timestamps can break a bound (message.timestamp.before.max.ms set, or the header's
        maxTimestamp beyond the after bound), or when a producer claims LogAppendTime on a
        LogAppendTime topic. Otherwise the batch header decides, as the produce path's
        per-batch cost requires.
        """
        create_time = not self._log_append
        before, after = self._before_max_ms, self._after_max_ms
        check_keys = self._compact
        check_timestamps = create_time and (now_ms - before > NO_TIMESTAMP or header.max_timestamp - now_ms > after)
        check_type = not create_time and header.attributes & TIMESTAMP_TYPE_MASK
        if not (check_keys or check_timestamps or check_type):
            return
        # Every record, whatever its offset delta: errors name records by their index in the batch.
        offsets, timestamps, keys, value_lengths, _headers = decode_columns(
            buf, pos, _MIN_LONG, _MAX_LONG, value_lengths=True)
        errors: list[RecordError] = []
        any_timestamp_error = False
        for index, (offset, ts, key) in enumerate(zip(offsets, timestamps, keys)):
            if check_keys and key is None:
                errors.append(RecordError(index, "Compacted topic cannot accept message without key in topic "
                                                 f"partition {tp}"))
            elif create_time and ts != NO_TIMESTAMP and (now_ms - ts > before or ts - now_ms > after):
                any_timestamp_error = True
                errors.append(RecordError(index, f"Timestamp {ts} of message with offset {offset} is out of range. "
                                                 f"The timestamp should be within [{now_ms - before}, {now_ms + after}]"))
            elif check_type:
                any_timestamp_error = True
                described = self._describe_record(header, offset, ts, key, value_lengths[index])
                errors.append(RecordError(index, f"Invalid timestamp type in message {described}. Producer should "
                                                 "not set timestamp type to LogAppendTime."))
        if errors:
            raise _record_validation_error(errors, any_timestamp_error)

    def _describe_record(self, header: BatchHeader, offset: int, ts: int, key: bytes | None, value_length: int) -> str:
        """A record as Kafka's toString shows it in an error: records of a compressed batch kept
        as it is are read without their contents (PartialDefaultRecord: null is -1 bytes), the
        others fully (DefaultRecord: null is 0 bytes)."""
        key_length = -1 if key is None else len(key)
        target = _TOPIC_CODECS.get(self.config.compression_type, header.compression)
        if header.compression != CompressionType.NONE and target == header.compression:
            return (f"PartialDefaultRecord(offset={offset}, timestamp={ts}, key={key_length} bytes, "
                    f"value={value_length} bytes)")
        return (f"DefaultRecord(offset={offset}, timestamp={ts}, key={max(key_length, 0)} bytes, "
                f"value={max(value_length, 0)} bytes)")

    def _recompress(self, buf: bytearray | memoryview, batches: list[tuple[BatchHeader, int]],
                    codec: CompressionType) -> tuple[bytearray, list[tuple[BatchHeader, int]]]:
        """Rewrite batches whose codec differs from the topic's compression.type."""
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
