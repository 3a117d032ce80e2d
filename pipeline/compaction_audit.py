"""The compaction audit: per partition, what the cleaner sees and what it would do.

Answers the operator questions of the compaction FAQ from the files instead
of consuming the topic with kcat and gawk:

- how many records a compacted partition holds (`records`), how many keys
  (`distinct_keys`) and how many a full compaction would drop
  (`superseded_records`: keyed records with a later record of the same key);
- tombstones, and how many are older than delete.retention.ms;
- keyless records (`null_key_records`: invalid on a compacted topic);
- the cleaner's byte split at the cleaner-offset-checkpoint, dirty ratio and
  eligibility (driver side, `pipeline.cleaner_position`);
- distinct keys of the dirty (cleanable) section and the cleaning passes the
  dedupe buffer needs for them;
- when compaction last provably ran: the newest offset gap (a record whose
  predecessor offset is gone) and that record's timestamp, plus the records
  after it, the "contiguous ~dirty rows since gap" (the seed's kcat+gawk recipe);
- the oldest dirty record's age against max.compaction.lag.ms;
- for a tiered partition (KIP-405), its remote tier (`remote`): segments, bytes and offsets
  from `__remote_log_metadata`, records and time range from the records read there.

Record-level numbers come from one Spark scan of the `kafka-log` source that
builds only topic, partition, offset, timestamp, key, value_length and
is_control (values never cross into the JVM), persisted and aggregated three
ways (per partition, per key, per offset gap).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from pipeline.cleaner_position import CleanerSettings, PartitionPosition, cleaner_position, keys_per_pass
from pipeline.kafka_log_source import ReadOptions
from pipeline.log_dir_scan import PartitionDir
from pipeline.record_schema import KNOWN_COLUMNS
from pipeline.session import SessionSource, session_of
from storage.log_config import LogConfig

__all__ = ["PartitionAudit", "RemoteTierAudit", "AuditReport", "run_audit", "KEY_VERSION_BUCKETS"]

# Upper bounds (inclusive) of the "versions per key" histogram buckets; the last is open.
KEY_VERSION_BUCKETS: tuple[int, ...] = (1, 2, 4, 8, 16, 64, 256)


class RemoteTierAudit(msgspec.Struct):
    """A tiered partition's remote part: its segments in the remote tier (COPY_SEGMENT_FINISHED in
    `__remote_log_metadata`) and the records read from them, those below the local log start."""

    segments: int
    bytes: int
    start_offset: int  # the first remote segment's start
    end_offset: int  # the last remote offset (Kafka's highestOffsetInRemoteStorage)
    local_log_start_offset: int  # the first offset on local disk: below it, records are remote only
    max_timestamp_ms: int  # the newest record in the remote tier (segment metadata)
    read: bool  # False when only local segments were read (localOnly): records and min time are unknown
    records: int = 0  # data records read from the remote tier
    min_timestamp_ms: int | None = None  # the oldest of them


class PartitionAudit(msgspec.Struct):
    """One partition's answers. Records are data records (control records counted apart)."""

    topic: str
    partition: int
    cleanup_policy: str
    records: int
    control_records: int
    bytes: int
    segments: int
    log_start_offset: int
    log_end_offset: int
    distinct_keys: int
    superseded_records: int  # keyed records with a later record of the same key: a full compaction drops them
    tombstones: int  # keyed records with a null value
    tombstones_past_delete_retention: int  # tombstones whose timestamp is older than now - delete.retention.ms
    null_key_records: int
    cleaner_checkpoint: int | None
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    dirty_bytes: int
    dirty_ratio: float
    min_cleanable_dirty_ratio: float
    eligible_for_cleaning: bool
    dirty_records: int  # records in [first_dirty_offset, first_uncleanable_offset)
    dirty_distinct_keys: int  # keys the cleaner's offset map must hold to clean that range
    keys_per_pass: int
    cleaning_passes_needed: int
    last_compaction_gap_offset: int | None
    last_compaction_gap_timestamp_ms: int | None
    records_since_last_gap: int  # the recipe's "contiguous ~dirty rows since gap"
    oldest_dirty_timestamp_ms: int | None  # oldest record at or after the cleaner checkpoint
    oldest_dirty_age_ms: int | None
    max_compaction_lag_ms: int
    max_compaction_lag_exceeded: bool
    delete_retention_ms: int
    in_flight_files: int
    key_versions_histogram: list[int]  # counts of keys per KEY_VERSION_BUCKETS bucket
    findings: list[str]
    remote: RemoteTierAudit | None = None  # a tiered partition's remote tier; bytes and segments above are local


