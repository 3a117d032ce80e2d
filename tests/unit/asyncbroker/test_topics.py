"""TopicManager over a real LogManager in a tmp dir: validation, persistence, live config changes."""
from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from asyncbroker.config import ConfigSource, KafkaConfig
from storage.config_def import ConfigType
from asyncbroker.alter_config_op import AlterConfigOp
from asyncbroker.topics import ZERO_UUID, TopicDeletionDisabledError, TopicManager
from storage.log_manager import LogManager
from storage.partition_metadata import PartitionMetadataFile
from storage.topic_partition import TopicPartition
from wire.errors import (
    InvalidConfigurationError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    InvalidTopicError,
    TopicExistsError,
    UnknownServerError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
)


async def _to_thread(fn: Callable[..., Any], *args: Any) -> Any:
    return await asyncio.to_thread(fn, *args)


class Node:
    """A LogManager + TopicManager over one log dir, restartable."""

    def __init__(self, root: Path, overrides: list[str] | None = None) -> None:
        self.root = root
        self.config = KafkaConfig.load(None, [f"log.dirs={root / 'logs'}", *(overrides or [])], {})
        self.log_manager: LogManager | None = None
        self.topics: TopicManager | None = None

    def start(self) -> TopicManager:
        self.log_manager = LogManager(
            [Path(d) for d in self.config.log_dirs], self.config.log_config_defaults(), node_id=self.config.node_id
        )
        self.log_manager.startup()
        self.topics = TopicManager(config=self.config, log_manager=self.log_manager, run_blocking=_to_thread)
        return self.topics

    def stop(self) -> None:
        assert self.log_manager is not None
        self.log_manager.shutdown()
        self.log_manager = None

    def restart(self) -> TopicManager:
        self.stop()
        return self.start()


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[Node]:
    n = Node(tmp_path)
    n.start()
    yield n
    if n.log_manager is not None:
        n.stop()


async def test_create_with_configs(node: Node) -> None:
    tm = node.topics
    assert tm is not None
    meta = await tm.create_topic("orders", 3, 1, {"cleanup.policy": "compact", "segment.bytes": "1048576"})
    assert meta.partitions == 3 and meta.topic_id != ZERO_UUID and not meta.is_internal
    assert meta.configs == {"cleanup.policy": "compact", "segment.bytes": "1048576"}
    assert tm.get("orders") == meta and tm.by_id(meta.topic_id) == meta and tm.all() == [meta]
    for p in range(3):
        log = node.log_manager.get_log(TopicPartition("orders", p))  # type: ignore[union-attr]
        assert log is not None
        assert log.config.compact and log.config.segment_bytes == 1048576
        assert PartitionMetadataFile(log.dir).read() == meta.topic_id
    assert tm.log_config("orders").cleanup_policy == ("compact",)


async def test_defaults_from_broker_config(tmp_path: Path) -> None:
    n = Node(tmp_path, ["num.partitions=4", "log.segment.bytes=2097152"])
    tm = n.start()
    try:
        meta = await tm.create_topic("t")
        assert meta.partitions == 4
        assert tm.log_config("t").segment_bytes == 2097152
    finally:
        n.stop()


async def test_validate_only_creates_nothing(node: Node) -> None:
    tm = node.topics
    meta = await tm.create_topic("v", 2, -1, {"retention.ms": "1000"}, validate_only=True)  # type: ignore[union-attr]
    assert meta.topic_id == ZERO_UUID and meta.partitions == 2
    assert tm.get("v") is None  # type: ignore[union-attr]
    assert not list((node.root / "logs").glob("v-*"))


async def test_existing_topic(node: Node) -> None:
    await node.topics.create_topic("dup")  # type: ignore[union-attr]
    with pytest.raises(TopicExistsError, match="dup"):
        await node.topics.create_topic("dup")  # type: ignore[union-attr]
    with pytest.raises(TopicExistsError):
        await node.topics.create_topic("dup", validate_only=True)  # type: ignore[union-attr]


