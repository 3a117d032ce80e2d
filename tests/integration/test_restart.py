"""Data and topic ids survive SIGTERM + restart and SIGKILL + restart."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from kio.schema.metadata.v12 import request as meta12

from asyncbroker.testing import BrokerProcess
from raw_client import RawClient

pytestmark = pytest.mark.timeout(90)


def topic_ids(bootstrap: str) -> dict[str, str]:
    with RawClient(bootstrap) as c:
        resp = c.request(meta12.MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                                include_topic_authorized_operations=False))
    return {t.name: str(t.topic_id) for t in resp.topics}


def produce(bootstrap: str, topic: str, start: int, count: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2, "acks": "1"})
    for i in range(start, start + count):
        p.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode())
    assert p.flush(10) == 0


def consume_all(bootstrap: str, topic: str, expected: int) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "restart-test", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 50})
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    out: list[bytes] = []
    deadline = time.monotonic() + 20
    try:
        while len(out) < expected and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                out.append(m.value())
    finally:
        c.close()
    return out


def test_sigterm_then_sigkill_restarts_keep_data_and_topic_ids() -> None:
    with BrokerProcess() as broker:
        produce(broker.bootstrap, "durable", 0, 100)
        ids = topic_ids(broker.bootstrap)
        assert "durable" in ids

        assert broker.stop() == 0
        assert (broker.log_dir / ".kafka_cleanshutdown").exists()
        assert "shut down completed" in broker.output()
        broker.start()
        assert topic_ids(broker.bootstrap)["durable"] == ids["durable"]
        assert consume_all(broker.bootstrap, "durable", 100) == [f"v{i}".encode() for i in range(100)]

        produce(broker.bootstrap, "durable", 100, 50)
        broker.kill()
        assert not (broker.log_dir / ".kafka_cleanshutdown").exists()
        broker.start()
        assert topic_ids(broker.bootstrap)["durable"] == ids["durable"]
        assert consume_all(broker.bootstrap, "durable", 150) == [f"v{i}".encode() for i in range(150)]


def test_sigterm_answers_a_parked_fetch_then_exits_zero() -> None:
    import datetime

    from kio.schema.fetch.v12 import request as fetch12

    with BrokerProcess() as broker:
        produce(broker.bootstrap, "parked", 0, 1)
        with RawClient(broker.bootstrap) as c:
            cid = c.send_request(fetch12.FetchRequest(
                max_wait=datetime.timedelta(seconds=30), min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                session_id=0, session_epoch=-1, forgotten_topics_data=(), rack_id="",
                topics=(fetch12.FetchTopic(topic="parked", partitions=(
                    fetch12.FetchPartition(partition=0, fetch_offset=1, partition_max_bytes=1 << 20),)),),
            ))
            # Parked: no answer while the partition has nothing past offset 1.
            c.sock.settimeout(0.3)
            with pytest.raises(TimeoutError):
                c.sock.recv(1, 2)  # MSG_PEEK
            c.sock.settimeout(10)
            started = time.monotonic()
            broker.process.terminate()  # type: ignore[union-attr]
            resp = c.recv_response(1, 12, cid)
            assert time.monotonic() - started < 10
        assert resp.responses[0].partitions[0].error_code == 0
        assert resp.responses[0].partitions[0].high_watermark == 1
        assert broker.stop() == 0
