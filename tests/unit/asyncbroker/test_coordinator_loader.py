"""CoordinatorLoader: what a broker restarted on the same log directory reads back from
`__consumer_offsets` into the group and offset managers (real broker, real files)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from asyncbroker.broker import Broker
from asyncbroker.config import KafkaConfig
from asyncbroker.coordinator_records import (
    OffsetCommitKey,
    OffsetCommitValue,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from asyncbroker.offsets_topic import GROUP_METADATA_TOPIC_NAME
from storage.topic_partition import TopicPartition
from wire.errors import ErrorCode
from wire.records import ControlRecordType

pytestmark = pytest.mark.timeout(60)

PRODUCER_COMMITTED, PRODUCER_ABORTED, PRODUCER_OPEN = 1000, 1001, 1002


def config(log_dir: Path) -> KafkaConfig:
    # One offsets partition: every group's records share it, so the replay order is the log's.
    return KafkaConfig.load(None, [f"log.dirs={log_dir}", "listeners=PLAINTEXT://127.0.0.1:0",
                                   "offsets.topic.num.partitions=1"], {})


def offset_record(group: str, partition: int, offset: int | None) -> tuple[bytes, bytes | None]:
    key = encode_offset_commit_key(OffsetCommitKey(group, "t", partition))
    return key, None if offset is None else encode_offset_commit_value(OffsetCommitValue(offset, "m", 1, 0))


async def write_history(broker: Broker) -> None:
    """Plain commits, a tombstone, three transactions (committed, aborted, still open) and a
    record of a type classic groups do not know, as they would sit in the log."""
    topic = broker.group_coordinator.offsets_topic
    await topic.append(0, [offset_record("plain", 0, 5), offset_record("plain", 1, 6)])
    await topic.append(0, [offset_record("plain", 1, None)])
    for producer_id, group in ((PRODUCER_COMMITTED, "txn-committed"), (PRODUCER_ABORTED, "txn-aborted"),
                               (PRODUCER_OPEN, "txn-open")):
        await topic.append(0, [offset_record(group, 0, 7)], (producer_id, 0))
    await topic.append(0, [(b"\x00\x63unknown record type", b"value")])
    offsets_partition = frozenset({TopicPartition(GROUP_METADATA_TOPIC_NAME, 0)})
    for producer_id, result in ((PRODUCER_COMMITTED, ControlRecordType.COMMIT),
                                (PRODUCER_ABORTED, ControlRecordType.ABORT)):
        outcome = await broker.replica_manager.write_txn_markers(producer_id, 0, 0, result, offsets_partition)
        assert set(outcome.values()) == {ErrorCode.NONE}


async def test_a_restart_replays_offsets_transactions_and_tombstones(tmp_path: Path,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    broker = Broker(config(tmp_path))
    await broker.startup()
    try:
        await broker.loaded_group_coordinator()
        await broker.group_coordinator.offsets_topic.ensure_created()
        await write_history(broker)
    finally:
        broker.group_coordinator.close()
        await broker.shutdown()

    caplog.set_level(logging.INFO, logger="asyncbroker.coordinator_loader")
    broker = Broker(config(tmp_path))
    await broker.startup()
    try:
        c = await broker.loaded_group_coordinator()
        # The tombstone removed (t, 1); a group known only by its offsets is back, Empty.
        assert [(f.partition, f.offset) for f in c.fetch_offsets("plain", None)] == [(0, 5)]
        assert c.describe_group("plain").state == "Empty"
        # The committed transaction's offset counts, the aborted one's never does.
        assert [f.offset for f in c.fetch_offsets("txn-committed", None)] == [7]
        assert c.fetch_offsets("txn-aborted", None) == []
        # The open transaction's offset waits for its marker: unstable to a consumer that asks.
        assert [f.error for f in c.fetch_offsets("txn-open", [("t", 0)], require_stable=True)] == [
            ErrorCode.UNSTABLE_OFFSET_COMMIT]
        assert [f.offset for f in c.fetch_offsets("txn-open", [("t", 0)])] == [-1]
        c.on_transaction_completed(PRODUCER_OPEN, [TopicPartition(GROUP_METADATA_TOPIC_NAME, 0)],
                                   ControlRecordType.COMMIT)
        assert [f.offset for f in c.fetch_offsets("txn-open", [("t", 0)], require_stable=True)] == [7]
        assert sorted(c.groups) == ["plain", "txn-committed", "txn-open"]
        loaded = [r.getMessage() for r in caplog.records if r.name == "asyncbroker.coordinator_loader"]
        assert any(m.startswith("Loaded 2 group(s) and 2 committed offset(s) from __consumer_offsets")
                   for m in loaded), loaded
    finally:
        broker.group_coordinator.close()
        await broker.shutdown()
