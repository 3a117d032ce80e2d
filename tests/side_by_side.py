"""Running one scenario on Kafka 4.4 and on asyncbroker at once: most of a scenario's time is
waiting on its broker (heartbeats, timeouts, long polls), so the two halves overlap."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

K = TypeVar("K")
A = TypeVar("A")


def side_by_side(on_kafka: Callable[[], K], on_asyncbroker: Callable[[], A]) -> tuple[K, A]:
    """Both results; asyncbroker's half runs on a thread of its own. Kafka's failure is raised
    first (its run passing proves the scenario right), and neither half is left running when
    this returns or raises."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="asyncbroker-run") as pool:
        ours = pool.submit(on_asyncbroker)
        kafka = on_kafka()  # raising, it still leaves through the pool's shutdown, which waits for ours
        return kafka, ours.result()
