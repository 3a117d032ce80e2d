"""What the Node.js client tests share: the broker fixture (Kafka 4.4, then asyncbroker),
running one scenario script with the machine's Node.js, and the checks of a produce run."""

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

HERE = Path(__file__).resolve().parent
NODE = shutil.which("node") or "node"


@pytest.fixture(params=["kafka", "asyncbroker"])
def bootstrap(request: pytest.FixtureRequest) -> str:
    """The same scenario on Kafka 4.4 and on asyncbroker (started as users start it)."""
    if not (HERE / "node_modules" / ".installed").exists():
        raise RuntimeError("the Node.js clients are not installed: `make test` (target `node`) installs them")
    if request.param == "kafka":
        kafka: KafkaServer = request.getfixturevalue("kafka")
        return kafka.bootstrap
    broker: BrokerProcess = request.getfixturevalue("asyncbroker")
    return broker.bootstrap


def run_scenario(script: str, name: str, bootstrap: str) -> Any:
    """Run `name` from tests/node/`script`; the JSON it printed."""
    env = {**os.environ, "KAFKAJS_NO_PARTITIONER_WARNING": "1"}
    result = subprocess.run([NODE, str(HERE / script), name, bootstrap, f"js-{uuid.uuid4().hex[:8]}"],
                            capture_output=True, text=True, timeout=180, env=env, check=False)
    assert result.returncode == 0, f"{script} {name} on {bootstrap} exited {result.returncode}:\n{result.stderr[-4000:]}"
    return json.loads(result.stdout)


def check_idempotent_produce(out: dict[str, Any], codecs: set[str]) -> None:
    """Per codec: 3 sends of 50 records (key k<n % 7>, value "<codec>-<n>" padded to 200,
    header n) over 2 partitions, acknowledged and read back whole."""
    assert set(out) == codecs
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
        # The partitioner hashes the key: a key's records stay in one partition, in order.
        for key in {r["key"] for r in records}:
            mine = [r for r in records if r["key"] == key]
            assert len({r["partition"] for r in mine}) == 1, (codec, key)
            ns = [int(r["headers"]["n"]) for r in sorted(mine, key=lambda r: r["offset"])]
            assert ns == sorted(ns), (codec, key)
        # The acknowledged base offsets are where each send's records landed.
        landed = {(r["partition"], r["offset"]) for r in records}
        assert {(a["partition"], a["baseOffset"]) for a in acks} <= landed, (codec, acks)
