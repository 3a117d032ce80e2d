"""Fixtures of the differential tests: Kafka 4.4 (tests/conftest.py) and an asyncbroker
configured as the oracle is, both started once per session.

Tiered storage has its own pair (`tiered_brokers`), started once per session by the first
test that asks for it: a Kafka with its RemoteLogManager on and a directory as the remote
tier, and an asyncbroker configured alike. The shared pair keeps tiered storage off, as
Kafka's default is (its answers to tiered topic configs are compared there).

`pytest --kafka-only` runs the scenarios against Kafka alone, without starting asyncbroker."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from asyncbroker.testing import BrokerProcess
from jvm.kafka_jvm import ASYNCBROKER_ORACLE_OVERRIDES, KafkaServer, asyncbroker_tiered_overrides

@pytest.fixture(scope="session")
def oracle_asyncbroker() -> Iterator[BrokerProcess]:
    with BrokerProcess(ASYNCBROKER_ORACLE_OVERRIDES, monitor=True) as broker:
        yield broker


class Brokers:
    """The two brokers a differential test compares (asyncbroker is None under --kafka-only)."""

    def __init__(self, kafka: KafkaServer, ours: BrokerProcess | None) -> None:
        self.kafka = kafka
        self.ours = ours

    def compare(self, scenario, known=None):  # type: ignore[no-untyped-def]
        from differential import compare, run_kafka_only

        if self.ours is None:
            run_kafka_only(scenario, self.kafka.bootstrap)
            return []
        return compare(scenario, self.kafka.bootstrap, self.ours.bootstrap, known)


def _kafka_only(config: pytest.Config) -> bool:
    return bool(config.getoption("kafka_only", default=False))


@pytest.fixture(scope="session")
def brokers(request: pytest.FixtureRequest, kafka: KafkaServer) -> Brokers:
    if _kafka_only(request.config):
        return Brokers(kafka, None)
    return Brokers(kafka, request.getfixturevalue("oracle_asyncbroker"))


# -- tiered storage -------------------------------------------------------------------------------


class TieredBrokers(Brokers):
    """The tiered-storage pair, and where each keeps its remote tier and its log."""

    def __init__(self, kafka: KafkaServer, ours: BrokerProcess | None, our_remote_dir: Path) -> None:
        super().__init__(kafka, ours)
        assert kafka.remote_dir is not None
        self.remote_dirs = {"kafka": kafka.remote_dir, "asyncbroker": our_remote_dir}
        self.log_dirs = {"kafka": kafka.log_dir, "asyncbroker": ours.log_dir if ours is not None else None}

    def remote_dir(self, broker: str) -> Path:
        """The remote tier's root (rsm.config.dir) of "kafka" or "asyncbroker" (a run's .broker)."""
        return self.remote_dirs[broker]


@pytest.fixture(scope="session")
def kafka_tiered() -> Iterator[KafkaServer]:
    """A second Kafka 4.4 for the session, with tiered storage on (kafka_jvm.tiered_storage_settings)."""
    with KafkaServer(tiered_storage=True, heap="512m") as server:
        yield server


@pytest.fixture(scope="session")
def tiered_remote_dir() -> Iterator[Path]:
    """asyncbroker's remote tier (rsm.config.dir) for the session's tiered pair."""
    import shutil

    path = Path(tempfile.mkdtemp(prefix="asyncbroker-remote-tier-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def tiered_asyncbroker(tiered_remote_dir: Path) -> Iterator[BrokerProcess]:
    with BrokerProcess([*ASYNCBROKER_ORACLE_OVERRIDES, *asyncbroker_tiered_overrides(tiered_remote_dir)],
                       monitor=True) as broker:
        yield broker


@pytest.fixture(scope="session")
def tiered_brokers(request: pytest.FixtureRequest, kafka_tiered: KafkaServer,
                   tiered_remote_dir: Path) -> TieredBrokers:
    if _kafka_only(request.config):
        return TieredBrokers(kafka_tiered, None, tiered_remote_dir)
    return TieredBrokers(kafka_tiered, request.getfixturevalue("tiered_asyncbroker"), tiered_remote_dir)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):  # type: ignore[no-untyped-def]
    """A failed differential test shows what asyncbroker logged at WARNING and above, and what
    its cleaner and retention did, while it ran: its transcript shows only the outcome of background work."""
    outcome = yield
    report = outcome.get_result()
    broker = item.funcargs.get("oracle_asyncbroker") if hasattr(item, "funcargs") else None
    for pair in ("brokers", "tiered_brokers"):
        if broker is None and hasattr(item, "funcargs") and pair in item.funcargs:
            broker = item.funcargs[pair].ours
    if report.when == "call" and report.failed and broker is not None:
        start = item.stash.get(_LOG_START, 0)
        lines = [line for line in broker.log_lines[start:]
                 if _SEVERE.search(line) or _CLEANER.search(line) or line.startswith(("Traceback", " ", "\t"))]
        report.sections.append(("asyncbroker's warnings, errors and cleaner log during the test",
                                "\n".join(lines[-120:]) or "(none)"))
    kafka = item.stash.get(_KAFKA, None)
    if report.when == "call" and report.failed and kafka is not None:
        # Kafka's side of a failure (a connection it closed, say) is only in its own log.
        text = kafka.output_since(item.stash.get(_KAFKA_LOG_START, 0))
        lines = [line for line in text.splitlines()
                 if _KAFKA_SEVERE.search(line) or line.startswith(("\tat ", "Caused by", "java.", "org."))]
        report.sections.append(("Kafka's warnings and errors during the test", "\n".join(lines[-120:]) or "(none)"))


_LOG_START = pytest.StashKey[int]()
_KAFKA = pytest.StashKey[KafkaServer]()
_KAFKA_LOG_START = pytest.StashKey[int]()
# Kafka's log4j pattern (tests/jvm/log4j2.properties) is "[time] LEVEL message (logger)".
_KAFKA_SEVERE = re.compile(r"^\[[^\]]*\] (WARN|ERROR|FATAL) ")
# The broker's log format is "[time] LEVEL message (logger)"; tracebacks follow on their own lines.
_SEVERE = re.compile(r"^\[[^\]]*\] (WARNING|ERROR|CRITICAL) ")
# The cleaner's lines, and storage's Log (retention, rolls, swaps): what background work did.
_CLEANER = re.compile(r"\((cleaner\.[a-z_]+|storage\.log)\)$")


@pytest.fixture(autouse=True)
def _mark_log_start(request):  # type: ignore[no-untyped-def]
    """Where the session broker's log stood when this test began."""
    if _kafka_only(request.config):
        pass
    elif "brokers" in request.fixturenames or "oracle_asyncbroker" in request.fixturenames:
        broker = request.getfixturevalue("oracle_asyncbroker")
        request.node.stash[_LOG_START] = len(broker.log_lines)
    elif "tiered_brokers" in request.fixturenames:
        broker = request.getfixturevalue("tiered_asyncbroker")
        request.node.stash[_LOG_START] = len(broker.log_lines)
    for pair, kafka_fixture in (("brokers", "kafka"), ("tiered_brokers", "kafka_tiered")):
        if pair in request.fixturenames:
            kafka = request.getfixturevalue(kafka_fixture)
            request.node.stash[_KAFKA] = kafka
            request.node.stash[_KAFKA_LOG_START] = kafka.output_size()
            break
    yield
