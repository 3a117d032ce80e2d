"""Client quotas with real clients (issue 20): kafka-configs.sh sets and describes them (the
Java AdminClient's AlterClientQuotas/DescribeClientQuotas), and a client over its quota gets
throttle_time_ms in its answers, as Kafka's quota managers compute it, while a client next to
it is not throttled. How closely a throttled client's rate converges to its quota is measured
in bench/ (bench_quotas), not asserted on a clock here.
"""
from __future__ import annotations

import datetime
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from asyncbroker.testing import BrokerProcess
from jvm.kafka_jvm import run_tool

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "oracle"))
from differential import Connection, batch, entity, request_class_name  # noqa: E402

pytestmark = pytest.mark.timeout(240)

CONFIGS = "org.apache.kafka.tools.ConfigCommand"
PRODUCE, FETCH, METADATA = 0, 1, 3


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with BrokerProcess(["num.partitions=1"], log_dir=tmp_path_factory.mktemp("quota-data")) as b:
        yield b


def configs(broker: BrokerProcess, *args: str) -> str:
    result = run_tool(CONFIGS, ["--bootstrap-server", broker.bootstrap, *args])
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def call(conn: Connection, api_key: int, version: int, **fields: Any) -> Any:
    request = entity(api_key, version, request_class_name(api_key, version), **fields)
    return conn.receive(api_key, version, conn.send(request))


def produce(conn: Connection, topic: str, size: int) -> Any:
    data = (entity(PRODUCE, 9, "PartitionProduceData", index=0, records=batch(1, value_size=size)),)
    return call(conn, PRODUCE, 9, transactional_id=None, acks=1, timeout=datetime.timedelta(seconds=30),
                topic_data=(entity(PRODUCE, 9, "TopicProduceData", name=topic, partition_data=data),))


def ten_batches(writer: Connection, topic: str) -> None:
    """Auto-create `topic` and write ten 4 KB batches to its partition 0 (offsets 0-9)."""
    call(writer, METADATA, 12, topics=(entity(METADATA, 12, "MetadataRequestTopic", name=topic, topic_id=None),),
         allow_auto_topic_creation=True, include_topic_authorized_operations=False)
    for _ in range(100):  # bounded: the auto-created topic takes a request or two to appear
        if produce(writer, topic, 4000).responses[0].partition_responses[0].error_code.value == 0:
            break
    for _ in range(9):
        produce(writer, topic, 4000)


def throttle_ms(answer: Any) -> int:
    return int(answer.throttle_time.total_seconds() * 1000)


def test_kafka_configs_sets_and_describes_quotas(broker: BrokerProcess) -> None:
    client = f"cfg-{uuid.uuid4().hex[:6]}"
    configs(broker, "--alter", "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152",
            "--entity-type", "clients", "--entity-name", client)
    configs(broker, "--alter", "--add-config", "request_percentage=200", "--entity-type", "users",
            "--entity-name", "alice", "--entity-type", "clients", "--entity-name", client)
    described = configs(broker, "--describe", "--entity-type", "clients", "--entity-name", client)
    assert "producer_byte_rate=1048576.0" in described and "consumer_byte_rate=2097152.0" in described, described
    both = configs(broker, "--describe", "--entity-type", "users", "--entity-name", "alice",
                   "--entity-type", "clients", "--entity-name", client)
    assert "request_percentage=200.0" in both, both
    configs(broker, "--alter", "--delete-config", "producer_byte_rate", "--entity-type", "clients",
            "--entity-name", client)
    after = configs(broker, "--describe", "--entity-type", "clients", "--entity-name", client)
    assert "producer_byte_rate" not in after and "consumer_byte_rate=2097152.0" in after, after


def test_a_produce_quota_throttles_its_client_only(broker: BrokerProcess) -> None:
    """producer_byte_rate=2048 for one client id: its requests soon come back with a
    throttle time (the quota is measured over an 11-second window, so the first 20 KB pass);
    another client id's never do."""
    throttled_id, topic = f"slow-{uuid.uuid4().hex[:6]}", f"quota-{uuid.uuid4().hex[:6]}"
    configs(broker, "--alter", "--add-config", "producer_byte_rate=2048", "--entity-type", "clients",
            "--entity-name", throttled_id)
    slow, free = Connection(broker.bootstrap, client_id=throttled_id), Connection(broker.bootstrap, client_id="free")
    try:
        call(free, METADATA, 12, topics=(entity(METADATA, 12, "MetadataRequestTopic", name=topic, topic_id=None),),
             allow_auto_topic_creation=True, include_topic_authorized_operations=False)
        throttles = []
        for _ in range(8):
            answer = produce(slow, topic, 8000)
            throttles.append(throttle_ms(answer))
            if throttles[-1]:
                break
        assert throttles[-1] > 0, throttles
        # Over 2 KB/s by a whole window's worth: the throttle brings the rate back to the quota.
        assert 1000 < throttles[-1] < 60_000, throttles
        assert [throttle_ms(produce(free, topic, 8000)) for _ in range(4)] == [0, 0, 0, 0]
    finally:
        slow.close()
        free.close()


