"""The web console end to end in a real headless chromium (Debian's, driven by playwright-core):
a real broker subprocess with --console-port, real Kafka clients producing and consuming. Each
test keeps a screenshot in tests/browser/artifacts/ (git-ignored)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from asyncbroker.testing import BrokerProcess
from browser_session import BrowserSession, missing

pytestmark = [pytest.mark.timeout(120), pytest.mark.skipif(missing() is not None, reason=str(missing()))]


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess(["num.partitions=1", "group.initial.rebalance.delay.ms=0"], console=True) as b:
        yield b


@pytest.fixture(scope="module")
def browser() -> Iterator[BrowserSession]:
    session = BrowserSession()
    try:
        yield session
    finally:
        session.close()


def create_topic_with_form(browser: BrowserSession, broker: BrokerProcess, name: str, configs: str = "") -> None:
    browser.goto(broker.console_url + "topics")
    browser.fill("#create-topic input[name=name]", name)
    browser.fill("#create-topic textarea[name=configs]", configs)
    browser.click("#create-topic button")
    assert f"Created topic {name}" in browser.text("#message")


def test_create_topic_produce_json_and_browse_by_timestamp(broker: BrokerProcess, browser: BrowserSession) -> None:
    create_topic_with_form(browser, broker, "orders")
    base = int(time.time() * 1000) - 60_000
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        p.produce("orders", key=f"order-{i}".encode(), value=json.dumps({"id": i, "item": "<b>tea</b>"}).encode(),
                  timestamp=base + i * 1000, headers=[("source", b"console-test")])
    assert p.flush(30) == 0
    assert browser.goto(broker.console_url + f"topics/orders/0/messages?timestamp={base + 6500}") == 200
    assert "at offset 7" in browser.text("#notice")
    offsets = browser.texts("#records tr.record td:first-child")
    assert offsets == ["7", "8", "9"]
    value = browser.text("#records tr.record td.value pre")
    assert json.loads(value) == {"id": 7, "item": "<b>tea</b>"} and '\n  "id": 7' in value  # pretty-printed
    browser.screenshot("browse_by_timestamp")


def test_group_lag_falls_as_it_consumes(broker: BrokerProcess, browser: BrowserSession) -> None:
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(20):
        p.produce("lagging", key=b"k%d" % i, value=b"v%d" % i)
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "readers", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    try:
        c.commit(offsets=[TopicPartition("lagging", 0, 5)], asynchronous=False)
        assert browser.goto(broker.console_url + "groups/readers") == 200
        assert browser.text("#total-lag") == "15"
        c.subscribe(["lagging"])
        seen = 0
        deadline = time.monotonic() + 30
        while seen < 15:
            assert time.monotonic() < deadline, f"consumed {seen} of 15"
            m = c.poll(0.5)
            if m is not None and not m.error():
                seen += 1
        c.commit(asynchronous=False)
        # The page refreshes itself (data-refresh): the lag falls to 0 without a reload.
        browser.wait_for_text("#total-lag", "0")
        browser.screenshot("group_lag_fell")
    finally:
        c.close()


def test_compact_now_changes_the_segment_list(broker: BrokerProcess, browser: BrowserSession) -> None:
    create_topic_with_form(browser, broker, "latest-prices", "cleanup.policy=compact")
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(200):
        p.produce("latest-prices", key=b"k%d" % (i % 5), value=b"price-%d" % i)
    assert p.flush(30) == 0
    browser.goto(broker.console_url + "topics/latest-prices/0")
    before = browser.texts("#segments tr.segment td:first-child")
    assert before == ["0"] and "never cleaned" in browser.text("#cleaner")
    browser.click("#compact-now")
    assert "Compacted latest-prices: 1 of 1 partition(s) cleaned" in browser.text("#message")
    after = browser.texts("#segments tr.segment td:first-child")
    assert after != before and after[-1] == "200", after
    assert "200" in browser.text("#cleaner")  # the cleaner checkpoint
    browser.screenshot("compact_now")
