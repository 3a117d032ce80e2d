"""queued.max.request.bytes: the requests all connections hold draw on one budget; once it is
spent, a connection's next request waits unread until answered requests return their bytes.

Raw sockets against a real broker. Connection A parks a Fetch and pipelines Produce requests
behind it. A reads ahead (Kafka reads one request per connection at a time), but a request
read ahead never spends the budget's last bytes: A's third waits in the reader, and the other
connections' requests are read at once, as from Kafka. A connection's next request may spend
them, larger than what is left (Kafka's non-strict pool).
"""
from __future__ import annotations

import datetime
import select
import socket
import struct
import time
from collections.abc import Iterator

import pytest
from kio.schema.fetch.v12 import request as fetch12
from kio.schema.metadata.v12 import request as meta12
from kio.schema.produce.v9 import request as produce9

from asyncbroker.testing import BrokerProcess
from metrics_endpoint import MetricsBroker, scrape
from raw_client import RawClient
from wait_for import wait_until
from wire.headers import encode_request_header
from wire.messages import encode_request
from wire.records import Record, build_batch

pytestmark = pytest.mark.timeout(90)

POOL = 1 << 20  # also socket.request.max.bytes: Kafka's smallest allowed pool
FETCH_WAIT_MS = 4_000


@pytest.fixture(scope="module")
def pooled_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MetricsBroker]:
    with MetricsBroker([f"socket.request.max.bytes={POOL}", f"queued.max.request.bytes={POOL}"],
                       log_dir=tmp_path_factory.mktemp("pooled")) as b:
        yield b


def _frame(entity: object, correlation_id: int) -> bytes:
    body = encode_request_header(entity.__api_key__, entity.__version__, correlation_id, "pool-test")  # type: ignore[attr-defined]
    body += encode_request(entity)
    return struct.pack(">i", len(body)) + body


def _parked_fetch(topic: str) -> fetch12.FetchRequest:
    """A Fetch of the empty partition: it waits FETCH_WAIT_MS for records."""
    return fetch12.FetchRequest(
        max_wait=datetime.timedelta(milliseconds=FETCH_WAIT_MS), min_bytes=1, max_bytes=1 << 20, isolation_level=0,
        session_id=0, session_epoch=-1, forgotten_topics_data=(), rack_id="",
        topics=(fetch12.FetchTopic(topic=topic, partitions=(
            fetch12.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20),)),))


def _produce(topic: str, n: int) -> produce9.ProduceRequest:
    """A ~400 KB batch of 100 records: three of them outgrow the 1 MiB pool."""
    batch = build_batch([Record(offset=i, timestamp=int(time.time() * 1000), key=b"%d-%d" % (n, i),
                                value=bytes([n]) * 4_000, headers=[]) for i in range(100)])
    return produce9.ProduceRequest(
        transactional_id=None, acks=1, timeout=datetime.timedelta(seconds=30),
        topic_data=(produce9.TopicProduceData(name=topic, partition_data=(
            produce9.PartitionProduceData(index=0, records=batch),)),))


def _metadata(topic: str) -> meta12.MetadataRequest:
    return meta12.MetadataRequest(topics=(meta12.MetadataRequestTopic(topic_id=None, name=topic),),
                                  allow_auto_topic_creation=False, include_topic_authorized_operations=False)


def _readable(sock: socket.socket) -> bool:
    return bool(select.select([sock], [], [], 0)[0])


def _park_and_pipeline(a: RawClient, topic: str) -> tuple[list[produce9.ProduceRequest], int]:
    """On A: a new topic, a Fetch of it that waits FETCH_WAIT_MS, then three Produce requests
    behind the Fetch, all sent before reading anything. Returns the Produce requests and the
    bytes A may hold of them: the Fetch and the first two (the third would spend the budget's
    last bytes)."""
    a.create_topic(topic)
    produces = [_produce(topic, n) for n in range(3)]
    fetch, frames = _frame(_parked_fetch(topic), 1), [_frame(p, 2 + n) for n, p in enumerate(produces)]
    a.send_raw(fetch + b"".join(frames))
    return produces, len(fetch) - 4 + len(frames[0]) - 4 + len(frames[1]) - 4


