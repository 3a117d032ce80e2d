"""Differential scenarios: Produce, Fetch and ListOffsets on a fresh topic, each compared with Kafka 4.4."""

from __future__ import annotations

import pytest

from differential import BASE_TIMESTAMP, ScenarioRun, batch
from steps import create_topic, fetch, list_offsets, produce
from wire.records import CompressionType

pytestmark = pytest.mark.timeout(180)


def produce_then_fetch(codec: CompressionType, version: int):  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        create_topic(run, "t", partitions=2, record=False)
        produce(run, "t", {0: batch(5, compression=codec), 1: batch([(b"a", b"1"), (None, b"2")], compression=codec)},
                version=version)
        produce(run, "t", {0: batch(3, compression=codec, base_timestamp=BASE_TIMESTAMP + 100_000)}, version=version)
        fetch(run, "t", {0: 0, 1: 0})
        fetch(run, "t", {0: 5, 1: 2})
        for target in (-2, -1, -3, BASE_TIMESTAMP + 3, BASE_TIMESTAMP + 100_000, BASE_TIMESTAMP + 200_000):
            list_offsets(run, "t", [(0, target), (1, target)])
    return scenario


@pytest.mark.parametrize("codec", list(CompressionType), ids=lambda c: c.name.lower())
def test_produce_fetch_each_codec(brokers, codec: CompressionType) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(produce_then_fetch(codec, 11))


@pytest.mark.parametrize("version", range(3, 13))
def test_produce_versions(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(produce_then_fetch(CompressionType.NONE, version))
