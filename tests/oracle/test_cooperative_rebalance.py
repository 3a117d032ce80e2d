"""Incremental cooperative rebalancing with librdkafka (confluent-kafka), on Kafka 4.4 and on
asyncbroker: the rebalance callbacks each consumer sees must be the same.

One consumer subscribes to two 2-partition topics with the `cooperative-sticky` assignor and
gets all four partitions; a second consumer joins. Under KIP-429 the first revokes two
partitions in one rebalance and the second receives them in a follow-up rebalance, which
librdkafka starts itself after the revocation. Every on_assign / on_revoke is recorded with
its partitions (topics by their symbolic names).

One race is taken out so that both brokers walk the same path: the first consumer's
revocation callback waits until the second consumer has seen the assignment of the
rebalance it joined (librdkafka rejoins only after that callback returns), so the second
consumer's SyncGroup always precedes the first consumer's rejoin.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(180)

TOPICS = ("a", "b")
WAIT = 45.0


class CallbackConsumer(threading.Thread):
    """A librdkafka consumer polled in its own thread, recording its rebalance callbacks."""

    def __init__(self, name: str, bootstrap: str, group: str, topics: dict[str, str],
                 before_revoke: threading.Event | None = None) -> None:
        super().__init__(name=f"consumer-{name}", daemon=True)
        self.bootstrap, self.group, self.topics = bootstrap, group, topics  # real name -> symbol
        self.before_revoke = before_revoke
        self.events: list[tuple[str, list[tuple[str, int]]]] = []
        self.first_assign = threading.Event()
        self.assignment: list[tuple[str, int]] = []
        self.join_state = ""
        self.stop_event = threading.Event()
        self.recording = True
        self.error: BaseException | None = None

    def _parts(self, partitions: Any) -> list[tuple[str, int]]:
        return sorted((self.topics[p.topic], p.partition) for p in partitions)

    def run(self) -> None:
        from confluent_kafka import Consumer

        def on_assign(consumer: Any, partitions: Any) -> None:
            if self.recording:
                self.events.append(("assign", self._parts(partitions)))
                self.first_assign.set()

        def on_revoke(consumer: Any, partitions: Any) -> None:
            if not self.recording:
                return
            self.events.append(("revoke", self._parts(partitions)))
            if self.before_revoke is not None and not self.before_revoke.wait(WAIT):
                self.error = AssertionError("the second consumer saw no assignment before the revocation")

        def on_stats(raw: str) -> None:
            self.join_state = json.loads(raw)["cgrp"]["join_state"]

        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group,
                             "partition.assignment.strategy": "cooperative-sticky",
                             "enable.auto.commit": False, "heartbeat.interval.ms": 200,
                             "session.timeout.ms": 10_000, "statistics.interval.ms": 100,
                             "stats_cb": on_stats})
        try:
            consumer.subscribe(list(self.topics), on_assign=on_assign, on_revoke=on_revoke)
            while not self.stop_event.is_set():
                consumer.poll(0.05)
                self.assignment = self._parts(consumer.assignment())
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc
        finally:
            self.recording = False  # closing revokes everything
            consumer.close()

    def stop(self) -> None:
        self.stop_event.set()
        self.join(WAIT)
        assert not self.is_alive(), f"{self.name} did not stop"
        assert self.error is None, f"{self.name} failed: {self.error!r}"


def wait_until(predicate: Any, what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)  # polling a condition, bounded by the deadline


def create_topics(bootstrap: str, names: list[str]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(n, 2, 1) for n in names]).values():
        future.result(30)

    def ready() -> bool:
        topics = admin.list_topics(timeout=10).topics
        return all(n in topics and len(topics[n].partitions) == 2
                   and all(p.leader >= 0 for p in topics[n].partitions.values()) for n in names)

    wait_until(ready, f"leaders of {names}")


def group_is_stable(bootstrap: str, group: str) -> bool:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    (future,) = admin.describe_consumer_groups([group], request_timeout=10).values()
    description = future.result(10)
    return description.state.name == "STABLE" and all(
        m.assignment.topic_partitions for m in description.members) and len(description.members) == 2


def cooperative_callbacks(bootstrap: str) -> dict[str, list[tuple[str, list[tuple[str, int]]]]]:
    """Run the two-consumer cooperative rebalance on one broker; the callbacks per consumer."""
    suffix = uuid.uuid4().hex[:8]
    topics = {f"{t}-{suffix}": t for t in TOPICS}
    group = f"coop-{suffix}"
    create_topics(bootstrap, list(topics))
    second_assigned = threading.Event()
    first = CallbackConsumer("first", bootstrap, group, topics, before_revoke=second_assigned)
    second = CallbackConsumer("second", bootstrap, group, topics)
    second.first_assign = second_assigned
    first.start()
    try:
        wait_until(lambda: len(first.assignment) == 4 and first.join_state == "steady",
                   "the first consumer to own all four partitions")
        second.start()
        try:
            def settled() -> bool:
                return (len(first.assignment) == 2 and len(second.assignment) == 2
                        and first.join_state == second.join_state == "steady"
                        and group_is_stable(bootstrap, group))

            wait_until(settled, "the partitions to be split two and two in a Stable group")
        finally:
            # Both stop recording before either leaves: a member leaving rebalances the other,
            # which is not the subject.
            first.recording = second.recording = False
            second.stop()
    finally:
        first.recording = False
        first.stop()
    return {"first": first.events, "second": second.events}


def test_cooperative_sticky_callbacks_match_kafka(brokers) -> None:  # type: ignore[no-untyped-def]
    kafka = cooperative_callbacks(brokers.kafka.bootstrap)
    # The setup does what it says on Kafka: all four, then two revoked, two received.
    assert kafka["first"][0] == ("assign", [("a", 0), ("a", 1), ("b", 0), ("b", 1)]), kafka
    revoked = [parts for kind, parts in kafka["first"] if kind == "revoke"]
    received = [p for kind, parts in kafka["second"] if kind == "assign" for p in parts]
    assert len(revoked) == 1 and len(revoked[0]) == 2 and sorted(received) == revoked[0], kafka
    ours = cooperative_callbacks(brokers.ours.bootstrap)
    assert ours == kafka
