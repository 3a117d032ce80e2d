"""ConnectionQuotas: how many connections the broker holds, in all and per client address.

As Kafka's ConnectionQuotas on one node: `max.connections` bounds every listener together,
and when it is reached the acceptors stop accepting until a connection closes (clients wait
in the listen backlog; nobody is dropped). `max.connections.per.ip` (with its overrides,
`max.connections.per.ip.overrides=host:count,...`) bounds one address, and a connection over
it is closed at once, so one client cannot take every slot. A `connection_creation_rate`
client quota on an address (`kafka-configs.sh --entity-type ips`, or the IP default) bounds how
fast it may connect: a connection over the rate is not served, and is closed when the
throttle time Kafka's rate arithmetic gives ends (KIP-612), so a client cannot spin on reconnects.
`max.connection.creation.rate` bounds how fast connections are accepted: over it the acceptor
waits out the throttle time, then serves the connection it holds (KIP-612 again).

Both broker-wide limits hold twice, as in Kafka: over every listener together, and over each
listener alone, where `listener.name.<l>.max.connections` and
`listener.name.<l>.max.connection.creation.rate` take the broker-wide value's place (set
statically or at runtime, on this broker or cluster-wide). With more than one listener, the inter-broker
one (`protected_listener`) is held to its own limits only, so clients on the others cannot lock
it out.
"""
from __future__ import annotations

import asyncio
import collections
import logging
import time
from typing import TYPE_CHECKING

from asyncbroker.client_quota_manager import SampledRate

if TYPE_CHECKING:
    from asyncbroker.client_quotas import ClientQuotas

__all__ = ["ConnectionQuotas"]

log = logging.getLogger(__name__)


