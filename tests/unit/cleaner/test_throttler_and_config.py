"""Throttler (shared I/O cap) and CleanerConfig (log.cleaner.* keys)."""
from __future__ import annotations

import pytest

from cleaner.cleaner_config import DOUBLE_MAX, CleanerConfig
from cleaner.throttler import Throttler, ThrottleState
from wire.errors import InvalidConfigurationError


class FakeTime:
    def __init__(self) -> None:
        self.ns = 0
        self.slept: list[float] = []

    def now(self) -> int:
        return self.ns

    def sleep(self, secs: float) -> None:
        self.slept.append(secs)
        self.ns += int(secs * 1e9)


def test_throttler_sleeps_to_bring_the_interval_down_to_the_rate():
    t = FakeTime()
    state = ThrottleState()
    state.values[0] = 0.0
    throttler = Throttler(1000.0, 100, state=state, nanoseconds=t.now, sleep=t.sleep)
    throttler.maybe_throttle(500)  # within the first interval: no decision yet
    assert t.slept == []
    t.ns = 200_000_000  # 200 ms later, 1000 bytes seen = 5000 B/s
    throttler.maybe_throttle(500)
    assert t.slept == [pytest.approx(0.8)]  # 1000 B at 1000 B/s needs 1 s; 0.2 s already passed
    t.ns += 200_000_000
    throttler.maybe_throttle(100)  # 500 B/s: under the rate, no sleep
    assert len(t.slept) == 1


def test_throttle_state_is_shared_between_throttlers():
    t = FakeTime()
    state = ThrottleState()
    state.values[0] = 0.0
    a = Throttler(1000.0, 100, state=state, nanoseconds=t.now, sleep=t.sleep)
    b = Throttler(1000.0, 100, state=state, nanoseconds=t.now, sleep=t.sleep)
    a.maybe_throttle(300)
    t.ns = 150_000_000
    b.maybe_throttle(300)  # 600 B over 150 ms, counted across both
    assert t.slept == [pytest.approx(0.45)]
    state.set_rate(1e300)
    t.ns += 200_000_000
    a.maybe_throttle(10**9)
    assert len(t.slept) == 1


def test_a_pause_holds_no_lock_and_the_other_workers_wait_out_its_end():
    """The throttler that closes an interval over budget pauses with the lock free; another
    throttler that comes before the pause ends waits for the rest of it, as Kafka's other
    CleanerThreads wait on its lock."""
    t = FakeTime()
    state = ThrottleState()
    state.values[0] = 0.0
    pauses: list[tuple[float, bool]] = []

    def pause_without_time_passing(secs: float) -> None:
        free = state.lock.acquire(False)
        if free:
            state.lock.release()
        pauses.append((secs, free))

    a = Throttler(1000.0, 100, state=state, nanoseconds=t.now, sleep=pause_without_time_passing)
    b = Throttler(1000.0, 100, state=state, nanoseconds=t.now, sleep=t.sleep)
    t.ns = 200_000_000
    a.maybe_throttle(1000)  # 5000 B/s: a pauses 0.8 s, until 1.0 s
    assert pauses == [(pytest.approx(0.8), True)]
    t.ns = 500_000_000
    b.maybe_throttle(10)  # within a's pause: b waits for its end
    assert t.slept == [pytest.approx(0.5)] and b.total_sleep_ms == 0
    t.ns += 200_000_000
    b.maybe_throttle(10)  # the new period began at 1.0 s: 20 B over 0.2 s, under the rate
    assert len(t.slept) == 1


def _pause_forever(state: ThrottleState) -> None:
    Throttler(1.0, 1, state=state).maybe_throttle(10**9)  # 10^9 bytes at 1 B/s: a pause of years


def test_a_worker_killed_in_its_pause_leaves_the_shared_lock_free():
    """A worker process SIGKILLed while it pauses: its replacement, the other workers and the
    broker's rate changes take the lock at once (it was held across the sleep, for good)."""
    import multiprocessing
    import os
    import signal
    import time

    ctx = multiprocessing.get_context("spawn")
    state = ThrottleState(ctx, 1.0)
    worker = ctx.Process(target=_pause_forever, args=(state,))
    worker.start()
    try:
        deadline = time.monotonic() + 60
        while state.values[0] <= time.monotonic_ns() and time.monotonic() < deadline:
            time.sleep(0.01)  # polling for the worker's pause, bounded by the deadline
        assert state.values[0] > time.monotonic_ns(), "the worker never paused"
        os.kill(worker.pid, signal.SIGKILL)
        worker.join(10)
        assert _acquire_within(state, 5)
        state.lock.release()
        state.set_rate(2000.0)
        assert state.values[2] == 2000.0
    finally:
        if worker.is_alive():
            worker.kill()


