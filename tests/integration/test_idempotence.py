"""The idempotent producer: InitProducerId, duplicate batches answered with their
first offsets, out-of-order and stale-epoch batches refused, and producer
state that survives restarts (from a snapshot, and rebuilt from the log)."""

from __future__ import annotations

import datetime
import time
from pathlib import Path

import pytest
from kio.schema.init_producer_id.v4 import request as ipid4
from kio.schema.metadata.v12 import request as meta12
from kio.schema.produce.v9 import request as produce9

from asyncbroker.testing import BrokerProcess
from raw_client import RawClient
from wire.errors import ErrorCode
from wire.messages import ApiKey
from wire.records import Record, build_batch

pytestmark = pytest.mark.timeout(90)


def init_producer_id(c: RawClient, producer_id: int = -1, epoch: int = -1) -> tuple[int, int]:
    resp = c.request(ipid4.InitProducerIdRequest(transactional_id=None, transaction_timeout=datetime.timedelta(0),
                                                 producer_id=producer_id, producer_epoch=epoch))
    assert resp.error_code == ErrorCode.NONE
    return resp.producer_id, resp.producer_epoch



def idempotent_batch(pid: int, epoch: int, seq: int, n: int = 3) -> bytes:
    now = int(time.time() * 1000)
    return build_batch([Record(offset=i, timestamp=now, key=b"k%d" % (seq + i), value=b"v%d" % (seq + i))
                        for i in range(n)], producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def produce(c: RawClient, topic: str, records: bytes) -> tuple[int, int]:
    """(error code, base offset) of a one-partition produce."""
    req = produce9.ProduceRequest(
        transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=5),
        topic_data=(produce9.TopicProduceData(name=topic, partition_data=(
            produce9.PartitionProduceData(index=0, records=records),)),),
    )
    resp = c.request(req)
    p = resp.responses[0].partition_responses[0]
    return int(p.error_code), p.base_offset


def log_end(bootstrap: str, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    finally:
        c.close()


def test_confluent_idempotent_producer_writes_each_record_once() -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    with BrokerProcess(["num.partitions=1"]) as broker:
        p = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "linger.ms": 2,
                      "max.in.flight.requests.per.connection": 5, "acks": "all"})
        offsets: list[int] = []
        for i in range(2000):
            p.produce("idem", value=str(i).encode(), on_delivery=lambda err, m: offsets.append(
                -1 if err else m.offset()))
            if i % 500 == 0:
                p.poll(0)
        assert p.flush(30) == 0
        assert sorted(offsets) == list(range(2000))
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "idem-check",
                      "enable.auto.commit": False})
        c.assign([TopicPartition("idem", 0, 0)])
        values = []
        deadline = time.monotonic() + 20
        while len(values) < 2000 and time.monotonic() < deadline:
            for m in c.consume(1000, 0.2):
                if not m.error():
                    values.append(int(m.value()))
        c.close()
        assert values == list(range(2000))


def test_duplicate_out_of_order_and_fenced_batches_on_a_raw_connection() -> None:
    with BrokerProcess(["num.partitions=1"]) as broker, RawClient(broker.bootstrap) as c:
        c.create_topic("raw-idem")
        pid, epoch = init_producer_id(c)
        assert produce(c, "raw-idem", idempotent_batch(pid, epoch, 0)) == (ErrorCode.NONE, 0)
        assert produce(c, "raw-idem", idempotent_batch(pid, epoch, 3)) == (ErrorCode.NONE, 3)
        # The same batch again (a retry): appended once, answered with the first offsets.
        assert produce(c, "raw-idem", idempotent_batch(pid, epoch, 3)) == (ErrorCode.NONE, 3)
        assert produce(c, "raw-idem", idempotent_batch(pid, epoch, 0)) == (ErrorCode.NONE, 0)
        assert log_end(broker.bootstrap, "raw-idem") == 6
        # A gap in the sequence.
        err, _ = produce(c, "raw-idem", idempotent_batch(pid, epoch, 10))
        assert err == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert produce(c, "raw-idem", idempotent_batch(pid, epoch, 6)) == (ErrorCode.NONE, 6)
        # A higher epoch of a known producer (KIP-360) restarts its sequence at 0 and fences
        # the old epoch. (InitProducerId without a transactional id never bumps, as in Kafka 4.4:
        # a producer that sends its id and epoch gets a new id with epoch 0.)
        new_pid, new_pid_epoch = init_producer_id(c, pid, epoch)
        assert new_pid != pid and new_pid_epoch == 0
        new_epoch = epoch + 1
        err, _ = produce(c, "raw-idem", idempotent_batch(pid, new_epoch, 5))
        assert err == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert produce(c, "raw-idem", idempotent_batch(pid, new_epoch, 0)) == (ErrorCode.NONE, 9)
        err, _ = produce(c, "raw-idem", idempotent_batch(pid, epoch, 9))
        assert err == ErrorCode.INVALID_PRODUCER_EPOCH
        # A producer the partition never saw may start anywhere (Kafka since KIP-360).
        other, other_epoch = init_producer_id(c)
        assert produce(c, "raw-idem", idempotent_batch(other, other_epoch, 42)) == (ErrorCode.NONE, 12)
        assert log_end(broker.bootstrap, "raw-idem") == 15


