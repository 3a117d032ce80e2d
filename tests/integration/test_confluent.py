"""confluent-kafka (librdkafka) producer, consumer (assign) and AdminClient."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

pytestmark = pytest.mark.timeout(60)

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def produce(bootstrap: str, topic: str, messages: list[tuple], **conf: object) -> list:
    """Produce (key, value[, headers[, timestamp]]) tuples; return the delivery reports."""
    reports: list = []
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **conf})
    for m in messages:
        kwargs: dict = {"key": m[0], "value": m[1]}
        if len(m) > 2 and m[2] is not None:
            kwargs["headers"] = m[2]
        if len(m) > 3:
            kwargs["timestamp"] = m[3]
        p.produce(topic, on_delivery=lambda err, msg: reports.append((err, msg)), **kwargs)
    assert p.flush(20) == 0
    errors = [err for err, _ in reports if err is not None]
    assert not errors, errors
    return reports


def consume(bootstrap: str, topic: str, count: int, partition: int = 0, offset: int = OFFSET_BEGINNING,
            timeout: float = 20) -> list:
    c = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "test-assign",
        "enable.auto.commit": False,
        "fetch.wait.max.ms": 100,
    })
    try:
        c.assign([TopicPartition(topic, partition, offset)])
        out: list = []
        deadline = time.monotonic() + timeout
        while len(out) < count and time.monotonic() < deadline:
            msg = c.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                raise KafkaException(msg.error())
            out.append(msg)
        return out
    finally:
        c.close()


@pytest.mark.parametrize("codec", CODECS)
def test_produce_consume_every_codec(asyncbroker_bootstrap: str, topic_name: str, codec: str) -> None:
    messages = [(f"key-{i}".encode(), (f"value-{i}-" * 20).encode()) for i in range(500)]
    reports = produce(asyncbroker_bootstrap, topic_name, messages, **{"compression.type": codec})
    assert sorted(msg.offset() for _, msg in reports) == list(range(500))
    got = consume(asyncbroker_bootstrap, topic_name, 500)
    assert [(m.key(), m.value()) for m in got] == messages
    assert [m.offset() for m in got] == list(range(500))


def test_headers_and_null_values(asyncbroker_bootstrap: str, topic_name: str) -> None:
    messages = [
        (b"k1", b"v1", [("h1", b"x"), ("h2", None)]),
        (b"tombstone", None, None),
        (None, b"keyless", [("only", b"header")]),
    ]
    produce(asyncbroker_bootstrap, topic_name, messages)
    got = consume(asyncbroker_bootstrap, topic_name, 3)
    assert [(m.key(), m.value()) for m in got] == [(m[0], m[1]) for m in messages]
    assert got[0].headers() == [("h1", b"x"), ("h2", None)]
    assert got[1].headers() is None
    assert got[2].headers() == [("only", b"header")]


def test_acks_variants_and_timestamps(asyncbroker_bootstrap: str, topic_name: str) -> None:
    for acks in ("0", "1", "all"):
        produce(asyncbroker_bootstrap, topic_name, [(b"k", f"acks={acks}".encode())], acks=acks)
    got = consume(asyncbroker_bootstrap, topic_name, 3)
    assert [m.value() for m in got] == [b"acks=0", b"acks=1", b"acks=all"]
    ts_type, ts = got[0].timestamp()
    assert ts_type == 1 and abs(ts - time.time() * 1000) < 60_000  # CreateTime


def test_admin_list_offsets_and_delete_records(asyncbroker_bootstrap: str, topic_name: str) -> None:
    admin = AdminClient({"bootstrap.servers": asyncbroker_bootstrap})
    # A minute ago: within the session broker's retention.ms (7 days), which its retention pass
    # applies to a fixed date in the past at any moment.
    base = (int(time.time()) - 60) * 1000
    produce(asyncbroker_bootstrap, topic_name,
            [(f"k{i}".encode(), f"v{i}".encode(), None, base + 10 * i) for i in range(20)])
    tp = TopicPartition(topic_name, 0)

    def list_offset(spec: OffsetSpec) -> tuple[int, int]:
        res = admin.list_offsets({tp: spec}, request_timeout=10)[tp].result(timeout=10)
        return res.offset, res.timestamp

    assert list_offset(OffsetSpec.earliest())[0] == 0
    assert list_offset(OffsetSpec.latest())[0] == 20
    assert list_offset(OffsetSpec.max_timestamp()) == (19, base + 190)
    assert list_offset(OffsetSpec.for_timestamp(base + 55)) == (6, base + 60)
    assert list_offset(OffsetSpec.for_timestamp(base + 10_000))[0] == -1

    deleted = admin.delete_records([TopicPartition(topic_name, 0, 5)], request_timeout=10)
    assert deleted[tp].result(timeout=10).low_watermark == 5
    assert list_offset(OffsetSpec.earliest())[0] == 5
    got = consume(asyncbroker_bootstrap, topic_name, 15)
    assert got[0].offset() == 5

    # -1: up to the high watermark.
    admin.delete_records([TopicPartition(topic_name, 0, -1)], request_timeout=10)[tp].result(timeout=10)
    assert list_offset(OffsetSpec.earliest())[0] == 20

    # Past the high watermark: OFFSET_OUT_OF_RANGE.
    fut = admin.delete_records([TopicPartition(topic_name, 0, 100)], request_timeout=10)[tp]
    with pytest.raises(KafkaException) as info:
        fut.result(timeout=10)
    assert "OFFSET_OUT_OF_RANGE" in str(info.value) or "out of range" in str(info.value).lower()


def test_multi_partition_topic(asyncbroker_bootstrap: str, topic_name: str) -> None:
    admin = AdminClient({"bootstrap.servers": asyncbroker_bootstrap})
    admin.create_topics([NewTopic(topic_name, num_partitions=3, replication_factor=1)])[topic_name].result(10)
    p = Producer({"bootstrap.servers": asyncbroker_bootstrap, "linger.ms": 0})
    for part in range(3):
        for i in range(10):
            p.produce(topic_name, key=b"k", value=f"{part}-{i}".encode(), partition=part)
    assert p.flush(10) == 0
    for part in range(3):
        got = consume(asyncbroker_bootstrap, topic_name, 10, partition=part)
        assert [m.value() for m in got] == [f"{part}-{i}".encode() for i in range(10)]


def test_large_messages_round_trip(asyncbroker_bootstrap: str, topic_name: str) -> None:
    """10 KiB values: fetches big enough to go through sendfile."""
    messages = [(f"k{i}".encode(), bytes([i % 251]) * 10240) for i in range(300)]
    produce(asyncbroker_bootstrap, topic_name, messages)
    got = consume(asyncbroker_bootstrap, topic_name, 300)
    assert [(m.key(), m.value()) for m in got] == messages
