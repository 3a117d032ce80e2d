"""MemoryPool (queued.max.request.bytes): Kafka's non-strict SimpleMemoryPool, and the order in
which connections that ran out are woken."""
from __future__ import annotations

import asyncio

import pytest

from asyncbroker.memory_pool import MemoryPool


def test_grants_while_any_is_left_even_past_the_end() -> None:
    pool = MemoryPool(100)
    assert pool.try_allocate(60) and pool.available == 40
    assert pool.try_allocate(70)  # larger than what is left: granted, as Kafka's non-strict pool does
    assert pool.available == -30 and pool.used == 130 and pool.out_of_memory
    assert not pool.try_allocate(1)
    pool.release(30)
    assert pool.out_of_memory  # exactly 0 left is none
    pool.release(1)
    assert pool.try_allocate(1000)


def test_a_request_read_ahead_never_spends_the_last_bytes() -> None:
    pool = MemoryPool(100)
    assert pool.try_allocate(60)
    assert not pool.try_allocate(40, read_ahead=True)  # would leave nothing
    assert pool.try_allocate(39, read_ahead=True) and pool.available == 1
    assert pool.try_allocate(50) and pool.available == -49  # a connection's next request: non-strict


def test_a_waiter_tries_again_at_every_release() -> None:
    """A request read ahead may need more than one release frees: its connection tries again
    at each release, not only when the pool stops being empty."""
    async def scenario() -> list[int]:
        pool = MemoryPool(100)
        assert pool.try_allocate(90)
        tries: list[int] = []

        def wake() -> None:
            tries.append(pool.available)
            if not pool.try_allocate(50, read_ahead=True):
                pool.wait(wake)

        assert not pool.try_allocate(50, read_ahead=True)
        pool.wait(wake)
        await asyncio.sleep(0)
        assert tries == []  # nothing released yet: no spinning
        pool.release(20)  # 30 left: not enough
        await asyncio.sleep(0)
        pool.release(30)  # 60 left
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return tries

    assert asyncio.run(scenario()) == [30, 60]


def test_no_pool_without_a_size() -> None:
    with pytest.raises(ValueError):
        MemoryPool(0)


def test_waiting_connections_wake_in_order_once_memory_is_back() -> None:
    async def scenario() -> list[str]:
        pool = MemoryPool(100)
        woken: list[str] = []
        assert pool.try_allocate(100)

        def waiter(name: str, take: int) -> None:
            def wake() -> None:
                woken.append(name)
                if not pool.try_allocate(take):
                    pool.wait(callbacks[name])

            callbacks[name] = wake
            pool.wait(wake)

        callbacks: dict[str, object] = {}
        waiter("first", 80)
        waiter("second", 80)
        waiter("third", 10)
        pool.release(50)
        assert woken == []  # woken from the loop, not inside release
        await asyncio.sleep(0)
        # first takes 80 of 50 (non-strict): out again, so second and third keep waiting, in order.
        assert woken == ["first"]
        pool.release(80)
        await asyncio.sleep(0)
        assert woken == ["first", "second"]  # 50 left, second took 80: out again
        pool.release(100)
        await asyncio.sleep(0)
        return woken

    assert asyncio.run(scenario()) == ["first", "second", "third"]


def test_a_closed_connection_stops_waiting() -> None:
    async def scenario() -> list[str]:
        pool = MemoryPool(10)
        woken: list[str] = []
        assert pool.try_allocate(10)
        gone = lambda: woken.append("gone")  # noqa: E731
        pool.wait(gone)
        pool.wait(lambda: woken.append("stays"))
        pool.cancel_wait(gone)
        pool.release(10)
        await asyncio.sleep(0)
        return woken

    assert asyncio.run(scenario()) == ["stays"]


def test_depleted_time_counts_only_while_none_is_left(monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncbroker.memory_pool as module

    now = [0]
    monkeypatch.setattr(module.time, "monotonic_ns", lambda: now[0])
    pool = MemoryPool(10)
    now[0] = 5_000_000_000
    assert pool.try_allocate(10) and pool.depleted_seconds == 0
    now[0] = 7_000_000_000
    assert pool.depleted_seconds == 2  # still depleted: the time runs
    pool.release(4)  # memory again (no waiter: nothing to wake)
    now[0] = 9_000_000_000
    assert pool.depleted_seconds == 2  # stopped
    assert pool.try_allocate(4)  # spent again, from 9 s
    now[0] = 10_000_000_000
    assert pool.depleted_seconds == 3
