"""kafkajs 2.2.4 (tests/node/package.json, installed by `make test`) against Kafka 4.4 and
asyncbroker alike, on the machine's Node.js: the same scenario (tests/node/kafkajs_scenarios.mjs)
on each broker, with the same expectations.

    producer  an idempotent producer per codec kafkajs can use without native modules (none,
              gzip built in; snappy through kafkajs-snappy), keys and headers, read back
    group     two members of one consumer group, auto-committing, then leaving
    admin     topics (create, list, metadata, grow, configs, delete), offsets, DeleteRecords,
              group offsets (set, reset to earliest), list and delete groups

LZ4 and ZSTD need kafkajs codec packages built from native code (lz4, @kafkajs/zstd) that
would compile at install time; they are not among the codecs tested here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from asyncbroker.testing import BrokerProcess
from jvm.kafka_jvm import KafkaServer

pytestmark = pytest.mark.timeout(240)

HERE = Path(__file__).resolve().parent
NODE = shutil.which("node") or "node"


@pytest.fixture(params=["kafka", "asyncbroker"])
def bootstrap(request: pytest.FixtureRequest) -> str:
    if not (HERE / "node_modules" / "kafkajs").is_dir():
        raise RuntimeError("kafkajs is not installed: `make test` (target `node`) runs npm ci in tests/node")
    if request.param == "kafka":
        kafka: KafkaServer = request.getfixturevalue("kafka")
        return kafka.bootstrap
    broker: BrokerProcess = request.getfixturevalue("asyncbroker")
    return broker.bootstrap


def scenario(name: str, bootstrap: str) -> Any:
    env = {**os.environ, "KAFKAJS_NO_PARTITIONER_WARNING": "1"}
    result = subprocess.run([NODE, str(HERE / "kafkajs_scenarios.mjs"), name, bootstrap, f"js-{uuid.uuid4().hex[:8]}"],
                            capture_output=True, text=True, timeout=180, env=env, check=False)
    assert result.returncode == 0, f"{name} on {bootstrap} exited {result.returncode}:\n{result.stderr[-4000:]}"
    return json.loads(result.stdout)


def test_idempotent_producer_with_each_codec(bootstrap: str) -> None:
    out = scenario("producer", bootstrap)
    assert set(out) == {"none", "gzip", "snappy"}
    for codec, seen in out.items():
        acks = seen["acks"]
        assert all(a["error"] == 0 for a in acks), (codec, acks)
        records = seen["records"]
        assert len(records) == 150, codec
        # Every record once, with its key and header; offsets dense from 0 in each partition.
        by_n = {int(r["headers"]["n"]): r for r in records}
        assert sorted(by_n) == list(range(150)), codec
        for n, r in by_n.items():
            assert r["key"] == f"k{n % 7}" and r["value"] == f"{codec}-{n}".ljust(200, "."), (codec, r)
        for partition in (0, 1):
            offsets = sorted(r["offset"] for r in records if r["partition"] == partition)
            assert offsets == list(range(len(offsets))), (codec, partition)
        # The default partitioner hashes the key: a key's records stay in one partition, in order.
        for key in {r["key"] for r in records}:
            mine = [r for r in records if r["key"] == key]
            assert len({r["partition"] for r in mine}) == 1, (codec, key)
            ns = [int(r["headers"]["n"]) for r in sorted(mine, key=lambda r: r["offset"])]
            assert ns == sorted(ns), (codec, key)
        # The acknowledged base offsets are where each Produce's records landed.
        landed = {(r["partition"], r["offset"]) for r in records}
        assert {(a["partition"], a["baseOffset"]) for a in acks} <= landed, (codec, acks)


def test_consumer_group_commits(bootstrap: str) -> None:
    out = scenario("group", bootstrap)
    assert out["consumed"] == 100 and sum(out["byMember"]) == 100
    assert (out["state"], out["protocolType"], out["members"]) == ("Stable", "consumer", 2)
    assert out["committed"] == [[0, 25], [1, 25], [2, 25], [3, 25]]
    assert out["stateAfterLeave"] == "Empty"


def test_admin(bootstrap: str) -> None:
    out = scenario("admin", bootstrap)
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