def _answers_of_a(a: RawClient, produces: list[produce9.ProduceRequest]) -> None:
    a.recv_response(fetch12.FetchRequest.__api_key__, 12, 1)
    answers = [a.recv_response(p.__api_key__, p.__version__, 2 + n).responses[0].partition_responses[0]
               for n, p in enumerate(produces)]
    assert [(r.error_code, r.base_offset) for r in answers] == [(0, 100 * n) for n in range(3)]


def _pool(broker: MetricsBroker, name: str) -> float:
    return scrape(broker.metrics_port)[f"asyncbroker_memory_pool_{name}"]


def test_requests_read_ahead_never_spend_the_last_bytes(pooled_broker: MetricsBroker) -> None:
    bootstrap = pooled_broker.bootstrap
    with RawClient(bootstrap, timeout=30) as a, RawClient(bootstrap, timeout=30) as b, \
            RawClient(bootstrap, timeout=30) as c:
        assert b.request(_metadata("other")).topics  # B is connected and served
        c.create_topic("pool-c")
        assert _pool(pooled_broker, "available_bytes") == POOL

        produces, held = _park_and_pipeline(a, "pooled")
        # A reads ahead two of its 400 KB batches; the third would leave nothing: it waits.
        wait_until(lambda: _pool(pooled_broker, "used_bytes") == held, timeout=15,
                   message="A did not take exactly its Fetch and two batches")
        assert 0 < POOL - held < 400_000
        # Others are served at once, while A's Fetch still waits (as from Kafka).
        assert b.request(_metadata("pooled")).topics[0].error_code == 0
        assert not _readable(a.sock), "A's Fetch was answered before its wait"
        # C's next request is larger than what is left, and granted (non-strict): the budget is spent.
        c_produce = _produce("pool-c", 5)
        answer = c.request(c_produce).responses[0].partition_responses[0]
        assert (answer.error_code, answer.base_offset) == (0, 0)
        assert _pool(pooled_broker, "depleted_seconds_total") > 0
        assert not _readable(a.sock)
        # A's requests, the waiting third included, are all answered in order.
        _answers_of_a(a, produces)

    wait_until(lambda: _pool(pooled_broker, "used_bytes") == 0, timeout=15,
               message="answered requests did not return their bytes")
    assert _pool(pooled_broker, "available_bytes") == POOL


