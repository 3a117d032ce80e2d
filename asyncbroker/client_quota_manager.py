"""ClientQuotaManager: measures each client's rate against its quota and says how long to
throttle it, as Kafka's ClientQuotaManager does for produce bytes, fetch bytes and request time.

A rate is kept per sensor (the entity its quota belongs to, see asyncbroker.client_quotas) in
`quota.window.num` samples of `quota.window.size.seconds`: the sum of the live samples over the
time they span, counted as at least all but one full window (so a new client's first burst is
spread over the whole window, as Kafka's Rate does). A value is recorded first, then checked:
when the rate is above the quota, the throttle time is how long the client must stay silent
for the rate to come back to the quota, (rate - quota) / quota x window. Kafka sends that time
in the answer's throttle_time_ms and mutes the connection for as long (KIP-219); so does
asyncbroker.connection.
"""
from __future__ import annotations

import collections

from asyncbroker.client_quotas import (
    CONSUMER_BYTE_RATE,
    CONTROLLER_MUTATION_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    ClientQuotas,
)

__all__ = ["ClientQuotaManager", "ControllerMutationQuotaManager", "QuotaManagers", "NANOS_TO_PERCENTAGE",
           "SampledRate"]

# Request time is counted as a percentage of one thread: nanoseconds x 100 / 1e9 per second.
NANOS_TO_PERCENTAGE = 100.0 / 1e9


