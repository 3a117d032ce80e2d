"""ShareFetch and ShareAcknowledge (KIP-932) end to end on one broker, with raw requests: a
share group member acquires records, accepts some, releases one (delivered again to the
other member with its delivery count raised), rejects one; a lock that runs out hands
records back; the share session's epochs are checked."""

from __future__ import annotations

import datetime
import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.incremental_alter_configs.v1 import request as alter_v1
from kio.schema.share_acknowledge.v1 import request as ack_v1
from kio.schema.share_fetch.v1 import request as fetch_v1
from kio.schema.share_group_heartbeat.v1 import request as heartbeat_v1

from asyncbroker.testing import BrokerProcess
from raw_client import RawClient

pytestmark = pytest.mark.timeout(120)

GROUP, TOPIC = "share-g", "share-t"
ACCEPT, RELEASE, REJECT = 1, 2, 3


def join(c: RawClient, member: str) -> Any:
    """Heartbeats until the member is assigned the topic's partition; its topic id."""
    deadline = time.monotonic() + 20
    epoch = 0
    while time.monotonic() < deadline:
        answer = c.request(heartbeat_v1.ShareGroupHeartbeatRequest(
            group_id=GROUP, member_id=member, member_epoch=epoch, rack_id=None,
            subscribed_topic_names=(TOPIC,) if epoch == 0 else None))
        assert answer.error_code.value == 0, answer
        epoch = answer.member_epoch
        if answer.assignment is not None and answer.assignment.topic_partitions:
            return answer.assignment.topic_partitions[0].topic_id
        time.sleep(0.05)  # polling a condition with a deadline
    raise AssertionError("never assigned")


def fetch(c: RawClient, member: str, epoch: int, topic_id: uuid.UUID, acks: tuple[tuple[int, int, int], ...] = (),
          wait_ms: int = 2000) -> Any:
    return c.request(fetch_v1.ShareFetchRequest(
        group_id=GROUP, member_id=member, share_session_epoch=epoch, max_wait=datetime.timedelta(milliseconds=wait_ms),
        min_bytes=1, max_bytes=1 << 20, max_records=500, batch_size=500,
        topics=(fetch_v1.FetchTopic(topic_id=topic_id, partitions=(fetch_v1.FetchPartition(
            partition_index=0, acknowledgement_batches=tuple(
                fetch_v1.AcknowledgementBatch(first_offset=f, last_offset=l, acknowledge_types=(t,))
                for f, l, t in acks)),)),),
        forgotten_topics_data=()))


def acquired(answer: Any) -> list[tuple[int, int, int]]:
    assert answer.error_code.value == 0, answer
    return [(a.first_offset, a.last_offset, a.delivery_count)
            for t in answer.responses for p in t.partitions for a in p.acquired_records]


def test_records_are_shared_acknowledged_and_redelivered() -> None:
    with BrokerProcess(["group.share.record.lock.duration.ms=15000", "group.share.min.record.lock.duration.ms=1000"]) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
        for i in range(4):
            producer.produce(TOPIC, f"v{i}".encode())
            producer.flush(10)  # one batch per record
        with RawClient(broker.bootstrap) as c:
            set_group_config(c, "share.auto.offset.reset", "earliest")
            set_group_config(c, "share.record.lock.duration.ms", "1000")
            topic_id = join(c, "m-a")
            first = fetch(c, "m-a", 0, topic_id)
            assert acquired(first) == [(0, 3, 1)]  # new batches in one range, as Kafka
            assert first.acquisition_lock_timeout.total_seconds() == 1
            # accept 0-1, release 2, reject 3: 2 is to be delivered again
            second = fetch(c, "m-a", 1, topic_id, acks=((0, 1, ACCEPT), (2, 2, RELEASE), (3, 3, REJECT)))
            assert acquired(second) == [(2, 2, 2)]
            stale = fetch(c, "m-a", 1, topic_id)
            assert stale.error_code.value == 123  # INVALID_SHARE_SESSION_EPOCH
            # m-a holds 2 past its lock: it goes back, and the other member gets it
            join(c, "m-b")
            other = fetch(c, "m-b", 0, topic_id, wait_ms=5000)
            assert acquired(other) == [(2, 2, 3)]
            done = c.request(ack_v1.ShareAcknowledgeRequest(
                group_id=GROUP, member_id="m-b", share_session_epoch=1, topics=(ack_v1.AcknowledgeTopic(
                    topic_id=topic_id, partitions=(ack_v1.AcknowledgePartition(
                        partition_index=0, acknowledgement_batches=(ack_v1.AcknowledgementBatch(
                            first_offset=2, last_offset=2, acknowledge_types=(ACCEPT,)),)),)),)))
            assert done.error_code.value == 0 and done.responses[0].partitions[0].error_code.value == 0, done
            again = c.request(ack_v1.ShareAcknowledgeRequest(
                group_id=GROUP, member_id="m-b", share_session_epoch=2, topics=(ack_v1.AcknowledgeTopic(
                    topic_id=topic_id, partitions=(ack_v1.AcknowledgePartition(
                        partition_index=0, acknowledgement_batches=(ack_v1.AcknowledgementBatch(
                            first_offset=2, last_offset=2, acknowledge_types=(ACCEPT,)),)),)),)))
            # Done with: before the start offset now, passed over without an error, as Kafka does
            # (tests/oracle/test_share_fetch_v2.py compares it).
            assert again.responses[0].partitions[0].error_code.value == 0, again
            empty = fetch(c, "m-b", 3, topic_id, wait_ms=200)
            assert acquired(empty) == []


