"""The README's "When you outgrow one machine" snippet runs as written, but for the ports:
`asyncbroker migrate` on a directory asyncbroker wrote, then Kafka 4.4's kafka-server-start.sh
(the class it runs) on the properties file migrate wrote, in the same working directory."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from asyncbroker.testing import BrokerProcess
from jvm.kafka_jvm import KAFKA_MAIN, free_port, java_command, metadata_answers
from topic_reader import read_all

pytestmark = pytest.mark.timeout(300)

REPO = Path(__file__).resolve().parents[2]


def snippet_lines() -> list[list[str]]:
    section = (REPO / "README.md").read_text().split("## When you outgrow one machine", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```sh\n(.*?)```", section, re.S)
    return [shlex.split(line, comments=True) for line in block.splitlines() if line.strip()]


def test_outgrow_snippet(tmp_path: Path) -> None:
    with BrokerProcess([], log_dir=tmp_path / "data") as b:
        p = Producer({"bootstrap.servers": b.bootstrap})
        for i in range(5):
            p.produce("orders", f"order-{i}".encode(), partition=0)
        assert p.flush(30) == 0
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "billing", "enable.auto.commit": False})
        c.commit(offsets=[TopicPartition("orders", 0, 3)], asynchronous=False)
        c.close()
        orders = read_all(b.bootstrap, "orders", 1)
    migrate, start = snippet_lines()
    assert migrate[0] == "asyncbroker" and start[0] == "bin/kafka-server-start.sh"
    result = subprocess.run([sys.executable, "-m", "asyncbroker", *migrate[1:]], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    properties = tmp_path / start[1]
    port, controller_port = free_port(), free_port()
    text = properties.read_text()
    assert "log.dirs=" + str(tmp_path / "data") in text
    properties.write_text(text.replace(":9092", f":{port}").replace(":9093", f":{controller_port}"))
    out = (tmp_path / "kafka.out").open("wb")
    kafka = subprocess.Popen(java_command("kafka", KAFKA_MAIN, start[1:], heap="768m",
                                          jvm_args=[f"-Dkafka.logs.dir={tmp_path}"]),
                             cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while not metadata_answers(port):
            assert kafka.poll() is None, (tmp_path / "kafka.out").read_text()[-4000:]
            assert time.monotonic() < deadline, "Kafka did not answer Metadata within 90 s"
            time.sleep(0.1)  # polling a condition with a deadline
        bootstrap = f"127.0.0.1:{port}"
        assert read_all(bootstrap, "orders", 1) == orders
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "billing", "enable.auto.commit": False})
        try:
            (committed,) = c.committed([TopicPartition("orders", 0)], timeout=30)
            assert committed.offset == 3
        finally:
            c.close()
    finally:
        kafka.terminate()
        kafka.wait(60)
        out.close()