def test_librdkafka_hears_the_throttle(broker: BrokerProcess) -> None:
    """confluent-kafka's throttle callback reports the broker's throttle time for the client
    over its quota, and the records still arrive."""
    client = f"rd-{uuid.uuid4().hex[:6]}"
    topic = f"quota-rd-{uuid.uuid4().hex[:6]}"
    configs(broker, "--alter", "--add-config", "producer_byte_rate=4096", "--entity-type", "clients",
            "--entity-name", client)
    events: list[Any] = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "client.id": client, "linger.ms": 5,
                         "throttle_cb": events.append})
    delivered: list[Any] = []
    for _ in range(400):  # bounded: at most 400 records of 200 B, each poll at most 0.05 s
        producer.produce(topic, b"x" * 200, on_delivery=lambda err, msg: delivered.append(err))
        producer.poll(0.05)
        if events:
            break
    producer.flush(60)
    assert events and events[0].throttle_time > 0 and events[0].broker_name, events
    assert delivered and all(err is None for err in delivered)


def test_a_fetch_quota_answers_empty_while_throttled(broker: BrokerProcess) -> None:
    """consumer_byte_rate: an answer that would take the client over its quota comes back
    empty with the throttle time (Kafka does not send bytes it would have to take back)."""
    client, topic = f"fetch-{uuid.uuid4().hex[:6]}", f"quota-f-{uuid.uuid4().hex[:6]}"
    writer = Connection(broker.bootstrap, client_id="writer")
    reader = Connection(broker.bootstrap, client_id=client)
    try:
        ten_batches(writer, topic)
        configs(broker, "--alter", "--add-config", "consumer_byte_rate=1024", "--entity-type", "clients",
                "--entity-name", client)
        answers = []
        offset = 0
        for _ in range(10):
            answer = call(reader, FETCH, 12, cluster_id=None, replica_id=-1, replica_state=None,
                          max_wait=datetime.timedelta(milliseconds=0), min_bytes=1, max_bytes=1 << 20,
                          isolation_level=0, session_id=0, session_epoch=-1, forgotten_topics_data=(), rack_id="",
                          topics=(entity(FETCH, 12, "FetchTopic", topic=topic, partitions=(
                              entity(FETCH, 12, "FetchPartition", partition=0, current_leader_epoch=-1,
                                     fetch_offset=offset, last_fetched_epoch=-1, log_start_offset=-1,
                                     partition_max_bytes=1 << 20),)),))
            answers.append(answer)
            if throttle_ms(answer):
                break
            offset += 2  # two 4 KB batches an answer
        last = answers[-1]
        assert throttle_ms(last) > 0 and last.responses == (), [throttle_ms(a) for a in answers]
        # A window allows 10 KB at 1 KB/s: no answer carries more records than that.
        assert all(len(p.records or b"") <= 10_240 for a in answers for t in a.responses for p in t.partitions)
    finally:
        writer.close()
        reader.close()


def test_a_throttled_incremental_fetch_keeps_its_session(broker: BrokerProcess) -> None:
    """In a fetch session, the throttled answer is empty and names the session; the fetch
    used its epoch, and the session goes on from the next one (Kafka's IncrementalFetchContext)."""
    client, topic = f"fetch-s-{uuid.uuid4().hex[:6]}", f"quota-s-{uuid.uuid4().hex[:6]}"
    writer = Connection(broker.bootstrap, client_id="writer")
    reader = Connection(broker.bootstrap, client_id=client)

    def fetch(session_id: int, epoch: int, offset: int | None) -> Any:
        partitions = () if offset is None else (entity(
            FETCH, 12, "FetchPartition", partition=0, current_leader_epoch=-1, fetch_offset=offset,
            last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=1 << 20),)
        return call(reader, FETCH, 12, cluster_id=None, replica_id=-1, replica_state=None,
                    max_wait=datetime.timedelta(milliseconds=0), min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                    session_id=session_id, session_epoch=epoch, forgotten_topics_data=(), rack_id="",
                    topics=(entity(FETCH, 12, "FetchTopic", topic=topic, partitions=partitions),) if partitions else ())

    try:
        ten_batches(writer, topic)
        opened = fetch(0, 0, 10)  # at the end: nothing to send, not throttled
        session_id = opened.session_id
        assert session_id != 0 and throttle_ms(opened) == 0
        configs(broker, "--alter", "--add-config", "consumer_byte_rate=1024", "--entity-type", "clients",
                "--entity-name", client)
        epoch, offset, answer = 1, 0, None
        for _ in range(10):
            answer = fetch(session_id, epoch, offset)
            epoch += 1
            if throttle_ms(answer):
                break
            offset += 2  # two 4 KB batches an answer
        assert answer is not None and throttle_ms(answer) > 0
        assert (answer.error_code.value, answer.session_id, answer.responses) == (0, session_id, ())
        again = fetch(session_id, epoch - 1, None)
        assert (again.error_code.value, again.session_id) == (71, 0)  # INVALID_FETCH_SESSION_EPOCH: it was used
        after = fetch(session_id, epoch, None)
        assert (after.error_code.value, after.session_id) == (0, session_id)
    finally:
        writer.close()
        reader.close()


