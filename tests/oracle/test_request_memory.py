"""queued.max.request.bytes against Kafka 4.4: the bound on what both brokers accept at startup.

Kafka validates it with the rest of KafkaConfig (StorageTool's format already refuses): a pool
smaller than socket.request.max.bytes could never grant the largest request. 0 and -1 mean no
bound. asyncbroker must refuse and accept the same values, with Kafka's words. (How the pool
holds requests back is tested on asyncbroker alone, tests/integration/test_queued_max_request_bytes.py:
Kafka reads one request per connection at a time, so the two fill their pools differently.)
"""
from __future__ import annotations

from pathlib import Path

import pytest

from asyncbroker.testing import BrokerProcess
from asyncbroker.testing.broker import BrokerStartError
from jvm.kafka_jvm import KafkaServer

pytestmark = pytest.mark.timeout(300)

REFUSED = "requirement failed: queued.max.request.bytes must be larger or equal to socket.request.max.bytes"


def kafka_verdict(settings: dict[str, str]) -> str:
    """'accepted', or Kafka's refusal text, from StorageTool's format of these settings."""
    server = KafkaServer(settings)
    try:
        server.port, server.controller_port = 19_000, 19_001  # never bound: format only
        server.format()
        return "accepted"
    except RuntimeError as exc:
        return REFUSED if REFUSED in str(exc) else f"refused otherwise: {str(exc)[:300]}"
    finally:
        server.stop()


def ours_verdict(settings: dict[str, str], log_dir: Path) -> str:
    try:
        with BrokerProcess([f"{k}={v}" for k, v in settings.items()], log_dir=log_dir):
            return "accepted"
    except BrokerStartError as exc:
        return REFUSED if REFUSED in str(exc) else f"refused otherwise: {str(exc)[:300]}"


@pytest.mark.parametrize("settings", [
    {"queued.max.request.bytes": "1000"},
    {"queued.max.request.bytes": "104857599"},  # one below socket.request.max.bytes' default
    {"queued.max.request.bytes": "104857600"},
    {"queued.max.request.bytes": "0"},
    {"queued.max.request.bytes": "-1"},
    {"queued.max.request.bytes": "2000000", "socket.request.max.bytes": "2000000"},
    {"queued.max.request.bytes": "1999999", "socket.request.max.bytes": "2000000"},
], ids=lambda s: ",".join(f"{k.split('.')[0]}={v}" for k, v in s.items()))
def test_the_same_values_start_both_brokers(settings: dict[str, str], tmp_path: Path) -> None:
    assert ours_verdict(settings, tmp_path) == kafka_verdict(settings)
