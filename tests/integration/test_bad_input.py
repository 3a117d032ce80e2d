"""Hostile or broken input on raw sockets: the right error or a closed connection,
and the broker keeps serving everyone else."""

from __future__ import annotations

import datetime
import socket
import struct
import time

import pytest
from kio.schema.api_versions.v3 import request as av3
from kio.schema.fetch.v12 import request as fetch12
from kio.schema.metadata.v12 import request as meta12
from kio.schema.produce.v9 import request as produce9

from raw_client import RawClient
from wire.headers import encode_request_header
from wire.records import Record, build_batch

pytestmark = pytest.mark.timeout(60)


def assert_still_serving(bootstrap: str) -> None:
    with RawClient(bootstrap) as c:
        resp = c.request(av3.ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    assert resp.error_code == 0 and resp.api_keys


def produce_req(topic: str, partition: int, records: bytes, acks: int = 1) -> produce9.ProduceRequest:
    return produce9.ProduceRequest(
        transactional_id=None, acks=acks, timeout=datetime.timedelta(seconds=5),
        topic_data=(produce9.TopicProduceData(name=topic, partition_data=(
            produce9.PartitionProduceData(index=partition, records=records),)),),
    )



def batch(value: bytes = b"v") -> bytes:
    return build_batch([Record(offset=0, timestamp=int(time.time() * 1000), key=b"k", value=value, headers=[])])


@pytest.mark.parametrize("payload", [
    b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",          # garbage whose "size" is huge
    struct.pack(">i", 200 * 1024 * 1024) + b"x",   # frame above socket.request.max.bytes
    struct.pack(">i", -5) + b"xxxx",               # negative size
], ids=["garbage", "oversized", "negative-size"])
def test_bad_frames_close_the_connection(asyncbroker_bootstrap: str, payload: bytes) -> None:
    with RawClient(asyncbroker_bootstrap) as bystander, RawClient(asyncbroker_bootstrap) as c:
        c.send_raw(payload)
        assert c.is_closed_by_peer()
        resp = bystander.request(av3.ApiVersionsRequest(client_software_name="t", client_software_version="1"))
        assert resp.error_code == 0
    assert_still_serving(asyncbroker_bootstrap)


def test_truncated_frame_then_eof(asyncbroker_bootstrap: str) -> None:
    with RawClient(asyncbroker_bootstrap) as c:
        c.send_raw(struct.pack(">i", 100) + b"\x00\x12\x00\x03")
        assert_still_serving(asyncbroker_bootstrap)  # a half-sent frame blocks nobody
        c.sock.shutdown(socket.SHUT_WR)
        assert c.is_closed_by_peer()


def test_truncated_body_closes(asyncbroker_bootstrap: str) -> None:
    header = encode_request_header(3, 12, 1, "t")
    body = header + b"\x05\x00"  # a topics array announcing 4 entries, then nothing
    with RawClient(asyncbroker_bootstrap) as c:
        c.send_raw(struct.pack(">i", len(body)) + body)
        assert c.is_closed_by_peer()
    assert_still_serving(asyncbroker_bootstrap)


def test_unknown_api_key_closes(asyncbroker_bootstrap: str) -> None:
    body = struct.pack(">hhih", 999, 0, 7, 1) + b"t"
    with RawClient(asyncbroker_bootstrap) as c:
        c.send_raw(struct.pack(">i", len(body)) + body)
        assert c.is_closed_by_peer()
    assert_still_serving(asyncbroker_bootstrap)


def test_too_new_api_versions_gets_v0_error_answer(asyncbroker_bootstrap: str) -> None:
    # Header v2 (ApiVersions is flexible from v3 on): client id, then empty tagged fields.
    body = struct.pack(">hhih", 18, 99, 42, 1) + b"t" + b"\x00"
    with RawClient(asyncbroker_bootstrap) as c:
        c.send_raw(struct.pack(">i", len(body)) + body)
        frame = c.recv_frame()
    correlation, error = struct.unpack_from(">ih", frame, 0)
    assert (correlation, error) == (42, 35)  # UNSUPPORTED_VERSION, with ApiVersions' own range after it


def test_corrupt_crc_is_corrupt_message(asyncbroker_bootstrap: str, topic_name: str) -> None:
    data = bytearray(batch(b"payload-to-corrupt"))
    data[-3] ^= 0xFF  # inside the records, covered by the CRC
    with RawClient(asyncbroker_bootstrap) as c:
        c.create_topic(topic_name)
        resp = c.request(produce_req(topic_name, 0, bytes(data)))
        assert resp.responses[0].partition_responses[0].error_code == 2  # CORRUPT_MESSAGE
        ok = c.request(produce_req(topic_name, 0, batch()))
        assert ok.responses[0].partition_responses[0].error_code == 0
        assert ok.responses[0].partition_responses[0].base_offset == 0


def test_invalid_topic_names(asyncbroker_bootstrap: str) -> None:
    bad = ["bad/name", "..", "a" * 250, "spaces are bad"]
    with RawClient(asyncbroker_bootstrap) as c:
        resp = c.request(meta12.MetadataRequest(
            topics=tuple(meta12.MetadataRequestTopic(topic_id=None, name=n) for n in bad),
            allow_auto_topic_creation=True, include_topic_authorized_operations=False,
        ))
        assert [t.error_code for t in resp.topics] == [17] * len(bad)  # INVALID_TOPIC_EXCEPTION
        presp = c.request(produce_req("bad/name", 0, batch()))
        # Produce only looks the name up, as Kafka's does: no such topic.
        assert presp.responses[0].partition_responses[0].error_code == 3  # UNKNOWN_TOPIC_OR_PARTITION
    assert_still_serving(asyncbroker_bootstrap)


def test_negative_and_missing_partitions(asyncbroker_bootstrap: str, topic_name: str) -> None:
    with RawClient(asyncbroker_bootstrap) as c:
        c.create_topic(topic_name)
        c.request(produce_req(topic_name, 0, batch()))
        for partition in (-1, 7):
            presp = c.request(produce_req(topic_name, partition, batch()))
            assert presp.responses[0].partition_responses[0].error_code == 3  # UNKNOWN_TOPIC_OR_PARTITION
        fresp = c.request(fetch12.FetchRequest(
            max_wait=datetime.timedelta(0), min_bytes=1, max_bytes=1 << 20, isolation_level=0,
            session_id=0, session_epoch=-1, forgotten_topics_data=(), rack_id="",
            topics=(fetch12.FetchTopic(topic=topic_name, partitions=(
                fetch12.FetchPartition(partition=-1, fetch_offset=0, partition_max_bytes=1024),)),),
        ))
        assert fresp.responses[0].partitions[0].error_code == 3


def test_invalid_acks_and_acks0_failure(asyncbroker_bootstrap: str, topic_name: str) -> None:
    with RawClient(asyncbroker_bootstrap) as c:
        c.create_topic(topic_name)
        resp = c.request(produce_req(topic_name, 0, batch(), acks=5))
        assert resp.responses[0].partition_responses[0].error_code == 21  # INVALID_REQUIRED_ACKS
    with RawClient(asyncbroker_bootstrap) as c:
        data = bytearray(batch())
        data[-2] ^= 0xFF
        c.send_request(produce_req(topic_name, 0, bytes(data), acks=0))
        assert c.is_closed_by_peer()  # no response can carry the error: Kafka closes
    assert_still_serving(asyncbroker_bootstrap)


def test_idle_connections_are_closed() -> None:
    from asyncbroker.testing import BrokerProcess
    from wait_for import wait_until

    with BrokerProcess(["connections.max.idle.ms=1000"]) as broker:
        with RawClient(broker.bootstrap) as c:
            assert c.request(av3.ApiVersionsRequest(client_software_name="t", client_software_version="1")).error_code == 0
            assert c.is_closed_by_peer(timeout=10)
        wait_until(lambda: "Closing idle connection" in broker.output(), timeout=5)


def _hostile_bodies() -> list[tuple[str, bytes]]:
    """Request frames (no size prefix) whose declared collection or string sizes dwarf the
    bytes sent: kio's native reader would reserve memory for them before reading."""
    def frame(api: int, version: int, body: bytes) -> bytes:
        return encode_request_header(api, version, 7, "hostile") + body

    return [
        # The atheris finding: Produce v10, topic_data declared as 2^35 - 2 entries.
        ("produce-v10-topics", frame(0, 10, b"\x00" + b"\xff\xff" + b"\x00\x00\x13\x88"
                                     + b"\xff\xff\xff\xff\x7f")),
        # Produce v9 with one topic whose partition array claims 2^31 - 2 entries.
        ("produce-v9-partitions", frame(0, 9, b"\x00" + b"\xff\xff" + b"\x00\x00\x13\x88"
                                        + b"\x02" + b"\x02t" + b"\xff\xff\xff\xff\x07")),
        # Metadata v1 (legacy int32 array) asking for 2^31 - 1 topics.
        ("metadata-v1-topics", frame(3, 1, b"\x7f\xff\xff\xff")),
        # CreateTopics v2: legacy array of 2^31 - 1 topics.
        ("create-topics-v2", frame(19, 2, b"\x7f\xff\xff\xff")),
        # A huge tagged field section count in a flexible request (Metadata v12).
        ("metadata-v12-tags", frame(3, 12, b"\x01" + b"\x00\x00" + b"\xff\xff\xff\xff\x0f")),
    ]


@pytest.mark.parametrize(("name", "body"), _hostile_bodies(), ids=[n for n, _ in _hostile_bodies()])
def test_declared_sizes_beyond_the_frame_are_refused_and_the_broker_lives(
        asyncbroker_bootstrap: str, name: str, body: bytes) -> None:
    with RawClient(asyncbroker_bootstrap) as c:
        c.send_raw(struct.pack(">i", len(body)) + body)
        assert c.is_closed_by_peer()  # INVALID_REQUEST: Kafka closes the connection
    assert_still_serving(asyncbroker_bootstrap)
