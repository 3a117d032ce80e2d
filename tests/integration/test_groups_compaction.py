"""`__consumer_offsets` is compacted like any compacted topic: repeated commits of one
offset key leave one record after a clean, and the committed offsets load back."""

from __future__ import annotations

import time

import pytest

from asyncbroker.testing import BrokerProcess

pytestmark = pytest.mark.timeout(90)

COMMITS = 400


def count_records(bootstrap: str, topic: str, partition: int) -> int:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False})
    try:
        low, high = c.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
        c.assign([TopicPartition(topic, partition, low)])
        seen = 0
        last = low - 1
        deadline = time.monotonic() + 20
        while last < high - 1 and time.monotonic() < deadline:
            for m in c.consume(500, 0.2):
                if not m.error():
                    seen += 1
                    last = m.offset()
        assert last >= high - 1, "did not read to the end of the partition"
        return seen
    finally:
        c.close()


def test_repeated_commits_compact_to_one_record_per_key() -> None:
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient

    overrides = ["offsets.topic.num.partitions=1", "num.partitions=2"]
    with BrokerProcess(overrides, monitor=True) as broker:
        from confluent_kafka.admin import NewTopic

        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("compact-src", 2)])["compact-src"].result()
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-compact"})
        try:
            for i in range(COMMITS):
                c.commit(offsets=[TopicPartition("compact-src", 0, i), TopicPartition("compact-src", 1, 2 * i)],
                         asynchronous=False)
        finally:
            c.close()
        other = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-deleted"})
        try:
            other.commit(offsets=[TopicPartition("compact-src", 0, 1)], asynchronous=False)
        finally:
            other.close()
        admin.delete_consumer_groups(["g-deleted"], request_timeout=10)["g-deleted"].result()
        assert count_records(broker.bootstrap, "__consumer_offsets", 0) >= 2 * COMMITS

        stats = broker.clean_now("__consumer_offsets")
        assert stats is not None and stats[0] is not None
        assert stats[0].messages_read >= 2 * COMMITS
        # Two offset keys of g-compact remain; g-deleted's tombstones stay until delete.retention.ms.
        assert count_records(broker.bootstrap, "__consumer_offsets", 0) <= 4

        broker.restart()
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-compact"})
        try:
            got = c.committed([TopicPartition("compact-src", 0), TopicPartition("compact-src", 1)], timeout=20)
        finally:
            c.close()
        assert [tp.offset for tp in got] == [COMMITS - 1, 2 * (COMMITS - 1)]
        listed = {g.group_id for g in admin.list_consumer_groups(request_timeout=10).result().valid}
        assert "g-deleted" not in listed and "g-compact" in listed
