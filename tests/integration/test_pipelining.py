"""Pipelined requests on one connection are answered in the order they were sent."""

from __future__ import annotations

import datetime
import struct
import time
from pathlib import Path

import pytest
from kio.schema.api_versions.v3 import request as av3
from kio.schema.fetch.v12 import request as fetch12
from kio.schema.list_offsets.v7 import request as lo7
from kio.schema.metadata.v12 import request as meta12
from kio.schema.produce.v9 import request as produce9

from asyncbroker.connection import READ_AHEAD_BYTES
from asyncbroker.replica_manager import INLINE_APPEND_MAX_BYTES
from asyncbroker.server import RELEASE_BUFFERS_AFTER_S
from asyncbroker.testing import BrokerProcess
from raw_client import RawClient
from wire.headers import encode_request_header
from wire.messages import encode_request
from wire.records import Record, build_batch, decode_records, iter_batch_headers, validate_batch

pytestmark = pytest.mark.timeout(60)


def test_mixed_pipelined_requests_answer_in_order(asyncbroker_bootstrap: str, topic_name: str) -> None:
    batch = build_batch([Record(offset=0, timestamp=int(time.time() * 1000), key=b"k", value=b"v", headers=[])])
    produce = produce9.ProduceRequest(
        transactional_id=None, acks=1, timeout=datetime.timedelta(seconds=5),
        topic_data=(produce9.TopicProduceData(name=topic_name, partition_data=(
            produce9.PartitionProduceData(index=0, records=batch),)),),
    )
    requests = [
        av3.ApiVersionsRequest(client_software_name="t", client_software_version="1"),
        meta12.MetadataRequest(topics=(meta12.MetadataRequestTopic(topic_id=None, name=topic_name),),
                               allow_auto_topic_creation=True, include_topic_authorized_operations=False),
        *[produce] * 20,
        fetch12.FetchRequest(
            max_wait=datetime.timedelta(milliseconds=500), min_bytes=1, max_bytes=1 << 20, isolation_level=0,
            session_id=0, session_epoch=-1, forgotten_topics_data=(), rack_id="",
            topics=(fetch12.FetchTopic(topic=topic_name, partitions=(
                fetch12.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20),)),),
        ),
        lo7.ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=(lo7.ListOffsetsTopic(
            name=topic_name, partitions=(lo7.ListOffsetsPartition(partition_index=0, timestamp=-1),)),)),
    ]
    wire_bytes = b""
    for i, req in enumerate(requests):
        body = encode_request_header(req.__api_key__, req.__version__, 1000 + i, "pipeline") + encode_request(req)
        wire_bytes += struct.pack(">i", len(body)) + body
    with RawClient(asyncbroker_bootstrap) as c:
        c.send_raw(wire_bytes)  # everything at once, before reading anything
        responses = [c.recv_response(r.__api_key__, r.__version__, 1000 + i) for i, r in enumerate(requests)]
    offsets = [r.responses[0].partition_responses[0].base_offset for r in responses[2:22]]
    assert offsets == list(range(20))
    assert b"v" in responses[22].responses[0].partitions[0].records
    assert responses[23].topics[0].partitions[0].offset == 20


MEGABYTE_BATCHES, RECORDS_PER_BATCH = 24, 100


def _pipeline_megabyte_produces(bootstrap: str, topic: str, records_per_batch: int = RECORDS_PER_BATCH
                                ) -> list[bytes]:
    """MEGABYTE_BATCHES Produce requests of a batch of `records_per_batch` 10 kB records each
    (~1 MB by default), sent on one connection before reading an answer, as a producer
    pipelines them; asserts the answers (in order, offsets consecutive) and returns each
    batch's value."""
    values = [bytes([n]) * 10_000 for n in range(MEGABYTE_BATCHES)]
    requests = []
    for n in range(MEGABYTE_BATCHES):
        batch = build_batch([Record(offset=i, timestamp=int(time.time() * 1000), key=b"k%d" % i, value=values[n],
                                    headers=[]) for i in range(records_per_batch)])
        requests.append(produce9.ProduceRequest(
            transactional_id=None, acks=1, timeout=datetime.timedelta(seconds=30),
            topic_data=(produce9.TopicProduceData(name=topic, partition_data=(
                produce9.PartitionProduceData(index=0, records=batch),)),),
        ))
    with RawClient(bootstrap) as c:
        c.create_topic(topic)
        wire_bytes = bytearray()
        for i, req in enumerate(requests):
            body = encode_request_header(req.__api_key__, req.__version__, 2000 + i, "pipeline") + encode_request(req)
            wire_bytes += struct.pack(">i", len(body)) + body
        assert len(wire_bytes) > 5 * READ_AHEAD_BYTES
        c.send_raw(bytes(wire_bytes))  # everything before reading an answer
        answers = [c.recv_response(r.__api_key__, r.__version__, 2000 + i).responses[0].partition_responses[0]
                   for i, r in enumerate(requests)]
    assert [(a.error_code, a.base_offset) for a in answers] == [
        (0, n * records_per_batch) for n in range(MEGABYTE_BATCHES)]
    return values


