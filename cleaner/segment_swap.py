"""The crash-safe swap of a worker's `.cleaned` segments into the live log.

Kafka's LocalLog.replaceSegments, applied by the broker under the Log's lock, one
group at a time in ascending base-offset order:

  1. new files `.cleaned` -> `.swap` (descending base offset when a group has several);
  2. the new segments enter the in-memory segment map (readers switch to them);
  3. each old segment leaves the map and its files are renamed `.deleted`; they are
     unlinked after file.delete.delay.ms, so in-flight reads holding them can finish;
  4. `.swap` -> live names;
  5. fsync the directory.

At every crash point storage's LogLoader ends with the old or the new segments, never a
mix and never a loss: `.cleaned` files are deleted (nothing was swapped yet), `.swap`
files are completed (the live files they cover are removed and the swap renamed), and
`.deleted` files are removed. Groups are swapped lowest first, so any `.cleaned` file
still waiting has a higher base offset than the `.swap` being completed (the loader
treats a `.swap` at or above the lowest `.cleaned` offset as not yet valid).

Steps 1-5 are storage's `Log.replace_segments` (with the `cleaner.swap.<step>` fault
points); this module opens the worker's output and holds `Log.lock` across all groups.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from cleaner.clean_request import CleanResult
from cleaner.errors import LogCleaningAbortedError
from storage.log_file_utils import CLEANED_FILE_SUFFIX, log_file, offset_index_file, time_index_file, transaction_index_file
from storage.log_segment import LogSegment

if TYPE_CHECKING:
    from storage.log import Log

__all__ = ["swap_cleaned_segments", "replace_segments", "delete_cleaned_output", "SWAP_STEPS"]

logger = logging.getLogger(__name__)

SWAP_STEPS = ("renamed_to_swap", "added_to_index", "old_renamed_deleted", "renamed_live", "dir_flushed")
"""Names of the points `on_step` is called at (after each step), for crash tests."""


def swap_cleaned_segments(log: "Log", result: CleanResult, *,
                          is_aborted: Callable[[], bool] | None = None,
                          on_step: Callable[[str], None] | None = None) -> int:
    """Swap every group of `result` into `log`; returns the number of groups swapped.

    Runs in an executor thread. Holds the Log's lock for the whole swap so appends,
    rolls and truncations see either the old or the new segment set. If the clean was
    aborted meanwhile, or the log was closed/deleted, the `.cleaned` output is removed
    and LogCleaningAbortedError raised instead.
    """
    swapped = 0
    with log.lock:
        if log.is_closed or (is_aborted is not None and is_aborted()):
            delete_cleaned_output(Path(log.dir), result)
            raise LogCleaningAbortedError(f"cleaning of {log.topic_partition} aborted before the swap")
        pending = list(result.segments)
        try:
            while pending:
                cleaned = pending[0]
                old = [log.segments.get(base) for base in cleaned.replaces]
                old_segments = [s for s in old if s is not None]
                if not old_segments:
                    # The group vanished (deleted meanwhile): its rewrite is moot.
                    _delete_files(Path(log.dir), cleaned.base_offset)
                    pending.pop(0)
                    continue
                new = LogSegment.open(log.dir, cleaned.base_offset, log.config, log.clock,
                                      file_already_exists=True, file_suffix=CLEANED_FILE_SUFFIX)
                replace_segments(log, [new], old_segments, on_step=on_step)
                pending.pop(0)
                swapped += 1
        except BaseException:
            for cleaned in pending[1:]:
                _delete_files(Path(log.dir), cleaned.base_offset)
            raise
    return swapped


def replace_segments(log: "Log", new_segments: list[LogSegment], old_segments: list[LogSegment], *,
                     on_step: Callable[[str], None] | None = None) -> list[LogSegment]:
    """Kafka's replaceSegments for one group (storage's `Log.replace_segments`).

    Returns the old segments that were not replaced in place (different base offset).
    """
    not_replaced = log.replace_segments(new_segments, old_segments, on_step=on_step)
    logger.info("Swapped in cleaned segment(s) %s for %s of %s", sorted(s.base_offset for s in new_segments),
                sorted(s.base_offset for s in old_segments), log.topic_partition)
    return not_replaced


def delete_cleaned_output(dir: Path, result: CleanResult) -> None:
    """Remove a worker's `.cleaned` files (an aborted or failed swap)."""
    for cleaned in result.segments:
        _delete_files(dir, cleaned.base_offset)


def delete_all_cleaned_files(dir: Path) -> int:
    """Remove every `.cleaned` file in a partition directory (a worker died mid-clean)."""
    removed = 0
    try:
        names = [p for p in Path(dir).iterdir() if p.name.endswith(CLEANED_FILE_SUFFIX)]
    except FileNotFoundError:
        return 0
    for path in names:
        path.unlink(missing_ok=True)
        removed += 1
    return removed


def _delete_files(dir: Path, base_offset: int) -> None:
    for make in (log_file, offset_index_file, time_index_file, transaction_index_file):
        make(dir, base_offset, CLEANED_FILE_SUFFIX).unlink(missing_ok=True)
