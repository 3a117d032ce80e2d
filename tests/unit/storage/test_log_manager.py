"""LogManager: locking, meta.properties, placement, create/delete, restart, checkpoints."""
from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from storage_testlib import batch
from storage.clock import MockClock
from storage.errors import KafkaStorageError, LogDirLockedError
from storage.log_config import LogConfig
from storage.log_manager import LogManager
from storage.offset_checkpoint import OffsetCheckpointFile
from storage.topic_partition import TopicPartition
from wire.errors import InvalidConfigurationError, InvalidTopicError


@pytest.fixture
def dirs(tmp_path: Path) -> list[Path]:
    return [tmp_path / "d1", tmp_path / "d2"]


@pytest.fixture
def manager(dirs: list[Path], clock: MockClock):
    managers: list[LogManager] = []

    def make(**kwargs) -> LogManager:
        lm = LogManager(dirs, LogConfig(), clock=clock, node_id=1, **kwargs)
        lm.startup()
        managers.append(lm)
        return lm

    yield make
    for lm in managers:
        lm.shutdown()


def test_meta_properties_and_lock(manager, dirs: list[Path], clock: MockClock) -> None:
    lm = manager()
    for d in dirs:
        text = (d / "meta.properties").read_text()
        assert "version=1" in text and f"cluster.id={lm.cluster_id}" in text and "node.id=1" in text
        assert "directory.id=" in text
    with pytest.raises(LogDirLockedError):
        LogManager(dirs, LogConfig(), clock=clock, node_id=1).startup()
    lm.shutdown()
    with pytest.raises(KafkaStorageError):
        LogManager(dirs, LogConfig(), clock=clock, node_id=2).startup()  # another node's dirs
    again = manager()
    assert again.cluster_id == lm.cluster_id


def test_placement_in_least_loaded_dir(manager, dirs: list[Path]) -> None:
    lm = manager()
    for p in range(6):
        lm.create_log(TopicPartition("orders", p), LogConfig(), uuid.uuid4())
    counts = [len(list(d.glob("orders-*"))) for d in dirs]
    assert counts == [3, 3]
    assert lm.create_log(TopicPartition("orders", 0)) is lm.get_log(TopicPartition("orders", 0))


def test_create_logs_places_a_batch_across_dirs_and_keeps_order(manager, dirs: list[Path]) -> None:
    """One call for many partitions (a new topic's): each placed as if created one by one, the
    logs returned in the order asked (an existing one as it is), each opened once."""
    lm = manager()
    existing = lm.create_log(TopicPartition("t", 3), LogConfig(), uuid.uuid4())
    tps = [TopicPartition("t", p) for p in (5, 3, 0, 1, 2, 4, 6)]
    logs = lm.create_logs(tps, LogConfig(), uuid.uuid4())
    assert [log.topic_partition for log in logs] == tps
    assert logs[1] is existing
    assert [len(list(d.glob("t-*"))) for d in dirs] == [4, 3]
    assert all(lm.get_log(tp) is log for tp, log in zip(tps, logs))


def test_placement_counts_deleted_and_loaded_logs(manager, dirs: list[Path]) -> None:
    """The per-directory counts placement reads follow deletions, and a restart's loaded logs."""
    lm = manager()
    for p in range(4):
        lm.create_log(TopicPartition("a", p), LogConfig(), uuid.uuid4())
    in_first = [p for p in range(4) if lm.get_log(TopicPartition("a", p)).dir.parent == dirs[0]]
    assert len(in_first) == 2
    for p in in_first:
        lm.delete_log(TopicPartition("a", p))
    for p in range(2):  # d1 now holds none: both go there
        assert lm.create_log(TopicPartition("b", p), LogConfig(), uuid.uuid4()).dir.parent == dirs[0]
    lm.create_log(TopicPartition("c", 0), LogConfig(), uuid.uuid4())  # 2 and 2: the first dir, then
    lm.shutdown()
    again = manager()  # loaded: d1 holds b-0, b-1, c-0; d2 holds the two left of "a"
    assert again.create_log(TopicPartition("d", 0), LogConfig(), uuid.uuid4()).dir.parent == dirs[1]
    assert again.create_log(TopicPartition("d", 1), LogConfig(), uuid.uuid4()).dir.parent == dirs[0]


