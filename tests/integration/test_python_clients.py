"""kafka-python and aiokafka produce and consume (no consumer group: assign)."""

from __future__ import annotations

import asyncio

import pytest

pytestmark = pytest.mark.timeout(60)


def test_kafka_python_produce_consume(asyncbroker_bootstrap: str, topic_name: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    producer = KafkaProducer(bootstrap_servers=asyncbroker_bootstrap, linger_ms=5, compression_type="gzip")
    futures = [
        producer.send(topic_name, key=f"k{i}".encode(), value=f"v{i}".encode(), headers=[("h", b"1")])
        for i in range(100)
    ]
    producer.send(topic_name, key=b"null", value=None)
    producer.flush(20)
    assert [f.get(10).offset for f in futures] == list(range(100))
    producer.close()

    consumer = KafkaConsumer(bootstrap_servers=asyncbroker_bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=10_000)
    tp = TopicPartition(topic_name, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    got = []
    for msg in consumer:
        got.append(msg)
        if len(got) == 101:
            break
    consumer.close()
    assert [(m.key, m.value) for m in got[:100]] == [(f"k{i}".encode(), f"v{i}".encode()) for i in range(100)]
    assert got[0].headers == [("h", b"1")]
    assert (got[100].key, got[100].value) == (b"null", None)


async def test_aiokafka_produce_consume(asyncbroker_bootstrap: str, topic_name: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    producer = AIOKafkaProducer(bootstrap_servers=asyncbroker_bootstrap, compression_type="lz4", linger_ms=5)
    await producer.start()
    try:
        batch = [await producer.send(topic_name, key=f"k{i}".encode(), value=f"v{i}".encode()) for i in range(50)]
        metas = await asyncio.gather(*batch)
        assert [m.offset for m in metas] == list(range(50))
        await producer.send_and_wait(topic_name, key=b"h", value=b"with-headers", headers=[("a", b"b")])
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer(bootstrap_servers=asyncbroker_bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        tp = TopicPartition(topic_name, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        got = []
        async with asyncio.timeout(20):
            while len(got) < 51:
                records = await consumer.getmany(tp, timeout_ms=500)
                got.extend(records.get(tp, []))
    finally:
        await consumer.stop()
    assert [m.value for m in got[:50]] == [f"v{i}".encode() for i in range(50)]
    assert got[50].headers == (("a", b"b"),) or list(got[50].headers) == [("a", b"b")]
