"""FetchManager: incremental fetch sessions (KIP-227), kept as Kafka's broker keeps them.

A consumer fetching the same partitions over and over opens a session with a full fetch
(session id 0, epoch 0). The broker remembers the session's partitions, each one's fetch
position, and what it last told the client of it (high watermark, log start offset), and
answers the session's id. Each later fetch is incremental (that id, the session's epoch): it
names only the partitions whose fetch position changed, that it adds, or that it forgets
(forgotten_topics_data). The answer holds only partitions with news: records, a new high
watermark or log start offset, an error or a diverging epoch.

    FetchManager.new_context(request)   which context a Fetch gets (below)
      -> FetchSessionCache               8 shards (FetchSessionCacheShard), as in Kafka
         -> FetchSession                 a session's partitions, in fetch order
            -> CachedPartition           one partition's request fields and last answer

The contexts, as Kafka names them:
- SessionlessFetchContext: epoch -1 (FINAL_EPOCH), or a Fetch before v7. It closes the
  session it names, if any, and opens none: the answer has session id 0.
- FullFetchContext: epoch 0 (INITIAL_EPOCH). It closes the session it names, if any, and
  opens a new one from the partitions answered, if a shard has room (else session id 0, and
  the client goes on with full fetches).
- IncrementalFetchContext: any other epoch, for a session that exists and expects that
  epoch. The session then expects the next epoch (after 2^31-1 comes 1). A fetch that forgets
  every partition closes the session and is answered as a sessionless one.
- SessionErrorContext: FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH, or
  FETCH_SESSION_TOPIC_ID_ERROR (a session opened by name, fetched by id, or the reverse).

Room: max.incremental.fetch.session.cache.slots (1000) split over the 8 shards. New sessions
go to the shards in turn, and a session's id falls in its shard's range, so an id names its
shard. A full shard makes room by evicting the least recently used session if it went unused
for 120 s; failing that, the smallest evictable session if the newcomer has more partitions.
A session becomes evictable by a consumer's newcomer once it was 120 s old when last used.

Invariant: a partition that returns records moves to the end of its session's order, so a
budget (fetch.max.bytes) that stops the read early serves the others first next time.

Idle partitions are not read again (Kafka reads every partition of the session on each
fetch: here a consumer of 1,000 quiet partitions made each fetch cost about 0.7 ms of CPU). A
partition is idle once a read found it caught up at its log's end with nothing to report; the
session then keeps its log's offsets_generation (storage.log) and the value it had. A later
fetch of the session skips the partition while all of these hold: the value has not moved (no
append, truncation, new log start offset or close), the request did not name the partition
again, no topic was created, deleted, grown or reconfigured since the session's last answer
(the TopicManager's generation), there is no authorizer (whose ACLs may have changed), and the
session is a consumer's. A read would then find what the client was last told, and the answer
would leave the partition out anyway. A fetch that parks watches the skipped partitions too,
and reads anew after the wait.
"""
from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from storage.log import OffsetsGeneration
from storage.topic_partition import TopicPartition
from wire.errors import ErrorCode

from asyncbroker.replica_manager import PartitionRead

log = logging.getLogger(__name__)

INVALID_SESSION_ID = 0
# Session epochs of a full fetch: open a session (INITIAL), or fetch without one (FINAL).
INITIAL_EPOCH, FINAL_EPOCH = 0, -1
NUM_SHARDS = 8  # Kafka's NumFetchSessionCacheShards
SESSION_ID_RANGE = (2**31 - 1) // NUM_SHARDS
# A session unused this long may be evicted for any newcomer (Kafka's
# MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS, not configurable there either).
EVICTION_MS = 120_000

PartitionKey = tuple[Any, int]  # (topic id, partition) in a session by id (v13+); else (name, partition)


def partition_key(read: PartitionRead, uses_topic_ids: bool) -> PartitionKey:
    """How a session names a partition: by topic id when it was opened by id, else by name."""
    return (read.topic_id, read.index) if uses_topic_ids else (read.topic, read.index)