class SampledRate:
    """Kafka's sampled Rate: (window start ms, total) samples, the oldest dropped when too old."""

    __slots__ = ("samples",)

    def __init__(self) -> None:
        self.samples: collections.deque[list[float]] = collections.deque()

    def record(self, value: float, now_ms: float, window_ms: float, num_samples: int) -> None:
        samples = self.samples
        if not samples or now_ms >= samples[-1][0] + window_ms:
            samples.append([now_ms, 0.0])
            while len(samples) > num_samples:
                samples.popleft()
        samples[-1][1] += value

    def measure(self, now_ms: float, window_ms: float, num_samples: int) -> tuple[float, float]:
        """(rate per second, the window it was measured over in ms)."""
        samples = self.samples
        # Samples older than the whole window count no more (Kafka's purgeObsoleteSamples).
        while samples and now_ms - samples[0][0] >= num_samples * window_ms:
            samples.popleft()
        if not samples:
            return 0.0, (num_samples - 1) * window_ms
        elapsed = now_ms - samples[0][0]
        full_windows = int(elapsed // window_ms)
        if full_windows < num_samples - 1:
            elapsed += (num_samples - 1 - full_windows) * window_ms
        total = sum(s[1] for s in samples)
        return total / (elapsed / 1000.0), elapsed


class ClientQuotaManager:
    """One quota type (a key of ClientQuotas): rates per sensor, throttle times."""

    def __init__(self, key: str, quotas: ClientQuotas, window_seconds: int, num_samples: int,
                 max_throttle_ms: int | None = None) -> None:
        self.key = key
        self.quotas = quotas
        self.window_ms = window_seconds * 1000.0
        self.num_samples = num_samples
        # The request quota caps its throttle at one window; the byte rates do not.
        self.max_throttle_ms = max_throttle_ms
        self._rates: dict[tuple[str, str], SampledRate] = {}
        self._resolved: dict[tuple[str, str], tuple[float, tuple[str, str]] | None] = {}
        self._generation = -1

    def _quota(self, user: str, client_id: str) -> tuple[float, tuple[str, str]] | None:
        if self._generation != self.quotas.generation:
            # A quota changed: look every client up again (rates are kept, as Kafka keeps its sensors).
            self._resolved.clear()
            self._generation = self.quotas.generation
        who = (user, client_id)
        if who not in self._resolved:
            if len(self._resolved) > 100_000:
                self._resolved.clear()  # bounded: the lookups are cheap to redo
            self._resolved[who] = self.quotas.resolve(self.key, user, client_id)
        return self._resolved[who]

    def record_and_get_throttle_time_ms(self, user: str, client_id: str, value: float, now_ms: float) -> int:
        """Record `value` for the client; the throttle time its rate now calls for (0: none, or
        no quota applies and nothing is recorded)."""
        found = self._quota(user, client_id)
        if found is None:
            return 0
        bound, sensor = found
        rate = self._rates.get(sensor)
        if rate is None:
            rate = self._rates[sensor] = SampledRate()
        rate.record(value, now_ms, self.window_ms, self.num_samples)
        measured, window = rate.measure(now_ms, self.window_ms, self.num_samples)
        if measured <= bound:
            return 0
        throttle = round((measured - bound) / bound * window)
        if self.max_throttle_ms is not None:
            throttle = min(throttle, self.max_throttle_ms)
        return int(throttle)

    def unrecord(self, user: str, client_id: str, value: float, now_ms: float) -> None:
        """Take back a value (a throttled fetch answers empty: its bytes were never sent)."""
        found = self._quota(user, client_id)
        if found is not None and found[1] in self._rates:
            self._rates[found[1]].record(-value, now_ms, self.window_ms, self.num_samples)

    def max_value_in_quota_window(self, user: str, client_id: str) -> float | None:
        """The most one answer may carry without being throttled for sure (Fetch bounds its
        max_bytes by it); None without a quota."""
        found = self._quota(user, client_id)
        if found is None:
            return None
        return found[0] * (self.num_samples - 1) * self.window_ms / 1000.0


class ControllerMutationQuotaManager:
    """controller_mutation_rate (KIP-599): partitions created or deleted per second, as Kafka
    counts them with a token bucket per sensor. The bucket holds at most quota x (samples - 1)
    x window tokens and starts full; each mutation takes its partition count out. CreateTopics
    v6+, CreatePartitions v3+ and DeleteTopics v5+ are strict: a topic is refused
    (THROTTLING_QUOTA_EXCEEDED) while the bucket is below zero, and one that fits while it is
    not may overdraw it. Older versions are permissive: recorded, then throttled."""

    def __init__(self, quotas: ClientQuotas, window_seconds: int, num_samples: int) -> None:
        self.quotas = quotas
        self.burst_seconds = (num_samples - 1) * window_seconds
        self._buckets: dict[tuple[str, str], list[float]] = {}  # sensor -> [tokens, last refill ms]

    def _bucket(self, user: str, client_id: str, now_ms: float) -> tuple[float, list[float]] | None:
        found = self.quotas.resolve(CONTROLLER_MUTATION_RATE, user, client_id)
        if found is None:
            return None
        bound, sensor = found
        burst = bound * self.burst_seconds
        bucket = self._buckets.get(sensor)
        if bucket is None:
            bucket = self._buckets[sensor] = [burst, now_ms]
        bucket[0] = min(burst, bucket[0] + bound * (now_ms - bucket[1]) / 1000)
        bucket[1] = now_ms
        return bound, bucket

    def applies(self, user: str, client_id: str) -> bool:
        return self.quotas.resolve(CONTROLLER_MUTATION_RATE, user, client_id) is not None

    def try_record(self, user: str, client_id: str, permits: int, now_ms: float, *, strict: bool) -> int:
        """Take `permits` out of the client's bucket; with `strict`, refuse while it is below zero,
        returning the throttle time (0: taken, or no quota applies)."""
        found = self._bucket(user, client_id, now_ms)
        if found is None:
            return 0
        bound, bucket = found
        if strict and bucket[0] < 0:
            return max(1, round(-bucket[0] / bound * 1000))
        bucket[0] -= permits
        return 0

    def throttle_time_ms(self, user: str, client_id: str, now_ms: float) -> int:
        """How long the client must wait for its bucket to come back to zero."""
        found = self._bucket(user, client_id, now_ms)
        if found is None or found[1][0] >= 0:
            return 0
        return round(-found[1][0] / found[0] * 1000)


class QuotaManagers:
    """Kafka's QuotaManagers: produce bytes, fetch bytes, request time, controller mutations."""

    def __init__(self, quotas: ClientQuotas, window_seconds: int, num_samples: int) -> None:
        self.quotas = quotas
        self.produce = ClientQuotaManager(PRODUCER_BYTE_RATE, quotas, window_seconds, num_samples)
        self.fetch = ClientQuotaManager(CONSUMER_BYTE_RATE, quotas, window_seconds, num_samples)
        self.request = ClientQuotaManager(REQUEST_PERCENTAGE, quotas, window_seconds, num_samples,
                                          max_throttle_ms=window_seconds * 1000)
        self.controller_mutation = ControllerMutationQuotaManager(quotas, window_seconds, num_samples)
