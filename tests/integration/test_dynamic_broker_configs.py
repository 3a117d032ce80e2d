"""Dynamic broker configs: topic defaults changed at runtime on this broker and cluster-wide
reach every log, persist across a restart, and go away again."""

from __future__ import annotations

from typing import Any

import pytest

from asyncbroker.testing import BrokerProcess
from raw_client import RawClient
from test_admin_protocol import create_topic, req

pytestmark = pytest.mark.timeout(90)

INCREMENTAL_ALTER_CONFIGS, DESCRIBE_CONFIGS = 44, 32
TOPIC, BROKER = 2, 4
SET, DELETE = 0, 1
DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG = 2, 3, 1, 5


def alter(c: RawClient, resource_name: str, ops: list[tuple[str, int, str | None]]) -> Any:
    resource = req(INCREMENTAL_ALTER_CONFIGS, 1, "AlterConfigsResource", resource_type=BROKER,
                   resource_name=resource_name,
                   configs=tuple(req(INCREMENTAL_ALTER_CONFIGS, 1, "AlterableConfig", name=k, config_operation=op,
                                     value=v) for k, op, v in ops))
    resp = c.request(req(INCREMENTAL_ALTER_CONFIGS, 1, "IncrementalAlterConfigsRequest", resources=(resource,),
                         validate_only=False))
    return resp.responses[0]


def describe(c: RawClient, resource_type: int, name: str, keys: tuple[str, ...]) -> dict[str, Any]:
    resource = req(DESCRIBE_CONFIGS, 4, "DescribeConfigsResource", resource_type=resource_type, resource_name=name,
                   configuration_keys=keys)
    resp = c.request(req(DESCRIBE_CONFIGS, 4, "DescribeConfigsRequest", resources=(resource,), include_synonyms=True,
                         include_documentation=False))
    return {e.name: e for e in resp.results[0].configs}


def test_topic_defaults_change_at_runtime_and_persist(tmp_path: Any) -> None:
    with BrokerProcess(["node.id=1"], log_dir=tmp_path / "logs") as broker:
        with RawClient(broker.bootstrap) as c:
            assert create_topic(c, 7, "plain").error_code == 0
            assert create_topic(c, 7, "overridden", 1, {"retention.ms": "5000"}).error_code == 0
            assert alter(c, "", [("log.retention.ms", SET, "3600000")]).error_code == 0
            assert alter(c, "1", [("message.max.bytes", SET, "2000000")]).error_code == 0
            plain = describe(c, TOPIC, "plain", ("retention.ms", "max.message.bytes"))
            assert (plain["retention.ms"].value, plain["retention.ms"].config_source) == (
                "3600000", DYNAMIC_DEFAULT_BROKER_CONFIG)
            assert (plain["max.message.bytes"].value, plain["max.message.bytes"].config_source) == (
                "2000000", DYNAMIC_BROKER_CONFIG)
            overridden = describe(c, TOPIC, "overridden", ("retention.ms",))["retention.ms"]
            assert (overridden.value, overridden.config_source) == ("5000", DYNAMIC_TOPIC_CONFIG)
            # The override, then log.retention.ms's family from its own (dynamic) value on.
            assert [(s.name, s.source) for s in overridden.synonyms] == [
                ("retention.ms", DYNAMIC_TOPIC_CONFIG), ("log.retention.ms", DYNAMIC_DEFAULT_BROKER_CONFIG),
                ("log.retention.hours", DEFAULT_CONFIG)]
            # Keys Kafka reconfigures that asyncbroker does not apply are refused, not ignored.
            refused = alter(c, "1", [("log.cleaner.threads", SET, "2")])
            assert refused.error_code == 42 and "log.cleaner.threads" in refused.error_message
        broker.restart()
        with RawClient(broker.bootstrap) as c:
            keys = describe(c, BROKER, "1", ("log.retention.ms", "message.max.bytes"))
            assert (keys["log.retention.ms"].value, keys["log.retention.ms"].config_source) == (
                "3600000", DYNAMIC_DEFAULT_BROKER_CONFIG)
            assert (keys["message.max.bytes"].value, keys["message.max.bytes"].config_source) == (
                "2000000", DYNAMIC_BROKER_CONFIG)
            assert describe(c, TOPIC, "plain", ("retention.ms",))["retention.ms"].value == "3600000"
            assert alter(c, "", [("log.retention.ms", DELETE, None)]).error_code == 0
            assert alter(c, "1", [("message.max.bytes", DELETE, None)]).error_code == 0
            plain = describe(c, TOPIC, "plain", ("retention.ms", "max.message.bytes"))
            assert (plain["retention.ms"].value, plain["retention.ms"].config_source) == ("604800000", DEFAULT_CONFIG)
            assert plain["max.message.bytes"].value == "1048588"


def test_cleaner_backoff_changes_at_runtime(tmp_path: Any) -> None:
    """log.cleaner.backoff.ms is dynamic, as in Kafka: set to 100 ms on a broker started with
    an hour, the cleaner wakes, and the next dirty round is cleaned too (with the hour still
    in force only the wake-up's clean could happen). The value persists across a restart."""
    from test_compaction import compacted_topic, consume, latest_by_key, produce_updates
    from wait_for import wait_until

    topic = "backoff"
    with BrokerProcess(["node.id=1", "log.cleaner.backoff.ms=3600000"], log_dir=tmp_path / "logs") as broker:
        compacted_topic(broker.bootstrap, topic, **{"min.cleanable.dirty.ratio": "0.01"})

        def cleans() -> int:
            return broker.output().count(f"cleaned log {topic}-0")

        produce_updates(broker.bootstrap, topic, 20_000, 10, value_pad=100)
        with RawClient(broker.bootstrap) as c:
            assert alter(c, "1", [("log.cleaner.backoff.ms", SET, "100")]).error_code == 0
            wait_until(lambda: cleans() >= 1, timeout=60, interval=0.1, message="the cleaner did not wake up")
            first = cleans()
            latest = produce_updates(broker.bootstrap, topic, 20_000, 10, value_pad=100, start=20_000)
            wait_until(lambda: cleans() > first, timeout=60, interval=0.1,
                       message="the cleaner did not come back after the new 100 ms backoff")
            assert latest_by_key(consume(broker.bootstrap, topic)) == latest
            own = describe(c, BROKER, "1", ("log.cleaner.backoff.ms",))["log.cleaner.backoff.ms"]
            assert (own.value, own.config_source, own.read_only) == ("100", DYNAMIC_BROKER_CONFIG, False)
        broker.restart()
        with RawClient(broker.bootstrap) as c:
            own = describe(c, BROKER, "1", ("log.cleaner.backoff.ms",))["log.cleaner.backoff.ms"]
            assert (own.value, own.config_source) == ("100", DYNAMIC_BROKER_CONFIG)
            # A value the key's validator refuses: Kafka's error (INVALID_REQUEST for a broker
            # resource), and nothing changes.
            bad = alter(c, "1", [("log.cleaner.backoff.ms", SET, "-1")])
            assert (bad.error_code, bad.error_message) == (
                42, "Invalid value -1 for configuration log.cleaner.backoff.ms: Value must be at least 0"), bad
            assert describe(c, BROKER, "1", ("log.cleaner.backoff.ms",))["log.cleaner.backoff.ms"].value == "100"