def test_invalid_topic_name_rejected(manager) -> None:
    lm = manager()
    with pytest.raises(InvalidTopicError):
        lm.create_log(TopicPartition("bad/name", 0))


def test_restart_loads_logs_and_topics(manager, dirs: list[Path], clock: MockClock) -> None:
    lm = manager()
    tid = uuid.uuid4()
    for p in range(3):
        log = lm.create_log(TopicPartition("t", p), LogConfig(), tid)
        log.append_as_leader(batch(p + 1))
    lm.set_topic_config("t", {"retention.ms": "1000"})
    lm.shutdown()
    assert all((d / ".kafka_cleanshutdown").exists() for d in dirs)
    again = manager()
    assert all(again.had_clean_shutdown.values())
    assert not any((d / ".kafka_cleanshutdown").exists() for d in dirs)  # consumed at startup
    assert again.topics()["t"].partition_count == 3 and again.topics()["t"].topic_id == tid
    assert [again.get_log(TopicPartition("t", p)).log_end_offset for p in range(3)] == [1, 2, 3]
    assert again.topic_config_overrides("t") == {"retention.ms": "1000"}
    assert again.get_log(TopicPartition("t", 0)).config.retention_ms == 1000


def test_checkpoint_files(manager, dirs: list[Path]) -> None:
    lm = manager()
    log = lm.create_log(TopicPartition("t", 0))
    log.append_as_leader(batch(5))
    log.maybe_increment_log_start_offset(2)
    log.flush()
    lm.checkpoint_recovery_offsets()
    lm.checkpoint_log_start_offsets()
    lm.checkpoint_high_watermarks()
    d = log.dir.parent
    assert (d / "recovery-point-offset-checkpoint").read_text() == "0\n1\nt 0 5\n"
    assert (d / "log-start-offset-checkpoint").read_text() == "0\n1\nt 0 2\n"
    assert (d / "replication-offset-checkpoint").read_text() == "0\n1\nt 0 5\n"
    other = dirs[1] if d == dirs[0] else dirs[0]
    assert OffsetCheckpointFile(other / "recovery-point-offset-checkpoint").read() == {}
    lm.shutdown()
    again = manager()
    log = again.get_log(TopicPartition("t", 0))
    assert (log.log_start_offset, log.log_end_offset, log.recovery_point) == (2, 5, 5)
    assert (d / ".kafka_cleanshutdown").exists() is False


def test_deleting_a_topics_partitions_at_once(manager, dirs: list[Path]) -> None:
    """delete_partition_logs (DeleteTopics): every directory renamed for deletion, each dir's
    checkpoints written once the batch is done and listing only the logs left, placement counts
    following; partitions without a log are skipped."""
    lm = manager()
    doomed = [TopicPartition("a", p) for p in range(5)]
    for tp in doomed:
        lm.create_log(tp, LogConfig(), uuid.uuid4()).append_as_leader(batch(2))
    kept = lm.create_log(TopicPartition("b", 0), LogConfig(), uuid.uuid4())
    kept.append_as_leader(batch(3))
    kept.flush()
    deleted = lm.delete_partition_logs([*doomed, TopicPartition("a", 9)])
    assert sorted(deleted) == doomed and all(lm.get_log(tp) is None for tp in doomed)
    assert lm.topic_logs("a") == {}
    for d in dirs:
        assert not [p for p in d.glob("a-*") if not p.name.endswith("-delete")]
        assert {tp.topic for tp in OffsetCheckpointFile(d / "recovery-point-offset-checkpoint").read()} <= {"b"}
        assert {tp.topic for tp in OffsetCheckpointFile(d / "log-start-offset-checkpoint").read()} <= {"b"}
    assert OffsetCheckpointFile(kept.dir.parent / "recovery-point-offset-checkpoint").read() \
        == {TopicPartition("b", 0): 3}
    assert len([p for d in dirs for p in d.glob("a-*-delete")]) == 5
    other = dirs[1] if kept.dir.parent == dirs[0] else dirs[0]
    assert lm.create_log(TopicPartition("c", 0), LogConfig(), uuid.uuid4()).dir.parent == other


