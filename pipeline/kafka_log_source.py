"""`kafka-log`: Spark's Python Data Source over Kafka log directories.

    spark.dataSource.register(KafkaLogDataSource)
    df = spark.read.format("kafka-log").load("/var/lib/kafka")          # one dir
    df = spark.read.format("kafka-log").load(["/data1", "/data2"])       # several
    df = (spark.read.format("kafka-log")
          .option("topics", "orders,payments").option("partitions", "0,1")
          .option("startingOffsets", '{"orders": {"0": 100}}')
          .option("endingOffsets", "latest").load(path))

One Spark partition per live segment; a segment larger than
`maxPartitionBytes` (default 64 MiB) is split at its offset-index entries.
Rows come back as Arrow record batches built by `pipeline.segment_reader`
(storage's FileRecords + wire's decoder).

Options:
  path / paths       log dir(s); `path` may be a comma-separated list
  topics             comma-separated topic names (default: all)
  partitions         comma-separated partition numbers (default: all)
  startingOffsets    "earliest" (default), an offset for every partition, or
                     JSON {"topic": {"partition": offset}}; inclusive
  endingOffsets      "latest" (default), an offset, or JSON as above; exclusive
  includeControl     "true" to also return control batches' records (markers)
  verifyCrc          "false" to skip CRC-32C checks (default true)
  respectLogStartOffset  "false" to also return records below the
                     log-start-offset-checkpoint (DeleteRecords) (default true)
  maxPartitionBytes  split size for large segments
  rowsPerBatch       rows per Arrow batch (default 32768)

A schema passed with `.schema(...)` may name any subset of the columns (see
`pipeline.record_schema`); only those are built, which is how jobs avoid
moving values they do not need.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from pipeline.log_dir_scan import PartitionDir, scan_log_dirs
from pipeline.record_schema import RECORD_SCHEMA, check_requested_schema
from pipeline.segment_reader import (
    DEFAULT_MAX_SLICE_BYTES,
    DEFAULT_ROWS_PER_BATCH,
    NO_END_OFFSET,
    SegmentSlice,
    plan_slices,
    read_slice,
)

__all__ = ["KafkaLogDataSource", "KafkaLogReader", "SliceInputPartition", "ReadOptions"]


def _truthy(value: str | None, default: bool) -> bool:
    if value is None:
        return default
    return value.strip().lower() in ("true", "1", "yes")


def _split_list(value: str | None) -> list[str] | None:
    if value is None or not value.strip():
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


class _OffsetSpec:
    """startingOffsets / endingOffsets: a keyword, one number for all, or per-partition JSON."""

    def __init__(self, raw: str | None, keyword: str, keyword_value: int) -> None:
        self.default = keyword_value
        self.per_partition: dict[tuple[str, int], int] = {}
        text = (raw or keyword).strip()
        if text.lower() == keyword:
            return
        if text.lower() in ("earliest", "latest"):
            self.default = 0 if text.lower() == "earliest" else NO_END_OFFSET
            return
        if text.lstrip("-").isdigit():
            self.default = int(text)
            return
        try:
            parsed = json.loads(text)
        except ValueError:
            raise ValueError(f"bad offsets option {raw!r}: expected earliest/latest, a number or JSON") from None
        if not isinstance(parsed, dict):
            raise ValueError(f"bad offsets option {raw!r}: JSON must map topic -> partition -> offset")
        for topic, parts in parsed.items():
            for part, offset in dict(parts).items():
                offset = int(offset)
                # Spark's Kafka source spelling: -2 earliest, -1 latest
                if offset == -2:
                    offset = 0
                elif offset == -1:
                    offset = NO_END_OFFSET
                self.per_partition[(str(topic), int(part))] = offset

    def for_partition(self, topic: str, partition: int) -> int:
        return self.per_partition.get((topic, partition), self.default)


class ReadOptions:
    """The parsed options of one read."""

    def __init__(self, options: Mapping[str, str]) -> None:
        opts = {k.lower(): v for k, v in options.items()}
        paths: list[str] = []
        if opts.get("paths"):
            paths += [str(p) for p in json.loads(opts["paths"])]
        if opts.get("path"):
            paths += _split_list(opts["path"]) or []
        if not paths:
            raise ValueError("kafka-log needs a log dir: .load(path) or .option('path', ...)")
        self.paths = paths
        self.topics = _split_list(opts.get("topics"))
        parts = _split_list(opts.get("partitions"))
        self.partitions = [int(p) for p in parts] if parts is not None else None
        self.starting = _OffsetSpec(opts.get("startingoffsets"), "earliest", 0)
        self.ending = _OffsetSpec(opts.get("endingoffsets"), "latest", NO_END_OFFSET)
        self.include_control = _truthy(opts.get("includecontrol"), False)
        self.verify_crc = _truthy(opts.get("verifycrc"), True)
        self.respect_log_start = _truthy(opts.get("respectlogstartoffset"), True)
        self.max_slice_bytes = int(opts.get("maxpartitionbytes") or DEFAULT_MAX_SLICE_BYTES)
        self.rows_per_batch = int(opts.get("rowsperbatch") or DEFAULT_ROWS_PER_BATCH)

    def plan(self) -> list[SegmentSlice]:
        """Every slice to read, in (topic, partition, offset) order."""
        view = scan_log_dirs(self.paths, topics=self.topics, partitions=self.partitions)
        slices: list[SegmentSlice] = []
        for part in view.partitions:
            slices += self.plan_partition(part)
        return slices

    def plan_partition(self, part: PartitionDir) -> list[SegmentSlice]:
        start = self.starting.for_partition(part.topic, part.partition)
        if self.respect_log_start:
            start = max(start, part.log_start_offset)
        end = self.ending.for_partition(part.topic, part.partition)
        if start >= end:
            return []
        return plan_slices(part.segments, max_slice_bytes=self.max_slice_bytes, start_offset=start, end_offset=end)


class SliceInputPartition(InputPartition):
    """One Spark task: one segment slice."""

    def __init__(self, piece: SegmentSlice) -> None:
        super().__init__(piece)
        self.piece = piece


class KafkaLogReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        check_requested_schema(schema)
        self.options = ReadOptions(options)
        self.schema = schema

    def partitions(self) -> Sequence[InputPartition]:
        return [SliceInputPartition(piece) for piece in self.options.plan()]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from pyspark.sql.pandas.types import to_arrow_schema

        if not isinstance(partition, SliceInputPartition):
            return  # no segments at all: Spark still runs one empty task
        arrow_schema = to_arrow_schema(self.schema, timezone="UTC")
        yield from read_slice(
            partition.piece,
            arrow_schema,
            include_control=self.options.include_control,
            verify_crc=self.options.verify_crc,
            rows_per_batch=self.options.rows_per_batch,
        )


class KafkaLogDataSource(DataSource):
    """Batch reads of Kafka log directories (format name `kafka-log`)."""

    @classmethod
    def name(cls) -> str:
        return "kafka-log"

    def schema(self) -> StructType:
        return RECORD_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaLogReader(self.options, schema)
