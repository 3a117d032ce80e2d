"""Retention (cleanup.policy=delete): log-start, size and time predicates, guards, two-phase delete."""
from __future__ import annotations

from pathlib import Path

from storage.clock import MockClock
from storage.log_config import LogConfig
from storage_testlib import BASE_TS, batch


def _fill(log, batches: int, ts: int = BASE_TS) -> None:
    for _ in range(batches):
        log.append_as_leader(batch(2, value_size=100, ts=ts))


def test_retention_ms_deletes_old_segments(make_log, clock: MockClock, log_dir: Path) -> None:
    log = make_log(LogConfig(segment_bytes=1000, retention_ms=10_000, file_delete_delay_ms=60_000))
    _fill(log, 10)
    old = log.segments.base_offsets()
    clock.advance(5_000)
    _fill(log, 10, ts=clock.milliseconds())
    clock.advance(6_000)  # the first batches are now 11 s old, the later ones 6 s
    assert log.delete_old_segments() > 0
    assert log.log_start_offset == log.segments.base_offsets()[0] > 0
    remaining = log.segments.base_offsets()
    assert all(b not in remaining for b in old[:-1])  # every all-old segment went
    assert remaining[0] <= 20 and log.log_end_offset == 40  # the young records stay
    deleted = sorted(p.name for p in log_dir.glob("*.deleted"))
    assert deleted and all(p.endswith((".log.deleted", ".index.deleted", ".timeindex.deleted")) for p in deleted)
    assert log.delete_pending_files() == 0  # not yet due
    clock.advance(60_000)
    assert log.delete_pending_files() > 0
    assert not list(log_dir.glob("*.deleted"))


def test_retention_ms_never_deletes_future_or_all(make_log, clock: MockClock) -> None:
    log = make_log(LogConfig(segment_bytes=1000, retention_ms=1000))
    _fill(log, 10)
    clock.advance(1_000_000)
    before = log.num_segments
    deleted = log.delete_old_segments()
    assert deleted == before  # everything old: a fresh active segment was rolled first
    assert log.num_segments == 1 and log.active_segment.size() == 0
    assert log.log_start_offset == log.log_end_offset == 20
    assert log.delete_old_segments() == 0  # an empty active segment is never deleted


def test_retention_bytes(make_log) -> None:
    log = make_log(LogConfig(segment_bytes=1000, retention_bytes=2500))
    _fill(log, 30)
    log.delete_old_segments()
    assert log.size_in_bytes <= 2500 + 1000
    assert log.size_in_bytes > 2500 - 1000


def test_log_start_offset_breach_applies_to_compacted_logs(make_log) -> None:
    log = make_log(LogConfig(segment_bytes=1000, cleanup_policy=("compact",), retention_ms=1))
    _fill(log, 20)
    bases = log.segments.base_offsets()
    log.maybe_increment_log_start_offset(bases[2] + 1)
    assert log.delete_old_segments() == 2
    assert log.segments.base_offsets()[0] == bases[2]
    assert log.log_start_offset == bases[2] + 1  # not moved back to the segment base


def test_retention_disabled(make_log, clock: MockClock) -> None:
    log = make_log(LogConfig(segment_bytes=1000, retention_ms=-1, retention_bytes=-1))
    _fill(log, 20)
    clock.advance(10**9)
    assert log.delete_old_segments() == 0


def test_a_new_log_start_is_never_seen_with_its_segments_still_in_place(make_log, clock: MockClock) -> None:
    """Readers on the event loop take the log start and the segments without the log's lock: the
    moment the new start shows, the segments below it are gone from the map (and so from
    DescribeLogDirs' size). The leader-epoch checkpoint's write, slow under load, comes after."""
    log = make_log(LogConfig(segment_bytes=1000, retention_ms=10_000))
    log.maybe_assign_epoch_start_offset(0, 0)
    _fill(log, 10)
    log.maybe_assign_epoch_start_offset(1, log.log_end_offset)
    clock.advance(5_000)
    _fill(log, 10, ts=clock.milliseconds())
    clock.advance(6_000)
    seen: list[tuple[int, list[int]]] = []
    write = log.leader_epoch_cache.checkpoint.write

    def observed_write(entries):  # type: ignore[no-untyped-def]
        seen.append((log.log_start_offset, log.segments.base_offsets()))
        write(entries)

    log.leader_epoch_cache.checkpoint.write = observed_write
    assert log.delete_old_segments() > 0
    assert seen, "the leader-epoch checkpoint was not rewritten"
    for start, bases in seen:
        assert bases[0] == start, f"log start {start} visible while segments {bases} remain"
    assert log.leader_epoch_cache.checkpoint.read()[0][1] == log.log_start_offset
