"""Debian's kcat 1.7.1 (librdkafka 2.0.2) against the broker: -L, -P/-C, -o, -Q."""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest
from confluent_kafka import Producer

# `make test` installs Debian's kcat; a missing kcat fails these tests rather than skipping them.
pytestmark = pytest.mark.timeout(60)

KCAT = shutil.which("kcat") or "/usr/bin/kcat"


def kcat(bootstrap: str, *args: str, stdin: str | None = None, timeout: float = 20) -> str:
    proc = subprocess.run(
        [KCAT, "-b", bootstrap, *args], input=stdin, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, f"kcat {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}"
    return proc.stdout


def produce_timestamped(bootstrap: str, topic: str, timestamps: list[int]) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i, ts in enumerate(timestamps):
        p.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), timestamp=ts)
    assert p.flush(10) == 0


def test_metadata_listing(asyncbroker_bootstrap: str, topic_name: str) -> None:
    kcat(asyncbroker_bootstrap, "-P", "-t", topic_name, stdin="hello\n")
    out = kcat(asyncbroker_bootstrap, "-L")
    assert "1 brokers:" in out
    assert f"broker 1 at {asyncbroker_bootstrap}" in out
    assert f'topic "{topic_name}" with 1 partitions:' in out
    assert "partition 0, leader 1, replicas: 1, isrs: 1" in out


def test_produce_and_consume_keyed(asyncbroker_bootstrap: str, topic_name: str) -> None:
    lines = [f"key{i}:value-{i}" for i in range(50)]
    kcat(asyncbroker_bootstrap, "-P", "-t", topic_name, "-K:", stdin="\n".join(lines) + "\n")
    out = kcat(asyncbroker_bootstrap, "-C", "-t", topic_name, "-o", "beginning", "-e", "-K:", "-f", "%k:%s:%o\n")
    got = out.splitlines()
    assert got == [f"key{i}:value-{i}:{i}" for i in range(50)]


def test_consume_relative_offset_from_end(asyncbroker_bootstrap: str, topic_name: str) -> None:
    kcat(asyncbroker_bootstrap, "-P", "-t", topic_name, stdin="".join(f"m{i}\n" for i in range(10)))
    out = kcat(asyncbroker_bootstrap, "-C", "-t", topic_name, "-o", "-2", "-e", "-f", "%s %o\n")
    assert out.splitlines() == ["m8 8", "m9 9"]


def test_consume_from_timestamp_and_query(asyncbroker_bootstrap: str, topic_name: str) -> None:
    # A minute ago: within the session broker's retention.ms (7 days), which its retention pass
    # applies to a fixed date in the past at any moment.
    base = (int(time.time()) - 60) * 1000
    produce_timestamped(asyncbroker_bootstrap, topic_name, [base + 1000 * i for i in range(10)])
    out = kcat(asyncbroker_bootstrap, "-C", "-t", topic_name, "-o", f"s@{base + 6500}", "-e", "-f", "%s %T\n")
    assert out.splitlines() == [f"v{i} {base + 1000 * i}" for i in range(7, 10)]

    out = kcat(asyncbroker_bootstrap, "-Q", "-t", f"{topic_name}:0:{base + 3000}")
    assert f"{topic_name} [0] offset 3" in out
    out = kcat(asyncbroker_bootstrap, "-Q", "-t", f"{topic_name}:0:{base + 99_000}")
    assert f"{topic_name} [0] offset -1" in out
