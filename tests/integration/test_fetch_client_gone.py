"""A client that leaves while its Fetch answer is being sent from the segment file (sendfile,
on an IO thread): nothing is sent anywhere else, nothing is logged as an error, and the broker
serves on. The socket is duplicated on the loop before the thread runs; a dup made in the
thread found the socket closed (EBADF), or, worse, its number taken by another descriptor."""
from __future__ import annotations

import datetime
import socket
import struct

import pytest
from confluent_kafka import Producer
from kio.schema.fetch.v12 import request as fetch12

from asyncbroker.testing import BrokerProcess
from raw_client import RawClient
from wire.headers import encode_request_header
from wire.messages import encode_request

pytestmark = pytest.mark.timeout(120)


def _fetch_frame(topic: str) -> bytes:
    request = fetch12.FetchRequest(
        max_wait=datetime.timedelta(milliseconds=0), min_bytes=1, max_bytes=8 << 20, isolation_level=0,
        session_id=0, session_epoch=-1, forgotten_topics_data=(), rack_id="",
        topics=(fetch12.FetchTopic(topic=topic, partitions=(
            fetch12.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=8 << 20),)),))
    body = encode_request_header(1, 12, 1, "gone") + encode_request(request)
    return struct.pack(">i", len(body)) + body


def test_clients_that_leave_mid_answer_leave_no_error_behind(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with BrokerProcess(["num.partitions=1"], log_dir=tmp_path) as broker:
        p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5, "batch.size": 1_000_000})
        for _ in range(800):  # 8 MB of 10 KiB values: answers far larger than the socket buffers
            p.produce("big", value=b"x" * 10_240)
        assert p.flush(30) == 0
        frame = _fetch_frame("big")
        host, port = broker.bootstrap.rsplit(":", 1)
        for _ in range(40):
            s = socket.create_connection((host, int(port)), timeout=10)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.sendall(frame)
            s.recv(1)  # the answer has begun
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()  # gone (RST), with most of the answer unsent
        with RawClient(broker.bootstrap) as c:  # and the broker serves on
            answer = c.request(fetch12.FetchRequest(
                max_wait=datetime.timedelta(milliseconds=0), min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                session_id=0, session_epoch=-1, forgotten_topics_data=(), rack_id="",
                topics=(fetch12.FetchTopic(topic="big", partitions=(
                    fetch12.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20),)),)))
            assert answer.responses[0].partitions[0].error_code == 0
            assert len(answer.responses[0].partitions[0].records) > 10_240
        out = broker.output()
        assert "never retrieved" not in out and "Bad file descriptor" not in out and "Traceback" not in out, out[-3000:]
