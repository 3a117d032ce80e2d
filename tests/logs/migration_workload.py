"""What both directions of a move between asyncbroker and Kafka write before the move
(tests/logs/test_from_kafka.py, test_to_kafka.py): every codec with keys, headers, timestamps
and idempotence; a plain topic with a retention override and deleted records; a compacted
topic with rounds of updates a second apart (each rolls a segment: segment.ms=100 counts
from the segment's first timestamp); optionally committed and aborted transactions; dynamic
broker configs set with kafka-configs.sh; and a consumer group's commits."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from jvm.kafka_jvm import run_tool

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
COMPACTED = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01", "segment.ms": "100",
             "delete.retention.ms": "0"}
CONFIG_COMMAND = "org.apache.kafka.tools.ConfigCommand"
# The group `resumer`'s commits, and the dynamic broker configs (cluster-wide, this node's).
COMMITTED = {("codecs", 0): 17, ("codecs", 1): 23, ("plain", 0): 6}
BROKER_CONFIGS = ((["--entity-default"], "log.retention.ms=123456789"),
                  (["--entity-name", "1"], "message.max.bytes=2000000"))


def write_workload(b: str, *, compacted_rounds: int, transactions: bool = False) -> None:
    """Write it all to the broker at `b`: topics codecs (2 partitions), plain, compacted and,
    with `transactions`, txn (commit, abort, commit by transactional id `mover`)."""
    admin = AdminClient({"bootstrap.servers": b})
    topics = [NewTopic("codecs", 2, 1), NewTopic("plain", 1, 1, config={"retention.ms": "86400000"}),
              NewTopic("compacted", 1, 1, config=COMPACTED)] + ([NewTopic("txn", 1, 1)] if transactions else [])
    for future in admin.create_topics(topics).values():
        future.result(30)
    now = int(time.time() * 1000)
    for i, codec in enumerate(CODECS):
        p = Producer({"bootstrap.servers": b, "compression.type": codec, "enable.idempotence": True})
        for n in range(40):
            p.produce("codecs", f"{codec}-{n}".encode() * 3, f"k{n % 5}".encode(), partition=n % 2,
                      headers=[("codec", codec.encode())], timestamp=now + i * 1000 + n)
        assert p.flush(30) == 0
    p = Producer({"bootstrap.servers": b})
    for n in range(10):
        p.produce("plain", f"p{n}".encode(), partition=0)
    for r in range(compacted_rounds):
        for k in range(4):
            p.produce("compacted", f"r{r}".encode(), f"key-{k}".encode(), partition=0, timestamp=now + r * 1000)
        assert p.flush(30) == 0
    for f in admin.delete_records([TopicPartition("plain", 0, 3)]).values():
        f.result(30)
    if transactions:
        t = Producer({"bootstrap.servers": b, "transactional.id": "mover"})
        t.init_transactions(30)
        for outcome in ("commit", "abort", "commit"):
            t.begin_transaction()
            t.produce("txn", outcome.encode(), partition=0)
            if outcome == "commit":
                t.commit_transaction(30)
            else:
                t.abort_transaction(30)
    for entity, setting in BROKER_CONFIGS:
        result = run_tool(CONFIG_COMMAND, ["--bootstrap-server", b, "--entity-type", "brokers", *entity,
                                           "--alter", "--add-config", setting])
        assert result.returncode == 0, result.stderr[-2000:]
    c = Consumer({"bootstrap.servers": b, "group.id": "resumer", "enable.auto.commit": False})
    commit_until_done(c, [TopicPartition(t, p, o) for (t, p), o in COMMITTED.items()])
    c.close()


_COORDINATOR_MOVING = (KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                       KafkaError.COORDINATOR_NOT_AVAILABLE)


def commit_until_done(consumer: Consumer, offsets: list[TopicPartition], timeout: float = 60.0) -> None:
    """A synchronous commit, repeated while it fails retriably: librdkafka hands back the
    NOT_COORDINATOR Kafka answers while it still loads __consumer_offsets, which takes seconds
    on a busy machine."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            consumer.commit(offsets=offsets, asynchronous=False)
            return
        except KafkaException as e:
            error = e.args[0]
            moving = error.code() in _COORDINATOR_MOVING or error.retriable()
            if not moving or time.monotonic() > deadline:
                raise
            time.sleep(0.2)  # polling the coordinator, bounded by the deadline
