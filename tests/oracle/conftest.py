"""Fixtures of the differential tests: Kafka 4.4 (tests/conftest.py) and an asyncbroker
configured as the oracle is, both started once per session."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from asyncbroker.testing import BrokerProcess
from jvm.kafka_jvm import ASYNCBROKER_ORACLE_OVERRIDES, KafkaServer

@pytest.fixture(scope="session")
def oracle_asyncbroker() -> Iterator[BrokerProcess]:
    with BrokerProcess(ASYNCBROKER_ORACLE_OVERRIDES, monitor=True) as broker:
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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):  # type: ignore[no-untyped-def]
    """A failed differential test shows what asyncbroker logged at WARNING and above, and what
    its cleaner did, while it ran: its transcript shows only the outcome of background work."""
    outcome = yield
    report = outcome.get_result()
    broker = item.funcargs.get("oracle_asyncbroker") if hasattr(item, "funcargs") else None
    if broker is None and hasattr(item, "funcargs") and "brokers" in item.funcargs:
        broker = item.funcargs["brokers"].ours
    if report.when == "call" and report.failed and broker is not None:
        start = item.stash.get(_LOG_START, 0)
        lines = [line for line in broker.log_lines[start:]
                 if _SEVERE.search(line) or _CLEANER.search(line) or line.startswith(("Traceback", " ", "\t"))]
        report.sections.append(("asyncbroker's warnings, errors and cleaner log during the test",
                                "\n".join(lines[-120:]) or "(none)"))


_LOG_START = pytest.StashKey[int]()
# The broker's log format is "[time] LEVEL message (logger)"; tracebacks follow on their own lines.
_SEVERE = re.compile(r"^\[[^\]]*\] (WARNING|ERROR|CRITICAL) ")
_CLEANER = re.compile(r"\(cleaner\.[a-z_]+\)$")


@pytest.fixture(autouse=True)
def _mark_log_start(request):  # type: ignore[no-untyped-def]
    """Where the session broker's log stood when this test began."""
    if "brokers" in request.fixturenames or "oracle_asyncbroker" in request.fixturenames:
        broker = request.getfixturevalue("oracle_asyncbroker")
        request.node.stash[_LOG_START] = len(broker.log_lines)
    yield
