"""The swap of `.cleaned` segments into the live log, and recovery from a crash at every step."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cleaner.clean_request import CleanResult
from cleaner.errors import LogCleaningAbortedError
from cleaner.segment_swap import SWAP_STEPS, swap_cleaned_segments
from cleaner_testlib import clean, compact_config, leftover_files, put, read_all
from storage.log import Log


class SimulatedCrash(BaseException):
    """Stops the swap at a chosen step, leaving the files as a power cut would."""


def _populate(log: Log) -> None:
    for i in range(120):
        put(log, b"k%d" % (i % 9), b"value-%d" % i)
    log.roll()


def _as_tuples(log: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for r in read_all(log)]


def _crash(log: Log) -> None:
    """Drop the log without trimming, flushing or writing anything more (a crash)."""
    for segment in log.segments.values():
        segment.close_handlers()
        segment.log.close()


# "before_swap" crashes before any group is touched, so it needs no second group.
CRASH_POINTS = [("before_swap", 0)] + [(step, group) for group in (0, 1) for step in SWAP_STEPS]


@pytest.mark.parametrize(("step", "crash_group"), CRASH_POINTS)
def test_a_crash_at_any_swap_step_recovers_old_or_new_segments(make_log, tmp_path: Path, clock, step, crash_group):
    config = compact_config(segment_bytes=2048)
    log = make_log(config)
    _populate(log)
    old = _as_tuples(log)
    # The same clean, completed on a copy, tells us what "new" looks like.
    twin_dir = tmp_path / "twin" / log.dir.name
    shutil.copytree(log.dir, twin_dir)
    twin = Log.open(twin_dir, config, clock=clock)
    clean(twin)
    new = _as_tuples(twin)
    twin.close()
    assert new != old

    result = clean(log, swap=False)
    assert len(result.segments) >= 2
    groups_seen = {"n": 0}

    def on_step(name: str) -> None:
        if groups_seen["n"] == crash_group and name == step:
            raise SimulatedCrash(name)
        if name == "dir_flushed":
            groups_seen["n"] += 1

    if step == "before_swap":
        pass  # only the worker's .cleaned files exist
    else:
        with pytest.raises(SimulatedCrash):
            swap_cleaned_segments(log, result, on_step=on_step)
    _crash(log)

    recovered = Log.open(log.dir, config, clock=clock, had_clean_shutdown=False)
    try:
        got = _as_tuples(recovered)
        assert leftover_files(recovered.dir) == []
        # Each group's offset range holds exactly its old or its new records (groups before
        # the crash are new, later ones old): never a mix inside a group, never a loss.
        bounds = [g.base_offset for g in result.segments] + [2**63]
        for lo, hi in zip(bounds, bounds[1:]):
            def part(rows):
                return [row for row in rows if lo <= row[0] < hi]
            assert part(got) in (part(old), part(new))
        offsets = [o for o, _k, _v in got]
        assert offsets == sorted(set(offsets))
        assert {k: v for _o, k, v in got} == {k: v for _o, k, v in old}
    finally:
        recovered.close()


def test_a_swap_after_an_abort_removes_the_output(make_log):
    log = make_log(compact_config())
    _populate(log)
    old = _as_tuples(log)
    result = clean(log, swap=False)
    with pytest.raises(LogCleaningAbortedError):
        swap_cleaned_segments(log, result, is_aborted=lambda: True)
    assert leftover_files(log.dir) == []
    assert _as_tuples(log) == old


def test_old_segments_are_renamed_deleted_and_unlinked_after_the_delay(make_log, clock):
    log = make_log(compact_config(file_delete_delay_ms=60_000))
    _populate(log)
    clean(log)
    deleted = [n for n in leftover_files(log.dir) if n.endswith(".deleted")]
    assert deleted and all(".log.deleted" in n or "index.deleted" in n for n in deleted)
    clock.advance(59_999)
    log.delete_pending_files()
    assert leftover_files(log.dir) == deleted
    clock.advance(1)
    log.delete_pending_files()
    assert leftover_files(log.dir) == []


def test_a_reader_holding_an_old_segment_can_finish_after_the_swap(make_log):
    log = make_log(compact_config(file_delete_delay_ms=60_000))
    _populate(log)
    info = log.read(0, 10_000)
    before = info.read_bytes()
    clean(log)
    assert info.read_bytes() == before  # the old file object still reads its bytes


def test_an_empty_result_swaps_nothing(make_log):
    log = make_log(compact_config())
    _populate(log)
    from cleaner.cleaner_stats import CleanerStats

    assert swap_cleaned_segments(log, CleanResult(end_offset=0, stats=CleanerStats(), segments=[])) == 0
