"""Consumer groups with real clients: one group of three different clients,
rebalances, commits, broker restarts (SIGTERM and SIGKILL) and kcat -G.

Each consumer runs in its own thread (aiokafka in its own event loop there)
and polls continuously, the way applications do, so rebalances complete
without the test driving them. Waits are deadlines on observed state.
"""

from __future__ import annotations

import asyncio
import subprocess
import threading
import time
from typing import Any

import pytest

from asyncbroker.testing import BrokerProcess
from wait_for import wait_until

pytestmark = pytest.mark.timeout(90)

GROUP_OVERRIDES = [
    "group.initial.rebalance.delay.ms=0",
    "offsets.topic.num.partitions=3",
    "num.partitions=6",
]


def produce(bootstrap: str, topic: str, values: range) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in values:
        p.produce(topic, key=str(i).encode(), value=str(i).encode())
    assert p.flush(20) == 0


class ConsumerThread(threading.Thread):
    """Polls one client in a loop, committing what it consumed; records assignment and values."""

    def __init__(self, kind: str, bootstrap: str, group: str, topic: str) -> None:
        super().__init__(name=f"consumer-{kind}", daemon=True)
        self.kind, self.bootstrap, self.group, self.topic = kind, bootstrap, group, topic
        self.values: list[int] = []
        self.assignment: frozenset[int] = frozenset()
        self.error: BaseException | None = None
        self.stop_event = threading.Event()
        self.closed = threading.Event()

    def run(self) -> None:
        try:
            if self.kind == "aiokafka":
                asyncio.run(self._run_aiokafka())
            elif self.kind == "kafka-python":
                self._run_kafka_python()
            else:
                self._run_confluent()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc
        finally:
            self.closed.set()

    def _run_confluent(self) -> None:
        from confluent_kafka import Consumer

        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group, "enable.auto.commit": False,
                      "auto.offset.reset": "earliest", "heartbeat.interval.ms": 300,
                      "session.timeout.ms": 6000, "client.id": "confluent"})
        c.subscribe([self.topic])
        try:
            while not self.stop_event.is_set():
                msg = c.poll(0.05)
                self.assignment = frozenset(tp.partition for tp in c.assignment())
                if msg is None or msg.error():
                    continue
                self.values.append(int(msg.value()))
                c.commit(message=msg, asynchronous=False)
        finally:
            c.close()

    def _run_kafka_python(self) -> None:
        from kafka import KafkaConsumer

        c = KafkaConsumer(self.topic, bootstrap_servers=self.bootstrap, group_id=self.group,
                          enable_auto_commit=False, auto_offset_reset="earliest", heartbeat_interval_ms=300,
                          session_timeout_ms=6000, client_id="kafka-python")
        try:
            while not self.stop_event.is_set():
                batches = c.poll(timeout_ms=50)
                self.assignment = frozenset(tp.partition for tp in c.assignment())
                for records in batches.values():
                    self.values.extend(int(r.value) for r in records)
                if batches:
                    c.commit()
        finally:
            c.close()

    async def _run_aiokafka(self) -> None:
        from aiokafka import AIOKafkaConsumer

        c = AIOKafkaConsumer(self.topic, bootstrap_servers=self.bootstrap, group_id=self.group,
                             enable_auto_commit=False, auto_offset_reset="earliest", heartbeat_interval_ms=300,
                             session_timeout_ms=6000, client_id="aiokafka")
        await c.start()
        try:
            while not self.stop_event.is_set():
                batches = await c.getmany(timeout_ms=50)
                self.assignment = frozenset(tp.partition for tp in c.assignment())
                for records in batches.values():
                    self.values.extend(int(r.value) for r in records)
                if batches:
                    await c.commit()
        finally:
            await c.stop()

    def close(self) -> None:
        self.stop_event.set()
        assert self.closed.wait(20), f"{self.kind} consumer did not close"
        assert self.error is None, f"{self.kind} consumer failed: {self.error!r}"


def split_between(consumers: list[ConsumerThread], partitions: int) -> bool:
    """Every consumer owns at least one partition, and together exactly all of them, once."""
    sets = [c.assignment for c in consumers]
    return all(sets) and sorted(p for s in sets for p in s) == list(range(partitions))


def test_three_clients_share_a_group_rebalance_commit_and_resume_after_restart() -> None:
    with BrokerProcess(GROUP_OVERRIDES) as broker:
        topic, group = "mixed", "mixed-group"
        produce(broker.bootstrap, topic, range(0, 60))
        consumers = [ConsumerThread(kind, broker.bootstrap, group, topic)
                     for kind in ("confluent", "kafka-python", "aiokafka")]
        for c in consumers:
            c.start()
        try:
            wait_until(lambda: split_between(consumers, 6), 40, message="6 partitions split between 3 members")
            wait_until(lambda: sorted(v for c in consumers for v in c.values) == list(range(60)), 20,
                       message="the first 60 records consumed exactly once")
            # kafka-python leaves: the other two take over its partitions.
            leaving = consumers.pop(1)
            leaving.close()
            wait_until(lambda: split_between(consumers, 6), 30, message="rebalance after a member left")
            produce(broker.bootstrap, topic, range(60, 90))
            wait_until(lambda: set(range(60, 90)) <= {v for c in consumers for v in c.values}, 20,
                       message="records produced after the rebalance")
        finally:
            for c in consumers:
                c.close()
        seen_before = sorted(v for c in consumers + [leaving] for v in c.values)
        assert set(seen_before) == set(range(90))

        broker.restart()
        produce(broker.bootstrap, topic, range(90, 100))
        resumed = ConsumerThread("confluent", broker.bootstrap, group, topic)
        resumed.start()
        try:
            wait_until(lambda: len(resumed.values) >= 10, 30, message="records after the restart")
            time.sleep(0.5)  # allow any wrongly re-delivered record to show up
        finally:
            resumed.close()
        assert sorted(resumed.values) == list(range(90, 100))


