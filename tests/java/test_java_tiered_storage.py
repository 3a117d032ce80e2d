"""kafka-clients 4.4 on a tiered topic (KIP-405): Admin's earliest-local and latest-tiered
offsets, and a KafkaConsumer reading from the beginning through the remote tier."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from asyncbroker.testing import BrokerProcess
from java_harness import JavaHarness
from jvm.kafka_jvm import ASYNCBROKER_ORACLE_OVERRIDES


@pytest.fixture(scope="module")
def tiered_asyncbroker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    remote = tmp_path_factory.mktemp("remote")
    with BrokerProcess([*ASYNCBROKER_ORACLE_OVERRIDES, "remote.log.storage.system.enable=true",
                        "remote.log.storage.manager.class.name="
                        "org.apache.kafka.server.log.remote.storage.LocalTieredStorage",
                        f"rsm.config.dir={remote}", "rlmm.config.remote.log.metadata.topic.num.partitions=5",
                        "remote.log.manager.task.interval.ms=200", "log.retention.check.interval.ms=200",
                        "log.initial.task.delay.ms=0"]) as broker:
        yield broker


def test_java_consumer_reads_a_tiered_topic_from_the_beginning(java: JavaHarness,
                                                               tiered_asyncbroker: BrokerProcess) -> None:
    facts = java.run("tiered.read_from_remote", tiered_asyncbroker.bootstrap, broker="asyncbroker", records=4000)
    assert facts == {"earliest": 0, "latest": 4000, "earliest_local_above_0": True,
                     "latest_tiered_in_the_log": True, "records_read": 4000,
                     "offset_for_time_t0_plus_10": 10}