@pytest.mark.parametrize("name", ["../x", "..", ".", "", "a/b", "x" * 250, "spaces here", "tab\t", "ünï"])
async def test_bad_names_never_touch_the_file_system(node: Node, name: str) -> None:
    before = sorted(p.name for p in node.root.rglob("*"))
    with pytest.raises(InvalidTopicError):
        await node.topics.create_topic(name)  # type: ignore[union-attr]
    assert sorted(p.name for p in node.root.rglob("*")) == before


async def test_colliding_names(node: Node) -> None:
    await node.topics.create_topic("a.b")  # type: ignore[union-attr]
    with pytest.raises(InvalidTopicError, match="collides"):
        await node.topics.create_topic("a_b")  # type: ignore[union-attr]


@pytest.mark.parametrize("partitions", [0, -2, -100])
async def test_invalid_partitions(node: Node, partitions: int) -> None:
    with pytest.raises(InvalidPartitionsError):
        await node.topics.create_topic("p", partitions)  # type: ignore[union-attr]


@pytest.mark.parametrize("rf", [0, -2, 2, 3])
async def test_invalid_replication_factor(node: Node, rf: int) -> None:
    with pytest.raises(InvalidReplicationFactorError):
        await node.topics.create_topic("r", 1, rf)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "configs",
    [
        {"no.such.config": "1"},
        {"cleanup.policy": "shred"},
        {"segment.bytes": "ten"},
        {"retention.ms": None},
        {"min.cleanable.dirty.ratio": "2"},
        {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
    ],
)
async def test_invalid_configs(node: Node, configs: dict[str, str | None]) -> None:
    with pytest.raises(InvalidConfigurationError):
        await node.topics.create_topic("c", 1, 1, configs)  # type: ignore[union-attr]
    assert node.topics.get("c") is None  # type: ignore[union-attr]


async def test_restart_keeps_ids_partitions_and_overrides(node: Node) -> None:
    meta = await node.topics.create_topic("keep", 2, 1, {"retention.ms": "12345"})  # type: ignore[union-attr]
    await node.topics.incremental_alter_configs("keep", [("segment.ms", AlterConfigOp.SET, "60000")])  # type: ignore[union-attr]
    await node.topics.create_partitions("keep", 3)  # type: ignore[union-attr]
    tm = node.restart()
    again = tm.get("keep")
    assert again is not None
    assert again.topic_id == meta.topic_id
    assert again.partitions == 3
    assert again.configs == {"retention.ms": "12345", "segment.ms": "60000"}
    for p in range(3):
        log = node.log_manager.get_log(TopicPartition("keep", p))  # type: ignore[union-attr]
        assert log is not None and log.config.retention_ms == 12345 and log.config.segment_ms == 60000


async def test_incremental_alter_applies_live(node: Node) -> None:
    tm = node.topics
    assert tm is not None
    await tm.create_topic("live", 2)
    logs = [node.log_manager.get_log(TopicPartition("live", p)) for p in range(2)]  # type: ignore[union-attr]
    await tm.incremental_alter_configs("live", [("retention.ms", AlterConfigOp.SET, "1000"),
                                                ("cleanup.policy", AlterConfigOp.APPEND, "compact")])
    for log in logs:
        assert log is not None and log.config.retention_ms == 1000 and log.config.cleanup_policy == ("delete", "compact")
    await tm.incremental_alter_configs("live", [("cleanup.policy", AlterConfigOp.SUBTRACT, "delete")])
    assert tm.get("live").configs == {"retention.ms": "1000", "cleanup.policy": "compact"}  # type: ignore[union-attr]
    await tm.incremental_alter_configs("live", [("retention.ms", AlterConfigOp.DELETE, None)])
    for log in logs:
        assert log is not None and log.config.retention_ms == 604800000 and log.config.cleanup_policy == ("compact",)
    # validate_only changes nothing
    await tm.incremental_alter_configs("live", [("retention.ms", AlterConfigOp.SET, "5")], validate_only=True)
    assert "retention.ms" not in tm.get("live").configs  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("ops", "error"),
    [
        ([("retention.ms", AlterConfigOp.APPEND, "5")], InvalidConfigurationError),
        ([("nope", AlterConfigOp.SET, "5")], InvalidConfigurationError),
        ([("retention.ms", AlterConfigOp.SET, "soon")], InvalidConfigurationError),
        ([("retention.ms", AlterConfigOp.SET, None)], InvalidRequestError),
        ([("retention.ms", AlterConfigOp.SET, "1"), ("retention.ms", AlterConfigOp.DELETE, None)], InvalidRequestError),
        ([("retention.ms", 9, "1")], UnknownServerError),  # Kafka's answer to an unknown operation id
    ],
)
async def test_incremental_alter_errors(node: Node, ops: list[tuple[str, int, str | None]], error: type) -> None:
    await node.topics.create_topic("e")  # type: ignore[union-attr]
    with pytest.raises(error):
        await node.topics.incremental_alter_configs("e", ops)  # type: ignore[union-attr]
    assert node.topics.get("e").configs == {}  # type: ignore[union-attr]


