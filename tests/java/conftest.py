"""Fixtures of the Java client tests: the harness JVM, Kafka 4.4 and an asyncbroker
configured as the oracle is, each started once per session on first use."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from asyncbroker.testing import BrokerProcess
from java_harness import JavaHarness
from jvm.kafka_jvm import ORACLE_SETTINGS, KafkaServer

# The broker keys asyncbroker shares with the oracle's settings (tests/oracle/conftest.py
# starts its own broker the same way; the rest of ORACLE_SETTINGS is about replication).
_SHARED_KEYS = (
    "num.partitions", "auto.create.topics.enable", "offsets.topic.num.partitions",
    "group.initial.rebalance.delay.ms", "log.cleaner.backoff.ms", "log.retention.check.interval.ms",
    "log.initial.task.delay.ms", "log.segment.delete.delay.ms",
)


@pytest.fixture(scope="session")
def java() -> Iterator[JavaHarness]:
    harness = JavaHarness()
    try:
        yield harness
    finally:
        harness.close()


@pytest.fixture(scope="session")
def java_asyncbroker() -> Iterator[BrokerProcess]:
    overrides = ["node.id=1", *(f"{k}={ORACLE_SETTINGS[k]}" for k in _SHARED_KEYS)]
    with BrokerProcess(overrides) as broker:
        yield broker


class Targets:
    """The two brokers every Java scenario runs on."""

    def __init__(self, java: JavaHarness, kafka: KafkaServer, ours: BrokerProcess) -> None:
        self.java = java
        self.kafka = kafka
        self.ours = ours

    def run(self, scenario: str, **args: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """The scenario on Kafka first (its checks passing there prove the scenario right),
        then on asyncbroker; returns both sets of facts."""
        kafka_facts = self.java.run(scenario, self.kafka.bootstrap, broker="Kafka 4.4", **args)
        our_facts = self.java.run(scenario, self.ours.bootstrap, broker="asyncbroker", **args)
        return kafka_facts, our_facts


@pytest.fixture(scope="session")
def targets(java: JavaHarness, kafka: KafkaServer, java_asyncbroker: BrokerProcess) -> Targets:
    return Targets(java, kafka, java_asyncbroker)