@pytest.mark.parametrize("records_per_batch", [RECORDS_PER_BATCH, INLINE_APPEND_MAX_BYTES * 3 // 2 // 10_000],
                         ids=["1 MB, appended on the loop", "1.5 MB, appended on the IO pool"])
def test_pipelined_megabyte_produces_land_in_order_as_sent(tmp_path: Path, records_per_batch: int) -> None:
    """A producer pipelining large batches, far more than a connection reads ahead: every batch
    is answered in order, and each is stored with its offsets assigned and a valid CRC. A batch
    of up to INLINE_APPEND_MAX_BYTES is appended on the event loop, its offsets assigned in a
    copy; a larger one on the IO pool, assigned in the request's own buffer (a large frame is
    patched, not copied), while reading pauses and resumes."""
    topic_name = "pipelined"
    with BrokerProcess([f"message.max.bytes={4 << 20}"], log_dir=tmp_path) as broker:
        values = _pipeline_megabyte_produces(broker.bootstrap, topic_name, records_per_batch)
        stored = _read_back(broker.bootstrap, topic_name, MEGABYTE_BATCHES * records_per_batch)
    assert stored == [(n * records_per_batch, values[n]) for n in range(MEGABYTE_BATCHES)]


def _read_back(bootstrap: str, topic_name: str, records: int) -> list[tuple[int, bytes]]:
    """Each stored batch's base offset and first value, fetched from offset 0, its CRC checked."""
    stored = []
    offset = 0
    with RawClient(bootstrap) as c:
        while offset < records:
            fetched = c.request(fetch12.FetchRequest(
                max_wait=datetime.timedelta(milliseconds=500), min_bytes=1, max_bytes=4 << 20, isolation_level=0,
                session_id=0, session_epoch=-1, forgotten_topics_data=(), rack_id="",
                topics=(fetch12.FetchTopic(topic=topic_name, partitions=(
                    fetch12.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=4 << 20),)),),
            )).responses[0].partitions[0].records
            for bp in iter_batch_headers(fetched):
                validate_batch(fetched, bp.position)  # the producer's CRC holds: offsets and epoch lie outside it
                stored.append((bp.header.base_offset, bytes(decode_records(fetched, bp.position)[0].value)))
                offset = bp.header.base_offset + bp.header.last_offset_delta + 1
    return stored


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


def test_an_idle_broker_returns_the_receive_buffers_it_kept(tmp_path: Path) -> None:
    """After a burst of large requests the broker's process keeps their freed buffers for the
    next ones (its RSS stays up); once no such load has arrived for RELEASE_BUFFERS_AFTER_S, it
    hands them back to the kernel: its RSS comes back to what it was before the burst.

    A first burst, once released, sets that level: it leaves live what any burst does (1.3-2.1
    MB of allocations stayed after a first burst in pytest runs and in CI, against an RSS taken
    right after start). How much a burst keeps depends on how many frames it had queued at
    once. Its 1.5 MB batches are above what a request may append on the event loop
    (INLINE_APPEND_MAX_BYTES), so frames queue while the IO pool appends: 4 to 7 MB kept. (1 MB
    batches, appended on the loop as they arrive, queued too few: about 2 MB.)"""
    with BrokerProcess([f"message.max.bytes={4 << 20}"], log_dir=tmp_path) as broker:
        assert broker.process is not None
        pid = broker.process.pid

        def released(level: float, what: str) -> float:
            deadline = time.monotonic() + 3 * RELEASE_BUFFERS_AFTER_S + 10
            while _rss_mb(pid) > level and time.monotonic() < deadline:
                time.sleep(0.2)  # polling the broker's RSS, bounded by the deadline
            assert _rss_mb(pid) <= level, f"RSS {_rss_mb(pid):.1f} MB, not down to {level:.1f} MB {what}"
            return _rss_mb(pid)

        records = INLINE_APPEND_MAX_BYTES * 3 // 2 // 10_000
        _pipeline_megabyte_produces(broker.bootstrap, "burst", records)
        before = released(_rss_mb(pid) - 1, "after the first burst")
        _pipeline_megabyte_produces(broker.bootstrap, "second-burst", records)
        kept = _rss_mb(pid)
        assert kept >= before + 3, f"RSS {kept:.1f} MB right after the burst, {before:.1f} MB before it"
        released(before + 0.5, f"after the second burst (kept {kept:.1f} MB, {before:.1f} MB before it)")


def test_a_burst_of_connections_each_answered_after_its_eof(asyncbroker_bootstrap: str) -> None:
    """More connections than the request channel starts in one turn of the loop, each sending a
    request and its EOF at once: those that wait for their turn are answered too, then closed."""
    import socket

    request = av3.ApiVersionsRequest(client_software_name="t", client_software_version="1")
    clients = [RawClient(asyncbroker_bootstrap) for _ in range(300)]
    try:
        for i, c in enumerate(clients):
            body = encode_request_header(request.__api_key__, request.__version__, i, "burst") + encode_request(request)
            c.send_raw(struct.pack(">i", len(body)) + body)
        for c in clients:
            c.sock.shutdown(socket.SHUT_WR)
        for i, c in enumerate(clients):
            assert c.recv_response(request.__api_key__, request.__version__, i).error_code == 0
            assert c.is_closed_by_peer()
    finally:
        for c in clients:
            c.close()
