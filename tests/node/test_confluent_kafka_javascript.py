"""@confluentinc/kafka-javascript 1.10.1 (its KafkaJS-compatible API over librdkafka, built
by `make test` against a librdkafka compiled from the source the package carries) against
Kafka 4.4 and asyncbroker alike, on the machine's Node.js
(tests/node/confluent_scenarios.mjs):

    producer  an idempotent producer per codec librdkafka has: none, gzip, snappy, lz4, zstd
    group     two members of one consumer group, auto-committing, then leaving; the group
              listed, described and deleted
    admin     topics (create, list, metadata, delete), offsets (earliest/latest, by
              timestamp), DeleteRecords (refused on a compacted-only topic, as Kafka does:
              this client found that asyncbroker deleted there)
"""

from __future__ import annotations

from typing import Any

import pytest

from node_clients import bootstrap, check_idempotent_produce, run_scenario

pytestmark = pytest.mark.timeout(240)
__all__ = ["bootstrap"]  # the fixture, parametrized over Kafka 4.4 and asyncbroker

EMPTY = 5  # ConsumerGroupStates.EMPTY of the client's admin API


def scenario(name: str, bootstrap: str) -> Any:
    return run_scenario("confluent_scenarios.mjs", name, bootstrap)


def test_idempotent_producer_with_each_codec(bootstrap: str) -> None:
    check_idempotent_produce(scenario("producer", bootstrap), {"none", "gzip", "snappy", "lz4", "zstd"})


def test_consumer_group_commits(bootstrap: str) -> None:
    assert scenario("group", bootstrap) == {
        "consumed": 100, "protocolType": "consumer", "members": 2,
        "committed": [[0, 25], [1, 25], [2, 25], [3, 25]],
        "stateAfterLeave": EMPTY, "listed": True, "deleted": [[True, 0]],
    }


def test_admin(bootstrap: str) -> None:
    assert scenario("admin", bootstrap) == {
        "created": True,
        "listed": True,
        "partitions": [[0, 1], [1, 1]],
        "offsets": [[0, 0, 10], [1, 0, 0]],
        # Records stamped a second apart from `now`: now + 4.5 s is first reached by the 6th.
        "byTimestamp": [[0, 5], [1, 0]],
        "offsetsAfterDelete": [[0, 4, 10], [1, 0, 0]],
        "compactedDelete": ["ERR_POLICY_VIOLATION"],
        "listedAfterDelete": False,
    }
