"""Topics, partitions, configs and segments as the console shows them.

Offsets and sizes are read from each partition's Log (the state Fetch and ListOffsets
answer from); the segment walk of a partition page, which reads the time indexes, runs on
the broker's IO pool. The cleaner's checkpoint is read through the LogCleanerManager."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from storage.topic_partition import TopicPartition
from wire.errors import UnknownTopicOrPartitionError

from asyncbroker.config import ConfigSource

if TYPE_CHECKING:
    from asyncbroker.broker import Broker


class PartitionRow(msgspec.Struct, frozen=True):
    partition: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    size: int
    segments: int


class TopicRow(msgspec.Struct, frozen=True):
    name: str
    topic_id: str
    partitions: int
    internal: bool
    size: int
    messages: int  # high watermark minus log start, summed (an upper bound on a compacted topic)
    cleanup_policy: str


class ConfigRow(msgspec.Struct, frozen=True):
    name: str
    value: str | None
    is_default: bool  # not overridden on the topic
    source: str


class TopicDetail(msgspec.Struct, frozen=True):
    topic: TopicRow
    partitions: list[PartitionRow]
    configs: list[ConfigRow]


class SegmentRow(msgspec.Struct, frozen=True):
    base_offset: int
    next_offset: int
    size: int
    first_timestamp: int  # -1: unknown (no records, or none with a timestamp)
    max_timestamp: int
    active: bool
    deletes_at: int = -1  # when retention.ms makes it due (ms since the epoch); -1: never/not next
    tombstones: int = -1  # records with a null value (compacted topics); -1: not counted


class CleanerInfo(msgspec.Struct, frozen=True):
    checkpoint: int  # cleaned up to (exclusive); -1 when never cleaned
    dirty_bytes: int
    clean_bytes: int
    dirty_ratio: float
    min_cleanable_ratio: float
    state: str
    last_clean_ms: int = -1  # when the cleaner last finished this partition; -1: not since the broker started
    tombstones: int = -1  # summed over the segments counted; -1: none counted
    tombstones_complete: bool = True  # False: some segments were past the scan budget


class RetentionInfo(msgspec.Struct, frozen=True):
    retention_ms: int
    retention_bytes: int
    next_segment: int  # base offset of the segment retention deletes next; -1: none
    next_due_ms: int  # when (by retention.ms); -1: not by time
    reason: str


class PartitionDetail(msgspec.Struct, frozen=True):
    topic: str
    partition: int
    row: PartitionRow
    compacted: bool
    segments: list[SegmentRow]
    cleaner: CleanerInfo | None
    retention: RetentionInfo | None
    now_ms: int


def _log(broker: Broker, topic: str, partition: int) -> Any:
    log_ = broker.replica_manager.log_of(TopicPartition(topic, partition))
    if log_ is None:
        raise UnknownTopicOrPartitionError(f"Partition {topic}-{partition} does not exist on this broker.")
    return log_


def partition_row(broker: Broker, topic: str, partition: int) -> PartitionRow:
    log_ = _log(broker, topic, partition)
    return PartitionRow(partition, log_.log_start_offset, log_.log_end_offset, log_.high_watermark,
                        log_.size_in_bytes, log_.num_segments)


def topic_rows(broker: Broker, names: list[str] | None = None) -> list[TopicRow]:
    """Every topic (or those named), sorted by name, with size and messages summed over its
    partitions."""
    rows = []
    metas = broker.topics.all() if names is None else [m for n in names if (m := broker.topics.get(n)) is not None]
    for meta in sorted(metas, key=lambda m: m.name):
        size = messages = 0
        for tp in meta.topic_partitions():
            log_ = broker.replica_manager.log_of(tp)
            if log_ is not None:
                size += log_.size_in_bytes
                messages += max(0, log_.high_watermark - log_.log_start_offset)
        policy = ",".join(broker.topics.log_config(meta.name).cleanup_policy)
        rows.append(TopicRow(meta.name, str(meta.topic_id), meta.partitions, meta.is_internal, size, messages,
                             policy))
    return rows


def topic_detail(broker: Broker, topic: str) -> TopicDetail:
    meta = broker.topics.get(topic)
    if meta is None:
        raise UnknownTopicOrPartitionError(f"Topic {topic} does not exist.")
    row = topic_rows(broker, [meta.name])[0]
    partitions = [partition_row(broker, topic, p) for p in range(meta.partitions)]
    configs = [ConfigRow(e.name, e.value, e.source != ConfigSource.DYNAMIC_TOPIC_CONFIG,
                         ConfigSource(e.source).name) for e in broker.topics.describe_configs(topic)]
    return TopicDetail(row, partitions, configs)


# The most bytes one partition page reads to count tombstones; segments past it show "not counted".
TOMBSTONE_SCAN_BYTES = 64 * 1024 * 1024


def _tombstones(seg: Any) -> int:
    """Records with a null value in a segment (control batches skipped)."""
    from wire.records import iter_batch_headers, iter_records

    data = seg.log.read(0, seg.size())
    count = 0
    for header, pos in iter_batch_headers(data):
        if header.is_control:
            continue
        count += sum(1 for r in iter_records(data, pos) if r.value is None)
    return count


def _segments_blocking(log_: Any, retention_ms: int, now_ms: int,
                       count_tombstones: bool = False) -> tuple[list[SegmentRow], int, int]:
    """On the IO pool: each segment's offsets, size and time range (the time index's last
    entry, the first batch's timestamp), the segment retention.ms deletes next, and (on a
    compacted topic, within TOMBSTONE_SCAN_BYTES) its tombstones."""
    from wire.records import read_batch_header

    with log_.lock:
        segments = list(log_.segments.values())
        end = log_.log_end_offset
    rows: list[SegmentRow] = []
    next_base = next_due = -1
    budget = TOMBSTONE_SCAN_BYTES if count_tombstones else 0
    for i, seg in enumerate(segments):
        nxt = segments[i + 1].base_offset if i + 1 < len(segments) else end
        active = i == len(segments) - 1
        first_ts = -1
        try:
            if seg.size() > 0:
                head = seg.log.read(0, 61)
                if len(head) >= 61:
                    first_ts = read_batch_header(head).base_timestamp
        except Exception:  # noqa: BLE001 - the time range is informative; a failed read shows unknown
            first_ts = -1
        max_ts = seg.max_timestamp_so_far
        due = -1
        if not active and retention_ms >= 0 and next_base < 0:
            due = seg.largest_timestamp() + retention_ms
            next_base, next_due = seg.base_offset, due
        tombstones = -1
        size = seg.size()
        if size <= budget:
            budget -= size
            try:
                tombstones = _tombstones(seg)
            except Exception:  # noqa: BLE001 - informative only: an unreadable segment shows "not counted"
                tombstones = -1
        rows.append(SegmentRow(seg.base_offset, nxt, size, first_ts, max_ts, active, due, tombstones))
    return rows, next_base, next_due


async def partition_detail(broker: Broker, topic: str, partition: int) -> PartitionDetail:
    meta = broker.topics.get(topic)
    if meta is None:
        raise UnknownTopicOrPartitionError(f"Topic {topic} does not exist.")
    if not 0 <= partition < meta.partitions:
        raise UnknownTopicOrPartitionError(f"Topic {topic} has no partition {partition} "
                                           f"(it has {meta.partitions}).")
    log_ = _log(broker, topic, partition)
    config = broker.topics.log_config(topic)
    policy = set(config.cleanup_policy)
    compacted = "compact" in policy
    now_ms = broker.clock.milliseconds()
    retention_ms = config.retention_ms if "delete" in policy else -1
    segments, next_base, next_due = await broker.run_blocking(_segments_blocking, log_, retention_ms, now_ms,
                                                              compacted)
    cleaner = None
    if compacted:
        cleaner = await _cleaner_info(broker, TopicPartition(topic, partition), log_, segments, config)
    retention = None
    if "delete" in policy:
        if next_base < 0:
            reason = "nothing: only the active segment, which retention never deletes"
        elif config.retention_ms < 0:
            reason = "nothing by time (retention.ms=-1)"
            next_due = -1
        else:
            reason = f"segment {next_base} once its newest record is older than retention.ms"
        if config.retention_bytes >= 0:
            reason += f"; by size once the partition exceeds retention.bytes={config.retention_bytes}"
        retention = RetentionInfo(config.retention_ms, config.retention_bytes, next_base, next_due, reason)
    return PartitionDetail(topic, partition, partition_row(broker, topic, partition), compacted, segments,
                           cleaner, retention, now_ms)


async def _cleaner_info(broker: Broker, tp: TopicPartition, log_: Any, segments: list[SegmentRow],
                        config: Any) -> CleanerInfo:
    manager = broker.cleaner_manager
    checkpoint = -1
    if not broker.config.log_cleaner_enable:
        state = "cleaner disabled"
    elif broker.cleaner_starting:
        state = "cleaner starting"
    else:
        state = "cleaner not started (no compacted log has a segment to clean yet)"
    if manager is not None:
        checkpoints = await manager.all_cleaner_checkpoints()
        checkpoint = checkpoints.get(tp, -1)
        cleaning = manager.cleaning_state(tp)
        state = "idle" if cleaning is None else str(getattr(cleaning, "name", cleaning))
    first_dirty = max(checkpoint, log_.log_start_offset)
    clean = sum(s.size for s in segments if s.next_offset <= first_dirty)
    dirty = sum(s.size for s in segments if s.next_offset > first_dirty and not s.active)
    total = clean + dirty
    cleaner = broker.cleaner
    last_clean = cleaner.last_clean_ms.get(tp, -1) if cleaner is not None else -1
    counted = [s.tombstones for s in segments if s.tombstones >= 0]
    return CleanerInfo(checkpoint, dirty, clean, dirty / total if total else 0.0,
                       float(config.min_cleanable_dirty_ratio), state, last_clean,
                       sum(counted) if counted else -1, len(counted) == len(segments))


CHART_SEGMENTS_MAX = 40  # the newest segments charted; the table lists them all


def partition_charts(detail: PartitionDetail) -> list[Any]:
    """The partition page's SVG charts: segment sizes (the active one red), tombstones per
    segment and the dirty ratio against min.cleanable.dirty.ratio (compacted topics)."""
    from asyncbroker.console.charts import bar_chart_svg

    segments = detail.segments[-CHART_SEGMENTS_MAX:]
    labels = [f"{s.base_offset}..{s.next_offset - 1}" if s.next_offset > s.base_offset else f"{s.base_offset}"
              for s in segments]
    shown = f" (newest {len(segments)} of {len(detail.segments)})" if len(segments) < len(detail.segments) else ""
    charts = [bar_chart_svg(labels, [s.size / 1024 for s in segments], title=f"Segment size, KiB{shown}",
                            value_format="{:.1f}", highlight=[s.active for s in segments], chart_id="chart-sizes")]
    if detail.cleaner is not None:
        counted = [s for s in segments if s.tombstones >= 0]
        if counted:
            charts.append(bar_chart_svg([f"{s.base_offset}" for s in counted], [float(s.tombstones) for s in counted],
                                        title="Tombstones per segment (base offset)", value_format="{:.0f}",
                                        chart_id="chart-tombstones"))
        c = detail.cleaner
        charts.append(bar_chart_svg(["dirty ratio"], [c.dirty_ratio], title="Dirty ratio",
                                    threshold=c.min_cleanable_ratio,
                                    threshold_label=f"min.cleanable.dirty.ratio {c.min_cleanable_ratio}",
                                    highlight=[c.dirty_ratio >= c.min_cleanable_ratio], chart_id="chart-dirty"))
    return charts


def broker_log_dirs(broker: Broker) -> list[str]:
    return [str(d) for d in broker.config.log_dirs]
