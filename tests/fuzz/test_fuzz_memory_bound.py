"""Per-connection buffering is bounded: clients that pipeline many maximal requests without
reading the answers cannot make the broker hold more than a couple of requests each.

(Before the fix a connection queued up to 32 complete frames of socket.request.max.bytes.)
"""
from __future__ import annotations

import datetime
import socket
import sys
import struct
import threading
import time
from pathlib import Path

import pytest

from kio.schema.fetch.v12 import request as fetch12
from kio.schema.metadata.v12 import request as meta12

from asyncbroker.testing import BrokerProcess
from asyncbroker.testing.process_stats import rss_kib
from wire.headers import encode_request_header
from wire.messages import encode_request

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from raw_client import RawClient  # noqa: E402

pytestmark = pytest.mark.timeout(120)

MAX_REQUEST = 4 << 20
CONNECTIONS = 8
FRAMES_PER_CONNECTION = 12


def test_pipelined_maximal_requests_do_not_pile_up() -> None:
    with BrokerProcess([f"socket.request.max.bytes={MAX_REQUEST}"]) as broker:
        pid = broker.process.pid  # type: ignore[union-attr]
        before = rss_kib(pid)
        # A Fetch that parks (empty partition, min_bytes=1, 2 s wait), padded to the maximal size:
        # each connection's later requests must wait in the broker, which is what could pile up.
        with RawClient(broker.bootstrap) as c:
            c.request(meta12.MetadataRequest(topics=(meta12.MetadataRequestTopic(topic_id=None, name="hog"),),
                                             allow_auto_topic_creation=True,
                                             include_topic_authorized_operations=False))
        fetch = fetch12.FetchRequest(
            cluster_id=None, replica_id=-1, max_wait=datetime.timedelta(seconds=2), min_bytes=1, max_bytes=1024,
            isolation_level=0, session_id=0, session_epoch=-1,
            topics=(fetch12.FetchTopic(topic="hog", partitions=(fetch12.FetchPartition(
                partition=0, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1,
                log_start_offset=-1, partition_max_bytes=1024),)),),
            forgotten_topics_data=(), rack_id="")
        body = encode_request_header(1, 12, 1, "hog") + encode_request(fetch)
        payload = body + b"\x00" * (MAX_REQUEST - len(body))
        frame = struct.pack(">i", len(payload)) + payload
        socks: list[socket.socket] = []
        sent = [0] * CONNECTIONS

        def hog(i: int) -> None:
            s = socket.create_connection((broker.host, broker.port))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # and never read: answers back up
            socks.append(s)
            s.settimeout(0.5)
            deadline = time.monotonic() + 6
            for _ in range(FRAMES_PER_CONNECTION):
                view = memoryview(frame)
                while view and time.monotonic() < deadline:
                    try:
                        n = s.send(view)
                    except (TimeoutError, BlockingIOError):
                        continue
                    except OSError:
                        return
                    view = view[n:]
                    sent[i] += n

        threads = [threading.Thread(target=hog, args=(i,)) for i in range(CONNECTIONS)]
        for t in threads:
            t.start()
        peak = before
        while any(t.is_alive() for t in threads):
            peak = max(peak, rss_kib(pid))
            time.sleep(0.05)
        peak = max(peak, rss_kib(pid))
        for s in socks:
            s.close()
        growth_mib = (peak - before) / 1024
        offered_mib = sum(sent) / (1 << 20)
        print(f"\nmemory bound: {CONNECTIONS} connections offered {offered_mib:.0f} MiB of pipelined "
              f"{MAX_REQUEST >> 20} MiB requests; broker RSS grew {growth_mib:.0f} MiB")
        assert broker.returncode is None
        # At most ~3 maximal requests per connection (one being served, one queued, one arriving).
        assert growth_mib < CONNECTIONS * 3 * (MAX_REQUEST >> 20) + 64


def _bomb_batch() -> bytes:
    """A valid-CRC zstd batch whose 8 KiB records section inflates to 256 MiB."""
    import cramjam

    from wire.compression import CompressionType
    from wire.records import BATCH_HEADER_SIZE, Record, build_batch, compute_crc

    section = bytes(cramjam.zstd.compress(b"\0" * (64 << 20))) * 4
    head = bytearray(build_batch([Record(offset=0, timestamp=int(time.time() * 1000), key=b"k", value=b"v",
                                         headers=[])], compression=CompressionType.ZSTD)[:BATCH_HEADER_SIZE])
    batch = head + section
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    struct.pack_into(">I", batch, 17, compute_crc(batch, 0, len(batch) - 12))
    return bytes(batch)


def test_decompression_bomb_is_refused_with_bounded_memory() -> None:
    from kio.schema.create_topics.v5 import request as ct5
    from kio.schema.produce.v9 import request as produce9

    with BrokerProcess() as broker, RawClient(broker.bootstrap) as c:
        pid = broker.process.pid  # type: ignore[union-attr]
        # A compacted topic: the broker must look inside batches (keys), so it decompresses.
        resp = c.request(ct5.CreateTopicsRequest(topics=(ct5.CreatableTopic(
            name="bomb", num_partitions=1, replication_factor=1, assignments=(),
            configs=(ct5.CreatableTopicConfig(name="cleanup.policy", value="compact"),)),),
            timeout=datetime.timedelta(seconds=5), validate_only=False))
        assert resp.topics[0].error_code == 0
        before = rss_kib(pid)
        batch = _bomb_batch()
        for _ in range(3):
            resp = c.request(produce9.ProduceRequest(
                transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=5),
                topic_data=(produce9.TopicProduceData(name="bomb", partition_data=(
                    produce9.PartitionProduceData(index=0, records=batch),)),)))
            assert resp.responses[0].partition_responses[0].error_code == 2  # CORRUPT_MESSAGE
        growth_mib = (rss_kib(pid) - before) / 1024
        print(f"\ndecompression bomb: {len(batch)} B batch inflating to 256 MiB refused; RSS grew {growth_mib:.0f} MiB")
        assert broker.returncode is None
        assert growth_mib < 200
