"""The request channel on a real event loop: a quiet turn starts a connection at once; a busy one
starts a bounded batch per turn, the rest in the order they arrived, later arrivals behind them."""

from __future__ import annotations

import asyncio

from asyncbroker.request_channel import RequestChannel


async def test_a_quiet_turn_starts_the_connection_at_once() -> None:
    channel = RequestChannel(asyncio.get_running_loop(), max_starts_per_turn=4)
    started: list[int] = []
    channel.submit(lambda: started.append(1))
    assert started == [1]  # no turn of the loop in between: a quiet broker adds no wait
    assert channel.waiting == 0


async def test_a_busy_turn_starts_a_batch_and_queues_the_rest_in_arrival_order() -> None:
    channel = RequestChannel(asyncio.get_running_loop(), max_starts_per_turn=3)
    started: list[int] = []
    for i in range(8):
        channel.submit(lambda i=i: started.append(i))
    assert started == [0, 1, 2] and channel.waiting == 5

    await asyncio.sleep(0)  # one turn: the next batch
    assert started == [0, 1, 2, 3, 4, 5] and channel.waiting == 2

    # Arrivals in a later turn go behind the connections already waiting.
    channel.submit(lambda: started.append(100))
    channel.submit(lambda: started.append(101))
    assert started == [0, 1, 2, 3, 4, 5] and channel.waiting == 4

    await asyncio.sleep(0)
    assert started == [0, 1, 2, 3, 4, 5, 6, 7, 100]
    await asyncio.sleep(0)
    assert started == [0, 1, 2, 3, 4, 5, 6, 7, 100, 101] and channel.waiting == 0


async def test_once_the_queue_drains_the_next_turn_starts_at_once_again() -> None:
    channel = RequestChannel(asyncio.get_running_loop(), max_starts_per_turn=2)
    started: list[int] = []
    for i in range(3):
        channel.submit(lambda i=i: started.append(i))
    for _ in range(3):
        await asyncio.sleep(0)
    assert started == [0, 1, 2] and channel.waiting == 0
    channel.submit(lambda: started.append(3))
    assert started == [0, 1, 2, 3]
