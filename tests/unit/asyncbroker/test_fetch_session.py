"""FetchManager's session cache: Kafka's shards, room and eviction rules, epochs.

The differential tests (tests/oracle/test_fetch.py) compare what clients see with Kafka 4.4;
these check the rules that need 120 s of a clock or a full cache to show.
"""
from __future__ import annotations

import pytest

from asyncbroker.fetch_session import (
    EVICTION_MS,
    FINAL_EPOCH,
    INITIAL_EPOCH,
    FetchContext,
    INVALID_SESSION_ID,
    NUM_SHARDS,
    SESSION_ID_RANGE,
    FetchManager,
    FullFetchContext,
    IncrementalFetchContext,
    SessionErrorContext,
    SessionlessFetchContext,
    UnknownShardError,
    next_epoch,
    shard_of,
)
from asyncbroker.replica_manager import PartitionRead
from storage.log import OffsetsGeneration
from wire.errors import ErrorCode


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def reads(n: int, topic: str = "t") -> list[PartitionRead]:
    out = []
    for index in range(n):
        r = PartitionRead(topic, None, index, 0, 1024)
        r.high_watermark, r.log_start_offset = 10, 0
        out.append(r)
    return out


def open_session(manager: FetchManager, partitions: int, topic: str = "t") -> int:
    context = manager.new_context(12, 0, INITIAL_EPOCH, False, reads(partitions, topic), [])
    assert isinstance(context, FullFetchContext)
    error, session_id, carried = context.answer(context.reads())
    assert error == ErrorCode.NONE and len(carried) == partitions
    return session_id


def fetch_again(manager: FetchManager, session_id: int, epoch: int) -> None:
    context = manager.new_context(12, session_id, epoch, False, [], [])
    assert isinstance(context, IncrementalFetchContext)
    context.answer(context.reads())


def test_epochs() -> None:
    assert [next_epoch(e) for e in (0, 1, 41, 2**31 - 1, FINAL_EPOCH, -7)] == [1, 2, 42, 1, FINAL_EPOCH, FINAL_EPOCH]


def test_new_sessions_go_to_the_shards_in_turn_with_ids_in_their_ranges() -> None:
    manager = FetchManager(1000, Clock(), lambda _: None)
    ids = [open_session(manager, 1) for _ in range(2 * NUM_SHARDS)]
    assert [shard_of(i) for i in ids] == list(range(NUM_SHARDS)) * 2
    for i in ids:
        n = shard_of(i)
        assert max(1, n * SESSION_ID_RANGE) <= i < (n + 1) * SESSION_ID_RANGE
    assert manager.cache.sessions == 2 * NUM_SHARDS and manager.cache.partitions_cached == 2 * NUM_SHARDS


@pytest.mark.parametrize("session_id", [2**31 - 1, NUM_SHARDS * SESSION_ID_RANGE, -SESSION_ID_RANGE, -(2**31)])
def test_an_id_no_shard_holds_fails_every_kind_of_fetch(session_id: int) -> None:
    manager = FetchManager(1000, Clock(), lambda _: None)
    for epoch in (1, INITIAL_EPOCH, FINAL_EPOCH):
        with pytest.raises(UnknownShardError):
            manager.new_context(12, session_id, epoch, False, reads(1), [])


def test_each_shard_holds_an_eighth_of_the_slots() -> None:
    manager = FetchManager(16, Clock(), lambda _: None)
    ids = [open_session(manager, 1) for _ in range(16)]
    assert INVALID_SESSION_ID not in ids
    assert open_session(manager, 5) == INVALID_SESSION_ID  # its shard is full, and nothing may go
    assert manager.cache.sessions == 16 and manager.cache.evictions == 0
    # Fewer slots than shards: no shard holds any (Kafka divides the same way).
    assert open_session(FetchManager(7, Clock(), lambda _: None), 1) == INVALID_SESSION_ID


def test_a_session_unused_for_120_s_makes_room() -> None:
    clock = Clock()
    manager = FetchManager(NUM_SHARDS, clock, lambda _: None)
    ids = [open_session(manager, 2) for _ in range(NUM_SHARDS)]
    clock.now += EVICTION_MS
    assert open_session(manager, 1) == INVALID_SESSION_ID  # 120 s exactly is not stale
    clock.now += 1
    fetch_again(manager, ids[2], 1)  # used now: shard 2's session stays
    newcomers = [open_session(manager, 1) for _ in range(NUM_SHARDS)]
    # Round robin: the refused fetch above took shard 0's turn, so shard 1 comes next; shard
    # 2's session was used again, so the newcomer there gets none (id 0).
    assert [shard_of(i) if i else None for i in newcomers] == [1, None, 3, 4, 5, 6, 7, 0]
    assert manager.cache.evictions == NUM_SHARDS - 1
    gone = manager.new_context(12, ids[0], 1, False, [], [])
    assert isinstance(gone, SessionErrorContext) and gone.error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_a_larger_newcomer_evicts_a_session_older_than_120_s_at_its_last_use() -> None:
    clock = Clock()
    manager = FetchManager(NUM_SHARDS, clock, lambda _: None)
    ids = [open_session(manager, 2) for _ in range(NUM_SHARDS)]
    clock.now += 60_000
    fetch_again(manager, ids[0], 1)  # shard 0's: used at 60 s old, not evictable
    clock.now += EVICTION_MS - 60_000 + 1
    for k in range(1, NUM_SHARDS):
        fetch_again(manager, ids[k], 1)  # used when over 120 s old: evictable by a larger newcomer
    clock.now += 1000
    # shard 0: its session is not stale (used 61 s ago) and not evictable.
    assert open_session(manager, 3) == INVALID_SESSION_ID
    # shard 1: as many partitions is not more valuable; shard 2: fewer neither.
    assert open_session(manager, 2) == INVALID_SESSION_ID
    assert open_session(manager, 1) == INVALID_SESSION_ID
    # shard 3: more partitions than the incumbent: it is evicted.
    newcomer = open_session(manager, 3)
    assert shard_of(newcomer) == 3 and manager.cache.evictions == 1
    assert manager.cache.partitions_cached == 7 * 2 + 3
    gone = manager.new_context(12, ids[3], 2, False, [], [])
    assert isinstance(gone, SessionErrorContext) and gone.error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_an_incremental_fetch_updates_adds_and_forgets_partitions() -> None:
    manager = FetchManager(1000, Clock(), lambda _: None)
    session_id = open_session(manager, 3)
    moved = PartitionRead("t", None, 1, 7, 1024)
    added = PartitionRead("u", None, 0, 0, 1024)
    context = manager.new_context(12, session_id, 1, False, [moved, added], [("t", 0)])
    assert isinstance(context, IncrementalFetchContext)
    assert [(r.topic, r.index, r.fetch_offset) for r in context.reads()] == [("t", 1, 7), ("t", 2, 0), ("u", 0, 0)]
    assert manager.cache.partitions_cached == 3
    # Forgetting every partition closes the session: the fetch goes on without one.
    context = manager.new_context(12, session_id, 2, False, [], [("t", 1), ("t", 2), ("u", 0)])
    assert isinstance(context, SessionlessFetchContext) and context.reads() == []
    assert manager.cache.sessions == 0 and manager.cache.partitions_cached == 0


