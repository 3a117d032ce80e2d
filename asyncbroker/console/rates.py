"""Request rates and latencies, and messages per topic, over the last minute, from the broker's
metrics (asyncbroker.metrics: cumulative counters and per-API power-of-two histograms of
handling time). The console keeps the snapshots its pages took (no task of its own): a rate is
the difference between now and the oldest snapshot of the last WINDOW_S, divided by the time
between them; the first page compares with the snapshot taken when the console started."""

from __future__ import annotations

import collections
import time

import msgspec

from asyncbroker.metrics import METRICS, MetricsSnapshot

WINDOW_S = 60.0


class ApiRate(msgspec.Struct, frozen=True):
    api: str
    per_second: float
    mean_ms: float
    p50_ms: float  # upper bounds of power-of-two buckets
    p99_ms: float
    total: int  # since the broker started


class Rates(msgspec.Struct, frozen=True):
    interval_s: float
    apis: list[ApiRate]
    messages_per_second: dict[str, float]  # topic -> records appended per second
    bytes_in_per_second: float
    bytes_out_per_second: float


class RateWindow:
    def __init__(self) -> None:
        self._samples: collections.deque[tuple[float, MetricsSnapshot]] = collections.deque()
        self._samples.append((time.monotonic(), METRICS.snapshot()))

    def rates(self) -> Rates:
        now, current = time.monotonic(), METRICS.snapshot()
        while len(self._samples) > 1 and now - self._samples[1][0] >= WINDOW_S:
            self._samples.popleft()
        then, earlier = self._samples[0]
        self._samples.append((now, current))
        seconds = max(now - then, 1e-3)
        delta = current.since(earlier)
        apis = [ApiRate(name, n / seconds, delta.mean_ms(name), delta.quantile_ms(name, 0.5),
                        delta.quantile_ms(name, 0.99), current.requests.get(name, 0))
                for name, n in sorted(delta.requests.items(), key=lambda kv: (-kv[1], kv[0]))]
        return Rates(seconds, apis, {t: n / seconds for t, n in delta.messages_in.items()},
                     delta.bytes_in / seconds, delta.bytes_out / seconds)