def set_group_config(c: RawClient, key: str, value: str) -> None:
    answer = c.request(alter_v1.IncrementalAlterConfigsRequest(resources=(alter_v1.AlterConfigsResource(
        resource_type=32, resource_name=GROUP, configs=(alter_v1.AlterableConfig(
            name=key, config_operation=0, value=value),)),), validate_only=False))
    assert answer.responses[0].error_code.value == 0, answer


def test_sigkill_keeps_what_members_acknowledged() -> None:
    """SIGKILL after a member accepted one record, released one and still holds one: after the
    restart the accepted record is never delivered again, and the other two are, each with
    its delivery counted."""
    with BrokerProcess([]) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
        for i in range(3):
            producer.produce(TOPIC, f"v{i}".encode())
            producer.flush(10)
        with RawClient(broker.bootstrap) as c:
            set_group_config(c, "share.auto.offset.reset", "earliest")
            topic_id = join(c, "m-a")
            assert acquired(fetch(c, "m-a", 0, topic_id)) == [(0, 2, 1)]
            acked = fetch(c, "m-a", 1, topic_id, acks=((0, 0, ACCEPT), (1, 1, RELEASE)), wait_ms=0)
            assert acquired(acked) == [(1, 1, 2)]  # released, then acquired again at once
        broker.restart(kill=True)
        with RawClient(broker.bootstrap) as c:
            topic_id = join(c, "m-a")
            # Acquisitions are not stored: both come back as they were at the last acknowledgement.
            assert acquired(fetch(c, "m-a", 0, topic_id)) == [(1, 2, 2)]


def test_a_renewed_lock_outlives_the_first() -> None:
    """ShareFetch/ShareAcknowledge v2: with a 2 s record lock, a record renewed at 1.2 s is still
    the member's at 2.6 s (accepted without error), while one not renewed has gone back by then."""
    from kio.schema.share_acknowledge.v2 import request as ack_v2
    from kio.schema.share_fetch.v2 import request as fetch_v2

    def acknowledge(c: RawClient, epoch: int, topic_id: uuid.UUID, offset: int, kind: int) -> Any:
        answer = c.request(ack_v2.ShareAcknowledgeRequest(
            group_id=GROUP, member_id="m-a", share_session_epoch=epoch, is_renew_ack=kind == RENEW,
            topics=(ack_v2.AcknowledgeTopic(topic_id=topic_id, partitions=(ack_v2.AcknowledgePartition(
                partition_index=0, acknowledgement_batches=(ack_v2.AcknowledgementBatch(
                    first_offset=offset, last_offset=offset, acknowledge_types=(kind,)),)),)),)))
        assert answer.error_code.value == 0, answer
        assert answer.acquisition_lock_timeout.total_seconds() == 2
        return answer.responses[0].partitions[0]

    RENEW = 4
    with BrokerProcess(["group.share.min.record.lock.duration.ms=1000"]) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
        for i in range(2):
            producer.produce(TOPIC, f"v{i}".encode())
            producer.flush(10)
        with RawClient(broker.bootstrap) as c:
            set_group_config(c, "share.auto.offset.reset", "earliest")
            set_group_config(c, "share.record.lock.duration.ms", "2000")
            topic_id = join(c, "m-a")
            first = c.request(fetch_v2.ShareFetchRequest(
                group_id=GROUP, member_id="m-a", share_session_epoch=0,
                max_wait=datetime.timedelta(milliseconds=2000), min_bytes=1, max_bytes=1 << 20, max_records=500,
                batch_size=500, share_acquire_mode=0, is_renew_ack=False,
                topics=(fetch_v2.FetchTopic(topic_id=topic_id, partitions=(fetch_v2.FetchPartition(
                    partition_index=0, acknowledgement_batches=()),)),), forgotten_topics_data=()))
            assert acquired(first) == [(0, 1, 1)]
            started = time.monotonic()
            time.sleep(1.2)  # within the first lock
            assert acknowledge(c, 1, topic_id, 0, RENEW).error_code.value == 0
            time.sleep(max(0.0, started + 2.6 - time.monotonic()))  # past the first lock, within the renewed one
            assert acknowledge(c, 2, topic_id, 0, ACCEPT).error_code.value == 0  # still held: renewed
            gone = acknowledge(c, 3, topic_id, 1, ACCEPT)  # not renewed: its lock ran out
            assert (gone.error_code.value, gone.error_message) == (
                121, "The offset cannot be acknowledged. The offset is not acquired."), gone


