"""`kafka-log`: Spark's Python Data Source over Kafka log directories.

    spark.dataSource.register(KafkaLogDataSource)
    df = spark.read.format("kafka-log").load("/var/lib/kafka")          # one dir
    df = spark.read.format("kafka-log").load(["/data1", "/data2"])       # several
    df = (spark.read.format("kafka-log")
          .option("topics", "orders,payments").option("partitions", "0,1")
          .option("startingOffsets", '{"orders": {"0": 100}}')
          .option("endingOffsets", "latest").load(path))

One Spark partition per live segment (local or remote); a segment larger than
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
  remoteStorage      the remote tier of tiered topics (KIP-405): the local directory
                     backend's directory (the broker's rsm.config.dir), or an S3 bucket
                     and prefix as a URI (s3://bucket/prefix?endpoint_override=...)
  remote.log.storage.manager.class.name, rsm.config.*
                     or the broker's own settings, as in its server.properties
                     (rsm.config.dir; rsm.config.s3.bucket, .prefix, .endpoint.url,
                     .region, .access.key.id, .secret.access.key)
  localOnly          "true" to read only the segments on local disk

Tiered partitions: when the log dir holds `__remote_log_metadata` partitions, the
segments they list as copied (COPY_SEGMENT_FINISHED) are read from the remote tier,
planned and split like local ones, before the local segments; offsets both remote and
local are read once, locally. Records in the remote tier only, with no remote tier
given (and localOnly unset), fail the read with a message saying so.

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

from pipeline.log_dir_scan import LogDirView, PartitionDir, RemoteSegment, scan_log_dirs
from pipeline.record_schema import RECORD_SCHEMA, check_requested_schema
from pipeline.remote_tier import (
    CLASS_NAME_KEY,
    LOCAL_ONLY_OPTION,
    REMOTE_STORAGE_OPTION,
    RemoteTierNotGivenError,
    attach_remote_segments,
    remote_tier_from_options,
)
from pipeline.segment_reader import (
    DEFAULT_MAX_SLICE_BYTES,
    DEFAULT_ROWS_PER_BATCH,
    NO_END_OFFSET,
    SegmentSlice,
    plan_slices,
    read_slice,
)

__all__ = ["KafkaLogDataSource", "KafkaLogReader", "SliceInputPartition", "ReadOptions", "check_readable"]


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
        self.remote_storage = remote_tier_from_options(opts)
        self.local_only = _truthy(opts.get(LOCAL_ONLY_OPTION.lower()), False)

    def scan(self) -> LogDirView:
        """The partitions to read, with their remote segments (located in the remote tier when
        one was given)."""
        view = scan_log_dirs(self.paths, topics=self.topics, partitions=self.partitions)
        return attach_remote_segments(view, self.remote_storage)

    def plan(self) -> list[SegmentSlice]:
        """Every slice to read, in (topic, partition, offset) order; RemoteTierNotGivenError when
        records to read are in a remote tier that was not given."""
        view = self.scan()
        self.check_remote(view)
        slices: list[SegmentSlice] = []
        for part in view.partitions:
            slices += self.plan_partition(part)
        return slices

    def _range(self, part: PartitionDir) -> tuple[int, int]:
        start = self.starting.for_partition(part.topic, part.partition)
        if self.respect_log_start:
            start = max(start, part.log_start_offset)
        return start, self.ending.for_partition(part.topic, part.partition)

    def remote_pieces(self, part: PartitionDir) -> list[tuple[RemoteSegment, int, int]]:
        """The remote segments to read and the offsets [lo, hi) wanted from each: those below the
        first local offset (what is both remote and local is read locally, once), from the start
        asked for (the log start by default), each segment from past the previous one's end."""
        if self.local_only or not part.remote_segments:
            return []
        start, end = self._range(part)
        if part.segments:  # the first offset held locally, however far the log start is past it
            end = min(end, part.segments[0].base_offset)
        pieces: list[tuple[RemoteSegment, int, int]] = []
        next_offset = start
        for seg in part.remote_segments:
            lo = max(next_offset, seg.start_offset)
            if seg.end_offset >= lo and lo < end:
                pieces.append((seg, lo, end))
            next_offset = max(next_offset, seg.end_offset + 1)
        return pieces

    def check_remote(self, view: LogDirView) -> None:
        """RemoteTierNotGivenError naming every partition with records to read only in the remote
        tier, when no remote tier was given."""
        if self.remote_storage is not None:
            return
        missing: list[str] = []
        for part in view.partitions:
            pieces = self.remote_pieces(part)
            if pieces:
                size = sum(seg.size for seg, _lo, _hi in pieces)
                missing.append(f"{part.topic}-{part.partition} (offsets {pieces[0][1]} to "
                               f"{min(pieces[-1][0].end_offset, pieces[-1][2] - 1)}: {len(pieces)} segment(s), "
                               f"{size} bytes)")
        if missing:
            raise RemoteTierNotGivenError(
                f"Records to read are in tiered storage only, and no remote storage was given: "
                f"{'; '.join(missing)}. __remote_log_metadata in the log dir lists them. Give the broker's remote "
                f"tier with the option {REMOTE_STORAGE_OPTION} (its rsm.config.dir, or s3://bucket/prefix?...) or its "
                f"settings ({CLASS_NAME_KEY} and rsm.config.* options); asyncbroker audit/export take "
                f"--remote-storage or --broker-config. Or read only the local segments: {LOCAL_ONLY_OPTION}=true "
                f"(--local-only).")

    def plan_partition(self, part: PartitionDir) -> list[SegmentSlice]:
        """The partition's slices: its remote segments' (`remote_pieces`), then its local ones'."""
        start, end = self._range(part)
        if start >= end:
            return []
        slices: list[SegmentSlice] = []
        for seg, lo, hi in self.remote_pieces(part):
            if seg.file is None:
                raise RemoteTierNotGivenError(f"{part.topic}-{part.partition}: offsets {lo} and after are in "
                                              f"tiered storage only, and no remote storage was given")
            slices += plan_slices([seg.file], max_slice_bytes=self.max_slice_bytes, start_offset=lo, end_offset=hi,
                                  next_base_offsets=[seg.end_offset + 1])
        return slices + plan_slices(part.segments, max_slice_bytes=self.max_slice_bytes, start_offset=start,
                                    end_offset=end)


def check_readable(log_dirs: Sequence[str], options: Mapping[str, str]) -> None:
    """Refuse, with the read's own message, what a read of `log_dirs` would only find out in a
    Spark task: records to read in a remote tier that was not given. Jobs call it before Spark."""
    plan = ReadOptions({**options, "paths": json.dumps(list(log_dirs))})
    plan.check_remote(plan.scan())


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
