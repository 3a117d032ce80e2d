"""kafkajs 2.2.4 (tests/node/package.json, installed by `make test`) against Kafka 4.4 and
asyncbroker alike, on the machine's Node.js: the same scenario (tests/node/kafkajs_scenarios.mjs)
on each broker, with the same expectations.

    producer  an idempotent producer per codec: none and gzip built in, snappy through
              kafkajs-snappy, lz4 through kafkajs-lz4 (compiled by `make test`); keys and
              headers, read back
    group     two members of one consumer group, auto-committing, then leaving
    admin     topics (create, list, metadata, grow, configs, delete), offsets, DeleteRecords,
              group offsets (set, reset to earliest), list and delete groups

ZSTD is left out: its kafkajs codec (@kafkajs/zstd, through cppzst) builds as C++11, which
Node 20's V8 headers refuse; @confluentinc/kafka-javascript's test covers zstd.
"""

from __future__ import annotations

import pytest

from node_clients import bootstrap, check_idempotent_produce, run_scenario

pytestmark = pytest.mark.timeout(240)
__all__ = ["bootstrap"]  # the fixture, parametrized over Kafka 4.4 and asyncbroker


def scenario(name: str, bootstrap: str) -> object:
    return run_scenario("kafkajs_scenarios.mjs", name, bootstrap)


def test_idempotent_producer_with_each_codec(bootstrap: str) -> None:
    check_idempotent_produce(scenario("producer", bootstrap), {"none", "gzip", "snappy", "lz4"})


def test_consumer_group_commits(bootstrap: str) -> None:
    out: dict = scenario("group", bootstrap)  # type: ignore[assignment]
    assert out["consumed"] == 100 and sum(out["byMember"]) == 100
    assert (out["state"], out["protocolType"], out["members"]) == ("Stable", "consumer", 2)
    assert out["committed"] == [[0, 25], [1, 25], [2, 25], [3, 25]]
    assert out["stateAfterLeave"] == "Empty"


def test_admin(bootstrap: str) -> None:
    out: dict = scenario("admin", bootstrap)  # type: ignore[assignment]
    assert out == {
        "created": True,
        "createdAgain": False,  # TOPIC_ALREADY_EXISTS, which kafkajs reports as "not created"
        "listed": True,
        "partitions": [[0, 1], [1, 1]],
        "partitionsAfterGrow": 3,
        # AlterConfigs replaces the whole override set: cleanup.policy=compact from the creation
        # is gone, back to its default.
        "configs": {"retention.ms": ["123456", False], "cleanup.policy": ["delete", True],
                    "segment.bytes": ["1073741824", True]},
        "offsets": [[0, 0, 10], [1, 0, 0], [2, 0, 0]],
        "offsetsAfterDelete": [[0, 4, 10], [1, 0, 0], [2, 0, 0]],
        "groupOffsets": [[0, 7], [1, -1], [2, -1]],
        # kafkajs resets to "earliest" by committing -2, which the broker keeps as given.
        "groupOffsetsAfterReset": [[0, -2], [1, -2], [2, -2]],
        "groupsListed": True,
        "deletedGroups": [[True, 0]],
        "listedAfterDelete": False,
        "missing": "UNKNOWN_TOPIC_OR_PARTITION",
    }