def test_restart_writes_a_leader_epoch_checkpoint_only_when_it_changes(manager, dirs: list[Path]) -> None:
    """A load truncates the epochs to the log's end and its caller (on_loaded: the broker's
    becoming leader) assigns its own; the checkpoint is written once after both, and not at all
    when that ends where the file already was (an empty log's `0 0`, dropped and assigned again)."""
    lm = manager()
    empty = lm.create_log(TopicPartition("e", 0), LogConfig(), uuid.uuid4())
    full = lm.create_log(TopicPartition("f", 0), LogConfig(), uuid.uuid4())
    for log in (empty, full):
        log.maybe_assign_epoch_start_offset(0, 0)
    full.append_as_leader(batch(10))
    # An epoch past the data, as a log truncated by hand (or by a crash) leaves it.
    (full.dir / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n1 50\n")
    inode = (empty.dir / "leader-epoch-checkpoint").stat().st_ino
    lm.shutdown()
    seen: list[tuple[str, list[tuple[int, int]]]] = []

    def become_leader(log) -> None:  # noqa: ANN001 - a Log
        seen.append((log.topic_partition.topic, log.leader_epoch_cache.entries()))
        log.maybe_assign_epoch_start_offset(0, log.log_end_offset)

    again = LogManager(dirs, LogConfig(), node_id=1)
    again.startup(on_loaded=become_leader)
    try:
        assert sorted(seen) == [("e", []), ("f", [(0, 0)])]  # truncated to each log's end first
        e_dir, f_dir = (again.get_log(TopicPartition(t, 0)).dir for t in ("e", "f"))
        assert (e_dir / "leader-epoch-checkpoint").read_text() == "0\n1\n0 0\n"
        assert (e_dir / "leader-epoch-checkpoint").stat().st_ino == inode  # not rewritten
        assert (f_dir / "leader-epoch-checkpoint").read_text() == "0\n1\n0 0\n"
    finally:
        again.shutdown()
    # Without a caller assigning an epoch the truncation is written all the same.
    (f_dir / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n1 50\n")
    third = manager()
    assert (f_dir / "leader-epoch-checkpoint").read_text() == "0\n1\n0 0\n"
    assert third.get_log(TopicPartition("f", 0)).leader_epoch_cache.entries() == [(0, 0)]


def test_unclean_restart_uses_recovery_checkpoint(manager, dirs: list[Path], clock: MockClock) -> None:
    lm = manager()
    log = lm.create_log(TopicPartition("t", 0))
    log.append_as_leader(batch(5))
    log.flush()
    lm.checkpoint_recovery_offsets()
    lm.checkpoint_log_start_offsets()
    log.append_as_leader(batch(5))
    # Crash: no shutdown(); release the locks as the dying process would.
    lm._flusher.shutdown(wait=True)
    lm._unlock_log_dirs()
    lm._started = False
    again = manager()
    assert not any(again.had_clean_shutdown.values())
    log = again.get_log(TopicPartition("t", 0))
    assert log.log_end_offset == 10 and log.recovery_point == 5


def test_delete_log_renames_then_unlinks(manager, clock: MockClock) -> None:
    lm = manager(file_delete_delay_ms=1000)
    tp = TopicPartition("gone", 0)
    log = lm.create_log(tp)
    log.append_as_leader(batch(1))
    parent = log.dir.parent
    lm.delete_log(tp)
    assert lm.get_log(tp) is None
    pending = lm.pending_deletes()
    assert len(pending) == 1 and pending[0].name.startswith("gone-0.") and pending[0].name.endswith("-delete")
    assert pending[0].exists() and not (parent / "gone-0").exists()
    assert lm.delete_logs() == 0
    clock.advance(1000)
    assert lm.delete_logs() == 1 and not pending[0].exists()
    assert "gone" not in lm.topics()


def test_delete_dirs_found_at_startup_are_queued(manager, dirs: list[Path]) -> None:
    lm = manager()
    lm.shutdown()
    stale = dirs[0] / "x-0.0123456789abcdef0123456789abcdef-delete"
    stale.mkdir()
    again = manager(file_delete_delay_ms=0)
    assert again.get_log(TopicPartition("x", 0)) is None
    assert again.delete_logs() == 1 and not stale.exists()


def test_bad_topic_config_rejected(manager) -> None:
    lm = manager()
    with pytest.raises(InvalidConfigurationError, match="segment.bytes"):
        lm.set_topic_config("t", {"segment.bytes": "12"})


def test_compaction_listener_hears_when_a_compacted_log_first_has_something_to_clean(manager) -> None:
    """The broker starts its cleaner from this call: a compacted log has a segment before its
    active one, the only kind the cleaner cleans. It calls when such a log rolls, and when a
    topic whose logs have rolled turns compacted; never for a log that is not compacted, nor
    for a compacted log with only its active segment (a new one, as __consumer_offsets' 100 MB
    segments stay for long)."""
    lm = manager()
    calls: list[str] = []
    lm.compaction_listener = lambda: calls.append("called")

    plain = lm.create_log(TopicPartition("plain", 0))
    plain.append_as_leader(batch(1))
    plain.roll()
    lm.set_topic_config("plain", {"retention.ms": "1000"})
    compacted = lm.create_log(TopicPartition("compacted", 0), LogConfig(cleanup_policy=("compact",)))
    compacted.append_as_leader(batch(1))
    lm.note_compaction(lm.all_logs())
    assert calls == []

    compacted.roll()
    assert calls == ["called"]
    lm.set_topic_config("plain", {"cleanup.policy": "compact,delete"})  # two segments already
    assert calls == ["called"] * 2
    lm.compaction_listener = None  # (the broker's, once the cleaner has started)
    compacted.append_as_leader(batch(1))
    compacted.roll()
    assert calls == ["called"] * 2


def test_parallel_load_many_partitions(manager, clock: MockClock) -> None:
    lm = manager(recovery_threads_per_data_dir=3)
    for p in range(20):
        lm.create_log(TopicPartition("many", p)).append_as_leader(batch(p % 3 + 1))
    lm.shutdown()
    again = manager(recovery_threads_per_data_dir=3)
    assert len(again.all_logs()) == 20
    assert again.get_log(TopicPartition("many", 7)).log_end_offset == 2




def test_topic_logs_follow_creation_deletion_and_restart(manager) -> None:
    """The by-topic index a fetch reads: the same logs as get_log, through every way a log comes
    and goes (created, loaded at startup, deleted; a topic's last partition leaves no entry)."""
    lm = manager()
    for p in range(3):
        lm.create_log(TopicPartition("t", p))
    lm.create_log(TopicPartition("u", 0))
    assert dict(lm.topic_logs("t")) == {p: lm.get_log(TopicPartition("t", p)) for p in range(3)}
    lm.delete_log(TopicPartition("t", 1))
    assert sorted(lm.topic_logs("t")) == [0, 2]
    lm.delete_log(TopicPartition("u", 0))
    assert dict(lm.topic_logs("u")) == {} and "u" not in lm._topic_logs
    assert dict(lm.topic_logs("never")) == {}
    lm.shutdown()
    again = manager()
    assert dict(again.topic_logs("t")) == {p: again.get_log(TopicPartition("t", p)) for p in (0, 2)}