class ConnectionQuotas:
    def __init__(self, max_connections: int, max_per_ip: int, per_ip_overrides: dict[str, int],
                 max_creation_rate: int, listener_limits: dict[str, dict[str, int]],
                 protected_listener: str | None) -> None:
        self.max_connections = max_connections
        self.listener_limits = listener_limits  # listener -> its own max.connections / creation rate
        self.max_per_ip = max_per_ip
        self.per_ip_overrides = per_ip_overrides
        self.max_creation_rate = max_creation_rate
        self.protected_listener = protected_listener
        self.total = 0
        self._per_listener: collections.Counter[str] = collections.Counter()
        self._creation_rate = SampledRate()  # every listener's but the protected one's
        self._listener_rates: dict[str, SampledRate] = {}
        self._per_ip: collections.Counter[str] = collections.Counter()
        self._slot_freed = asyncio.Event()
        # connection_creation_rate: the client quotas, and the rate of each address that has one.
        self.client_quotas: ClientQuotas | None = None
        self.window_seconds, self.num_samples = 1, 11
        self._ip_rates: dict[str, SampledRate] = {}

    def reconfigure(self, max_connections: int, max_per_ip: int, per_ip_overrides: dict[str, int],
                    max_creation_rate: int, listener_limits: dict[str, dict[str, int]]) -> None:
        """New limits (a dynamic config change): they bound the connections accepted from now
        on; the ones already open stay, as on Kafka."""
        self.max_connections, self.max_per_ip, self.per_ip_overrides = max_connections, max_per_ip, per_ip_overrides
        self.max_creation_rate = max_creation_rate
        self.listener_limits = listener_limits
        self._slot_freed.set()  # a raised limit lets a waiting acceptor go on

    def count(self, ip: str) -> int:
        return self._per_ip[ip]

    def _listener_limit(self, listener: str, key: str, broker_wide: int) -> int:
        own = self.listener_limits.get(listener)
        return own.get(key, broker_wide) if own else broker_wide

    def _slot_available(self, listener: str) -> bool:
        if self._per_listener[listener] >= self._listener_limit(listener, "max.connections", self.max_connections):
            return False
        return listener == self.protected_listener or self.total < self.max_connections

    async def wait_for_slot(self, listener: str) -> None:
        """Return once `listener` may take one more connection under max.connections."""
        while not self._slot_available(listener):
            self._slot_freed.clear()
            await self._slot_freed.wait()

    def creation_throttle_ms(self, listener: str) -> int:
        """Record a connection just accepted on `listener` against max.connection.creation.rate,
        the listener's and (but on the protected listener) every listener's; how long the
        acceptor waits before serving it, the longer of the two."""
        now_ms = time.monotonic() * 1000
        rate = self._listener_rates.get(listener)
        if rate is None:
            rate = self._listener_rates[listener] = SampledRate()
        throttle = self._record(rate, now_ms, self._listener_limit(listener, "max.connection.creation.rate",
                                                                   self.max_creation_rate))
        if listener != self.protected_listener:
            throttle = max(throttle, self._record(self._creation_rate, now_ms, self.max_creation_rate))
        if throttle:
            log.debug("Quota violated for the connection creation rate on %s. Delay time: %d ms", listener, throttle)
        return throttle

    def unrecord_creation(self, listener: str) -> None:
        """Take back a connection creation_throttle_ms counted: its address was over its own
        connection_creation_rate, and the connection is not served (as Kafka un-records it)."""
        now_ms, window_ms = time.monotonic() * 1000, self.window_seconds * 1000.0
        rates = [self._listener_rates[listener]] if listener in self._listener_rates else []
        if listener != self.protected_listener:
            rates.append(self._creation_rate)
        for rate in rates:
            rate.record(-1.0, now_ms, window_ms, self.num_samples)

    def _record(self, rate: SampledRate, now_ms: float, bound: int) -> int:
        """Count one connection in `rate`; Kafka's throttle time for it (0: within `bound`),
        capped at one quota window. A bound of 0 admits nothing: the longest wait."""
        window_ms = self.window_seconds * 1000.0
        rate.record(1.0, now_ms, window_ms, self.num_samples)
        measured, window = rate.measure(now_ms, window_ms, self.num_samples)
        if measured <= bound:
            return 0
        return int(window_ms) if bound == 0 else min(round((measured - bound) / bound * window), int(window_ms))

    def connection_throttle_ms(self, ip: str) -> int:
        """Record a new connection from `ip` against its connection_creation_rate quota; how long
        it must wait (0: serve it). The throttle is capped at one quota window, as Kafka's."""
        quotas = self.client_quotas
        bound = quotas.ip_connection_rate(ip) if quotas else None
        if bound is None:
            self._ip_rates.pop(ip, None)
            return 0
        window_ms = self.window_seconds * 1000.0
        rate = self._ip_rates.get(ip)
        if rate is None:
            rate = self._ip_rates[ip] = SampledRate()
        now_ms = time.monotonic() * 1000
        rate.record(1.0, now_ms, window_ms, self.num_samples)
        measured, window = rate.measure(now_ms, window_ms, self.num_samples)
        if measured <= bound:
            return 0
        throttle = min(round((measured - bound) / bound * window), int(window_ms))
        log.info("Throttling connection from /%s for %d ms: over its connection_creation_rate quota of %s/s",
                 ip, throttle, bound)
        return throttle

    def inc(self, listener: str, ip: str) -> bool:
        """Count a connection just accepted on `listener` from `ip`; False (not counted) when
        `ip` already holds its maximum, and the caller closes the connection."""
        limit = self.per_ip_overrides.get(ip, self.max_per_ip)
        if self._per_ip[ip] >= limit:
            log.info("Rejected connection from /%s, address already has the configured maximum of %d connections.",
                     ip, limit)
            return False
        self._per_ip[ip] += 1
        self._per_listener[listener] += 1
        self.total += 1
        return True

    def dec(self, listener: str, ip: str) -> None:
        self._per_ip[ip] -= 1
        if self._per_ip[ip] <= 0:
            del self._per_ip[ip]
        self._per_listener[listener] -= 1
        self.total -= 1
        self._slot_freed.set()
