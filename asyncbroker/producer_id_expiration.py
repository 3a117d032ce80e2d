"""producer.id.expiration.ms: forget producers that have been idle too long.

Kafka's LogManager runs this check every producer.id.expiration.check.interval.ms
over every partition: a producer id whose last batch is older than
producer.id.expiration.ms (and that has no open transaction) is dropped from
the partition's producer state, so the state of short-lived producers does
not grow forever. A producer that comes back afterwards is simply unknown
again and may start at any sequence.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from storage.clock import Clock
from storage.log_manager import LogManager

log = logging.getLogger(__name__)


class ProducerIdExpiration:
    """The periodic producer-id expiration job of one broker."""

    def __init__(self, *, log_manager: LogManager, clock: Clock,
                 run_blocking: Callable[..., Awaitable[Any]],
                 expiration_ms: int, interval_ms: int) -> None:
        self.log_manager = log_manager
        self.clock = clock
        self.run_blocking = run_blocking
        self.expiration_ms = expiration_ms  # producer.id.expiration.ms
        self.interval_ms = interval_ms  # producer.id.expiration.check.interval.ms
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass

    async def run_once(self) -> int:
        """Expire idle producers in every partition now; returns how many were removed."""
        removed: int = await self.run_blocking(self._expire_all)
        return removed

    def _expire_all(self) -> int:
        now = self.clock.milliseconds()
        removed = 0
        for partition_log in self.log_manager.all_logs():
            if not partition_log.is_closed:
                removed += partition_log.remove_expired_producers(now, self.expiration_ms)
        return removed

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval_ms / 1000)
            try:
                removed = await self.run_once()
                if removed:
                    log.info("Removed %d expired producer id(s)", removed)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - the schedule must survive a failed run
                log.exception("Producer id expiration failed")
