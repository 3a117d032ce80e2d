"""SharePartitionManager: ShareFetch and ShareAcknowledge (KIP-932), over the share partitions
and share sessions of this broker.

A member of a share group fetches through a share session, kept per (group, member): epoch 0
opens it with the partitions the member was assigned, each later request carries the next
epoch and the partitions added or forgotten, and -1 closes it (releasing what the member
still holds). A fetch first applies the acknowledgements it carries, then, for each partition
of the session, reads the log from where the share partition may hand records out next,
acquires records for the member (share_partition.py) and answers those batches with the
ranges acquired and their delivery counts. A share partition's start offset is decided on its
first fetch by the group's share.auto.offset.reset.

Locks that run out release their records on a timer; a member leaving its group releases its
records at once.

share.version 2 (ShareFetch and ShareAcknowledge v2): a RENEW acknowledgement extends the lock
of records the member holds; it is only accepted in a request marked is_renew_ack, and a
ShareFetch so marked applies its acknowledgements and answers at once, acquiring nothing
(Kafka's handleShareFetchRequest). ShareFetch v2 also chooses how records are acquired
(share_acquire_mode: whole batches, or exactly up to max_records).
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import msgspec

from storage.clock import Clock
from storage.topic_partition import TopicPartition
from wire.errors import (
    ErrorCode,
    InvalidRequestError,
    InvalidShareSessionEpochError,
    KafkaError,
    ShareSessionNotFoundError,
    UnknownServerError,
)
from wire.records import iter_batch_headers

from asyncbroker.group_configs import GroupConfigManager
from asyncbroker.replica_manager import OffsetQuery, PartitionRead
from asyncbroker.share_coordinator import ShareCoordinator, persisted_batches
from asyncbroker.share_partition import (
    AcknowledgeType,
    Acquired,
    ShareAcquireMode,
    SharePartition,
)

if TYPE_CHECKING:
    from asyncbroker.replica_manager import ReplicaManager
    from asyncbroker.topics import TopicManager

log = logging.getLogger(__name__)

FINAL_EPOCH = -1
SHARE_FETCH_READ_CHUNK = 1 << 20  # bytes of log read at a time for a share fetch
TopicIdPartition = tuple[uuid.UUID, int]
AckBatch = tuple[int, int, Sequence[int]]  # first offset, last offset, acknowledge types

_DURATION = re.compile(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?", re.IGNORECASE)


class ShareSession(msgspec.Struct):
    epoch: int  # the epoch the next request must carry
    partitions: list[TopicIdPartition]
    connection_id: str = ""  # the connection that opened it: its closing ends the session


class PartitionAnswer(msgspec.Struct):
    """One partition of a ShareFetch answer."""

    topic_id: uuid.UUID
    index: int
    error: int = ErrorCode.NONE
    acknowledge_error: int = ErrorCode.NONE
    acknowledge_message: str | None = None
    records: bytes = b""
    acquired: list[Acquired] = msgspec.field(default_factory=list)


def invalid_acknowledgements(batches: Sequence[AckBatch], *, renew_types: bool, renew_request: bool) -> bool:
    """Whether a partition's acknowledgement batches are malformed, as Kafka's KafkaApis
    validateAcknowledgementBatches judges them (the partition then answers INVALID_REQUEST):
    a batch ending before it starts or starting before the previous one ends, no types, a
    type per offset that does not match the range, an unknown type (RENEW only from v2,
    `renew_types`), or a RENEW in a request not marked is_renew_ack."""
    highest = AcknowledgeType.RENEW if renew_types else AcknowledgeType.REJECT
    previous_last = -1
    for first, last, types in batches:
        if first > last or first < previous_last or not types:
            return True
        if len(types) > 1 and last - first != len(types) - 1:
            return True
        if any(t < 0 or t > highest for t in types):
            return True
        if AcknowledgeType.RENEW in types and not renew_request:
            return True
        previous_last = last
    return False


def _state_changing(acks: dict[TopicIdPartition, list[AckBatch]]) -> list[TopicIdPartition]:
    """The partitions whose acknowledgements change durable state: not those that only renew
    locks (acquisitions are not stored; Kafka writes nothing for a RENEW either)."""
    return [tp for tp, batches in acks.items()
            if any(t != AcknowledgeType.RENEW for _, _, types in batches for t in types)]


def _next_epoch(epoch: int) -> int:
    return 1 if epoch >= 2**31 - 1 else epoch + 1


def _duration_ms(text: str) -> int:
    m = _DURATION.fullmatch(text)
    days, hours, minutes, seconds = (float(g) if g else 0.0 for g in m.groups()) if m else (0.0,) * 4
    return int(((days * 24 + hours) * 60 + minutes) * 60_000 + seconds * 1000)


class SharePartitionManager:
    def __init__(self, replica_manager: ReplicaManager, topics: TopicManager, group_configs: GroupConfigManager,
                 clock: Clock, coordinator: ShareCoordinator) -> None:
        self.coordinator = coordinator
        self._persisting: set[asyncio.Future[None]] = set()
        self.replica_manager = replica_manager
        self.topics = topics
        self.group_configs = group_configs
        self.clock = clock
        self.sessions: dict[tuple[str, str], ShareSession] = {}
        self._by_connection: dict[str, tuple[str, str]] = {}  # connection id -> the session it opened
        self.partitions: dict[tuple[str, uuid.UUID, int], SharePartition] = {}
        self._timers: dict[tuple[str, uuid.UUID, int], asyncio.TimerHandle] = {}
        self._changed = asyncio.Event()  # records released: fetches waiting may acquire them

    # ------------------------------------------------------------ sessions

    def _session(self, group_id: str, member_id: str, epoch: int, wanted: Sequence[TopicIdPartition],
                 forgotten: Sequence[TopicIdPartition], acks_present: bool,
                 connection_id: str = "") -> tuple[ShareSession, bool]:
        """The session a request names (Kafka's newContext): (session, whether it is new)."""
        key = (group_id, member_id)
        if epoch == 0:
            if acks_present:
                raise InvalidRequestError("Acknowledge data present in initial fetch request", wire_message=None)
            session = self.sessions[key] = ShareSession(1, list(dict.fromkeys(wanted)), connection_id)
            if connection_id:
                # As in Kafka's ShareSessionCache, a connection answers for the last session it opened.
                self._by_connection[connection_id] = key
            return session, True
        found = self.sessions.get(key)
        if found is None:
            raise ShareSessionNotFoundError(f"No share session for member {member_id} of group {group_id}")
        session = found
        if epoch == FINAL_EPOCH:
            return session, False
        if session.epoch != epoch:
            raise InvalidShareSessionEpochError(f"expected share session epoch {session.epoch}, got {epoch}")
        gone = set(forgotten)
        session.partitions = [tp for tp in dict.fromkeys([*session.partitions, *wanted]) if tp not in gone]
        session.epoch = _next_epoch(session.epoch)
        return session, False

    def connection_closed(self, connection_id: str) -> None:
        """A client connection closed: the share session it opened ends and the records its
        member holds go back to the group (Kafka's onMemberLeave). A member leaving its group
        does not end its session: its client still closes the session with its last
        acknowledgements, often in flight beside the leaving heartbeat."""
        key = self._by_connection.pop(connection_id, None)
        if key is None:
            return
        session = self.sessions.get(key)
        if session is not None and session.connection_id == connection_id:
            del self.sessions[key]
            self.release_member_records(*key)

    # ------------------------------------------------------------ ShareFetch

    async def fetch(self, *, group_id: str, member_id: str, epoch: int, wanted: Sequence[TopicIdPartition],
                    forgotten: Sequence[TopicIdPartition], acks: dict[TopicIdPartition, list[AckBatch]],
                    max_wait_ms: int, min_bytes: int, max_bytes: int, max_records: int, batch_size: int,
                    acquire_mode: int = ShareAcquireMode.BATCH_OPTIMIZED, renew: bool = False,
                    renew_types: bool = False, connection_id: str = "") -> list[PartitionAnswer]:
        """A ShareFetch: its acknowledgements, then records acquired for the member (none when
        it is a renew request: that one only acknowledges, and answers at once)."""
        session, new = self._session(group_id, member_id, epoch, wanted, forgotten, bool(acks), connection_id)
        answers = self._acknowledge_all(group_id, member_id, acks, renew_types=renew_types, renew_request=renew)
        if epoch == FINAL_EPOCH:
            self.sessions.pop((group_id, member_id), None)
            self.release_member_records(group_id, member_id)
        await self._persist(group_id, _state_changing(acks))
        if epoch == FINAL_EPOCH or renew:
            return list(answers.values())
        if acquire_mode not in ShareAcquireMode._value2member_map_:
            # Kafka fails the fetch past its acknowledgements (ShareAcquireMode.forId throws).
            raise UnknownServerError(f"Unknown share acquire mode id: {acquire_mode}")
        lock_ms: int = self.group_configs.value(group_id, "share.record.lock.duration.ms")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_wait_ms / 1000
        while True:
            self._changed.clear()
            acquired_any = await self._acquire_all(group_id, member_id, session.partitions, answers, max_bytes,
                                                   max_records, batch_size, lock_ms, ShareAcquireMode(acquire_mode))
            remaining = deadline - loop.time()
            if acquired_any or remaining <= 0:
                break
            # Nothing to hand out yet: wait for new records, or for records released (a lock
            # ran out, a member left, released or acknowledged), whichever comes first.
            await self._wait_for_records(group_id, session.partitions, remaining)
        shown = [a for tp, a in answers.items()
                 if new or a.acquired or a.error or a.acknowledge_error or tp in acks]
        return shown

    async def _wait_for_records(self, group_id: str, partitions: Sequence[TopicIdPartition], timeout: float) -> None:
        names = [(meta.name, index) for topic_id, index in partitions
                 if (meta := self.topics.by_id(topic_id)) is not None]
        waiter = self.replica_manager.fetch_waiters.watch([TopicPartition(n, i) for n, i in names], 1)
        appended = asyncio.ensure_future(waiter.wait(timeout))
        released = asyncio.ensure_future(self._changed.wait())
        try:
            await asyncio.wait({appended, released}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            appended.cancel()
            released.cancel()
            self.replica_manager.fetch_waiters.unwatch(waiter)

    def release_member_records(self, group_id: str, member_id: str) -> None:
        released = []
        for (group, topic_id, index), sp in self.partitions.items():
            if group == group_id:
                self._with_group_limits(group_id, sp).release_member(member_id)
                released.append((topic_id, index))
        self._changed.set()
        self._persist_later(group_id, released)

    async def forget(self, group_id: str, partitions: Iterable[TopicIdPartition]) -> None:
        """Drop these share partitions of an empty group from memory, once the state writes
        already under way are done: their durable state was set afresh (offsets altered or
        deleted), so their next fetch reads it again, as Kafka's share partition cache drops a
        group's partitions when its last share session ends."""
        if self._persisting:
            await asyncio.gather(*list(self._persisting), return_exceptions=True)
        for topic_id, index in partitions:
            key = (group_id, topic_id, index)
            self.partitions.pop(key, None)
            timer = self._timers.pop(key, None)
            if timer is not None:
                timer.cancel()

    # ------------------------------------------------------------ durable state

    async def _persist(self, group_id: str, partitions: Iterable[TopicIdPartition]) -> None:
        """Snapshot the state of these share partitions (before the request is answered)."""
        now = self.clock.milliseconds()
        for topic_id, index in partitions:
            sp = self.partitions.get((group_id, topic_id, index))
            if sp is not None:
                start, runs = sp.persisted()
                await self.coordinator.write(group_id, topic_id, index, start, persisted_batches(runs), now)

    def _persist_later(self, group_id: str, partitions: Iterable[TopicIdPartition]) -> None:
        """Snapshot in the background (records released by a timer or a member leaving)."""
        async def write() -> None:
            try:
                await self._persist(group_id, list(partitions))
            except Exception:  # noqa: BLE001 - the next change writes the state again
                log.exception("[GroupId %s] Could not write share partition state", group_id)
        task = asyncio.ensure_future(write())
        self._persisting.add(task)
        task.add_done_callback(self._persisting.discard)

    async def _acquire_all(self, group_id: str, member_id: str, partitions: Sequence[TopicIdPartition],
                           answers: dict[TopicIdPartition, PartitionAnswer], max_bytes: int, max_records: int,
                           batch_size: int, lock_ms: int, acquire_mode: ShareAcquireMode) -> bool:
        pending: list[tuple[TopicIdPartition, str, SharePartition]] = []
        for tp in partitions:
            answer = answers.setdefault(tp, PartitionAnswer(tp[0], tp[1]))
            meta = self.topics.by_id(tp[0])
            if meta is None or not 0 <= tp[1] < meta.partitions:
                answer.error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            pending.append((tp, meta.name, await self._share_partition(group_id, meta.name, tp)))
        read_committed = self.group_configs.value(group_id, "share.isolation.level") == "read_committed"
        budget, room = max_records, max_bytes
        acquired_any = False
        for tp, name, sp in pending:
            if budget <= 0 or room <= 0:
                break
            answer = answers[tp]
            pieces, spans, error = await self._read_for_acquisition(name, tp, sp.next_fetch_offset(), sp.end_offset,
                                                                    budget, room, read_committed)
            if error:
                answer.error = error
                continue
            if not spans:
                continue
            got = sp.acquire(member_id, [(b, last) for b, last, _, _, _ in spans], budget, self.clock.milliseconds(),
                             lock_ms, acquire_mode, max(batch_size, 1))
            if not got:
                continue
            acquired_any = True
            budget -= sum(a.last - a.first + 1 for a in got)
            answer.acquired.extend(got)
            # The batches holding what was acquired, whole (the client keeps the acquired offsets).
            taken = b"".join(pieces[piece][start:end] for base, last, piece, start, end in spans
                             if any(a.first <= last and base <= a.last for a in got))
            answer.records += taken
            room -= len(taken)
            self._schedule_expiry(group_id, tp, sp)
        return acquired_any

    async def _read_for_acquisition(self, topic: str, tp: TopicIdPartition, offset: int, end_offset: int,
                                    budget: int, room: int, read_committed: bool
                                    ) -> tuple[list[bytes], list[tuple[int, int, int, int, int]], int]:
        """The log from `offset`, read a chunk at a time through the records in flight (before
        `end_offset`: acquiring them depends on the whole of their batches, as on Kafka) and
        then until it holds `budget` new records or `room` bytes. Clients ask for 50 MiB:
        reading that much for the few batches a fetch acquires was the cost of a share fetch.
        (chunks read, data batches as (base offset, last offset, chunk, start, end), error)."""
        pieces: list[bytes] = []
        spans: list[tuple[int, int, int, int, int]] = []
        records = read_bytes = 0
        while True:
            chunk = min(room - read_bytes, SHARE_FETCH_READ_CHUNK)
            (read,) = await self.replica_manager.fetch_messages(
                [PartitionRead(topic, tp[0], tp[1], offset, chunk)], replica_id=-1, max_wait_ms=0, min_bytes=0,
                max_bytes=chunk, read_committed=read_committed, use_file_regions=False)
            if read.error:
                return pieces, spans, read.error
            data = bytes(read.records)
            headers = list(iter_batch_headers(data))
            for h, pos in headers:
                if not h.is_control:
                    spans.append((h.base_offset, h.last_offset, len(pieces), pos, pos + h.batch_length + 12))
                    records += max(0, h.last_offset - max(h.base_offset, offset, end_offset) + 1)
            pieces.append(data)
            read_bytes += len(data)
            in_flight_read = not headers or headers[-1][0].last_offset >= end_offset - 1
            # A chunk ends at its last whole batch, often short of `chunk` bytes: the log's end
            # is the readable end offset, not a short read.
            next_offset = headers[-1][0].last_offset + 1 if headers else offset
            readable_end = read.last_stable_offset if read_committed else read.high_watermark
            if not headers or next_offset >= readable_end or read_bytes >= room \
                    or (records >= budget and in_flight_read):
                return pieces, spans, ErrorCode.NONE
            offset = next_offset  # the log goes on past this chunk

    async def _share_partition(self, group_id: str, topic: str, tp: TopicIdPartition) -> SharePartition:
        key = (group_id, tp[0], tp[1])
        sp = self.partitions.get(key)
        if sp is None:
            await self.coordinator.load()
            stored = self.coordinator.states.get(key)
            start = stored.start_offset if stored is not None and stored.start_offset >= 0 else \
                await self._start_offset(group_id, TopicPartition(topic, tp[1]))
            sp = self.partitions.get(key)  # a concurrent fetch may have made it meanwhile
            if sp is None:
                sp = self.partitions[key] = SharePartition.from_state(
                    start, stored.batches if stored is not None else [], delivery_count_limit=0, max_in_flight=0)
                log.info("[GroupId %s] Share partition %s-%d starts at offset %d%s", group_id, topic, tp[1],
                         sp.start_offset, " (its stored state)" if stored is not None else "")
        return self._with_group_limits(group_id, sp)

    def _with_group_limits(self, group_id: str, sp: SharePartition) -> SharePartition:
        """The share partition under its group's limits as they are now: group configs may
        change at any time, and Kafka reads them at each use."""
        sp.delivery_count_limit = self.group_configs.value(group_id, "share.delivery.count.limit")
        sp.max_in_flight = self.group_configs.value(group_id, "share.partition.max.record.locks")
        return sp

    async def _start_offset(self, group_id: str, tp: TopicPartition) -> int:
        """Where a share group starts reading a partition new to it: share.auto.offset.reset."""
        reset = str(self.group_configs.value(group_id, "share.auto.offset.reset")).lower()
        if reset.startswith("by_duration:"):
            timestamp = self.clock.milliseconds() - _duration_ms(reset[len("by_duration:"):].upper())
        else:
            timestamp = -2 if reset == "earliest" else -1
        found = await self.replica_manager.fetch_offsets({tp: OffsetQuery(timestamp)}, version=9,
                                                         read_committed=False)
        offset = found[tp].offset
        if offset < 0:  # no record at or after that time: the end
            offset = (await self.replica_manager.fetch_offsets({tp: OffsetQuery(-1)}, version=9,
                                                               read_committed=False))[tp].offset
        return max(offset, 0)

    # ------------------------------------------------------------ acknowledging

    async def acknowledge(self, *, group_id: str, member_id: str, epoch: int,
                          acks: dict[TopicIdPartition, list[AckBatch]], renew: bool = False,
                          renew_types: bool = False) -> list[PartitionAnswer]:
        """ShareAcknowledge: the acknowledgements of an open session (-1 closes it)."""
        if epoch == 0:
            raise InvalidShareSessionEpochError("ShareAcknowledge cannot open a share session")
        self._session(group_id, member_id, epoch, (), (), False)
        answers = self._acknowledge_all(group_id, member_id, acks, renew_types=renew_types, renew_request=renew)
        if epoch == FINAL_EPOCH:
            self.sessions.pop((group_id, member_id), None)
            self.release_member_records(group_id, member_id)
        await self._persist(group_id, _state_changing(acks))
        return list(answers.values())

    def _acknowledge_all(self, group_id: str, member_id: str, acks: dict[TopicIdPartition, list[AckBatch]], *,
                         renew_types: bool, renew_request: bool) -> dict[TopicIdPartition, PartitionAnswer]:
        answers = {tp: PartitionAnswer(tp[0], tp[1]) for tp in acks}
        for tp, batches in acks.items():
            if invalid_acknowledgements(batches, renew_types=renew_types, renew_request=renew_request):
                answers[tp].acknowledge_error = ErrorCode.INVALID_REQUEST
                continue
            self._acknowledge(group_id, member_id, tp, batches, answers[tp])
        return answers

    def _acknowledge(self, group_id: str, member_id: str, tp: TopicIdPartition, batches: list[AckBatch],
                     answer: PartitionAnswer) -> None:
        meta = self.topics.by_id(tp[0])
        if meta is None or not 0 <= tp[1] < meta.partitions:
            answer.acknowledge_error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            return
        sp = self.partitions.get((group_id, tp[0], tp[1]))
        if sp is None:  # a partition of this broker no member of the group fetched yet
            answer.acknowledge_error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            answer.acknowledge_message = "This server does not host this topic-partition."
            return
        now = self.clock.milliseconds()
        lock_ms: int = self.group_configs.value(group_id, "share.record.lock.duration.ms")
        renew_enabled: bool = self.group_configs.value(group_id, "share.renew.acknowledge.enable")
        try:
            self._with_group_limits(group_id, sp).acknowledge(member_id, batches, now=now, lock_ms=lock_ms,
                                                              renew_enabled=renew_enabled)
        except KafkaError as exc:  # the partition's answer: INVALID_RECORD_STATE, INVALID_REQUEST
            answer.acknowledge_error, answer.acknowledge_message = exc.error_code, exc.wire_message
            return
        finally:
            self._schedule_expiry(group_id, tp, sp)  # a renewed lock runs out later
        self._changed.set()

    # ------------------------------------------------------------ lock expiry

    def _schedule_expiry(self, group_id: str, tp: TopicIdPartition, sp: SharePartition) -> None:
        key = (group_id, tp[0], tp[1])
        deadline = sp.next_lock_deadline()
        old = self._timers.pop(key, None)
        if old is not None:
            old.cancel()
        if deadline is None:
            return
        loop = asyncio.get_running_loop()
        delay = max(0.0, (deadline - self.clock.milliseconds()) / 1000)

        def expire() -> None:
            self._timers.pop(key, None)
            if self._with_group_limits(group_id, sp).expire_locks(self.clock.milliseconds()):
                self._changed.set()
                self._persist_later(group_id, [tp])
            self._schedule_expiry(group_id, tp, sp)

        self._timers[key] = loop.call_later(delay, expire)

    def close(self) -> None:
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
