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
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from asyncbroker.broker import Broker

log = logging.getLogger(__name__)


class ProducerIdExpiration:
    """The periodic producer-id expiration job of one broker."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.expiration_ms: int = broker.config.producer_id_expiration_ms
        self.interval_ms: int = broker.config.producer_id_expiration_check_interval_ms
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
        return await self.broker.run_blocking(self._expire_all)

    def _expire_all(self) -> int:
        now = self.broker.clock.milliseconds()
        removed = 0
        for partition_log in self.broker.log_manager.all_logs():
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
