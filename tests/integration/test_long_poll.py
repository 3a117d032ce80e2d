"""Raw Fetch requests: a fetch parked on an empty partition is woken by an append, not by a
timer; and the byte limits (a first batch larger than them goes whole, KIP-74; an answer they cut
ends at its last whole batch)."""

from __future__ import annotations

import datetime
import time

import pytest
from kio.schema.fetch.v12 import request as fetch12
from kio.schema.metadata.v12 import request as meta12
from kio.schema.produce.v9 import request as produce9

from raw_client import RawClient
from wait_for import wait_until
from wire.records import Record, build_batch, iter_batch_headers

pytestmark = pytest.mark.timeout(60)


def create_topic(bootstrap: str, topic: str) -> None:
    """Auto-create through Metadata as a client does: the creating request answers
    UNKNOWN_TOPIC_OR_PARTITION (as Kafka 4.4 does), a retry sees the topic."""
    with RawClient(bootstrap) as c:
        def served() -> bool:
            resp = c.request(meta12.MetadataRequest(
                topics=(meta12.MetadataRequestTopic(topic_id=None, name=topic),),
                allow_auto_topic_creation=True, include_topic_authorized_operations=False,
            ))
            return resp.topics[0].error_code == 0

        wait_until(served, 10, message=f"{topic} to be auto-created")


def fetch_request(topic: str, offset: int, max_wait_ms: int, min_bytes: int = 1) -> fetch12.FetchRequest:
    return fetch12.FetchRequest(
        max_wait=datetime.timedelta(milliseconds=max_wait_ms), min_bytes=min_bytes, max_bytes=1 << 20,
        isolation_level=0, session_id=0, session_epoch=-1,
        topics=(fetch12.FetchTopic(topic=topic, partitions=(
            fetch12.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=1 << 20),)),),
        forgotten_topics_data=(), rack_id="",
    )


def produce_request(topic: str, value: bytes) -> produce9.ProduceRequest:
    batch = build_batch([Record(offset=0, timestamp=int(time.time() * 1000), key=b"k", value=value, headers=[])])
    return produce9.ProduceRequest(
        transactional_id=None, acks=1, timeout=datetime.timedelta(seconds=5),
        topic_data=(produce9.TopicProduceData(name=topic, partition_data=(
            produce9.PartitionProduceData(index=0, records=batch),)),),
    )


def test_parked_fetch_wakes_on_produce(asyncbroker_bootstrap: str, topic_name: str) -> None:
    create_topic(asyncbroker_bootstrap, topic_name)
    with RawClient(asyncbroker_bootstrap) as consumer, RawClient(asyncbroker_bootstrap) as producer:
        req = fetch_request(topic_name, 0, max_wait_ms=10_000)
        cid = consumer.send_request(req)
        # The fetch must still be parked: nothing arrives while the partition is empty.
        consumer.sock.settimeout(0.3)
        with pytest.raises(TimeoutError):
            consumer.sock.recv(1, 2)  # MSG_PEEK
        consumer.sock.settimeout(10)

        presp = producer.request(produce_request(topic_name, b"wake up"))
        produced_at = time.monotonic()
        assert presp.responses[0].partition_responses[0].error_code == 0
        resp = consumer.recv_response(1, 12, cid)
        woke_after = time.monotonic() - produced_at
    part = resp.responses[0].partitions[0]
    assert part.error_code == 0
    assert part.high_watermark == 1
    assert b"wake up" in part.records
    assert woke_after < 0.05, f"fetch answered {woke_after * 1000:.1f} ms after the produce"


def test_fetch_times_out_with_empty_answer(asyncbroker_bootstrap: str, topic_name: str) -> None:
    create_topic(asyncbroker_bootstrap, topic_name)
    with RawClient(asyncbroker_bootstrap) as c:
        started = time.monotonic()
        resp = c.request(fetch_request(topic_name, 0, max_wait_ms=200))
        elapsed = time.monotonic() - started
    part = resp.responses[0].partitions[0]
    assert part.error_code == 0 and not part.records
    assert part.high_watermark == 0 and part.log_start_offset == 0
    assert elapsed >= 0.19


def test_fetch_offset_out_of_range(asyncbroker_bootstrap: str, topic_name: str) -> None:
    create_topic(asyncbroker_bootstrap, topic_name)
    with RawClient(asyncbroker_bootstrap) as c:
        c.request(produce_request(topic_name, b"one"))
        resp = c.request(fetch_request(topic_name, 5, max_wait_ms=100))
    assert resp.responses[0].partitions[0].error_code == 1  # OFFSET_OUT_OF_RANGE


def test_first_batch_larger_than_max_bytes_is_returned_whole(asyncbroker_bootstrap: str, topic_name: str) -> None:
    create_topic(asyncbroker_bootstrap, topic_name)
    with RawClient(asyncbroker_bootstrap) as c:
        c.request(produce_request(topic_name, b"x" * 5000))
        c.request(produce_request(topic_name, b"y" * 5000))
        req = fetch_request(topic_name, 0, max_wait_ms=0)
        small = fetch12.FetchRequest(
            max_wait=req.max_wait, min_bytes=1, max_bytes=100, isolation_level=0, session_id=0, session_epoch=-1,
            topics=(fetch12.FetchTopic(topic=topic_name, partitions=(
                fetch12.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=100),)),),
            forgotten_topics_data=(), rack_id="",
        )
        resp = c.request(small)
    records = resp.responses[0].partitions[0].records
    # Exactly the first batch, whole (not b"y" alone: a header's CRC or timestamp may hold 0x79).
    assert b"x" * 5000 in records and b"y" * 5000 not in records
    assert [header.base_offset for header, _ in iter_batch_headers(records)] == [0]



def test_an_answer_cut_by_its_limit_ends_at_the_last_whole_batch(asyncbroker_bootstrap: str, topic_name: str) -> None:
    """Issue 17 (KD-215): a 1 MiB limit falling inside the fourth batch of 300 KB ones answers
    the first three whole, with no piece of the fourth (Kafka would send 124 KB of it, which
    every client drops); large enough to be sent from the segment file (sendfile). The next
    fetch goes on from there."""
    create_topic(asyncbroker_bootstrap, topic_name)
    values = [bytes([65 + i]) * 300_000 for i in range(6)]
    with RawClient(asyncbroker_bootstrap) as c:
        for value in values:
            assert c.request(produce_request(topic_name, value)).responses[0].partition_responses[0].error_code == 0
        offset, seen = 0, []
        while offset < len(values):
            part = c.request(fetch_request(topic_name, offset, max_wait_ms=0)).responses[0].partitions[0]
            assert part.error_code == 0
            batches = list(iter_batch_headers(part.records))
            # Whole batches only: the records end where the last one ends.
            assert batches and batches[-1][1] + batches[-1][0].batch_length + 12 == len(part.records)
            seen.append([header.base_offset for header, _ in batches])
            offset = batches[-1][0].base_offset + 1
    assert seen == [[0, 1, 2], [3, 4, 5]]