async def test_unknown_topic_operations(node: Node) -> None:
    tm = node.topics
    assert tm is not None
    with pytest.raises(UnknownTopicOrPartitionError):
        await tm.delete_topic("ghost")
    with pytest.raises(UnknownTopicIdError):
        await tm.delete_topic_by_id(uuid.uuid4())
    with pytest.raises(UnknownTopicOrPartitionError):
        await tm.create_partitions("ghost", 3)
    with pytest.raises(UnknownTopicOrPartitionError):
        await tm.incremental_alter_configs("ghost", [])
    with pytest.raises(UnknownTopicOrPartitionError):
        tm.describe_configs("ghost")


async def test_create_partitions(node: Node) -> None:
    tm = node.topics
    assert tm is not None
    await tm.create_topic("grow", 2, 1, {"retention.ms": "777"})
    with pytest.raises(InvalidPartitionsError):
        await tm.create_partitions("grow", 2)
    with pytest.raises(InvalidPartitionsError):
        await tm.create_partitions("grow", 1)
    assert (await tm.create_partitions("grow", 5, validate_only=True)).partitions == 5
    assert tm.get("grow").partitions == 2  # type: ignore[union-attr]
    await tm.create_partitions("grow", 5)
    assert tm.get("grow").partitions == 5  # type: ignore[union-attr]
    new_log = node.log_manager.get_log(TopicPartition("grow", 4))  # type: ignore[union-attr]
    assert new_log is not None and new_log.config.retention_ms == 777
    assert new_log.topic_id == tm.get("grow").topic_id  # type: ignore[union-attr]


async def test_partitions_are_created_together_each_whole(node: Node) -> None:
    """A topic's partitions are created on several threads at once (LogManager.create_logs):
    each has its directory, its topic id and the leader epoch's checkpoint, and is served."""
    tm = node.topics
    assert tm is not None and node.log_manager is not None
    meta = await tm.create_topic("many", 64)
    for p in range(64):
        log = node.log_manager.get_log(TopicPartition("many", p))
        assert log is not None and log.topic_id == meta.topic_id
        assert PartitionMetadataFile(log.dir).read() == meta.topic_id
        assert (log.dir / "leader-epoch-checkpoint").read_text().splitlines() == ["0", "1", "0 0"]
    assert sorted(d.name for d in (node.root / "logs").glob("many-*")) == sorted(f"many-{p}" for p in range(64))


def _failing_leader_for(monkeypatch: pytest.MonkeyPatch, partition: int) -> None:
    """become_leader fails (a disk error) for one partition of whatever topic is created."""
    import asyncbroker.topics as topics_module
    from wire.errors import KafkaStorageError

    real = topics_module.become_leader

    def become_leader(log: Any) -> None:
        if log.topic_partition.partition == partition:
            raise KafkaStorageError("disk error (test)")
        real(log)

    monkeypatch.setattr(topics_module, "become_leader", become_leader)


async def test_a_failed_creation_leaves_no_partition(node: Node, monkeypatch: pytest.MonkeyPatch) -> None:
    """All or nothing: one partition failing undoes the others, which were created beside it,
    so none comes back at the next start; the topic can be created again."""
    from wire.errors import KafkaStorageError

    tm = node.topics
    assert tm is not None
    _failing_leader_for(monkeypatch, 5)
    with pytest.raises(KafkaStorageError):
        await tm.create_topic("half", 12)
    assert tm.get("half") is None
    assert all(node.log_manager.get_log(TopicPartition("half", p)) is None for p in range(12))  # type: ignore[union-attr]
    assert not [d for d in (node.root / "logs").glob("half-*") if not d.name.endswith("-delete")]
    monkeypatch.undo()
    tm = node.restart()
    assert tm.get("half") is None and node.log_manager.get_log(TopicPartition("half", 0)) is None  # type: ignore[union-attr]
    assert (await tm.create_topic("half", 12)).partitions == 12