def next_epoch(epoch: int) -> int:
    """The epoch a session expects after `epoch` (FINAL_EPOCH stays final; wraps to 1)."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == 2**31 - 1 else epoch + 1


def shard_of(session_id: int) -> int:
    """The shard a session id names (Java's int division truncates toward zero)."""
    return int(session_id / SESSION_ID_RANGE)


class UnknownShardError(Exception):
    """A session id outside every shard's range; Kafka fails such a Fetch as a whole."""


class CachedPartition:
    """One partition of a session: its request fields, and the high watermark and log start
    offset last sent for it (-1: never sent, or sent with an error, so it goes out again).
    While it is idle, the offsets generation of the log the read found it idle in, and its
    value then."""

    __slots__ = ("topic", "topic_id", "index", "fetch_offset", "max_bytes", "current_leader_epoch",
                 "last_fetched_epoch", "high_watermark", "log_start_offset", "idle_offsets", "idle_generation")

    def __init__(self, read: PartitionRead) -> None:
        self.topic: str | None = read.topic
        self.topic_id: uuid.UUID | None = read.topic_id
        self.index = read.index
        self.fetch_offset = read.fetch_offset
        self.max_bytes = read.max_bytes
        self.current_leader_epoch = read.current_leader_epoch
        self.last_fetched_epoch = read.last_fetched_epoch
        self.high_watermark = -1
        self.log_start_offset = -1
        self.idle_offsets: OffsetsGeneration | None = None
        self.idle_generation = -1

    def update_request(self, read: PartitionRead) -> None:
        self.idle_offsets = None  # asked anew: read it
        self.fetch_offset = read.fetch_offset
        self.max_bytes = read.max_bytes
        self.current_leader_epoch = read.current_leader_epoch
        self.last_fetched_epoch = read.last_fetched_epoch

    def to_read(self, key: PartitionKey) -> PartitionRead:
        """The read of this partition, carrying (key, self) for the answer."""
        return PartitionRead(self.topic, self.topic_id, self.index, self.fetch_offset, self.max_bytes,
                             self.current_leader_epoch, self.last_fetched_epoch, session_entry=(key, self))

    def remember_idle(self, read: PartitionRead) -> None:
        """After an answer: whether its read found the partition idle (see the module doc)."""
        if read.idle_generation >= 0 and not read.error and not read.size:
            self.idle_offsets, self.idle_generation = read.log.offsets_generation, read.idle_generation
        else:
            self.idle_offsets = None

    def must_respond(self, read: PartitionRead, update: bool) -> bool:
        """Whether the answer must carry this partition; with `update`, remember what it says."""
        respond = read.size > 0 or read.diverging_epoch is not None
        if self.high_watermark != read.high_watermark:
            respond = True
            if update:
                self.high_watermark = read.high_watermark
        if self.log_start_offset != read.log_start_offset:
            respond = True
            if update:
                self.log_start_offset = read.log_start_offset
        if read.error:
            # Sent again once the error is gone, whatever the offsets then say.
            if update:
                self.high_watermark = -1
            respond = True
        return respond


class FetchSession:
    """A session's partitions, in the order they are read (a dict keeps it)."""

    __slots__ = ("id", "privileged", "partitions", "uses_topic_ids", "creation_ms", "last_used_ms", "epoch",
                 "cached_size", "evictable_by_all", "topics_generation")

    def __init__(self, session_id: int, privileged: bool, partitions: dict[PartitionKey, CachedPartition],
                 uses_topic_ids: bool, now_ms: int, topics_generation: int = -1) -> None:
        self.id = session_id
        self.privileged = privileged  # a follower's: never for a consumer
        self.partitions = partitions
        self.uses_topic_ids = uses_topic_ids
        self.creation_ms = now_ms
        self.last_used_ms = now_ms
        self.epoch = next_epoch(INITIAL_EPOCH)
        self.cached_size = -1  # the size the cache last saw; -1: not in the cache
        self.evictable_by_all = False  # at its last use, older than EVICTION_MS
        self.topics_generation = topics_generation  # the TopicManager's when the last answered fetch began

    def key(self, read: PartitionRead) -> PartitionKey:
        return partition_key(read, self.uses_topic_ids)

    def evictable_key(self) -> tuple[bool, int, int]:
        return (self.privileged, self.cached_size, self.id)

    def update(self, reads: Iterable[PartitionRead], forgotten: Iterable[PartitionKey]) -> tuple[int, int, int]:
        """The partitions an incremental fetch names (updated or added), then those it forgets;
        returns how many were added, updated and removed."""
        added = updated = removed = 0
        for read in reads:
            key = self.key(read)
            cached = self.partitions.get(key)
            if cached is None:
                self.partitions[key] = CachedPartition(read)
                added += 1
            else:
                cached.update_request(read)
                updated += 1
        for key in forgotten:
            if self.partitions.pop(key, None) is not None:
                removed += 1
        return added, updated, removed


class FetchSessionCacheShard:
    """Up to `max_entries` sessions, with ids in this shard's range."""

    def __init__(self, shard: int, max_entries: int) -> None:
        self.shard = shard
        self.max_entries = max_entries
        self.sessions: dict[int, FetchSession] = {}
        self.partitions_cached = 0
        self.evictions = 0

    def new_session_id(self) -> int:
        low, high = max(1, self.shard * SESSION_ID_RANGE), (self.shard + 1) * SESSION_ID_RANGE
        while True:
            # os.urandom, not the random module: the broker does not import it to start.
            session_id = low + int.from_bytes(os.urandom(4), "big") % (high - low)
            if session_id not in self.sessions:
                return session_id

    def maybe_create_session(self, now_ms: int, privileged: bool, size: int, uses_topic_ids: bool,
                             partitions: Callable[[], dict[PartitionKey, CachedPartition]],
                             topics_generation: int = -1) -> int:
        if len(self.sessions) >= self.max_entries and not self._try_evict(privileged, size, now_ms):
            log.debug("No fetch session created for privileged=%s, size=%d.", privileged, size)
            return INVALID_SESSION_ID
        session = FetchSession(self.new_session_id(), privileged, partitions(), uses_topic_ids, now_ms,
                               topics_generation)
        self.sessions[session.id] = session
        self.touch(session, now_ms)
        log.debug("Created fetch session %d with %d partition(s).", session.id, size)
        return session.id

    def _try_evict(self, privileged: bool, size: int, now_ms: int) -> bool:
        """Make room for a newcomer of `size` partitions: the least recently used session if it
        is stale, else the least valuable evictable one if the newcomer is worth more."""
        if not self.sessions:
            return False
        lru = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - lru.last_used_ms > EVICTION_MS:
            self._evict(lru)
            return True
        candidates = [s for s in self.sessions.values()
                      if s.evictable_by_all or (privileged and (not s.privileged or s.evictable_by_all))]
        if not candidates:
            return False
        victim = min(candidates, key=FetchSession.evictable_key)
        # Kafka's newcomer key is (privileged, size, id 0): equal sizes keep the incumbent.
        if (privileged, size, 0) < victim.evictable_key():
            return False
        self._evict(victim)
        return True

    def _evict(self, session: FetchSession) -> None:
        log.debug("Evicting fetch session %d.", session.id)
        self.remove(session)
        self.evictions += 1

    def remove(self, session: FetchSession) -> bool:
        if self.sessions.pop(session.id, None) is None:
            return False
        self.partitions_cached -= session.cached_size
        session.cached_size = -1
        return True

    def touch(self, session: FetchSession, now_ms: int) -> None:
        session.last_used_ms = now_ms
        if session.cached_size != -1:
            self.partitions_cached -= session.cached_size
        session.cached_size = len(session.partitions)
        self.partitions_cached += session.cached_size
        session.evictable_by_all = now_ms - session.creation_ms > EVICTION_MS


class FetchSessionCache:
    """The shards; new sessions go to them in turn."""

    def __init__(self, max_slots: int) -> None:
        self.shards = [FetchSessionCacheShard(n, max_slots // NUM_SHARDS) for n in range(NUM_SHARDS)]
        self._counter = 0

    def shard(self, session_id: int) -> FetchSessionCacheShard:
        n = shard_of(session_id)
        if not 0 <= n < NUM_SHARDS:
            raise UnknownShardError(session_id)
        return self.shards[n]

    def next_shard(self) -> FetchSessionCacheShard:
        shard = self.shards[self._counter % NUM_SHARDS]
        self._counter += 1
        return shard

    @property
    def sessions(self) -> int:
        return sum(len(s.sessions) for s in self.shards)

    @property
    def partitions_cached(self) -> int:
        return sum(s.partitions_cached for s in self.shards)

    @property
    def evictions(self) -> int:
        return sum(s.evictions for s in self.shards)


class FetchContext:
    """What one Fetch reads, and how its answer is shaped (the subclasses, as in Kafka)."""

    error: int = ErrorCode.NONE

    def reads(self) -> list[PartitionRead]:
        """The partitions to read, in order (each a fresh PartitionRead)."""
        return []

    def skipped(self) -> IncrementalFetchContext | None:
        """The partitions `reads` left out as idle, if any (only a session's can be)."""
        return None

    def answer(self, reads: list[PartitionRead], update: bool = True) -> tuple[int, int, list[PartitionRead]]:
        """(error, session id, the reads the answer carries) once `reads` were read. With
        `update` false nothing is remembered (sizing an answer a quota may still refuse)."""
        return self.error, INVALID_SESSION_ID, reads

    def throttled(self) -> tuple[int, int]:
        """(error, session id) of the empty answer a throttled fetch gets."""
        return ErrorCode.NONE, INVALID_SESSION_ID


class SessionErrorContext(FetchContext):
    def __init__(self, error: int) -> None:
        self.error = error

    def answer(self, reads: list[PartitionRead], update: bool = True) -> tuple[int, int, list[PartitionRead]]:
        return self.error, INVALID_SESSION_ID, []


class SessionlessFetchContext(FetchContext):
    def __init__(self, fetch_data: list[PartitionRead]) -> None:
        self._fetch_data = fetch_data

    def reads(self) -> list[PartitionRead]:
        return self._fetch_data


class FullFetchContext(FetchContext):
    def __init__(self, manager: FetchManager, fetch_data: list[PartitionRead], uses_topic_ids: bool,
                 privileged: bool) -> None:
        self._manager = manager
        self._fetch_data = fetch_data
        self._uses_topic_ids = uses_topic_ids
        self._privileged = privileged
        self._topics_generation = manager.topics_generation()  # before the reads

    def reads(self) -> list[PartitionRead]:
        return self._fetch_data

    def answer(self, reads: list[PartitionRead], update: bool = True) -> tuple[int, int, list[PartitionRead]]:
        if not update:
            return ErrorCode.NONE, INVALID_SESSION_ID, reads

        def partitions() -> dict[PartitionKey, CachedPartition]:
            # The session holds the partitions answered, in the answer's order.
            cached: dict[PartitionKey, CachedPartition] = {}
            for r in reads:
                c = CachedPartition(r)
                c.high_watermark, c.log_start_offset = r.high_watermark, r.log_start_offset
                c.remember_idle(r)
                cached[partition_key(r, self._uses_topic_ids)] = c
            return cached

        session_id = self._manager.cache.next_shard().maybe_create_session(
            self._manager.now_ms(), self._privileged, len(reads), self._uses_topic_ids, partitions,
            self._topics_generation)
        return ErrorCode.NONE, session_id, reads


class IncrementalFetchContext(FetchContext):
    def __init__(self, session: FetchSession, request_epoch: int, resolve_name: Callable[[uuid.UUID], str | None],
                 topics_generation: int, may_skip_idle: bool) -> None:
        self._session = session
        self._expected_epoch = next_epoch(request_epoch)
        self._resolve_name = resolve_name
        self._topics_generation = topics_generation  # before the reads
        # Idle partitions may be skipped (see the module doc) when no topic changed since the
        # session's last answer: a skipped partition's log is then still the one it was idle in.
        self._skip_idle = (may_skip_idle and not session.privileged
                           and session.topics_generation == topics_generation)
        self._skipped: list[CachedPartition] = []

    def reads(self) -> list[PartitionRead]:
        session = self._session
        resolve = session.uses_topic_ids
        skip = self._skip_idle
        skipped: list[CachedPartition] = []
        reads = []
        for key, cached in session.partitions.items():
            if skip:
                offsets = cached.idle_offsets
                if offsets is not None and offsets.value == cached.idle_generation:
                    skipped.append(cached)
                    continue
            if resolve and cached.topic is None and cached.topic_id is not None:
                cached.topic = self._resolve_name(cached.topic_id)  # a topic id learned since
            reads.append(cached.to_read(key))
        self._skipped = skipped
        return reads

    def topic_partitions(self) -> list[TopicPartition]:
        """The partitions the last `reads` skipped (SkippedReads)."""
        return [TopicPartition(c.topic, c.index) for c in self._skipped if c.topic is not None]

    def skipped(self) -> IncrementalFetchContext | None:
        """This context as the fetch's SkippedReads, if its reads skipped any partition."""
        return self if self._skipped else None

    def answer(self, reads: list[PartitionRead], update: bool = True) -> tuple[int, int, list[PartitionRead]]:
        session = self._session
        if session.epoch != self._expected_epoch:
            # Another fetch of this session came in while this one waited (a duplicate).
            log.info("Incremental fetch session %d expected epoch %d, but got %d. Possible duplicate request.",
                     session.id, self._expected_epoch, session.epoch)
            return ErrorCode.INVALID_FETCH_SESSION_EPOCH, session.id, []
        partitions = session.partitions
        carried = []
        if update:
            session.topics_generation = self._topics_generation
        for r in reads:
            entry: tuple[PartitionKey, CachedPartition] = r.session_entry
            key, cached = entry
            if update:
                cached.remember_idle(r)
            if (not r.size and r.diverging_epoch is None and not r.error and cached.high_watermark == r.high_watermark
                    and cached.log_start_offset == r.log_start_offset):
                continue  # nothing new (most partitions of an idle consumer's session): must_respond's answer
            if not cached.must_respond(r, update):
                continue
            carried.append(r)
            if update and r.size > 0 and partitions.get(key) is cached:
                # Round robin: a partition that returned records is read last next time.
                del partitions[key]
                partitions[key] = cached
        return ErrorCode.NONE, session.id, carried

    def throttled(self) -> tuple[int, int]:
        if self._session.epoch != self._expected_epoch:
            return ErrorCode.INVALID_FETCH_SESSION_EPOCH, self._session.id
        return ErrorCode.NONE, self._session.id


class FetchManager:
    """Chooses each Fetch's context and keeps the sessions (the broker has one)."""

    def __init__(self, max_slots: int, now_ms: Callable[[], int],
                 topic_name: Callable[[uuid.UUID], str | None],
                 topics_generation: Callable[[], int] = lambda: 0) -> None:
        self.cache = FetchSessionCache(max_slots)
        self.now_ms = now_ms
        self._topic_name = topic_name  # a topic id's name now (None: no such topic)
        # The TopicManager's generation: moved by every topic created, deleted, grown or reconfigured.
        self.topics_generation = topics_generation

    def new_context(self, version: int, session_id: int, epoch: int, privileged: bool,
                    fetch_data: list[PartitionRead], forgotten: list[PartitionKey],
                    may_skip_idle: bool = False) -> FetchContext:
        """The context of a Fetch; raises UnknownShardError for a session id no shard has
        (Kafka's lookup fails, and so does the request). `may_skip_idle`: nothing but the logs
        and the topics decides what a read answers (no authorizer)."""
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                # Any session a full fetch names is closed.
                shard = self.cache.shard(session_id)
                session = shard.sessions.get(session_id)
                if session is not None and shard.remove(session):
                    log.debug("Removed fetch session %d.", session_id)
            if epoch == FINAL_EPOCH:
                return SessionlessFetchContext(fetch_data)
            return FullFetchContext(self, fetch_data, version >= 13, privileged)
        shard = self.cache.shard(session_id)
        session = shard.sessions.get(session_id)
        if session is None:
            log.debug("Session error for %d: no such session ID found.", session_id)
            return SessionErrorContext(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            log.debug("Session error for %d: expected epoch %d, but got %d instead.", session_id, session.epoch, epoch)
            return SessionErrorContext(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if session.uses_topic_ids != (version >= 13):
            return SessionErrorContext(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
        added, updated, removed = session.update(fetch_data, forgotten)
        if not session.partitions:
            log.debug("Created a new sessionless FetchContext and closing session id %d, epoch %d: after removing "
                      "%d partition(s), there are no more partitions left.", session_id, session.epoch, removed)
            shard.remove(session)
            return SessionlessFetchContext(fetch_data)
        shard.touch(session, self.now_ms())
        session.epoch = next_epoch(session.epoch)
        log.debug("Created a new incremental FetchContext for session id %d, epoch %d: added %d partition(s), "
                  "updated %d partition(s), removed %d partition(s)", session_id, session.epoch, added, updated,
                  removed)
        return IncrementalFetchContext(session, epoch, self._topic_name, self.topics_generation(), may_skip_idle)
