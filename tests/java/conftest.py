"""Fixtures of the Java client tests: the harness JVM, Kafka 4.4 and an asyncbroker
configured as the oracle is, each started once per session on first use."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from asyncbroker.testing import BrokerProcess
from java_harness import JavaHarness, Targets
from jvm.kafka_jvm import ASYNCBROKER_ORACLE_OVERRIDES, KafkaServer

@pytest.fixture(scope="session")
def java() -> Iterator[JavaHarness]:
    harness = JavaHarness()
    try:
        yield harness
    finally:
        harness.close()


@pytest.fixture(scope="session")
def java_asyncbroker() -> Iterator[BrokerProcess]:
    with BrokerProcess(ASYNCBROKER_ORACLE_OVERRIDES) as broker:
        yield broker


@pytest.fixture(scope="session")
def targets(java: JavaHarness, kafka: KafkaServer, java_asyncbroker: BrokerProcess) -> Targets:
    return Targets(java, kafka, java_asyncbroker)
