"""The worker-process side of the cleaner pool (Kafka's CleanerThread body).

Each worker owns one Cleaner (its SkimpyOffsetMap of dedupe.buffer.size / threads bytes
is allocated once and reused). The broker talks to it only through picklable data:
a CleanRequest in, a CleanResult out, plus two pieces of shared memory set up when the
process starts: the abort flags (one per worker slot, the cross-process form of Kafka's
checkDone) and the I/O throttle shared by all workers.
"""
from __future__ import annotations

import logging
import os
import select
import threading
import time
from typing import Any

from cleaner.clean_request import CleanRequest, CleanResult
from cleaner.cleaner import Cleaner
from cleaner.cleaner_config import CleanerConfig
from cleaner.errors import LogCleaningAbortedError
from cleaner.offset_map import SkimpyOffsetMap
from cleaner.throttler import Throttler, ThrottleState
from storage import fault_injection

__all__ = ["initialize_worker", "run_clean", "worker_pid", "WorkerContext"]

logger = logging.getLogger(__name__)


class WorkerContext:
    """One worker slot's state inside its process (or thread, for in-process pools)."""

    def __init__(self, slot: int, abort_flags: Any, throttle_state: ThrottleState, config: CleanerConfig,
                 broker_pid: int | None = None) -> None:
        self.slot = slot
        self.broker_pid = broker_pid  # None: this "worker" is a thread of the broker itself
        self.abort_flags = abort_flags
        self.config = config
        # The rate lives in the shared state (set by the pool, reconfigurable at run time).
        self.throttler = Throttler(throttle_state.values[2], 300, state=throttle_state)
        self._cleaner: Cleaner | None = None

    def check_done(self) -> None:
        if self.abort_flags[self.slot]:
            raise LogCleaningAbortedError(f"cleaning aborted in worker {self.slot}")

    @property
    def cleaner(self) -> Cleaner:
        if self._cleaner is None:
            config = self.config
            self._cleaner = Cleaner(
                self.slot,
                SkimpyOffsetMap(config.map_memory_per_thread),
                config.io_buffer_per_thread,
                config.max_message_size,
                config.dedupe_buffer_load_factor,
                self.throttler,
                self.check_done,
            )
        return self._cleaner


_contexts: dict[int, WorkerContext] = {}


def initialize_worker(slot: int, abort_flags: Any, throttle_state: ThrottleState, config: CleanerConfig,
                      broker_pid: int | None = None) -> None:
    """ProcessPoolExecutor initializer: remember this process's slot and shared memory; with
    `broker_pid` (worker processes), exit when that process does."""
    _contexts[slot] = WorkerContext(slot, abort_flags, throttle_state, config, broker_pid)
    if broker_pid is not None:
        threading.Thread(target=_exit_with, args=(broker_pid,), name="broker-watchdog", daemon=True).start()


def _exit_with(broker_pid: int) -> None:
    """A pool worker waits for tasks on a pipe it also holds the write end of, and its parent
    is the forkserver, not the broker: nothing tells it that a SIGKILLed (or OOM-killed) broker
    is gone. Without this it would live on with its offset map (and keep the forkserver up)."""
    try:
        fd = os.pidfd_open(broker_pid)
    except ProcessLookupError:
        os._exit(0)
    except (AttributeError, OSError):
        fd = -1  # no pidfd (old kernel): poll instead
    if fd >= 0:
        select.select([fd], [], [])  # readable once the broker has exited (even unreaped)
        os._exit(0)
    while True:
        time.sleep(1.0)
        try:
            os.kill(broker_pid, 0)
        except ProcessLookupError:
            os._exit(0)
        except PermissionError:
            pass


def run_clean(slot: int, request: CleanRequest) -> CleanResult:
    """Clean one log in this worker; raises LogCleaningAbortedError when aborted."""
    context = _contexts[slot]
    context.check_done()
    result = context.cleaner.clean(request)
    if fault_injection.hit("cleaner.cleaned"):  # crash-test hook; no-op unless armed
        fault_injection.crash(context.broker_pid)  # the `.cleaned` output is on disk, not yet swapped in
    return result


def worker_pid(slot: int, prefault: bool = True) -> int:
    """Warm-up call: starts the process and reports its pid; with prefault, allocates and
    touches its offset map too."""
    if prefault:
        _contexts[slot].cleaner.offset_map.prefault()
    return os.getpid()