def test_committed_offsets_survive_sigkill() -> None:
    from confluent_kafka import Consumer, TopicPartition

    with BrokerProcess(GROUP_OVERRIDES) as broker:
        produce(broker.bootstrap, "killed", range(20))
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-kill", "enable.auto.commit": False,
                      "auto.offset.reset": "earliest"})
        c.assign([TopicPartition("killed", p) for p in range(6)])
        wanted = [TopicPartition("killed", p, 2 + p) for p in range(6)]
        c.commit(offsets=wanted, asynchronous=False)
        c.close()
        broker.restart(kill=True)
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-kill"})
        try:
            got = c.committed([TopicPartition("killed", p) for p in range(6)], timeout=20)
        finally:
            c.close()
        assert [(tp.partition, tp.offset) for tp in got] == [(p, 2 + p) for p in range(6)]


def test_kcat_balanced_consumer() -> None:
    with BrokerProcess(GROUP_OVERRIDES) as broker:
        produce(broker.bootstrap, "kcat-g", range(30))
        proc = subprocess.Popen(
            ["kcat", "-u", "-b", broker.bootstrap, "-G", "kcat-group", "-o", "beginning", "-f", "%s\n",
             "-X", "auto.commit.interval.ms=100", "kcat-g"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)  # type: ignore[union-attr]
        reader.start()
        try:
            wait_until(lambda: len(lines) >= 30, 30, message="kcat -G to print every record")
            # kcat commits automatically; wait for the offsets to land.
            from confluent_kafka import Consumer, TopicPartition

            c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "kcat-group"})
            try:
                def committed_total() -> bool:
                    tps = c.committed([TopicPartition("kcat-g", p) for p in range(6)], timeout=10)
                    return sum(max(tp.offset, 0) for tp in tps) == 30
                wait_until(committed_total, 20, message="kcat's auto-commits")
            finally:
                c.close()
        finally:
            proc.terminate()
            proc.wait(10)
        assert sorted(int(line) for line in lines) == list(range(30))


def test_static_member_restart_keeps_its_assignment_without_rebalance() -> None:
    from confluent_kafka import Consumer
    from confluent_kafka.admin import AdminClient

    with BrokerProcess(GROUP_OVERRIDES) as broker:
        produce(broker.bootstrap, "static-t", range(3))

        def start() -> Any:
            c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "static-g",
                          "group.instance.id": "inst-1", "session.timeout.ms": 10000})
            c.subscribe(["static-t"])

            def assigned() -> bool:
                c.poll(0.05)
                return bool(c.assignment())
            wait_until(assigned, 20, message="an assignment")
            return c

        first = start()
        first_assignment = sorted(tp.partition for tp in first.assignment())
        first.close()  # a static member does not leave the group on close
        second = start()
        try:
            assert sorted(tp.partition for tp in second.assignment()) == first_assignment == list(range(6))
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            desc = admin.describe_consumer_groups(["static-g"], request_timeout=10)["static-g"].result()
            assert [m.group_instance_id for m in desc.members] == ["inst-1"]
        finally:
            second.close()
        rebalances = [line for line in broker.log_lines if "Preparing to rebalance group static-g" in line]
        assert len(rebalances) == 1, rebalances  # only the first join


def test_cooperative_sticky_incremental_rebalance() -> None:
    """KIP-429 runs over the classic protocol: revocation happens in a second, client-driven rebalance."""
    from confluent_kafka import Consumer

    with BrokerProcess(GROUP_OVERRIDES) as broker:
        produce(broker.bootstrap, "coop", range(6))
        consumers = [Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "coop-g",
                               "partition.assignment.strategy": "cooperative-sticky",
                               "heartbeat.interval.ms": 200}) for _ in range(2)]
        try:
            consumers[0].subscribe(["coop"])

            def first_owns_all() -> bool:
                consumers[0].poll(0.05)
                return sorted(tp.partition for tp in consumers[0].assignment()) == list(range(6))
            wait_until(first_owns_all, 20, message="the first member to own every partition")
            consumers[1].subscribe(["coop"])

            def split() -> bool:
                for c in consumers:
                    c.poll(0.05)
                sets = [sorted(tp.partition for tp in c.assignment()) for c in consumers]
                return all(sets) and sorted(sets[0] + sets[1]) == list(range(6))
            wait_until(split, 30, message="an incremental rebalance splitting the partitions")
        finally:
            for c in consumers:
                c.close()