class AuditReport(msgspec.Struct):
    log_dirs: list[str]
    generated_at_ms: int
    key_version_buckets: list[int]
    cleaner: CleanerSettings
    partitions: list[PartitionAudit]
    seconds: float = 0.0
    remote_storage: str | None = None  # the remote tier read (credentials removed), if one was given


_META_SCHEMA = StructType(
    [
        StructField("topic", StringType(), False),
        StructField("partition", IntegerType(), False),
        StructField("first_dirty", LongType(), False),
        StructField("first_uncleanable", LongType(), False),
        StructField("log_start", LongType(), False),
        StructField("local_start", LongType(), False),
        StructField("tombstone_cutoff_ms", LongType(), False),
    ]
)

_SCAN_COLUMNS = ("topic", "partition", "offset", "timestamp", "key", "value_length", "is_control")


def _scan_schema() -> StructType:
    return StructType([StructField(c, KNOWN_COLUMNS[c], True) for c in _SCAN_COLUMNS])


def _bucket_expr(col: Column) -> Column:
    expr = F.lit(len(KEY_VERSION_BUCKETS))
    for i in reversed(range(len(KEY_VERSION_BUCKETS))):
        expr = F.when(col <= KEY_VERSION_BUCKETS[i], F.lit(i)).otherwise(expr)
    return expr


def _collect(df: DataFrame) -> dict[tuple[str, int], dict[str, Any]]:
    return {(r["topic"], r["partition"]): r.asDict() for r in df.collect()}


def _record_aggregates(records: DataFrame, meta: DataFrame
                       ) -> tuple[dict[tuple[str, int], dict[str, Any]], dict[tuple[str, int], dict[str, Any]]]:
    """Two Spark jobs over one persisted scan: per-partition stats (with gaps) and per-key stats."""
    ts_ms = F.unix_millis(F.col("timestamp"))
    rows = records.join(F.broadcast(meta), ["topic", "partition"]).select(
        "topic", "partition", "offset", "key", "is_control",
        ts_ms.alias("ts"),
        (F.col("value_length") < 0).alias("null_value"),
        ((F.col("offset") >= F.col("first_dirty")) & (F.col("offset") < F.col("first_uncleanable"))).alias("dirty"),
        (F.col("offset") >= F.col("first_dirty")).alias("after_checkpoint"),
        (F.col("offset") < F.col("local_start")).alias("remote"),
        "tombstone_cutoff_ms", "log_start",
    ).persist()
    try:
        # Gaps: every offset present counts (control records occupy offsets too); the first
        # record is compared with the log start, as a consumer reading from the beginning sees it.
        ordered = Window.partitionBy("topic", "partition").orderBy("offset")
        whole = Window.partitionBy("topic", "partition")
        prev = F.coalesce(F.lag("offset").over(ordered), F.col("log_start") - 1)
        flagged = rows.withColumn("gap", F.col("offset") > prev + 1)
        flagged = flagged.withColumn("last_gap", F.max(F.when(F.col("gap"), F.col("offset"))).over(whole))
        data = ~F.col("is_control")
        keyed = data & F.col("key").isNotNull()
        tombstone = keyed & F.col("null_value")

        def count_if(cond: Column) -> Column:
            return F.sum(F.when(cond, 1).otherwise(0))

        per_partition = flagged.groupBy("topic", "partition").agg(
            count_if(data).alias("records"),
            count_if(F.col("is_control")).alias("control_records"),
            count_if(data & F.col("key").isNull()).alias("null_key_records"),
            count_if(tombstone).alias("tombstones"),
            count_if(tombstone & (F.col("ts") <= F.col("tombstone_cutoff_ms"))).alias("tombstones_past_delete_retention"),
            count_if(data & F.col("dirty")).alias("dirty_records"),
            F.min(F.when(data & F.col("after_checkpoint"), F.col("ts"))).alias("oldest_dirty_ts"),
            F.max("last_gap").alias("last_gap_offset"),
            F.max_by("ts", F.when(F.col("gap"), F.col("offset"))).alias("last_gap_ts"),
            count_if(data & (F.col("offset") > F.col("last_gap"))).alias("since"),
            count_if(data & F.col("remote")).alias("remote_records"),
            F.min(F.when(data & F.col("remote"), F.col("ts"))).alias("remote_min_ts"),
        )
        per_key = (
            rows.filter(~F.col("is_control") & F.col("key").isNotNull())
            .groupBy("topic", "partition", "key")
            .agg(F.count(F.lit(1)).alias("versions"), F.max(F.col("dirty").cast("int")).alias("in_dirty"))
        )
        bucket = _bucket_expr(F.col("versions"))
        key_stats = per_key.groupBy("topic", "partition").agg(
            F.count(F.lit(1)).alias("distinct_keys"),
            F.sum(F.col("versions") - 1).alias("superseded_records"),
            F.sum("in_dirty").alias("dirty_distinct_keys"),
            *[F.sum(F.when(bucket == i, 1).otherwise(0)).alias(f"bucket_{i}")
              for i in range(len(KEY_VERSION_BUCKETS) + 1)],
        )
        return _collect(per_partition), _collect(key_stats)
    finally:
        rows.unpersist()


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000)) if ms >= 0 else "-"


