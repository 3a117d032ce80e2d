"""CoordinatorTimer: deadlines on the broker's clock, fired by polling or by the clock moving."""
from __future__ import annotations

import asyncio

from asyncbroker.adjustable_clock import AdjustableClock
from asyncbroker.coordinator_timer import CoordinatorTimer
from storage.clock import MockClock


async def test_deadlines_fire_when_the_clock_reaches_them_in_order() -> None:
    clock = MockClock()
    timer = CoordinatorTimer(clock)
    fired: list[str] = []
    timer.schedule("b", 200, lambda: fired.append("b"))
    timer.schedule("a", 100, lambda: fired.append("a"))
    clock.advance(99)
    assert timer.poll() == 0 and fired == []
    clock.advance(150)
    assert timer.poll() == 2 and fired == ["a", "b"]
    timer.close()


async def test_cancel_and_reschedule_replace_the_earlier_deadline() -> None:
    clock = MockClock()
    timer = CoordinatorTimer(clock)
    fired: list[str] = []
    timer.schedule("k", 100, lambda: fired.append("first"))
    timer.schedule("k", 300, lambda: fired.append("second"))
    timer.schedule("gone", 50, lambda: fired.append("gone"))
    timer.cancel("gone")
    clock.advance(200)
    assert timer.poll() == 0 and "k" in timer
    clock.advance(100)
    timer.poll()
    assert fired == ["second"] and "k" not in timer
    timer.close()


async def test_advancing_the_brokers_clock_fires_without_waiting() -> None:
    clock = AdjustableClock(MockClock())
    timer = CoordinatorTimer(clock)
    fired = asyncio.Event()
    timer.schedule("session", 60_000, fired.set)
    await asyncio.sleep(0)
    assert not fired.is_set()
    clock.advance(60_000)  # the timer's task is woken by the clock, not by a minute passing
    await asyncio.wait_for(fired.wait(), 5)
    timer.close()


async def test_a_failing_callback_does_not_stop_the_others(caplog) -> None:  # type: ignore[no-untyped-def]
    clock = MockClock()
    timer = CoordinatorTimer(clock)
    fired: list[str] = []

    def boom() -> None:
        raise RuntimeError("boom")

    timer.schedule("bad", 10, boom)
    timer.schedule("good", 20, lambda: fired.append("good"))
    clock.advance(30)
    assert timer.poll() == 2 and fired == ["good"]
    assert "Timer callback for 'bad' failed" in caplog.text
    timer.close()
