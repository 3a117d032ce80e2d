"""Fixtures of the differential tests: Kafka 4.4 (tests/conftest.py) and an asyncbroker
configured as the oracle is, both started once per session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from asyncbroker.testing import BrokerProcess
from jvm.kafka_jvm import ORACLE_SETTINGS, KafkaServer

# Broker keys asyncbroker knows among the oracle's settings (the rest are about
# replication and Kafka's own internal topics).
_SHARED_KEYS = (
    "num.partitions", "auto.create.topics.enable", "offsets.topic.num.partitions",
    "group.initial.rebalance.delay.ms", "log.cleaner.backoff.ms", "log.retention.check.interval.ms",
    "log.initial.task.delay.ms", "log.segment.delete.delay.ms",
)


@pytest.fixture(scope="session")
def oracle_asyncbroker() -> Iterator[BrokerProcess]:
    overrides = ["node.id=1", *(f"{k}={ORACLE_SETTINGS[k]}" for k in _SHARED_KEYS)]
    with BrokerProcess(overrides, monitor=True) as broker:
        yield broker


class Brokers:
    """The two brokers a differential test compares."""

    def __init__(self, kafka: KafkaServer, ours: BrokerProcess) -> None:
        self.kafka = kafka
        self.ours = ours

    def compare(self, scenario, known=None):  # type: ignore[no-untyped-def]
        from differential import compare

        return compare(scenario, self.kafka.bootstrap, self.ours.bootstrap, known)


@pytest.fixture(scope="session")
def brokers(kafka: KafkaServer, oracle_asyncbroker: BrokerProcess) -> Brokers:
    return Brokers(kafka, oracle_asyncbroker)