def alter_offsets(c: RawClient, offsets: dict[int, int]) -> Any:
    from kio.schema.alter_share_group_offsets.v0 import request as alter_offsets_v0
    return c.request(alter_offsets_v0.AlterShareGroupOffsetsRequest(group_id=GROUP, topics=(
        alter_offsets_v0.AlterShareGroupOffsetsRequestTopic(topic_name=TOPIC, partitions=tuple(
            alter_offsets_v0.AlterShareGroupOffsetsRequestPartition(partition_index=p, start_offset=o)
            for p, o in offsets.items())),)))


def described_offsets(c: RawClient) -> list[tuple[int, int, int, int]]:
    """(partition, start offset, leader epoch, lag) of every partition the group has state for."""
    from kio.schema.describe_share_group_offsets.v1 import request as describe_offsets_v1
    answer = c.request(describe_offsets_v1.DescribeShareGroupOffsetsRequest(groups=(
        describe_offsets_v1.DescribeShareGroupOffsetsRequestGroup(group_id=GROUP, topics=None),)))
    group = answer.groups[0]
    assert group.error_code.value == 0, answer
    return [(p.partition_index, p.start_offset, p.leader_epoch, p.lag) for t in group.topics for p in t.partitions
            if p.error_code.value == 0]


def leave(c: RawClient, member: str) -> None:
    answer = c.request(heartbeat_v1.ShareGroupHeartbeatRequest(
        group_id=GROUP, member_id=member, member_epoch=-1, rack_id=None, subscribed_topic_names=None))
    assert answer.error_code.value == 0, answer


def test_altered_offsets_survive_a_restart_and_deleted_ones_reset() -> None:
    """AlterShareGroupOffsets on a group not yet known: the start offset is durable (SIGKILL),
    the next fetch starts there; altered back, records already accepted are delivered again;
    DeleteShareGroupOffsets makes the next fetch start where share.auto.offset.reset says."""
    with BrokerProcess([]) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
        for i in range(6):
            producer.produce(TOPIC, f"v{i}".encode())
            producer.flush(10)  # one batch per record
        with RawClient(broker.bootstrap) as c:
            set_group_config(c, "share.auto.offset.reset", "earliest")
            altered = alter_offsets(c, {0: 3})
            assert altered.error_code.value == 0 and altered.responses[0].partitions[0].error_code.value == 0, altered
            assert described_offsets(c) == [(0, 3, 0, 3)]
        broker.restart(kill=True)
        with RawClient(broker.bootstrap) as c:
            assert described_offsets(c) == [(0, 3, 0, 3)]
            topic_id = join(c, "m-a")
            assert acquired(fetch(c, "m-a", 0, topic_id)) == [(3, 5, 1)]
            acked = fetch(c, "m-a", 1, topic_id, acks=((3, 5, ACCEPT),), wait_ms=0)
            assert acquired(acked) == []
            # As Kafka's: the state is written before the start offset moves past what was accepted.
            assert described_offsets(c) == [(0, 3, 0, 0)]
            refused = alter_offsets(c, {0: 1})
            assert refused.error_code.value == 68 and refused.error_message == "The group is not empty.", refused
            leave(c, "m-a")
            assert alter_offsets(c, {0: 1}).error_code.value == 0
            assert described_offsets(c) == [(0, 1, 0, 5)]
            topic_id = join(c, "m-b")
            assert acquired(fetch(c, "m-b", 0, topic_id)) == [(1, 5, 1)]
            leave(c, "m-b")
            from kio.schema.delete_share_group_offsets.v0 import request as delete_offsets_v0
            deleted = c.request(delete_offsets_v0.DeleteShareGroupOffsetsRequest(group_id=GROUP, topics=(
                delete_offsets_v0.DeleteShareGroupOffsetsRequestTopic(topic_name=TOPIC),)))
            assert deleted.error_code.value == 0 and deleted.responses[0].error_code.value == 0, deleted
            assert described_offsets(c) == []
        broker.restart(kill=True)
        with RawClient(broker.bootstrap) as c:
            assert described_offsets(c) == []
            topic_id = join(c, "m-c")
            assert acquired(fetch(c, "m-c", 0, topic_id)) == [(0, 5, 1)]
