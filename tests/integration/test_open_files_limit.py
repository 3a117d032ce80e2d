"""The open files limit: a broker started under a low soft RLIMIT_NOFILE raises it to the hard
limit, as the JVM does for Kafka, and serves more partitions than the low limit would hold.

Before, a broker started from a shell whose soft limit was 256 took its log dir offline with
EMFILE (and stopped) while creating a 300-partition topic."""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from asyncbroker.testing import BrokerProcess

pytestmark = pytest.mark.timeout(180)


def _highest_open_fd() -> int:
    return max(int(fd) for fd in os.listdir("/proc/self/fd"))


def _open_files_limits(pid: int) -> tuple[int, int]:
    """(soft, hard) RLIMIT_NOFILE of a process, from /proc/<pid>/limits."""
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            return int(soft), int(hard)
    raise AssertionError(f"no open files limit for {pid}")


def test_a_broker_started_under_a_low_soft_limit_raises_it_and_serves_more_partitions_than_it_held() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # Low, but above every descriptor this process holds: the new ones (the child's pipes)
    # must still fit under it until the broker has started.
    low = max(256, _highest_open_fd() + 64)
    partitions = low + 44  # each holds at least its log file open once written to and read
    assert hard >= 4 * partitions, f"the hard limit ({hard}) leaves no room to show the raise"
    broker = BrokerProcess(["num.partitions=1"])
    resource.setrlimit(resource.RLIMIT_NOFILE, (low, hard))
    try:
        broker.start()  # the child inherits the low soft limit
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    try:
        assert broker.process is not None
        pid = broker.process.pid
        assert _open_files_limits(pid) == (hard, hard)
        assert any(f"Raised the open files limit (RLIMIT_NOFILE) from {low} to {hard}" in line
                   for line in broker.log_lines)

        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for future in admin.create_topics([NewTopic("many", partitions, 1)]).values():
            future.result(60)
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
        for partition in range(partitions):
            producer.produce("many", b"value-%d" % partition, partition=partition)
        assert producer.flush(60) == 0

        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "open-files",
                             "enable.auto.commit": False})
        try:
            consumer.assign([TopicPartition("many", p, 0) for p in range(partitions)])
            values: dict[int, bytes] = {}
            deadline = time.monotonic() + 60
            while len(values) < partitions and time.monotonic() < deadline:
                for message in consumer.consume(1000, timeout=1.0):
                    assert message.error() is None, message.error()
                    values[message.partition()] = message.value()
        finally:
            consumer.close()
        assert values == {p: b"value-%d" % p for p in range(partitions)}
        # The broker holds more files than the limit it was started with would have allowed.
        assert len(os.listdir(f"/proc/{pid}/fd")) > low
        assert broker.returncode is None
        assert not [line for line in broker.log_lines if "Too many open files" in line]
    finally:
        broker.stop()
