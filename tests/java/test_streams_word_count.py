"""Kafka Streams word count (kafka-streams 4.4.0, tests/jvm/streams WordCountApp) against
asyncbroker, with processing.guarantee=exactly_once_v2: lines are split into words, re-keyed
through a repartition topic and counted in a state store backed by a compacted changelog.
The application is SIGKILLed and restarted mid-stream, then the broker is; the final counts
must be exact.

What the run exercises on the broker: internal topic creation with Streams' configs, the
repartition topics' purge by DeleteRecords, cooperative rebalancing between two stream
threads (and after each restart), transactions, and recovery of the store from its changelog.
"""

from __future__ import annotations

import subprocess
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from asyncbroker.testing import BrokerProcess
from jvm.kafka_jvm import java_command

pytestmark = pytest.mark.timeout(420)

LINES = [
    "the quick brown fox", "jumps over the lazy dog", "the dog barks", "a fox runs",
    "quick quick slow", "over and over again", "the end is not the end",
]


class App:
    """The Streams application as a child process; its stdout's state lines are collected."""

    def __init__(self, bootstrap: str, app_id: str, state_dir: Path, input_topic: str, output_topic: str) -> None:
        self.process = subprocess.Popen(
            java_command("streams", "asyncbroker.streams.WordCountApp",
                         [bootstrap, app_id, str(state_dir), input_topic, output_topic, "exactly_once_v2"],
                         heap="384m"),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.states: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("state="):
                self.states.append(line.strip()[len("state="):])

    def wait_running(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while not (self.states and self.states[-1] == "RUNNING"):
            assert self.process.poll() is None, f"the Streams app exited ({self.process.returncode}): {self.states}"
            assert time.monotonic() < deadline, f"the Streams app is not RUNNING: {self.states}"
            time.sleep(0.05)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(30)

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.kill()


def produce_lines(bootstrap: str, topic: str, lines: list[str]) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "message.timeout.ms": 60_000})
    for i, line in enumerate(lines):
        p.produce(topic, line.encode(), f"line-{i}".encode())
    assert p.flush(60) == 0


class Counts:
    """The latest count per word on the output topic, as a read_committed consumer sees it."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"counts-{uuid.uuid4().hex[:8]}",
                                  "isolation.level": "read_committed", "enable.auto.commit": False,
                                  "auto.offset.reset": "earliest"})
        self.consumer.subscribe([topic])
        self.latest: dict[str, int] = {}

    def wait_for(self, expected: dict[str, int], timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while self.latest != expected:
            assert time.monotonic() < deadline, f"counts {self.latest} never became {expected}"
            for m in self.consumer.consume(500, 0.2):
                if m.error() is None:
                    self.latest[m.key().decode()] = int(m.value())

    def close(self) -> None:
        self.consumer.close()


def word_counts(lines: list[str]) -> dict[str, int]:
    return dict(Counter(w for line in lines for w in line.lower().split()))


def test_word_count_survives_app_and_broker_kills(tmp_path: Path) -> None:
    run = uuid.uuid4().hex[:8]
    input_topic, output_topic, app_id = f"lines-{run}", f"word-counts-{run}", f"wordcount-{run}"
    with BrokerProcess(["node.id=1", "group.initial.rebalance.delay.ms=0"], log_dir=tmp_path / "logs") as broker:
        bootstrap = broker.bootstrap
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic(input_topic, 2, 1), NewTopic(output_topic, 2, 1)]).values():
            future.result(30)
        counts = Counts(bootstrap, output_topic)
        app = App(bootstrap, app_id, tmp_path / "state", input_topic, output_topic)
        try:
            app.wait_running()
            sent = LINES * 3
            produce_lines(bootstrap, input_topic, sent)
            counts.wait_for(word_counts(sent))

            # The application dies mid-stream (SIGKILL: no commit, no close) and comes back.
            batch = LINES * 20
            produce_lines(bootstrap, input_topic, batch)
            sent += batch
            app.kill()
            app = App(bootstrap, app_id, tmp_path / "state", input_topic, output_topic)
            app.wait_running()
            counts.wait_for(word_counts(sent))

            # The broker dies mid-stream (SIGKILL) and restarts on the same port and log dir.
            batch = LINES * 20
            produce_lines(bootstrap, input_topic, batch)
            sent += batch
            broker.restart(kill=True)
            batch = LINES * 5
            produce_lines(bootstrap, input_topic, batch)
            sent += batch
            counts.wait_for(word_counts(sent), timeout=180)
        finally:
            app.close()
            counts.close()

        # Streams made its internal topics with its configs: a repartition topic it purges with
        # DeleteRecords, and a compacted changelog for the store.
        repartition, changelog = f"{app_id}-words-repartition", f"{app_id}-counts-changelog"
        topics = admin.list_topics(timeout=10).topics
        assert repartition in topics and changelog in topics, sorted(topics)
        resources = [ConfigResource(ConfigResource.Type.TOPIC, t) for t in (repartition, changelog)]
        described = {r.name: f.result(10) for r, f in admin.describe_configs(resources).items()}
        assert described[repartition]["cleanup.policy"].value == "delete"
        assert described[repartition]["retention.ms"].value == "-1"
        assert described[changelog]["cleanup.policy"].value == "compact"
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks"})
        try:
            purged = [c.get_watermark_offsets(TopicPartition(repartition, p), timeout=10)[0]
                      for p in range(len(topics[repartition].partitions))]
        finally:
            c.close()
        assert sum(purged) > 0, f"the repartition topic was never purged: log start offsets {purged}"