def _findings(a: PartitionAudit, pos: PartitionPosition) -> list[str]:
    out: list[str] = []
    if not pos.compact:
        out.append(f"cleanup.policy={a.cleanup_policy}: the cleaner does not compact this topic")
    if a.null_key_records and pos.compact:
        out.append(f"{a.null_key_records} records have no key: invalid on a compacted topic, the cleaner drops them")
    if pos.compact and a.cleaner_checkpoint is None and a.segments > 1:
        out.append("no cleaner-offset-checkpoint entry: never cleaned since the checkpoint was written")
    if a.eligible_for_cleaning:
        why = (f"dirty ratio {a.dirty_ratio:.2f} > min.cleanable.dirty.ratio {a.min_cleanable_dirty_ratio}"
               if a.dirty_ratio > a.min_cleanable_dirty_ratio else "max.compaction.lag.ms exceeded")
        out.append(f"eligible for cleaning ({why})")
    elif pos.compact and a.dirty_bytes:
        out.append(f"not eligible: dirty ratio {a.dirty_ratio:.2f} <= {a.min_cleanable_dirty_ratio}")
    if pos.compact and a.max_compaction_lag_exceeded:
        out.append("max.compaction.lag.ms exceeded: a running cleaner should already have cleaned this "
                   "partition; if it stays so, look for 'Marking its partition ... as uncleanable' in the broker log")
    if a.cleaning_passes_needed > 1:
        out.append(f"{a.dirty_distinct_keys} dirty keys need {a.cleaning_passes_needed} cleaning passes "
                   f"({a.keys_per_pass} keys fit the dedupe buffer)")
    if a.in_flight_files:
        out.append(f"{a.in_flight_files} .cleaned/.swap/.deleted files present: a swap or deletion was in "
                   "progress, or an interrupted one awaits recovery")
    if a.tombstones_past_delete_retention:
        out.append(f"{a.tombstones_past_delete_retention} tombstones are older than delete.retention.ms")
    if a.remote is not None:
        r = a.remote
        if r.read:
            since = f"from {_iso(r.min_timestamp_ms)} " if r.min_timestamp_ms is not None else ""
            held = f"{r.records} records read, {since}to {_iso(r.max_timestamp_ms)}"
        else:
            held = f"the newest from {_iso(r.max_timestamp_ms)}"
        out.append(f"tiered: {r.segments} remote segment(s), {r.bytes} bytes, hold offsets {r.start_offset} to "
                   f"{r.end_offset} ({held}); the local log starts at {r.local_log_start_offset}")
        if not r.read:
            out.append(f"the remote segments were not read (local only): records and keys count offsets "
                       f"{max(r.local_log_start_offset, a.log_start_offset)} and after")
    return out


def _remote_audit(part: PartitionDir, r: Mapping[str, Any], *, read: bool) -> RemoteTierAudit | None:
    remote = part.remote_segments
    if not remote:
        return None
    return RemoteTierAudit(
        segments=len(remote), bytes=part.remote_size_in_bytes, start_offset=remote[0].start_offset,
        end_offset=max(s.end_offset for s in remote), local_log_start_offset=part.local_log_start_offset,
        max_timestamp_ms=max(s.max_timestamp_ms for s in remote), read=read,
        records=int(r.get("remote_records") or 0) if read else 0,
        min_timestamp_ms=r.get("remote_min_ts") if read else None)


