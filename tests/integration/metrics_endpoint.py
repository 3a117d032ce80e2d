"""A broker that serves its Prometheus endpoint (`serve --metrics-port`), and a scrape of it."""
from __future__ import annotations

import urllib.error
import urllib.request

from asyncbroker.testing import BrokerProcess
from asyncbroker.testing.broker import free_port_block
from wait_for import wait_until


class MetricsBroker(BrokerProcess):
    """A BrokerProcess that also serves /metrics."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.metrics_port = free_port_block(1)

    def command(self) -> list[str]:
        return super().command() + ["--metrics-port", str(self.metrics_port)]


def scrape(port: int) -> dict[str, float]:
    def fetch() -> str | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=15) as response:
                return response.read().decode()
        except urllib.error.URLError:
            return None  # the endpoint starts just after the Kafka listener

    text = wait_until(fetch, timeout=15, message="no metrics endpoint")
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    return samples
