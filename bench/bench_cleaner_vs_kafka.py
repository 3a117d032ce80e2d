"""The cleaner beside Kafka 4.4's on the same bytes: MB/s per worker from each one's summary line.

Our on-disk format is Kafka's, so both cleaners can clean the very same files:

1. asyncbroker (cleaner off) takes compacted topics `c100` (100 B values) and `c1k` (1 KiB
   values), 2 partitions each, 16 MiB segments, and MIB (default 64) MiB of records per
   partition with SUPERSEDED (default 50%) of them overwritten later, produced by
   confluent-kafka with 16-byte keys. The broker stops cleanly.
2. The log dir is copied. `asyncbroker migrate --to-kafka` hands the copy to Kafka 4.4, which
   starts on it with one cleaner thread and Kafka's defaults otherwise, run as
   kafka-server-start.sh runs it (C2 and G1: with the test suite's quick-start JVM options, C1
   only, its cleaner ran at half this speed); asyncbroker starts on the original with one
   cleaner worker.
3. Each broker's "N MB of log processed in S seconds (R MB/sec)" line (the same multi-line
   message in both, Kafka's LogCleaner.recordStats) is read per partition. The better of a
   topic's two partitions is reported for each (the first clean pays for warm-up: the JVM's
   JIT, our worker process).

Target (issue 17): MB/s per worker >= Kafka 4.4's on the same data. Prints RESULT lines for
`python -m bench`; asserts nothing.

    .venv/bin/python bench/bench_cleaner_vs_kafka.py
    MIB=16 .venv/bin/python bench/bench_cleaner_vs_kafka.py     # a quick look
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from asyncbroker.testing import BrokerProcess  # noqa: E402

MIB = float(os.environ.get("MIB", "64"))
SUPERSEDED = float(os.environ.get("SUPERSEDED", "0.5"))
TOPICS = {"c100": 100, "c1k": 1024}
PARTITIONS = 2
SEGMENT_BYTES = 16 * 1024 * 1024

# "\tLog cleaner thread 0 cleaned log c100-1 (dirty section = [0, 123])\n\t64.0 MB of log processed
# in 1.2 seconds (53.3 MB/sec)."
SUMMARY = re.compile(r"cleaned log (\S+)-(\d+) \(dirty section = \[\d+, \d+\]\)\s+([\d,.]+) MB of log processed "
                     r"in ([\d,.]+) seconds \(([\d,.]+) MB/sec\)")


def fill(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    configs = {"cleanup.policy": "compact", "segment.bytes": str(SEGMENT_BYTES)}
    for future in admin.create_topics([NewTopic(t, PARTITIONS, 1, config=configs) for t in TOPICS]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1_000_000,
                         "queue.buffering.max.kbytes": 1_048_576})
    for topic, size in TOPICS.items():
        value = os.urandom(size)
        per_partition = int(MIB * 1024 * 1024 / (size + 16 + 20))
        keys = max(1, int(per_partition * (1 - SUPERSEDED)))
        for partition in range(PARTITIONS):
            for i in range(per_partition):
                while True:
                    try:
                        producer.produce(topic, value, b"key-%012d" % (i % keys), partition=partition)
                        break
                    except BufferError:  # the client's queue is full: let deliveries free it
                        producer.poll(0.01)
        if producer.flush(300):
            raise RuntimeError(f"{topic}: records left undelivered")


def summaries(output: Callable[[], str], timeout: float = float(os.environ.get("CLEAN_TIMEOUT", "300"))) -> dict[tuple[str, int], tuple[float, float, float]]:
    """(topic, partition) -> (MB processed, seconds, MB/sec) from a broker's log, once every
    partition of TOPICS has been cleaned."""
    wanted = {(t, p) for t in TOPICS for p in range(PARTITIONS)}
    deadline = time.monotonic() + timeout
    while True:
        found = {(m.group(1), int(m.group(2))): (float(m.group(3).replace(",", "")), float(m.group(4).replace(",", "")),
                                                 float(m.group(5).replace(",", "")))
                 for m in SUMMARY.finditer(output())}
        if wanted <= found.keys():
            return found
        if time.monotonic() > deadline:
            said = "\n".join(line for line in output().splitlines() if "clean" in line.lower())
            raise RuntimeError(f"cleaned only {sorted(found)} in {timeout} s; the log said:\n{said[-4000:]}")
        time.sleep(0.2)  # polling a log file, bounded by the deadline


def report(name: str, found: dict[tuple[str, int], tuple[float, float, float]]) -> dict[str, float]:
    best = {}
    for topic in TOPICS:
        runs = [found[(topic, p)] for p in range(PARTITIONS)]
        for p, (mb, secs, rate) in enumerate(runs):
            print(f"  {name:12s} {topic}-{p}: {mb:,.1f} MB in {secs:.1f} s, {rate:,.1f} MB/sec", flush=True)
        best[topic] = max(r[2] for r in runs)
    return best


def main() -> int:
    from jvm.kafka_jvm import KafkaServer

    print(f"{MIB:g} MiB per partition, {PARTITIONS} partitions per topic, {SUPERSEDED:.0%} superseded", flush=True)
    root = Path(tempfile.mkdtemp(prefix="bench-cleaner-kafka-"))
    try:
        ours_dir, kafka_dir = root / "asyncbroker", root / "kafka"
        with BrokerProcess(["log.cleaner.enable=false"], log_dir=ours_dir) as broker:
            fill(broker.bootstrap)
            if broker.stop() != 0:
                raise RuntimeError("asyncbroker did not stop cleanly")
        shutil.copytree(ours_dir, kafka_dir)
        migrated = subprocess.run([sys.executable, "-m", "asyncbroker", "migrate", str(kafka_dir), "--to-kafka"],
                                  capture_output=True, text=True, timeout=300, check=False)
        if migrated.returncode != 0:
            raise RuntimeError(f"migrate --to-kafka failed: {migrated.stderr}")

        kafka = KafkaServer({"log.cleaner.threads": "1", "log.cleaner.backoff.ms": "200"}, heap="1g", as_scripts=True)
        try:
            kafka.start_unformatted(kafka_dir)
            theirs = report("Kafka 4.4", summaries(kafka.output))
        finally:
            kafka.stop()
        with BrokerProcess(["log.cleaner.threads=1", "log.cleaner.backoff.ms=200"], log_dir=ours_dir) as broker:
            ours = report("asyncbroker", summaries(broker.output))
    finally:
        shutil.rmtree(root, ignore_errors=True)

    print("\ncleaner MB/s per worker on the same files (ratio > 1: asyncbroker is faster)")
    for topic, size in TOPICS.items():
        name = f"cleaner {size} B records, {SUPERSEDED:.0%} superseded, 1 worker"
        ratio = ours[topic] / theirs[topic]
        print(f"  {name:48s} {ours[topic]:8,.1f} {theirs[topic]:8,.1f} {ratio:6.2f}x")
        print(f"RESULT {name} | {ours[topic]:,.1f} | MB/s | >= Kafka 4.4 ({theirs[topic]:,.1f}, ratio {ratio:.2f}x)",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