def run_audit(
    spark_source: SessionSource,
    log_dirs: Sequence[str],
    *,
    topics: Iterable[str] | None = None,
    defaults: LogConfig | None = None,
    cleaner: CleanerSettings | None = None,
    now_ms: int | None = None,
    read_options: Mapping[str, str] | None = None,
) -> AuditReport:
    """Audit every partition of `log_dirs` (optionally some topics) and return the report."""
    started = time.monotonic()
    now = int(time.time() * 1000) if now_ms is None else now_ms
    cleaner = cleaner or CleanerSettings()
    per_pass = keys_per_pass(cleaner)
    topic_list = list(topics) if topics is not None else None
    options = dict(read_options or {})
    options["includeControl"] = "true"
    if topic_list is not None:
        options["topics"] = ",".join(topic_list)
    plan = ReadOptions({**options, "paths": json.dumps(list(log_dirs))})
    view = plan.scan()
    plan.check_remote(view)  # before Spark: a missing remote tier is a plain message
    configs = {p.topic: view.topic_config(p.topic, defaults) for p in view.partitions}
    positions = {(p.topic, p.partition): cleaner_position(p, configs[p.topic], now) for p in view.partitions}
    parts = {(p.topic, p.partition): p for p in view.partitions}
    report = AuditReport(list(log_dirs), now, list(KEY_VERSION_BUCKETS), cleaner, [],
                         remote_storage=plan.remote_storage.describe() if plan.remote_storage is not None else None)
    if not positions:
        return report
    spark = session_of(spark_source)

    def read_start(t: str, p: int) -> int:
        """Where the records read start: the log start, or the local log start reading local only."""
        part = parts[(t, p)]
        return max(part.log_start_offset, part.local_log_start_offset) if plan.local_only else part.log_start_offset

    meta = spark.createDataFrame(
        [
            (t, p, pos.first_dirty, pos.first_uncleanable, read_start(t, p), parts[(t, p)].local_log_start_offset,
             now - configs[t].delete_retention_ms)
            for (t, p), pos in positions.items()
        ],
        _META_SCHEMA,
    )
    reader = spark.read.format("kafka-log").schema(_scan_schema())
    for option, value in options.items():
        reader = reader.option(option, value)
    records = reader.load(list(log_dirs))
    part_rows, key_rows = _record_aggregates(records, meta)
    for (t, p), pos in sorted(positions.items()):
        config = configs[t]
        r = part_rows.get((t, p), {})
        k = key_rows.get((t, p), {})
        dirty_keys = int(k.get("dirty_distinct_keys") or 0)
        oldest = r.get("oldest_dirty_ts")
        audit = PartitionAudit(
            topic=t,
            partition=p,
            cleanup_policy=",".join(config.cleanup_policy),
            records=int(r.get("records") or 0),
            control_records=int(r.get("control_records") or 0),
            bytes=pos.bytes,
            segments=pos.segments,
            log_start_offset=pos.log_start_offset,
            log_end_offset=pos.log_end_offset,
            distinct_keys=int(k.get("distinct_keys") or 0),
            superseded_records=int(k.get("superseded_records") or 0),
            tombstones=int(r.get("tombstones") or 0),
            tombstones_past_delete_retention=int(r.get("tombstones_past_delete_retention") or 0),
            null_key_records=int(r.get("null_key_records") or 0),
            cleaner_checkpoint=pos.checkpoint,
            first_dirty_offset=pos.first_dirty,
            first_uncleanable_offset=pos.first_uncleanable,
            clean_bytes=pos.clean_bytes,
            dirty_bytes=pos.dirty_bytes,
            dirty_ratio=pos.dirty_ratio,
            min_cleanable_dirty_ratio=pos.min_cleanable_dirty_ratio,
            eligible_for_cleaning=pos.eligible,
            dirty_records=int(r.get("dirty_records") or 0),
            dirty_distinct_keys=dirty_keys,
            keys_per_pass=per_pass,
            cleaning_passes_needed=math.ceil(dirty_keys / per_pass) if per_pass > 0 else 0,
            last_compaction_gap_offset=r.get("last_gap_offset"),
            last_compaction_gap_timestamp_ms=r.get("last_gap_ts"),
            records_since_last_gap=int(r.get("since") or 0),
            oldest_dirty_timestamp_ms=oldest,
            oldest_dirty_age_ms=(now - oldest) if oldest is not None else None,
            max_compaction_lag_ms=config.max_compaction_lag_ms,
            max_compaction_lag_exceeded=pos.max_compaction_lag_exceeded,
            delete_retention_ms=config.delete_retention_ms,
            in_flight_files=pos.in_flight_files,
            key_versions_histogram=[int(k.get(f"bucket_{i}") or 0) for i in range(len(KEY_VERSION_BUCKETS) + 1)],
            findings=[],
            remote=_remote_audit(parts[(t, p)], r, read=not plan.local_only),
        )
        audit.findings = _findings(audit, pos)
        report.partitions.append(audit)
    report.seconds = time.monotonic() - started
    return report
