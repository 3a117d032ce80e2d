"""ConnectionQuotas: how many connections the broker holds, in all and per client address.

As Kafka's ConnectionQuotas on one node: `max.connections` bounds every listener together,
and when it is reached the acceptors stop accepting until a connection closes (clients wait
in the listen backlog; nobody is dropped). `max.connections.per.ip` (with its overrides,
`max.connections.per.ip.overrides=host:count,...`) bounds one address, and a connection over
it is closed at once, so one client cannot take every slot.
"""
from __future__ import annotations

import asyncio
import collections
import logging

__all__ = ["ConnectionQuotas"]

log = logging.getLogger(__name__)


class ConnectionQuotas:
    def __init__(self, max_connections: int, max_per_ip: int, per_ip_overrides: dict[str, int]) -> None:
        self.max_connections = max_connections
        self.max_per_ip = max_per_ip
        self.per_ip_overrides = per_ip_overrides
        self.total = 0
        self._per_ip: collections.Counter[str] = collections.Counter()
        self._slot_freed = asyncio.Event()

    def reconfigure(self, max_connections: int, max_per_ip: int, per_ip_overrides: dict[str, int]) -> None:
        """New limits (a dynamic config change): they bound the connections accepted from now
        on; the ones already open stay, as on Kafka."""
        self.max_connections, self.max_per_ip, self.per_ip_overrides = max_connections, max_per_ip, per_ip_overrides
        self._slot_freed.set()  # a raised limit lets a waiting acceptor go on

    def count(self, ip: str) -> int:
        return self._per_ip[ip]

    async def wait_for_slot(self) -> None:
        """Return once the broker holds fewer than max.connections (the acceptor then accepts)."""
        while self.total >= self.max_connections:
            self._slot_freed.clear()
            await self._slot_freed.wait()

    def inc(self, ip: str) -> bool:
        """Count a connection just accepted from `ip`; False (not counted) when `ip` already
        holds its maximum, and the caller closes the connection."""
        limit = self.per_ip_overrides.get(ip, self.max_per_ip)
        if self._per_ip[ip] >= limit:
            log.info("Rejected connection from /%s, address already has the configured maximum of %d connections.",
                     ip, limit)
            return False
        self._per_ip[ip] += 1
        self.total += 1
        return True

    def dec(self, ip: str) -> None:
        self._per_ip[ip] -= 1
        if self._per_ip[ip] <= 0:
            del self._per_ip[ip]
        self.total -= 1
        self._slot_freed.set()
