"""Read a byte range of one segment into Arrow record batches.

Planning (driver): `plan_slices` cuts each live segment into `SegmentSlice`s,
splitting segments larger than `max_slice_bytes` at positions taken from the
segment's offset index. Index entries always point at the first byte of a
batch, so a slice never starts mid-batch and no batch is read twice.

Reading (Spark worker): `read_slice` walks batches with storage's
`FileRecords` over a read-only descriptor and decodes records with
`wire.records.decode_columns`; there is no other parser. It never reads past
the size the segment had when it was planned, and it stops quietly at a torn
or still-being-written tail of the active segment (a header that does not
parse, a batch that runs past the end, a CRC mismatch), which is how a broker
appending meanwhile looks. The same faults in a closed segment are real
corruption and raise `CorruptRecordError`.

A planned segment that was swapped out by the cleaner before the task ran
is read from its `.deleted` name (the same file, checked by inode, since the
cleaned replacement may take the old name), and one already unlinked yields
nothing: a task reads the bytes that were planned or none, never a mix of an
old and a new file.

A segment of a log dir on another filesystem (pipeline.log_dir_fs: an object store,
HDFS) is read the same way from the slice's bytes, fetched in one ranged read.
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.log_dir_fs import read_bytes
from pipeline.log_dir_scan import SegmentFile
from storage.errors import CorruptIndexError
from storage.file_records import BATCH_ERRORS, FileBatch, FileRecords
from storage.log_file_utils import DELETED_FILE_SUFFIX
from storage.offset_index import OffsetIndex
from wire.errors import CorruptRecordError
from wire.records import (
    BATCH_HEADER_SIZE,
    CONTROL_FLAG_MASK,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
    compute_crc,
    decode_columns,
    read_batch_header,
)

__all__ = ["SegmentSlice", "plan_slices", "read_slice", "index_positions", "segment_bytes", "buffer_batches",
           "DEFAULT_MAX_SLICE_BYTES", "DEFAULT_ROWS_PER_BATCH"]

logger = logging.getLogger(__name__)

DEFAULT_MAX_SLICE_BYTES = 64 << 20
DEFAULT_ROWS_PER_BATCH = 32_768
NO_END_OFFSET = 2**63 - 1


class SegmentSlice(msgspec.Struct, frozen=True):
    """Bytes [start_position, end_position) of one segment; picklable for Spark tasks."""

    topic: str
    partition: int
    base_offset: int
    path: str
    start_position: int
    end_position: int
    is_active: bool  # a tail that may be torn or growing: stop quietly on a bad batch
    start_offset: int = 0  # first offset wanted (records below are skipped)
    end_offset: int = NO_END_OFFSET  # first offset not wanted
    inode: int = 0  # the planned file; a different file under the same name is not read
    filesystem: str = ""  # the log dir's URI when it is not local (pipeline.log_dir_fs)


def index_positions(segment: SegmentFile) -> list[int]:
    """The positions in the segment's offset index, local or not ([] when it has none usable).
    An active segment's index is preallocated: past its entries come zeros."""
    try:
        if segment.filesystem:
            data = read_bytes(segment.filesystem, segment.index_path) or b""
            # The offset index's format: (relative offset, position) as two big-endian int32s.
            return [pos for _rel, pos in struct.iter_unpack(">ii", data[: len(data) // 8 * 8])]
        index = OffsetIndex(Path(segment.index_path), segment.base_offset, -1, writable=False)
        try:
            return [entry.position for entry in index.entries_list()]
        finally:
            index.close_handler()
    except (FileNotFoundError, CorruptIndexError, ValueError, OSError):
        return []


def segment_bytes(segment: SegmentFile, start: int, length: int) -> bytes | None:
    """Bytes [start, start + length) of the segment's .log, local or not; None if it is gone."""
    if segment.filesystem:
        return read_bytes(segment.filesystem, segment.path, start, length)
    try:
        fd = os.open(segment.path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        return os.pread(fd, length, start)
    finally:
        os.close(fd)


def _split_positions(segment: SegmentFile, max_slice_bytes: int) -> list[int]:
    """Batch-aligned cut positions inside the segment, from its offset index (none if unusable)."""
    if segment.size <= max_slice_bytes:
        return []
    positions = index_positions(segment)
    cuts: list[int] = []
    last = 0
    for pos in positions:
        # Only strictly increasing positions inside the planned size are real entries: an
        # active segment's index is preallocated with zeros past its last entry.
        if pos <= last or pos >= segment.size:
            continue
        if pos - (cuts[-1] if cuts else 0) >= max_slice_bytes:
            cuts.append(pos)
        last = pos
    return cuts


def plan_slices(
    segments: Sequence[SegmentFile],
    *,
    max_slice_bytes: int = DEFAULT_MAX_SLICE_BYTES,
    start_offset: int = 0,
    end_offset: int = NO_END_OFFSET,
    next_base_offsets: Sequence[int | None] | None = None,
) -> list[SegmentSlice]:
    """Slices covering `segments` (one partition's, sorted) restricted to [start_offset, end_offset).

    A segment whose offsets all lie outside the range (known from its base
    offset and the next segment's) is left out.
    """
    slices: list[SegmentSlice] = []
    for i, seg in enumerate(segments):
        if seg.size == 0 or seg.base_offset >= end_offset:
            continue
        next_base = None
        if next_base_offsets is not None:
            next_base = next_base_offsets[i]
        elif i + 1 < len(segments):
            next_base = segments[i + 1].base_offset
        if next_base is not None and next_base <= start_offset:
            continue
        bounds = [0, *_split_positions(seg, max_slice_bytes), seg.size]
        for lo, hi in zip(bounds, bounds[1:]):
            slices.append(
                SegmentSlice(seg.topic, seg.partition, seg.base_offset, seg.path, lo, hi, seg.is_active,
                             start_offset, end_offset, seg.inode, seg.filesystem)
            )
    return slices


def _open_read_only(path: str, inode: int) -> int | None:
    """A descriptor on the planned file: under its name, or renamed `.deleted` by a swap/retention.

    The inode check matters because the cleaner's swap puts a *different* file
    (the cleaned segment) under the same name; reading planned positions
    from it would mix two versions of the log.
    """
    for candidate in (path, path + DELETED_FILE_SUFFIX):
        try:
            fd = os.open(candidate, os.O_RDONLY)
        except FileNotFoundError:
            continue
        if inode == 0 or os.fstat(fd).st_ino == inode:
            return fd
        os.close(fd)
    return None


class _Columns:
    """Column lists for the requested fields, filled record by record."""

    def __init__(self) -> None:
        self.rows = 0
        self.offset: list[int] = []
        self.timestamp: list[int] = []
        self.key: list[bytes | None] = []
        self.value: list[bytes | None] = []
        self.value_length: list[int] = []
        self.header_offsets: list[int] = [0]
        self.header_keys: list[str] = []
        self.header_values: list[bytes | None] = []
        self.header_missing: list[bool] = []  # True: the record has no headers (a null list)
        # per-batch constants, expanded at build time from run lengths
        self.runs: list[tuple[int, int, int, int]] = []  # (rows, producer id, attributes, base offset)


def _build(cols: _Columns, schema: pa.Schema, topic: str, partition: int) -> pa.RecordBatch:
    n = cols.rows
    arrays: list[pa.Array] = []

    def expand(pick: Callable[[tuple[int, int, int, int]], object]) -> list[object]:
        out: list[object] = []
        for run in cols.runs:
            out += [pick(run)] * run[0]
        return out

    for field in schema:
        name = field.name
        if name == "topic":
            arr = pa.array([topic] * n, field.type)
        elif name == "partition":
            arr = pa.array([partition] * n, field.type)
        elif name == "offset":
            arr = pa.array(cols.offset, field.type)
        elif name == "timestamp":
            ms = pa.array(cols.timestamp, pa.int64())
            arr = pc.multiply(ms, 1000).cast(field.type)
        elif name == "timestamp_type":
            arr = pa.array(expand(lambda r: 1 if r[2] & TIMESTAMP_TYPE_MASK else 0), field.type)
        elif name == "key":
            arr = pa.array(cols.key, field.type)
        elif name == "value":
            arr = pa.array(cols.value, field.type)
        elif name == "value_length":
            arr = pa.array(cols.value_length, field.type)
        elif name == "headers":
            struct_type = field.type.value_type
            inner = pa.StructArray.from_arrays(
                [pa.array(cols.header_keys, struct_type.field(0).type),
                 pa.array(cols.header_values, struct_type.field(1).type)],
                fields=[struct_type.field(0), struct_type.field(1)],
            )
            arr = pa.ListArray.from_arrays(pa.array(cols.header_offsets, pa.int32()), inner, type=field.type,
                                           mask=pa.array(cols.header_missing, pa.bool_()))
        elif name == "producer_id":
            arr = pa.array(expand(lambda r: r[1]), field.type)
        elif name == "is_transactional":
            arr = pa.array(expand(lambda r: bool(r[2] & TRANSACTIONAL_FLAG_MASK)), field.type)
        elif name == "is_control":
            arr = pa.array(expand(lambda r: bool(r[2] & CONTROL_FLAG_MASK)), field.type)
        elif name == "batch_base_offset":
            arr = pa.array(expand(lambda r: r[3]), field.type)
        else:  # pragma: no cover - schema checked on the driver
            raise ValueError(f"unknown column {name}")
        arrays.append(arr)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def read_slice(
    piece: SegmentSlice,
    schema: pa.Schema,
    *,
    include_control: bool = False,
    verify_crc: bool = True,
    rows_per_batch: int = DEFAULT_ROWS_PER_BATCH,
) -> Iterator[pa.RecordBatch]:
    """Arrow batches (with exactly `schema`'s fields) of the records in `piece`."""
    if piece.filesystem:
        data = read_bytes(piece.filesystem, piece.path, piece.start_position,
                          piece.end_position - piece.start_position)
        if data is None:
            logger.warning("segment %s was deleted after planning; its records are skipped", piece.path)
            return
        yield from _read_batches(buffer_batches(data, piece.start_position), piece, schema, include_control,
                                 verify_crc, rows_per_batch)
        return
    fd = _open_read_only(piece.path, piece.inode)
    if fd is None:
        # Unlinked since planning (retention, or a swap's delayed delete): those records are
        # gone from the log, so the read returns the log as it now is for this segment.
        logger.warning("segment %s was deleted after planning; its records are skipped", piece.path)
        return
    records_file = FileRecords(Path(piece.path), fd, piece.end_position)  # owns and closes fd
    try:
        batches = records_file.batches(piece.start_position, piece.end_position, with_data=True)
        yield from _read_batches(batches, piece, schema, include_control, verify_crc, rows_per_batch)
    finally:
        records_file.close()


def buffer_batches(data: bytes, position: int) -> Iterator[FileBatch]:
    """FileRecords.batches over bytes already read (from `position` in the segment): whole
    batches only, stopping quietly at a partial trailing one."""
    rel = 0
    while len(data) - rel >= BATCH_HEADER_SIZE:
        header = read_batch_header(data, rel)
        size = header.batch_length + LOG_OVERHEAD
        if rel + size > len(data):
            return
        yield FileBatch(header, position + rel, data, rel)
        rel += size


def until_unreadable(batches: Iterator[FileBatch], *, active: bool, where: str) -> Iterator[FileBatch]:
    """`batches` up to the first one whose framing cannot be read. In the active segment that is
    a tail being written or preallocated zeros: the log ends there for now. In a closed segment
    it is corruption: CorruptRecordError, prefixed with `where`."""
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except BATCH_ERRORS as exc:
            if active:
                return
            raise CorruptRecordError(f"{where}: {exc}") from exc
        yield batch


def _read_batches(
    batches: Iterator[FileBatch],
    piece: SegmentSlice,
    schema: pa.Schema,
    include_control: bool,
    verify_crc: bool,
    rows_per_batch: int,
) -> Iterator[pa.RecordBatch]:
    names = schema.names
    want_key = "key" in names
    want_value = "value" in names
    want_value_length = "value_length" in names
    want_headers = "headers" in names
    want_timestamp = "timestamp" in names
    start_offset, end_offset = piece.start_offset, piece.end_offset
    cols = _Columns()
    for batch in until_unreadable(batches, active=piece.is_active,
                                  where=f"{piece.path}: unreadable batch header after position {piece.start_position}"):
        header = batch.header
        if header.base_offset >= end_offset:
            break
        if header.base_offset + header.last_offset_delta < start_offset:
            continue
        attrs = header.attributes
        if attrs & CONTROL_FLAG_MASK and not include_control:
            continue
        buf, pos = batch.buf, batch.offset_in_buf
        if verify_crc and compute_crc(buf, pos, header.batch_length) != header.crc:  # type: ignore[arg-type]
            if piece.is_active:
                break
            raise CorruptRecordError(f"{piece.path}: CRC mismatch in the batch at position {batch.position}")
        columns = decode_columns(buf, pos, start_offset, end_offset,  # type: ignore[arg-type]
                                 value_lengths=not want_value)
        offsets, timestamps, keys, values, headers = columns
        n = len(offsets)
        if n == 0:
            continue
        cols.runs.append((n, header.producer_id, attrs, header.base_offset))
        cols.offset += offsets
        if want_timestamp:
            cols.timestamp += timestamps
        if want_key:
            cols.key += keys
        if want_value:
            cols.value += values
            if want_value_length:
                cols.value_length += [-1 if v is None else len(v) for v in values]
        elif want_value_length:
            cols.value_length += values  # lengths already
        if want_headers:
            hoffsets = cols.header_offsets
            total = hoffsets[-1]
            if headers is None:
                hoffsets += [total] * n  # the common case: no headers in the whole batch
                cols.header_missing += [True] * n
            else:
                for hs in headers:
                    if hs:
                        total += len(hs)
                        for hk, hv in hs:
                            cols.header_keys.append(hk)
                            cols.header_values.append(hv)
                    hoffsets.append(total)
                    cols.header_missing.append(not hs)
        cols.rows += n
        if cols.rows >= rows_per_batch:
            yield _build(cols, schema, piece.topic, piece.partition)
            cols = _Columns()
    if cols.rows:
        yield _build(cols, schema, piece.topic, piece.partition)
