"""Differential scenarios: group configs (KIP-848's per-group settings), the GROUP resources
of DescribeConfigs, IncrementalAlterConfigs and AlterConfigs, against Kafka 4.4: each key's
value, source and synonyms (the broker key it overrides), the broker's bounds, unknown keys,
unparsable values, list operations on non-list keys, the empty group name, and a consumer
group's heartbeat interval following its group config."""

from __future__ import annotations

from typing import Any

import pytest

from admin_steps import describe_configs, incremental_alter_configs, alter_configs
from differential import ScenarioRun

pytestmark = pytest.mark.timeout(120)

GROUP = 32
SET, DELETE, APPEND = 0, 1, 2
CONSUMER_KEYS = ("consumer.assignment.interval.ms", "consumer.heartbeat.interval.ms", "consumer.session.timeout.ms")


def name(run: ScenarioRun, symbol: str) -> str:
    return "=" + run.group(symbol)


def wait_for_group_config(run: ScenarioRun, symbol: str, key: str, value: str | None) -> None:
    """Kafka's controller commits a change before its broker describes it: wait (unrecorded)
    until the group's `key` has the override `value` (None: none)."""
    def applied() -> bool:
        entries = describe_configs(run, [(GROUP, name(run, symbol), (key,))], synonyms=False,
                                   record=False).results[0].configs
        override = [e.value for e in entries if int(e.config_source) == 8]
        return override == ([] if value is None else [value])

    run.wait_until(applied, f"{key}={value} on group {symbol}")


def group_configs(run: ScenarioRun) -> None:
    g = name(run, "g")
    describe_configs(run, [(GROUP, g, CONSUMER_KEYS)], label="consumer keys of a group that does not exist")
    describe_configs(run, [(GROUP, g, ("consumer.session.timeout.ms", "nope"))], documentation=True,
                     label="one key, an unknown one left out")
    describe_configs(run, [(GROUP, "=", None)], label="the empty group name")
    incremental_alter_configs(run, [(GROUP, g, [("consumer.session.timeout.ms", SET, "50000"),
                                                ("consumer.heartbeat.interval.ms", SET, "6000")])],
                              label="set two keys")
    wait_for_group_config(run, "g", "consumer.session.timeout.ms", "50000")
    describe_configs(run, [(GROUP, g, CONSUMER_KEYS)], label="overridden")
    for label, ops in (
        ("below the broker's minimum", [("consumer.session.timeout.ms", SET, "5000")]),
        ("above the broker's maximum", [("consumer.heartbeat.interval.ms", SET, "60000")]),
        ("assignment interval above its maximum", [("consumer.assignment.interval.ms", SET, "20000")]),
        ("not an int", [("consumer.session.timeout.ms", SET, "abc")]),
        ("unknown key", [("nope", SET, "1")]),
        ("APPEND to a non-list key", [("consumer.session.timeout.ms", APPEND, "1")]),
        ("duplicate keys", [("consumer.session.timeout.ms", SET, "50000"), ("consumer.session.timeout.ms", DELETE, None)]),
        ("a null value", [("consumer.session.timeout.ms", SET, None)]),
        ("delete an unknown key", [("nope", DELETE, None)]),
    ):
        incremental_alter_configs(run, [(GROUP, g, ops)], label=label)
    incremental_alter_configs(run, [(GROUP, "=", [("consumer.session.timeout.ms", SET, "50000")])],
                              label="the empty group name")
    incremental_alter_configs(run, [(GROUP, g, [("consumer.session.timeout.ms", SET, "55000")])], validate_only=True,
                              label="validate only")
    describe_configs(run, [(GROUP, g, ("consumer.session.timeout.ms",))], label="unchanged by validate only")
    alter_configs(run, [(GROUP, g, {"consumer.session.timeout.ms": "60000"})], label="AlterConfigs replaces the set")
    wait_for_group_config(run, "g", "consumer.heartbeat.interval.ms", None)
    describe_configs(run, [(GROUP, g, CONSUMER_KEYS)], label="after AlterConfigs")
    alter_configs(run, [(GROUP, g, {"consumer.session.timeout.ms": "1"})], label="AlterConfigs out of bounds")
    incremental_alter_configs(run, [(GROUP, g, [("consumer.session.timeout.ms", DELETE, None)])], label="delete")
    wait_for_group_config(run, "g", "consumer.session.timeout.ms", None)
    describe_configs(run, [(GROUP, g, CONSUMER_KEYS)], label="back to the broker's values")


