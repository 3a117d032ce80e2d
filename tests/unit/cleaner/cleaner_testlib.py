"""Helpers for the cleaner tests: logs in tmp dirs, keyed batches, reading a log back."""
from __future__ import annotations

from pathlib import Path

from cleaner.cleaner import Cleaner
from cleaner.clean_request import CleanResult
from cleaner.log_to_clean import clean_request_for, cleanable_offsets
from cleaner.offset_map import SkimpyOffsetMap
from cleaner.segment_swap import swap_cleaned_segments
from storage.log import Log
from storage.log_config import LogConfig
from wire.compression import CompressionType
from wire.records import BatchHeader, Record, build_batch, decode_records, iter_batch_headers

BASE_TS = 1_700_000_000_000


def compact_config(**overrides) -> LogConfig:
    """A compacted topic with small segments and no delete delay (files go at once)."""
    values = dict(cleanup_policy=("compact",), segment_bytes=2048, file_delete_delay_ms=0,
                  index_interval_bytes=128)
    values.update(overrides)
    return LogConfig(**values)


def put(log: Log, key: bytes | None, value: bytes | None, *, ts: int | None = None,
        compression: CompressionType = CompressionType.NONE) -> int:
    """Append one record; returns its offset."""
    ts = log.clock.milliseconds() if ts is None else ts
    info = log.append_as_leader(build_batch([Record(0, ts, key, value)], compression=compression))
    return info.first_offset


def put_many(log: Log, pairs: list[tuple[bytes | None, bytes | None]], *,
             compression: CompressionType = CompressionType.NONE) -> int:
    """Append several records as one batch; returns the first offset."""
    ts = log.clock.milliseconds()
    recs = [Record(i, ts, k, v) for i, (k, v) in enumerate(pairs)]
    return log.append_as_leader(build_batch(recs, compression=compression)).first_offset


def read_all(log: Log) -> list[Record]:
    """Every record of every segment, in offset order (straight from the files)."""
    out: list[Record] = []
    for segment in log.segments.values():
        data = segment.log.read(0, segment.size())
        for _h, pos in iter_batch_headers(data):
            out.extend(decode_records(data, pos))
    return out


def batches(log: Log) -> list[BatchHeader]:
    out: list[BatchHeader] = []
    for segment in log.segments.values():
        data = segment.log.read(0, segment.size())
        out.extend(h for h, _pos in iter_batch_headers(data))
    return out


def new_cleaner(map_slots: int = 10_000, io_buffer: int = 4096, max_io: int = 1 << 20,
                load_factor: float = 0.9, check_done=None) -> Cleaner:
    return Cleaner(0, SkimpyOffsetMap(24 * map_slots), io_buffer, max_io, load_factor, check_done=check_done)


def clean(log: Log, cleaner: Cleaner | None = None, *, first_dirty: int | None = None,
          now: int | None = None, swap: bool = True) -> CleanResult:
    """One synchronous clean of the log's cleanable range, swapped in (the worker + swap path)."""
    cleaner = cleaner or new_cleaner()
    now = log.clock.milliseconds() if now is None else now
    offsets = cleanable_offsets(log, first_dirty, now)
    request = clean_request_for(log, offsets.first_dirty_offset, offsets.first_uncleanable_dirty_offset, now)
    result = cleaner.clean(request)
    if swap:
        swap_cleaned_segments(log, result)
    return result


def latest_values(log: Log) -> dict[bytes, bytes | None]:
    out: dict[bytes, bytes | None] = {}
    for r in read_all(log):
        if r.key is not None:
            out[r.key] = r.value
    return out


def leftover_files(dir: Path) -> list[str]:
    return sorted(p.name for p in Path(dir).iterdir() if p.name.endswith((".cleaned", ".swap", ".deleted")))
