"""The cleaner's byte split and eligibility, from segment files alone (no Spark)."""

from __future__ import annotations

import os
from pathlib import Path

from pipeline.cleaner_position import CleanerSettings, cleaner_position, keys_per_pass
from pipeline.log_dir_scan import scan_log_dirs
from pipeline_testlib import BASE_TS, data_batch, write_cleaner_checkpoint, write_segment
from storage.log_config import LogConfig
from storage.topic_partition import TopicPartition

HOUR = 3_600_000
COMPACT = LogConfig(cleanup_policy=("compact",))


def _three_segments(root: Path) -> list[int]:
    part = root / "c-0"
    write_segment(part, 0, [data_batch(list(range(0, 10)), ts=BASE_TS)])
    write_segment(part, 10, [data_batch(list(range(10, 20)), ts=BASE_TS + HOUR)])
    write_segment(part, 20, [data_batch(list(range(20, 25)), ts=BASE_TS + 2 * HOUR)], active=True)
    return [os.path.getsize(part / f"{b:020d}.log") for b in (0, 10, 20)]


def _position(root: Path, config: LogConfig = COMPACT, now: int = BASE_TS + 10 * HOUR):  # noqa: ANN202
    [part] = scan_log_dirs([root]).partitions
    return cleaner_position(part, config, now)


def test_never_cleaned_log_is_all_dirty(tmp_path: Path) -> None:
    s0, s10, _ = _three_segments(tmp_path)
    pos = _position(tmp_path)
    assert (pos.checkpoint, pos.first_dirty, pos.first_uncleanable, pos.log_end_offset) == (None, 0, 20, 25)
    assert (pos.clean_bytes, pos.dirty_bytes, pos.dirty_ratio) == (0, s0 + s10, 1.0)
    assert pos.eligible


def test_checkpoint_splits_clean_and_dirty(tmp_path: Path) -> None:
    s0, s10, _ = _three_segments(tmp_path)
    write_cleaner_checkpoint(tmp_path, {TopicPartition("c", 0): 10})
    pos = _position(tmp_path, LogConfig(cleanup_policy=("compact",), min_cleanable_dirty_ratio=0.9))
    assert (pos.clean_bytes, pos.dirty_bytes) == (s0, s10)
    assert pos.dirty_ratio == s10 / (s0 + s10) and not pos.eligible  # 0.5 < 0.9
    # mid-segment checkpoint: the segment holding it counts on both sides, as Kafka's logSegments(from, to)
    write_cleaner_checkpoint(tmp_path, {TopicPartition("c", 0): 15})
    pos = _position(tmp_path)
    assert (pos.clean_bytes, pos.dirty_bytes) == (s0 + s10, s10)


def test_out_of_range_checkpoint_resets_to_log_start(tmp_path: Path) -> None:
    s0, s10, _ = _three_segments(tmp_path)
    write_cleaner_checkpoint(tmp_path, {TopicPartition("c", 0): 999})
    pos = _position(tmp_path)
    assert (pos.checkpoint, pos.first_dirty, pos.dirty_bytes) == (999, 0, s0 + s10)


def test_min_compaction_lag_and_max_compaction_lag(tmp_path: Path) -> None:
    s0, _, _ = _three_segments(tmp_path)
    # segment 10 holds records newer than now - lag: it and everything after is uncleanable
    lagged = LogConfig(cleanup_policy=("compact",), min_compaction_lag_ms=9 * HOUR + HOUR // 2)
    pos = _position(tmp_path, lagged)
    assert (pos.first_uncleanable, pos.dirty_bytes) == (10, s0)
    # max.compaction.lag.ms forces eligibility even below the ratio
    forced = LogConfig(cleanup_policy=("compact",), min_cleanable_dirty_ratio=1.0, max_compaction_lag_ms=HOUR)
    pos = _position(tmp_path, forced)
    assert pos.max_compaction_lag_exceeded and pos.eligible
    assert pos.earliest_dirty_segment_timestamp == BASE_TS + 9  # max timestamp of segment 0's first batch


def test_delete_policy_is_never_eligible(tmp_path: Path) -> None:
    _three_segments(tmp_path)
    assert not _position(tmp_path, LogConfig()).eligible


def test_keys_per_pass() -> None:
    assert keys_per_pass(CleanerSettings()) == 5_033_164  # "~5 million keys" with defaults
    # each of 4 threads gets a quarter of the buffer: 1,398,101 slots of 24 bytes, 90% usable
    assert keys_per_pass(CleanerSettings(threads=4)) == int((134_217_728 // 4 // 24) * 0.9) == 1_258_290