def _acquire_within(state: ThrottleState, seconds: float) -> bool:
    import time

    deadline = time.monotonic() + seconds
    while not state.lock.acquire(False):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)  # polling the lock, bounded by the deadline
    return True


def _hold_the_lock_forever(state: ThrottleState, held) -> None:  # noqa: ANN001 - a multiprocessing Event
    import time

    state.lock.acquire()  # as a worker in maybe_throttle's accounting
    held.set()
    time.sleep(3600)


def _throttle_once(state: ThrottleState) -> None:
    Throttler(state.values[2], 300, state=state).maybe_throttle(10)  # takes the lock twice


def test_a_worker_killed_holding_the_shared_lock_frees_it():
    """A worker process SIGKILLed in the instructions it holds the lock for (with a semaphore,
    the killed worker's replacement, whose Throttler sets the rate as it starts, hung for good):
    the kernel frees the lock with the process. Until then it excludes the other processes."""
    import multiprocessing
    import os
    import signal

    ctx = multiprocessing.get_context("forkserver")  # as the cleaner's pool
    state = ThrottleState(ctx, 1e12)
    held = ctx.Event()
    holder = ctx.Process(target=_hold_the_lock_forever, args=(state, held))
    holder.start()
    replacement = None
    try:
        assert held.wait(60), "the holder never took the lock"
        assert not state.lock.acquire(False)  # held by the other process: excluded
        os.kill(holder.pid, signal.SIGKILL)
        holder.join(10)
        replacement = ctx.Process(target=_throttle_once, args=(state,))
        replacement.start()
        replacement.join(30)
        assert replacement.exitcode == 0, "a new worker could not take the lock its dead predecessor held"
        assert _acquire_within(state, 5)
        state.lock.release()
    finally:
        for process in (holder, replacement):
            if process is not None and process.is_alive():
                process.kill()


def test_the_shared_lock_excludes_threads_of_one_process_and_travels_only_with_a_process_start():
    import multiprocessing
    import pickle

    state = ThrottleState(multiprocessing.get_context("forkserver"), 1.0)
    assert state.lock.acquire()
    assert not state.lock.acquire(False)  # record locks alone would let the same process in
    state.lock.release()
    with pytest.raises(RuntimeError, match="inheritance"):
        pickle.dumps(state.lock)


def test_unlimited_by_default():
    assert Throttler(DOUBLE_MAX).unlimited


def test_cleaner_config_defaults_are_kafkas():
    c = CleanerConfig()
    assert (c.num_threads, c.dedupe_buffer_size, c.dedupe_buffer_load_factor, c.io_buffer_size,
            c.max_io_bytes_per_second, c.backoff_ms, c.enable_cleaner) == (
        1, 134_217_728, 0.9, 524_288, DOUBLE_MAX, 15_000, True)
    assert c.map_memory_per_thread == 134_217_728
    assert c.io_buffer_per_thread == 262_144


def test_cleaner_config_from_kafka_keys_and_per_thread_shares():
    c = CleanerConfig.from_props({"log.cleaner.threads": "4", "log.cleaner.dedupe.buffer.size": str(2**34),
                                  "log.cleaner.io.buffer.size": "1048576", "log.cleaner.backoff.ms": "100",
                                  "log.cleaner.io.max.bytes.per.second": "1e6", "unrelated.key": "x"})
    assert c.num_threads == 4 and c.backoff_ms == 100 and c.max_io_bytes_per_second == 1e6
    assert c.map_memory_per_thread == 2**31 - 1  # capped at 2 GiB
    assert c.io_buffer_per_thread == 131_072
    with pytest.raises(InvalidConfigurationError, match="log.cleaner.threads"):
        CleanerConfig.from_props({"log.cleaner.threads": "many"})
    with pytest.raises(InvalidConfigurationError):
        CleanerConfig.from_props({"log.cleaner.io.buffer.load.factor": "1.5"})


def test_cleaner_config_from_the_service_config_attributes():
    class Broker:
        log_cleaner_threads = 2
        log_cleaner_backoff_ms = 5
        message_max_bytes = 2_000_000

    c = CleanerConfig.from_broker_config(Broker())
    assert (c.num_threads, c.backoff_ms, c.max_message_size) == (2, 5, 2_000_000)