async def test_a_failed_create_partitions_keeps_the_old_ones(node: Node, monkeypatch: pytest.MonkeyPatch) -> None:
    from wire.errors import KafkaStorageError

    tm = node.topics
    assert tm is not None and node.log_manager is not None
    await tm.create_topic("grow2", 2)
    _failing_leader_for(monkeypatch, 4)
    with pytest.raises(KafkaStorageError):
        await tm.create_partitions("grow2", 8)
    assert tm.get("grow2").partitions == 2  # type: ignore[union-attr]
    assert [p for p in range(8) if node.log_manager.get_log(TopicPartition("grow2", p)) is not None] == [0, 1]
    assert sorted(d.name for d in (node.root / "logs").glob("grow2-*") if not d.name.endswith("-delete")) \
        == ["grow2-0", "grow2-1"]


async def test_delete_then_recreate(node: Node) -> None:
    tm = node.topics
    assert tm is not None
    first = await tm.create_topic("gone", 2, 1, {"retention.ms": "1"})
    await tm.delete_topic("gone")
    assert tm.get("gone") is None and tm.by_id(first.topic_id) is None
    assert node.log_manager.get_log(TopicPartition("gone", 0)) is None  # type: ignore[union-attr]
    second = await tm.create_topic("gone", 1)
    assert second.topic_id != first.topic_id and second.configs == {}
    assert tm.log_config("gone").retention_ms == 604800000
    await tm.delete_topic_by_id(second.topic_id)
    tm = node.restart()
    assert tm.get("gone") is None


async def test_deletion_disabled(tmp_path: Path) -> None:
    n = Node(tmp_path, ["delete.topic.enable=false"])
    tm = n.start()
    try:
        await tm.create_topic("stay")
        with pytest.raises(TopicDeletionDisabledError):
            await tm.delete_topic("stay")
        assert tm.get("stay") is not None
    finally:
        n.stop()


async def test_concurrent_creates_yield_one_topic(node: Node) -> None:
    results = await asyncio.gather(*(node.topics.create_topic("race", 2) for _ in range(5)),  # type: ignore[union-attr]
                                   return_exceptions=True)
    assert sum(1 for r in results if isinstance(r, TopicExistsError)) == 4


async def test_describe_configs_sources_and_synonyms(tmp_path: Path) -> None:
    n = Node(tmp_path, ["log.retention.hours=5"])
    tm = n.start()
    try:
        await tm.create_topic("d", 1, 1, {"segment.bytes": "1048576"})
        entries = {e.name: e for e in tm.describe_configs("d")}
        seg = entries["segment.bytes"]
        assert seg.value == "1048576" and seg.source is ConfigSource.DYNAMIC_TOPIC_CONFIG and not seg.read_only
        assert [(s.name, s.source) for s in seg.synonyms] == [
            ("segment.bytes", ConfigSource.DYNAMIC_TOPIC_CONFIG),
            ("log.segment.bytes", ConfigSource.DEFAULT_CONFIG),
        ]
        # log.retention.hours supplies the value, but Kafka lists only log.retention.ms's own
        # values as synonyms of retention.ms: none here, so the source is DEFAULT_CONFIG.
        ret = entries["retention.ms"]
        assert ret.value == str(5 * 3600000) and ret.source is ConfigSource.DEFAULT_CONFIG and ret.synonyms == ()
        assert ret.type is ConfigType.LONG and ret.documentation
        mir = entries["min.insync.replicas"]
        assert mir.source is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        pol = entries["cleanup.policy"]
        assert pol.value == "delete" and pol.source is ConfigSource.DEFAULT_CONFIG and pol.type is ConfigType.LIST
        only = tm.describe_configs("d", ["retention.ms", "nope"])
        assert [e.name for e in only] == ["retention.ms"]
    finally:
        n.stop()