def test_a_request_quota_throttles_metadata(broker: BrokerProcess) -> None:
    """request_percentage: a client allowed a sliver of the broker's time is throttled after a
    few requests of any kind; the throttle is capped at one quota window (1 s). How many
    requests spend 0.001% of the broker's time over the quota's samples depends on how long each
    takes (a cached Metadata answer, hand-encoded, takes microseconds), so the client sends until
    the throttle reaches the cap."""
    client = f"req-{uuid.uuid4().hex[:6]}"
    configs(broker, "--alter", "--add-config", "request_percentage=0.001", "--entity-type", "clients",
            "--entity-name", client)
    conn = Connection(broker.bootstrap, client_id=client)
    try:
        throttles: list[int] = []
        while len(throttles) < 100 and not (throttles and throttles[-1] >= 1000):
            throttles.append(throttle_ms(call(conn, METADATA, 12, topics=None, allow_auto_topic_creation=False,
                                              include_topic_authorized_operations=False)))
        assert max(throttles) == throttles[-1] == 1000, throttles  # throttled, never past the cap
    finally:
        conn.close()


def test_quotas_survive_a_restart(tmp_path: Path) -> None:
    with BrokerProcess(log_dir=tmp_path / "data") as b:
        configs(b, "--alter", "--add-config", "producer_byte_rate=4096", "--entity-type", "users",
                "--entity-default")
        b.restart()
        described = configs(b, "--describe", "--entity-type", "users", "--entity-default")
        assert "producer_byte_rate=4096.0" in described, described


def test_a_connection_rate_quota_holds_an_address_back(tmp_path: Path) -> None:
    """connection_creation_rate=1 on 127.0.0.1: Kafka's rate spreads the first connections over
    the 11-second quota window, so about ten go through; later ones are not served and are
    closed when their throttle ends (at most one window, 1 s). Without the quota every
    connection is served again."""
    with BrokerProcess(log_dir=tmp_path / "data") as b:
        configs(b, "--alter", "--add-config", "connection_creation_rate=1", "--entity-type", "ips",
                "--entity-name", "127.0.0.1")
        served = []
        for _ in range(20):
            conn = Connection(b.bootstrap, timeout=5.0)
            try:
                answer = call(conn, 18, 3, client_software_name="t", client_software_version="1")
                served.append(answer.error_code.value == 0)
            except (ConnectionError, TimeoutError):
                served.append(False)
            finally:
                conn.close()
            if not served[-1]:
                break  # held back: each further refusal only waits out its throttle again
        assert served[0] and not all(served), served
        assert "over its connection_creation_rate quota" in b.output()
        configs(b, "--alter", "--delete-config", "connection_creation_rate", "--entity-type", "ips",
                "--entity-name", "127.0.0.1")
        conn = Connection(b.bootstrap, timeout=5.0)
        try:
            assert call(conn, 18, 3, client_software_name="t", client_software_version="1").error_code.value == 0
        finally:
            conn.close()


def test_a_clean_stop_does_not_sit_out_a_throttle(tmp_path: Path) -> None:
    """A throttled connection is muted for its throttle time (over 10 s here). A clean stop closes
    it at once, as Kafka's shutdown closes muted channels, rather than waiting the throttle out
    until the limit on answering in-flight requests (10 s) gives up on it with a warning."""
    throttled_id, topic = f"slow-{uuid.uuid4().hex[:6]}", f"quota-{uuid.uuid4().hex[:6]}"
    b = BrokerProcess(["num.partitions=1"], log_dir=tmp_path / "data")
    try:
        b.start()
        configs(b, "--alter", "--add-config", "producer_byte_rate=512", "--entity-type", "clients",
                "--entity-name", throttled_id)
        slow = Connection(b.bootstrap, client_id=throttled_id)
        try:
            throttles: list[int] = []
            for _ in range(8):  # 8 KB a time over 512 B/s: a throttle longer than that limit soon
                throttles.append(throttle_ms(produce(slow, topic, 8000)))
                if throttles[-1] > 10_500:
                    break
            assert throttles[-1] > 10_500, throttles  # muted for longer than the 10 s limit from now
            assert b.stop(timeout=60) == 0, b.output()[-3000:]
        finally:
            slow.close()
        assert "did not finish in time" not in b.output(), b.output()[-3000:]
        assert "shut down completed" in b.output()
    finally:
        b.cleanup()
