"""Produce per-partition errors and topic-config effects as Kafka reports them."""

from __future__ import annotations

import datetime
import time

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.fetch.v12 import request as fetch12
from kio.schema.produce.v9 import request as produce9

from raw_client import RawClient
from wire.compression import CompressionType
from wire.records import Record, build_batch, read_batch_header

pytestmark = pytest.mark.timeout(60)


def create(bootstrap: str, name: str, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, 1, config=configs)])[name].result(10)


def produce(c: RawClient, topic: str, records: bytes, acks: int = -1) -> object:
    resp = c.request(produce9.ProduceRequest(
        transactional_id=None, acks=acks, timeout=datetime.timedelta(seconds=5),
        topic_data=(produce9.TopicProduceData(name=topic, partition_data=(
            produce9.PartitionProduceData(index=0, records=records),)),),
    ))
    return resp.responses[0].partition_responses[0]


def fetch_records(c: RawClient, topic: str) -> bytes:
    resp = c.request(fetch12.FetchRequest(
        max_wait=datetime.timedelta(0), min_bytes=1, max_bytes=1 << 20, isolation_level=0,
        session_id=0, session_epoch=-1, forgotten_topics_data=(), rack_id="",
        topics=(fetch12.FetchTopic(topic=topic, partitions=(
            fetch12.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20),)),),
    ))
    return bytes(resp.responses[0].partitions[0].records)


def now() -> int:
    return int(time.time() * 1000)


def test_keyless_record_on_compacted_topic_is_invalid_record(asyncbroker_bootstrap: str, topic_name: str) -> None:
    create(asyncbroker_bootstrap, topic_name, **{"cleanup.policy": "compact"})
    with RawClient(asyncbroker_bootstrap) as c:
        p = produce(c, topic_name, build_batch([
            Record(offset=0, timestamp=now(), key=b"k", value=b"v", headers=[]),
            Record(offset=1, timestamp=now(), key=None, value=b"v", headers=[]),
        ]))
        assert p.error_code == 87  # INVALID_RECORD
        assert p.error_message
        ok = produce(c, topic_name, build_batch([Record(offset=0, timestamp=now(), key=b"k", value=b"v", headers=[])]))
        assert (ok.error_code, ok.base_offset) == (0, 0)


def test_message_too_large(asyncbroker_bootstrap: str, topic_name: str) -> None:
    create(asyncbroker_bootstrap, topic_name, **{"max.message.bytes": "2000"})
    with RawClient(asyncbroker_bootstrap) as c:
        p = produce(c, topic_name, build_batch([Record(offset=0, timestamp=now(), key=b"k", value=b"x" * 5000, headers=[])]))
        assert p.error_code == 10  # MESSAGE_TOO_LARGE


def test_timestamp_too_far_in_the_future(asyncbroker_bootstrap: str, topic_name: str) -> None:
    create(asyncbroker_bootstrap, topic_name, **{"message.timestamp.after.max.ms": "60000"})
    with RawClient(asyncbroker_bootstrap) as c:
        p = produce(c, topic_name, build_batch([
            Record(offset=0, timestamp=now() + 3_600_000, key=b"k", value=b"v", headers=[])]))
        assert p.error_code == 32  # INVALID_TIMESTAMP


def test_log_append_time_is_reported(asyncbroker_bootstrap: str, topic_name: str) -> None:
    create(asyncbroker_bootstrap, topic_name, **{"message.timestamp.type": "LogAppendTime"})
    before = now()
    with RawClient(asyncbroker_bootstrap) as c:
        p = produce(c, topic_name, build_batch([Record(offset=0, timestamp=1, key=b"k", value=b"v", headers=[])]))
    assert p.error_code == 0
    assert p.log_append_time is not None
    assert before - 1000 <= p.log_append_time.timestamp() * 1000 <= now() + 1000
    assert p.log_start_offset == 0


def test_topic_compression_type_recompresses(asyncbroker_bootstrap: str, topic_name: str) -> None:
    create(asyncbroker_bootstrap, topic_name, **{"compression.type": "zstd"})
    with RawClient(asyncbroker_bootstrap) as c:
        p = produce(c, topic_name, build_batch([Record(offset=i, timestamp=now(), key=b"k", value=b"v" * 100, headers=[])
                                                for i in range(10)]))
        assert p.error_code == 0
        stored = fetch_records(c, topic_name)
    assert read_batch_header(stored).compression == CompressionType.ZSTD


def test_acks_all_with_flush_every_message(asyncbroker_bootstrap: str, topic_name: str) -> None:
    create(asyncbroker_bootstrap, topic_name, **{"flush.messages": "1"})
    with RawClient(asyncbroker_bootstrap) as c:
        for i in range(3):
            p = produce(c, topic_name, build_batch([Record(offset=0, timestamp=now(), key=b"k", value=b"v", headers=[])]))
            assert (p.error_code, p.base_offset) == (0, i)


def test_old_message_format_is_unsupported(asyncbroker_bootstrap: str, topic_name: str) -> None:
    import struct
    import zlib

    # A magic-1 message set entry: offset, size, crc, magic, attributes, timestamp, key, value.
    body = struct.pack(">bbq", 1, 0, now()) + struct.pack(">i", -1) + struct.pack(">i", 5) + b"hello"
    message = struct.pack(">I", zlib.crc32(body)) + body
    legacy = struct.pack(">qi", 0, len(message)) + message
    create(asyncbroker_bootstrap, topic_name)
    with RawClient(asyncbroker_bootstrap) as c:
        p = produce(c, topic_name, legacy)
    assert p.error_code == 87  # INVALID_RECORD: Produce v3+ carries only magic 2 batches, as in Kafka
