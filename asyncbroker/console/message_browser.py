"""The message browser: a bounded page of one partition's records, from an offset or a
timestamp, optionally only those whose key contains a text.

The records are read through the ReplicaManager's Fetch path (as a consumer at
read_uncommitted with max.wait.ms 0) and the timestamp is resolved through its ListOffsets
path; decoding and formatting run on the broker's IO pool. A page never holds more than
RECORDS_MAX records and never reads more than BYTES_MAX bytes of batches (Kafka returns a
first batch larger than that whole, KIP-74: its records are shown up to the same bound)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from storage.topic_partition import TopicPartition
from wire.errors import ErrorCode, KafkaError, UnknownTopicOrPartitionError

from asyncbroker.console.value_format import Encoding, ShownBytes, show

if TYPE_CHECKING:
    from asyncbroker.broker import Broker

RECORDS_MAX = 500
BYTES_MAX = 1024 * 1024
FETCH_VERSION = 17
LIST_OFFSETS_VERSION = 9


class BrowseError(Exception):
    """A page that cannot be shown (unknown topic, offset out of range, bad input): its
    message is shown on the page."""


class BrowseQuery(msgspec.Struct, frozen=True):
    topic: str
    partition: int = 0
    offset: int | None = None  # None: from the log start (or the timestamp)
    timestamp_ms: int | None = None
    limit: int = 50
    key_filter: str = ""
    encoding: Encoding = Encoding.AUTO


class ShownHeader(msgspec.Struct, frozen=True):
    key: str
    value: ShownBytes


class ShownRecord(msgspec.Struct, frozen=True):
    offset: int
    timestamp: int
    key: ShownBytes
    value: ShownBytes
    headers: list[ShownHeader]


class BrowsePage(msgspec.Struct, frozen=True):
    query: BrowseQuery
    start_offset: int  # where the read began
    next_offset: int  # where the next page begins
    log_start_offset: int
    high_watermark: int
    records: list[ShownRecord]
    scanned: int  # records read (before the key filter)
    bytes_read: int
    notice: str = ""  # why the page stopped, or what the seek found


def _decode_blocking(data: bytes, start: int, limit: int, key_filter: bytes, encoding: Encoding,
                     upper: int) -> tuple[list[ShownRecord], int, int]:
    """The page's records from the fetched batches (control batches skipped), and the offset
    after the last record scanned."""
    from wire.records import decode_records, iter_batch_headers

    shown: list[ShownRecord] = []
    scanned = 0
    next_offset = start
    for header, pos in iter_batch_headers(data):
        if header.next_offset <= start:
            continue
        if header.is_control:
            next_offset = max(next_offset, header.next_offset)
            continue
        for rec in decode_records(data, pos):
            if rec.offset < start or rec.offset >= upper:
                continue
            if len(shown) >= limit:
                return shown, next_offset, scanned
            scanned += 1
            next_offset = rec.offset + 1
            if key_filter and (rec.key is None or key_filter not in rec.key):
                continue
            shown.append(ShownRecord(rec.offset, rec.timestamp, show(rec.key, encoding), show(rec.value, encoding),
                                     [ShownHeader(k, show(v, encoding)) for k, v in rec.headers]))
        next_offset = max(next_offset, min(header.next_offset, upper))
    return shown, next_offset, scanned


async def browse(broker: Broker, query: BrowseQuery) -> BrowsePage:
    from asyncbroker.replica_manager import OffsetQuery, PartitionRead

    meta = broker.topics.get(query.topic)
    if meta is None:
        raise BrowseError(f"Unknown topic {query.topic!r}: no topic of that name exists on this broker.")
    if not 0 <= query.partition < meta.partitions:
        raise BrowseError(f"Topic {query.topic!r} has no partition {query.partition} "
                          f"(partitions 0 to {meta.partitions - 1}).")
    if not 1 <= query.limit <= RECORDS_MAX:
        raise BrowseError(f"A page shows 1 to {RECORDS_MAX} records, not {query.limit}.")
    tp = TopicPartition(query.topic, query.partition)
    rm = broker.replica_manager
    log_ = rm.log_of(tp)
    if log_ is None:
        raise UnknownTopicOrPartitionError(f"Partition {tp} is not hosted here.")
    notice = ""
    start = query.offset
    if query.timestamp_ms is not None:
        found = (await rm.fetch_offsets({tp: OffsetQuery(query.timestamp_ms)}, version=LIST_OFFSETS_VERSION,
                                        read_committed=False))[tp]
        if found.error != ErrorCode.NONE:
            raise BrowseError(f"Looking up timestamp {query.timestamp_ms} failed: {ErrorCode(found.error).name}")
        if found.offset < 0:
            start = log_.high_watermark
            notice = f"No record has a timestamp at or after {query.timestamp_ms}: showing the end of the partition."
        else:
            start = found.offset
            notice = f"The first record at or after timestamp {query.timestamp_ms} is at offset {found.offset}."
    if start is None:
        start = log_.log_start_offset
    log_start, hw = log_.log_start_offset, log_.high_watermark
    if not log_start <= start <= hw:
        raise BrowseError(f"Offset {start} is out of range: partition {tp} holds offsets {log_start} to {hw - 1}"
                          f" (log start offset {log_start}, high watermark {hw}).")
    read = PartitionRead(query.topic, None, query.partition, start, BYTES_MAX)
    reads = await rm.fetch_messages([read], replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=BYTES_MAX,
                                    read_committed=False, use_file_regions=False)
    r = reads[0]
    if r.error == ErrorCode.OFFSET_OUT_OF_RANGE:
        raise BrowseError(f"Offset {start} is out of range: partition {tp} holds offsets {r.log_start_offset} to "
                          f"{r.high_watermark - 1}.")
    if r.error != ErrorCode.NONE:
        raise BrowseError(f"Reading {tp} failed: {ErrorCode(r.error).name}")
    data = bytes(r.records) if r.records else b""
    try:
        records, next_offset, scanned = await broker.run_blocking(
            _decode_blocking, data, start, query.limit, query.key_filter.encode(), query.encoding, r.high_watermark)
    except KafkaError as exc:
        raise BrowseError(f"The records of {tp} from offset {start} could not be decoded: {exc}") from exc
    if next_offset >= r.high_watermark and not notice:
        notice = "End of the partition (high watermark) reached."
    elif len(records) < query.limit and next_offset < r.high_watermark and not notice:
        notice = (f"This page read {len(data)} bytes, the most one page reads ({BYTES_MAX} bytes): "
                  "the next page continues at the next offset.")
    return BrowsePage(query, start, next_offset, r.log_start_offset, r.high_watermark, records, scanned, len(data),
                      notice)
