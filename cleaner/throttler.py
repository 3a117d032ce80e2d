"""Throttler: cap the cleaner's read+write rate (log.cleaner.io.max.bytes.per.second).

Kafka shares one Throttler between all CleanerThreads; our workers are processes, so
the period start and the bytes observed in the period live in shared memory guarded
by one ProcessSharedLock (created by the pool, handed to each worker at start-up).
The worker that closes a check interval over budget pauses, and so does every other worker
that comes to throttle before the pause ends: the cap is on the sum, as in Kafka, where the
other CleanerThreads wait on the throttler's lock while one sleeps holding it. Here the period
that follows a pause starts when the pause ends, so a period start still ahead is the pause in
force, and nobody sleeps holding the lock. A worker can still be killed (SIGKILL, the OOM
killer) in the few instructions it holds the lock for, so the lock is one the kernel frees
when its holder dies: a multiprocessing.Lock (a semaphore) would stay held for good, and the
replacement worker (whose Throttler sets the rate as it starts), the other workers and a
rate change by the broker would wait on it forever.
"""
from __future__ import annotations

import fcntl
import os
import tempfile
import threading
import time
import weakref
from typing import Any, Callable

__all__ = ["ProcessSharedLock", "Throttler", "ThrottleState"]

UNLIMITED = 1.7976931348623157e308


class ProcessSharedLock:
    """A lock between processes that is freed when its holder dies: a POSIX record lock
    (lockf) on an unlinked empty file, which the kernel drops with the process that held it.

    Record locks belong to a process, not to a thread, so the threads of one process first
    take a thread lock; and closing any descriptor of the file drops the process's locks on
    it, so a process holds one such lock object (a worker's comes once, in its initializer).
    Picklable only into a process being started (as multiprocessing's own locks are), where
    the file's descriptor goes along with it."""

    def __init__(self, fd: int | None = None) -> None:
        if fd is None:
            fd, path = tempfile.mkstemp(prefix="asyncbroker-cleaner-lock-")
            os.unlink(path)  # nothing is ever written: the file exists only to carry the lock
        self._fd = fd
        self._threads = threading.Lock()
        weakref.finalize(self, os.close, fd)

    def acquire(self, blocking: bool = True) -> bool:
        if not self._threads.acquire(blocking):
            return False
        try:
            fcntl.lockf(self._fd, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except (BlockingIOError, PermissionError):  # LOCK_NB on a lock another process holds
            self._threads.release()
            return False
        except BaseException:
            self._threads.release()
            raise
        return True

    def release(self) -> None:
        fcntl.lockf(self._fd, fcntl.LOCK_UN)
        self._threads.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def __reduce__(self) -> tuple[Any, ...]:
        from multiprocessing import context, reduction

        context.assert_spawning(self)  # the descriptor can only travel with a process start
        return _rebuild_process_shared_lock, (reduction.DupFd(self._fd),)


def _rebuild_process_shared_lock(dup_fd: Any) -> ProcessSharedLock:
    return ProcessSharedLock(dup_fd.detach())


class ThrottleState:
    """The shared part: [period start in monotonic ns, bytes observed in the period, desired
    rate] + a lock (never held across a sleep, freed if its holder dies). A period start ahead
    of now is a pause. The rate is shared too, so the broker can change log.cleaner.io.max.bytes.per.second while
    workers run (it is dynamically reconfigurable in Kafka). Picklable into worker processes
    when built with a multiprocessing context.
    """

    def __init__(self, ctx: Any | None = None, rate: float = UNLIMITED) -> None:
        initial = [float(time.monotonic_ns()), 0.0, float(rate)]
        if ctx is None:
            self.values: Any = initial
            self.lock: Any = threading.Lock()
        else:
            self.values = ctx.RawArray("d", initial)
            self.lock = ProcessSharedLock()

    def set_rate(self, rate: float) -> None:
        with self.lock:
            self.values[2] = float(rate)


class Throttler:
    def __init__(self, desired_rate_per_sec: float, check_interval_ms: int = 300, *,
                 state: ThrottleState | None = None,
                 nanoseconds: Callable[[], int] = time.monotonic_ns,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.check_interval_ns = check_interval_ms * 1_000_000
        self.state = state or ThrottleState()
        self.state.set_rate(desired_rate_per_sec)
        self._now = nanoseconds
        self._sleep = sleep
        self.total_sleep_ms = 0

    @property
    def desired_rate_per_sec(self) -> float:
        return float(self.state.values[2])

    @property
    def unlimited(self) -> bool:
        return bool(self.state.values[2] >= UNLIMITED)

    def maybe_throttle(self, observed: float) -> None:
        """Account `observed` bytes; once a check interval has passed over the desired rate,
        pause long enough to bring the interval's average down to it. During a pause another
        worker started, wait for its end."""
        if self.unlimited:
            return
        values = self.state.values
        pause_ns = 0
        with self.state.lock:
            values[1] += observed
            now = self._now()
            if values[0] > now:  # another worker's pause: its period starts when the pause ends
                pause_ns = int(values[0]) - now
            else:
                elapsed_ns = now - values[0]
                desired = values[2]
                if elapsed_ns > self.check_interval_ns and values[1] > 0:
                    rate = values[1] * 1e9 / elapsed_ns
                    if rate > desired:
                        elapsed_ms = elapsed_ns // 1_000_000
                        sleep_ms = round(values[1] / (desired / 1000.0) - elapsed_ms)
                        if sleep_ms > 0:
                            pause_ns = sleep_ms * 1_000_000
                            self.total_sleep_ms += sleep_ms
                    values[0] = float(now + pause_ns)  # the next period starts when the pause ends
                    values[1] = 0.0
        if pause_ns > 0:
            self._sleep(pause_ns / 1e9)  # outside the lock: see the module docstring
