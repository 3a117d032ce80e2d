"""Shared test setup.

The session-wide broker comes from asyncbroker's own pytest plugin
(`asyncbroker` / `asyncbroker_bootstrap` fixtures, see
asyncbroker/testing/pytest_plugin.py): integration tests that only need *a*
broker share it; tests that restart or kill a broker start their own
`BrokerProcess`.

Apache Kafka 4.4 itself (`kafka` fixture, tests/jvm/kafka_jvm.py) is started
once per session, on first use, from the jars `make jvm` fetched.

A local S3 API (`s3_server`: moto's server, asyncbroker.testing.S3Server) is
started once per session, on first use, for tiered storage and the object-store
tests; each test takes a bucket of its own (`s3_bucket`).

With `--check-session-log-dirs` (as `make test` runs), every session-wide broker a test used is
stopped cleanly when the session ends and Kafka's DumpLogSegments checks each segment file of its
log dir: a complaint fails the session, reported at the teardown of its last test. It runs where
the broker ran, in each pytest-xdist worker (`make test` runs three).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import uuid
from collections.abc import Iterator

import pytest

# Every kio entity built in the tests, and by the brokers they start (the variable is inherited),
# refuses field names no version has (asyncbroker/response_builder.py).
os.environ.setdefault("BROKER_STRICT_RESPONSES", "1")

from asyncbroker.testing import BrokerProcess
from asyncbroker.testing.s3_server import S3Server
from jvm.kafka_jvm import JvmSetupError, KafkaServer, classpath

# Spark's Kafka connector for every SparkSession of the run (pipeline.session): the jars
# `make jvm` fetched (tests/jvm/spark), not an Ivy download at each session start.
try:
    os.environ.setdefault("SPARK_KAFKA_CONNECTOR_JARS", classpath("spark"))
except JvmSetupError:
    pass  # without `make jvm`, Spark resolves the connector from Maven Central itself

# The session-wide BrokerProcess fixtures that tests used, by fixture name (filled as they are set
# up).
SESSION_BROKERS = pytest.StashKey[dict[str, BrokerProcess]]()


def pytest_configure(config: pytest.Config) -> None:
    # kafka-python loads its protocol schemas with deprecated importlib.resources calls.
    config.addinivalue_line("filterwarnings", "ignore:.*is deprecated. Use files\\(\\) instead:DeprecationWarning")
    config.stash[SESSION_BROKERS] = {}
    # A global plugin, not a hook of this conftest: pytest asks only the rootdir's conftests
    # about session-scoped fixtures, and this file sits below the rootdir.
    config.pluginmanager.register(_SessionBrokerRecorder(), "session-broker-recorder")


class _SessionBrokerRecorder:
    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef: pytest.FixtureDef[object], request: pytest.FixtureRequest) -> object:
        result = yield
        if fixturedef.scope == "session" and isinstance(result, BrokerProcess):
            request.config.stash[SESSION_BROKERS][fixturedef.argname] = result
            if request.config.getoption("check_session_log_dirs"):
                # Added after the fixture's own teardown, so it runs first: the broker is still up.
                fixturedef.addfinalizer(functools.partial(_check_session_log_dir, fixturedef.argname, result))
        return result


def _check_session_log_dir(name: str, broker: BrokerProcess) -> None:
    """Stop a session-wide broker cleanly and run Kafka's DumpLogSegments over its log dir."""
    from jvm.dump_log_check import check_log_dir, describe
    from logs.log_dirs_testlib import cleanup_policies, compacted_predicate, stop_cleanly

    policies = cleanup_policies(broker.bootstrap)
    log_dir = stop_cleanly(broker)
    report = check_log_dir(log_dir, compacted_predicate(policies))
    assert not report.findings, (f"DumpLogSegments complains about files the session broker {name!r} wrote "
                                 f"({log_dir}, {report.files}):\n  {describe(report.findings)}")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--torture", action="store_true", default=False,
                     help="run the long crash/recovery torture tests (make torture)")
    parser.addoption("--check-session-log-dirs", action="store_true", default=False,
                     help="at the session's end, stop each session-wide broker cleanly and check its log dir "
                          "with Kafka's DumpLogSegments (make test)")
    parser.addoption("--kafka-only", action="store_true", default=False,
                     help="run the differential scenarios (tests/oracle) against Kafka 4.4 alone, without "
                          "starting asyncbroker: checks a scenario's steps and waits on the oracle while "
                          "asyncbroker lacks the feature (ORACLE_TRANSCRIPTS=<dir> keeps the transcripts)")


@pytest.fixture
def topic_name(request: pytest.FixtureRequest) -> str:
    """A topic name unique to this test (auto-created on first use)."""
    base = request.node.name.replace("[", "-").replace("]", "").replace("/", "-")[:80]
    return f"t-{base}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def session_brokers(request: pytest.FixtureRequest) -> dict[str, BrokerProcess]:
    """The session-wide brokers set up so far (fixture name -> BrokerProcess)."""
    return request.config.stash[SESSION_BROKERS]


@pytest.fixture(scope="session")
def kafka() -> Iterator[KafkaServer]:
    """A single-node KRaft Apache Kafka 4.4 for the whole session: the oracle."""
    with KafkaServer() as server:
        yield server


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """A local S3 API server for the session (moto's, in a child process on 127.0.0.1).

    Shared: tests use buckets of their own (`s3_bucket`) and leave it running and unfaulted. A
    test that injects faults, checks credentials or kills the server starts an S3Server of its own."""
    if importlib.util.find_spec("moto") is None:
        pytest.skip("moto[server] is not installed")
    with S3Server() as server:
        yield server


@pytest.fixture
def s3_bucket(s3_server: S3Server) -> Iterator[str]:
    """A new, empty bucket on the session's S3 server, for this test alone (deleted after it)."""
    bucket = s3_server.create_bucket(f"test-{uuid.uuid4().hex[:20]}")
    yield bucket
    s3_server.delete_bucket(bucket)
