"""After every other test: Kafka's DumpLogSegments over what the session-wide brokers wrote.

The integration tests share the `asyncbroker` fixture's broker and the differential tests
the `oracle_asyncbroker` one; this test (marked session_end, moved to the end of the run by
tests/conftest.py) stops each cleanly and checks every segment file of its log dir.
"""

from __future__ import annotations

import pytest

from asyncbroker.testing import BrokerProcess
from jvm.dump_log_check import check_log_dir, describe
from log_dirs_testlib import cleanup_policies, compacted_predicate, stop_cleanly

pytestmark = [pytest.mark.session_end, pytest.mark.timeout(900)]


def test_session_brokers_log_dirs_pass_dump_log_segments(asyncbroker: BrokerProcess,
                                                         session_brokers: dict[str, BrokerProcess]) -> None:
    # Requesting `asyncbroker` makes sure at least the plugin's broker is among them.
    assert "asyncbroker" in session_brokers
    problems = []
    for name, broker in sorted(session_brokers.items()):
        policies = cleanup_policies(broker.bootstrap)
        log_dir = stop_cleanly(broker)
        report = check_log_dir(log_dir, compacted_predicate(policies))
        if report.findings:
            problems.append(f"{name} ({log_dir}, {report.files}):\n  {describe(report.findings)}")
    assert not problems, "DumpLogSegments complains about files asyncbroker wrote:\n" + "\n".join(problems)