def test_a_spent_budget_holds_a_connections_next_request_back(pooled_broker: MetricsBroker) -> None:
    """With A holding most of the budget behind its parked Fetch, C's first request (a large one,
    sent halfway: it takes its whole size up front) spends the rest. B's next request then waits
    unread until A's answers return bytes: A's Fetch answer is on A's socket by the time B's
    answer arrives."""
    bootstrap = pooled_broker.bootstrap
    with RawClient(bootstrap, timeout=30) as a, RawClient(bootstrap, timeout=30) as b, \
            RawClient(bootstrap, timeout=30) as c:
        assert b.request(_metadata("other")).topics
        produces, held = _park_and_pipeline(a, "spent")
        wait_until(lambda: _pool(pooled_broker, "used_bytes") == held, timeout=15,
                   message="A did not take exactly its Fetch and two batches")
        frame = _frame(_produce("spent", 7), 1)
        c.send_raw(frame[: len(frame) // 2])  # the rest never comes
        wait_until(lambda: _pool(pooled_broker, "used_bytes") == held + len(frame) - 4, timeout=15,
                   message="C's request was not taken in")
        assert _pool(pooled_broker, "available_bytes") <= 0
        answer = b.request(_metadata("spent"))  # read once A's answers give bytes back
        assert answer.topics[0].error_code == 0
        assert _readable(a.sock), "B was answered while the budget was still spent"
        _answers_of_a(a, produces)
    wait_until(lambda: _pool(pooled_broker, "used_bytes") == 0, timeout=15,
               message="answered requests and closed connections did not return their bytes")


def test_a_closed_connection_returns_what_it_held(pooled_broker: MetricsBroker) -> None:
    """Requests read and never answered, and a large request cut off halfway, go back to the
    budget when their connection closes; the broker serves on."""
    with RawClient(pooled_broker.bootstrap, timeout=30) as a:
        _, held = _park_and_pipeline(a, "closed")
        wait_until(lambda: _pool(pooled_broker, "used_bytes") == held, timeout=15,
                   message="A did not take its Fetch and two batches")
    with RawClient(pooled_broker.bootstrap, timeout=30) as c:
        frame = _frame(_produce("closed", 7), 1)
        c.send_raw(frame[: len(frame) // 2])  # the rest never comes
        # Once A's bytes are back, C's request holds its whole size (a large frame takes it up front).
        wait_until(lambda: _pool(pooled_broker, "used_bytes") == len(frame) - 4, timeout=15,
                   message="A's bytes did not come back, or C's request was not taken in")
    wait_until(lambda: _pool(pooled_broker, "used_bytes") == 0, timeout=15,
               message="closed connections did not return their bytes")
    with RawClient(pooled_broker.bootstrap, timeout=30) as b:
        assert b.request(_metadata("closed")).topics[0].error_code == 0


def test_without_the_setting_nothing_waits(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The control: the same requests on a broker with no budget; B is answered while A's Fetch
    still waits, and the metrics read as Kafka's MemoryPool.NONE (Long.MAX_VALUE left, none used)."""
    with MetricsBroker(log_dir=tmp_path_factory.mktemp("unpooled")) as broker, \
            RawClient(broker.bootstrap, timeout=30) as a, RawClient(broker.bootstrap, timeout=30) as b:
        produces, _ = _park_and_pipeline(a, "unpooled")
        assert b.request(_metadata("unpooled")).topics[0].error_code == 0
        assert not _readable(a.sock)  # A's Fetch is still parked
        _answers_of_a(a, produces)
        samples = scrape(broker.metrics_port)
        assert samples["asyncbroker_memory_pool_available_bytes"] == float((1 << 63) - 1)  # (as scraped)
        assert samples["asyncbroker_memory_pool_used_bytes"] == 0


def test_the_budget_must_hold_the_largest_request(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Kafka's KafkaConfig requirement, with its words; 0 and -1 mean no bound."""
    from asyncbroker.testing.broker import BrokerStartError

    with pytest.raises(BrokerStartError, match="requirement failed: queued.max.request.bytes must be larger or "
                                               "equal to socket.request.max.bytes"):
        BrokerProcess(["queued.max.request.bytes=1000"], log_dir=tmp_path_factory.mktemp("too-small")).start()


def test_described_as_kafka_describes_it(pooled_broker: MetricsBroker) -> None:
    """As Kafka 4.4 describes it when server.properties sets it (probed): the value, from the
    static config, read-only, a LONG, its synonyms the static value and the default -1."""
    from kio.schema.describe_configs.v4 import request as dc4

    with RawClient(pooled_broker.bootstrap) as c:
        answer = c.request(dc4.DescribeConfigsRequest(resources=(dc4.DescribeConfigsResource(
            resource_type=4, resource_name="1", configuration_keys=("queued.max.request.bytes",)),),
            include_synonyms=True, include_documentation=False))
    (entry,) = answer.results[0].configs
    static, default = 4, 5  # ConfigSource STATIC_BROKER_CONFIG, DEFAULT_CONFIG
    long_type = 5  # ConfigType LONG
    assert (entry.name, entry.value, entry.config_source, entry.read_only, entry.config_type) == (
        "queued.max.request.bytes", str(POOL), static, True, long_type)
    assert [(s.name, s.value, s.source) for s in entry.synonyms] == [
        ("queued.max.request.bytes", str(POOL), static), ("queued.max.request.bytes", "-1", default)]