@pytest.mark.parametrize("how", ["sigterm-snapshot", "sigkill-no-snapshot", "sigterm-snapshots-deleted-rolled"])
def test_producer_state_survives_restart(how: str, tmp_path: Path) -> None:
    overrides = ["num.partitions=1"]
    if how == "sigterm-snapshots-deleted-rolled":
        overrides.append("log.segment.bytes=1048576")
    with BrokerProcess(overrides, log_dir=tmp_path) as broker:
        with RawClient(broker.bootstrap) as c:
            c.create_topic("restart-idem")
            pid, epoch = init_producer_id(c)
            seq = 0
            if how == "sigterm-snapshots-deleted-rolled":
                # Enough data for several segments, so snapshots are taken on roll.
                big = [Record(offset=i, timestamp=int(time.time() * 1000), value=b"x" * 1000) for i in range(100)]
                for _ in range(25):
                    records = build_batch(big, producer_id=pid, producer_epoch=epoch, base_sequence=seq)
                    assert produce(c, "restart-idem", records)[0] == ErrorCode.NONE
                    seq += 100
            first = produce(c, "restart-idem", idempotent_batch(pid, epoch, seq))
            assert first[0] == ErrorCode.NONE
        log_dir = tmp_path / "restart-idem-0"
        if how == "sigkill-no-snapshot":
            broker.kill()
            assert not list(log_dir.glob("*.snapshot"))
        else:
            broker.stop()
            snapshots = sorted(log_dir.glob("*.snapshot"))
            assert snapshots, "a snapshot is written at shutdown"
            if how == "sigterm-snapshots-deleted-rolled":
                assert len(snapshots) > 1, "snapshots are written at every roll"
                # Only the roll snapshots older than the last one remain: recovery replays from there.
                snapshots[-1].unlink()
                (tmp_path / ".kafka_cleanshutdown").unlink(missing_ok=True)
        broker.start()
        with RawClient(broker.bootstrap) as c:
            # The retry of the last batch is still recognised, with its original offsets.
            assert produce(c, "restart-idem", idempotent_batch(pid, epoch, seq)) == first
            err, _ = produce(c, "restart-idem", idempotent_batch(pid, epoch, seq + 10))
            assert err == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
            assert produce(c, "restart-idem", idempotent_batch(pid, epoch, seq + 3)) == (ErrorCode.NONE, first[1] + 3)


def test_idle_producer_state_expires() -> None:
    overrides = ["num.partitions=1", "producer.id.expiration.ms=500", "producer.id.expiration.check.interval.ms=50"]
    with BrokerProcess(overrides) as broker, RawClient(broker.bootstrap) as c:
        c.create_topic("expiring")
        pid, epoch = init_producer_id(c)
        assert produce(c, "expiring", idempotent_batch(pid, epoch, 0)) == (ErrorCode.NONE, 0)
        err, _ = produce(c, "expiring", idempotent_batch(pid, epoch, 10))
        assert err == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        # Once producer.id.expiration.ms has passed the producer is unknown: any sequence is accepted.
        deadline = time.monotonic() + 20
        while (result := produce(c, "expiring", idempotent_batch(pid, epoch, 10)))[0] != ErrorCode.NONE:
            assert result[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
            assert time.monotonic() < deadline, "producer state did not expire"
            time.sleep(0.05)
        assert result == (ErrorCode.NONE, 3)