def test_group_configs(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(group_configs, known={
        "KD-204": {"1:.results[0].configs[consumer.session.timeout.ms].documentation"}})


def streams_keys(run: ScenarioRun) -> None:
    g = name(run, "g")
    describe_configs(run, [(GROUP, g, None)], label="every key")
    incremental_alter_configs(run, [(GROUP, g, [("streams.num.standby.replicas", SET, "1")])],
                              label="a streams group key")


def test_streams_group_keys_are_not_served(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(streams_keys, known={"KD-212": {
        "0:.results[0].configs[names]", "1:.responses[0].error_code", "1:.responses[0].error_message"}})


SHARE_KEYS = ("share.assignment.interval.ms", "share.auto.offset.reset", "share.delivery.count.limit",
              "share.heartbeat.interval.ms", "share.isolation.level", "share.partition.max.record.locks",
              "share.record.lock.duration.ms", "share.renew.acknowledge.enable", "share.session.timeout.ms")


def share_group_keys(run: ScenarioRun) -> None:
    """The share group keys (KIP-932): described over their group.share.* broker keys, each
    within its broker bounds, share.auto.offset.reset and share.isolation.level checked."""
    g = name(run, "g")
    describe_configs(run, [(GROUP, g, SHARE_KEYS)], label="share keys")
    for label, ops in (
        ("reset to earliest", [("share.auto.offset.reset", SET, "earliest")]),
        ("reset by duration", [("share.auto.offset.reset", SET, "by_duration:PT1H")]),
        ("reset sideways", [("share.auto.offset.reset", SET, "sideways")]),
        ("isolation", [("share.isolation.level", SET, "read_committed")]),
        ("isolation unknown", [("share.isolation.level", SET, "dirty")]),
        ("lock duration below its minimum", [("share.record.lock.duration.ms", SET, "5000")]),
        ("lock duration", [("share.record.lock.duration.ms", SET, "20000")]),
        ("delivery count limit above its maximum", [("share.delivery.count.limit", SET, "11")]),
        ("record locks below their minimum", [("share.partition.max.record.locks", SET, "50")]),
        ("heartbeat interval", [("share.heartbeat.interval.ms", SET, "6000")]),
    ):
        incremental_alter_configs(run, [(GROUP, g, ops)], label=label)
    wait_for_group_config(run, "g", "share.heartbeat.interval.ms", "6000")
    describe_configs(run, [(GROUP, g, SHARE_KEYS)], label="share keys set")


def test_share_group_keys(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(share_group_keys)


def heartbeat_interval_follows_the_group_config(run: ScenarioRun) -> None:
    """A consumer-protocol member is told its group's heartbeat interval."""
    from test_consumer_group_protocol import join, topics

    topics(run)
    incremental_alter_configs(run, [(GROUP, name(run, "g"), [("consumer.heartbeat.interval.ms", SET, "7000")])],
                              label="heartbeat interval 7 s")
    wait_for_group_config(run, "g", "consumer.heartbeat.interval.ms", "7000")
    answer: Any = join(run, "a joins", "m-a", ["t1"], assignor="range")
    assert answer.heartbeat_interval.total_seconds() == 7, run.broker


def test_heartbeat_interval_follows_the_group_config(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(heartbeat_interval_follows_the_group_config)