def test_a_fetch_overtaken_by_the_next_one_of_its_session_gets_an_epoch_error() -> None:
    manager = FetchManager(1000, Clock(), lambda _: None)
    session_id = open_session(manager, 1)
    first = manager.new_context(12, session_id, 1, False, [], [])
    second = manager.new_context(12, session_id, 2, False, [], [])
    assert second.answer(second.reads())[:2] == (ErrorCode.NONE, session_id)
    assert first.answer(first.reads()) == (ErrorCode.INVALID_FETCH_SESSION_EPOCH, session_id, [])
    assert first.throttled() == (ErrorCode.INVALID_FETCH_SESSION_EPOCH, session_id)


class IdleLog:
    """What the session reads of a log: its offsets generation."""

    def __init__(self) -> None:
        self.offsets_generation = OffsetsGeneration()


def read_idle(context: FetchContext, log_: IdleLog) -> list[PartitionRead]:
    """The context's reads, each as read_partitions leaves a partition it found idle."""
    out = context.reads()
    for r in out:
        r.log, r.idle_generation, r.high_watermark, r.log_start_offset = log_, log_.offsets_generation.value, 10, 0
    return out


class IdleSession:
    """A session of three partitions, opened by a full fetch that found them all idle."""

    def __init__(self, *, may_skip_idle: bool = True) -> None:
        self.log = IdleLog()
        self.topics_generation = 1
        self.manager = FetchManager(1000, Clock(), lambda _: None, lambda: self.topics_generation)
        self.may_skip_idle = may_skip_idle
        full = self.manager.new_context(12, 0, INITIAL_EPOCH, False, reads(3), [], may_skip_idle=may_skip_idle)
        self.session_id = full.answer(read_idle(full, self.log))[1]
        self.epoch = 1

    def next(self, named: list[PartitionRead] | None = None) -> IncrementalFetchContext:
        context = self.manager.new_context(12, self.session_id, self.epoch, False, named or [], [],
                                           may_skip_idle=self.may_skip_idle)
        assert isinstance(context, IncrementalFetchContext)
        self.epoch += 1
        return context


def test_idle_partitions_are_not_read_until_their_log_moves() -> None:
    s = IdleSession()
    context = s.next()
    assert context.reads() == [] and context.skipped() is context
    assert sorted((tp.topic, tp.partition) for tp in context.topic_partitions()) == [("t", 0), ("t", 1), ("t", 2)]
    assert context.answer([]) == (ErrorCode.NONE, s.session_id, [])
    s.log.offsets_generation.value += 1  # an append, a truncation, a new log start or a close
    context = s.next()
    assert [r.index for r in read_idle(context, s.log)] == [0, 1, 2] and context.skipped() is None
    context.answer(read_idle(context, s.log))
    assert s.next().reads() == []  # idle again, at the new generation


def test_a_partition_named_again_or_not_found_idle_is_read() -> None:
    s = IdleSession()
    context = s.next([PartitionRead("t", None, 1, 10, 1024)])
    assert [r.index for r in context.reads()] == [1]
    got = context.reads()
    got[0].log, got[0].high_watermark, got[0].log_start_offset = s.log, 10, 0  # records behind it, say
    context.answer(got)
    assert [r.index for r in s.next().reads()] == [1]
    assert [r.index for r in s.next().reads()] == [1]


def test_idle_partitions_are_read_after_a_topic_changed_and_with_an_authorizer() -> None:
    s = IdleSession()
    s.topics_generation += 1  # a topic created, deleted, grown or reconfigured
    context = s.next()
    assert [r.index for r in context.reads()] == [0, 1, 2]
    context.answer(read_idle(context, s.log))
    assert s.next().reads() == []  # the topics have not changed since that answer
    with_acls = IdleSession(may_skip_idle=False)
    assert [r.index for r in with_acls.next().reads()] == [0, 1, 2]


def test_an_answer_the_quota_may_refuse_remembers_nothing() -> None:
    s = IdleSession()
    s.log.offsets_generation.value += 1
    context = s.next()
    context.answer(read_idle(context, s.log), update=False)
    assert [r.index for r in s.next().reads()] == [0, 1, 2]
