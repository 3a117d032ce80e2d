"""Shared test setup.

The session-wide broker comes from asyncbroker's own pytest plugin
(`asyncbroker` / `asyncbroker_bootstrap` fixtures, see
asyncbroker/testing/pytest_plugin.py): integration tests that only need *a*
broker share it; tests that restart or kill a broker start their own
`BrokerProcess`.

Apache Kafka 4.4 itself (`kafka` fixture, tests/jvm/kafka_jvm.py) is started
once per session, on first use, from the jars `make jvm` fetched.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from jvm.kafka_jvm import KafkaServer


def pytest_configure(config: pytest.Config) -> None:
    # kafka-python loads its protocol schemas with deprecated importlib.resources calls.
    config.addinivalue_line("filterwarnings", "ignore:.*is deprecated. Use files\\(\\) instead:DeprecationWarning")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--torture", action="store_true", default=False,
                     help="run the long crash/recovery torture tests (make torture)")


@pytest.fixture
def topic_name(request: pytest.FixtureRequest) -> str:
    """A topic name unique to this test (auto-created on first use)."""
    base = request.node.name.replace("[", "-").replace("]", "").replace("/", "-")[:80]
    return f"t-{base}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def kafka() -> Iterator[KafkaServer]:
    """A single-node KRaft Apache Kafka 4.4 for the whole session: the oracle."""
    with KafkaServer() as server:
        yield server
