"""Fixtures of the Java client tests: the harness JVM, Kafka 4.4 and an asyncbroker
configured as the oracle is, each started once per session on first use."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from asyncbroker.testing import BrokerProcess
from java_harness import JavaHarness, Targets
from jvm.kafka_jvm import ORACLE_SETTINGS, KafkaServer

# The broker keys asyncbroker shares with the oracle's settings (tests/oracle/conftest.py
# starts its own broker the same way; the rest of ORACLE_SETTINGS is about replication).
_SHARED_KEYS = (
    "num.partitions", "auto.create.topics.enable", "offsets.topic.num.partitions",
    "group.initial.rebalance.delay.ms", "group.consumer.assignment.interval.ms", "log.cleaner.backoff.ms", "log.retention.check.interval.ms",
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


@pytest.fixture(scope="session")
def targets(java: JavaHarness, kafka: KafkaServer, java_asyncbroker: BrokerProcess) -> Targets:
    return Targets(java, kafka, java_asyncbroker)
