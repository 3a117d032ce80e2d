"""Crash points for the torture tests: kill this process at a named point in the storage code.

    BROKER_FAULT_POINT="append:37"               SIGKILL on the 37th pass through "append"
    BROKER_FAULT_POINT="roll:2,checkpoint:5"     the first of those reached kills

Why a process kill and not an exception: the torture driver checks what a real crash leaves on
disk (a torn write, a half-done rename), and only SIGKILL skips every `finally`, flush and
shutdown hook the way a power cut or OOM kill does. The points are named for the operation that
is interrupted:

    append         a batch is in the page cache, the in-memory LEO not yet advanced
    append.torn    only the first half of a batch reached the file (a torn tail)
    roll           the new segment's files exist, the segment is not yet in the log
    flush          after an fsync, before the recovery point advances
    checkpoint     the temp file is written, not yet renamed over the checkpoint
    delete.topic   the partition dir is renamed `-delete`, checkpoints not yet rewritten
    cleaner.cleaned  a cleaner worker has written its `.cleaned` segments, the broker has not yet
                   swapped them in (hit in the worker process; it kills the broker, then itself)
    cleaner.swap   the cleaner's `.swap` files exist, the old segments not yet replaced
    txn.markers    a transaction's PrepareCommit/PrepareAbort is logged, no marker written yet
    txn.marker     after one partition's COMMIT/ABORT marker (the others not yet written)
    txn.complete   every marker written, CompleteCommit/CompleteAbort not yet logged
    remote.copy    a segment's files are in remote storage, COPY_SEGMENT_FINISHED not yet logged
    remote.delete  a remote segment's files are deleted, DELETE_SEGMENT_FINISHED not yet logged

Unset (production), `hit` is a constant-False function: one call per point, nothing else.
"""
from __future__ import annotations

import os
import signal
import threading

ENV_VAR = "BROKER_FAULT_POINT"
"""Not ASYNCBROKER_*: the broker reads every ASYNCBROKER_<KEY> variable as a config key."""


def _parse(spec: str) -> dict[str, int]:
    points: dict[str, int] = {}
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        name, _, nth = item.partition(":")
        points[name.strip()] = max(1, int(nth or "1"))
    return points


def crash(broker_pid: int | None = None) -> None:
    """Die now, as a power cut would: no unwinding, no atexit, no buffered writes. From a
    worker process, `broker_pid` dies first: a power cut takes the broker and its workers."""
    if broker_pid is not None:
        os.kill(broker_pid, signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)
    os._exit(137)  # not reached unless SIGKILL is blocked


_SPEC = _parse(os.environ.get(ENV_VAR, ""))
_counts: dict[str, int] = {}
_lock = threading.Lock()


def _never(point: str) -> bool:
    return False


def _armed(point: str) -> bool:
    target = _SPEC.get(point)
    if target is None:
        return False
    with _lock:
        n = _counts.get(point, 0) + 1
        _counts[point] = n
    return n == target


hit = _armed if _SPEC else _never
"""hit(point) -> True exactly once, on the configured pass; callers then do partial work and crash()."""

ARMED = bool(_SPEC)
"""Whether any point is armed: the append path asks this before calling hit()."""


def fault_point(point: str) -> None:
    """Crash here when `point` is armed for this pass."""
    if hit(point):
        crash()


def armed_points() -> dict[str, int]:
    return dict(_SPEC)
