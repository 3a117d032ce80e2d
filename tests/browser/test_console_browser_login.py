"""The web console behind the broker's login, in a real headless chromium: a broker process with
SASL PLAIN users and ACLs (StandardAuthorizer), the browser answering the console's HTTP Basic
challenge with alice's credentials (playwright's httpCredentials). alice may describe one topic:
she sees only it, and an operator's lever she is shown is refused by the broker's ACLs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient, NewTopic,
                                   ResourcePatternType, ResourceType)

from asyncbroker.testing import BrokerProcess
from browser_session import BrowserSession, missing

pytestmark = [pytest.mark.timeout(120), pytest.mark.skipif(missing() is not None, reason=str(missing()))]

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_admin="admin-secret" user_alice="alice-secret";')


def sasl(broker: BrokerProcess, user: str) -> dict[str, Any]:
    return {"bootstrap.servers": broker.bootstrap_for("SASL_PLAINTEXT"), "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": f"{user}-secret"}


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess(["listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                        "sasl.enabled.mechanisms=PLAIN", f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}",
                        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                        "super.users=User:admin", "num.partitions=1"], console=True) as b:
        admin = AdminClient(sasl(b, "admin"))
        futures = admin.create_topics([NewTopic("alice-ledger", 1, config={"cleanup.policy": "compact"}),
                                       NewTopic("payroll", 1)])
        for future in futures.values():
            future.result(30)
        for future in admin.create_acls([AclBinding(ResourceType.TOPIC, "alice-ledger", ResourcePatternType.LITERAL,
                                                    "User:alice", "*", AclOperation.DESCRIBE,
                                                    AclPermissionType.ALLOW)]).values():
            future.result(30)
        p = Producer(sasl(b, "admin"))
        for i in range(5):
            p.produce("alice-ledger", key=b"k%d" % i, value=b"v%d" % i)
        assert p.flush(30) == 0
        yield b


@pytest.fixture(scope="module")
def browser() -> Iterator[BrowserSession]:
    session = BrowserSession(http_credentials=("alice", "alice-secret"))
    try:
        yield session
    finally:
        session.close()


def test_a_logged_in_user_sees_only_its_topic_and_is_refused_a_lever(broker: BrokerProcess,
                                                                     browser: BrowserSession) -> None:
    assert browser.goto(broker.console_url + "topics") == 200
    assert browser.text("#principal") == "User:alice"
    assert browser.texts("table a[href^='/topics/']") == ["alice-ledger"]  # not payroll, not __consumer_offsets
    assert "Create a topic" not in browser.text("main")  # no CREATE: no form
    browser.screenshot("login_topics")
    assert browser.goto(broker.console_url + "topics/payroll") == 403
    assert "Not authorized to access topics: [payroll]" in browser.text("#error")
    # The partition page offers "Compact now"; pressing it asks ALTER on the cluster, which alice lacks.
    assert browser.goto(broker.console_url + "topics/alice-ledger/0") == 200
    browser.click("#compact-now")
    assert "Cluster authorization failed." in browser.text("#error")
    browser.screenshot("login_lever_refused")
