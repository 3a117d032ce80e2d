"""A Kafka Streams application with processing.guarantee=exactly_once_v2 (kafka-streams
4.4.0, tests/jvm/streams) against Kafka 4.4 and asyncbroker: a stateless step and a count
backed by a changelog, its output read back with read_committed. The same facts from both
brokers, and the ones the input implies (issue 14)."""

from __future__ import annotations

import subprocess
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from asyncbroker.testing import BrokerProcess
from jvm.kafka_jvm import KafkaServer, java_command

pytestmark = pytest.mark.timeout(300)

RECORDS = [(f"key-{i % 4}", f"value {i}") for i in range(24)]


def run_app(bootstrap: str) -> str:
    run = uuid.uuid4().hex[:8]
    names = {t: f"streams-{t}-{run}" for t in ("in", "out", "counts")}
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(n, 2, 1) for n in names.values()]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for key, value in RECORDS:
        producer.produce(names["in"], value.encode(), key.encode())
    assert producer.flush(30) == 0
    result = subprocess.run(
        java_command("streams", "asyncbroker.streams.ExactlyOnceApp",
                     [bootstrap, f"eos-app-{run}", names["in"], names["out"], names["counts"], str(len(RECORDS))],
                     heap="384m"),
        capture_output=True, text=True, timeout=240, check=False, stdin=subprocess.DEVNULL)
    facts = [line for line in result.stdout.splitlines() if line.startswith("output=")]
    assert result.returncode == 0 and facts, f"the Streams app failed ({result.returncode}):\n{result.stderr[-4000:]}"
    return facts[-1]


def test_exactly_once_v2_streams_app(kafka: KafkaServer, java_asyncbroker: BrokerProcess) -> None:
    ours = run_app(java_asyncbroker.bootstrap)
    expected_output = ",".join(sorted(value.upper() for _, value in RECORDS))
    assert ours == f"output={expected_output}|counts={{key-0=6, key-1=6, key-2=6, key-3=6}}|state=RUNNING"
    assert run_app(kafka.bootstrap) == ours
