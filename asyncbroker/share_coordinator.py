"""ShareCoordinator: the durable state of share partitions (KIP-932), in `__share_group_state`.

Each share partition (group, topic id, partition) keeps its start offset and the states and
delivery counts of its records past it. Kafka's share coordinator keeps them as records of
`__share_group_state` (50 partitions; a key's partition is the hash of "group:topicId:partition"):

    key    int16 type (0 ShareSnapshot, 1 ShareUpdate), groupId string, topicId uuid,
           partition int32
    value  version 0, flexible: snapshotEpoch int32, [stateEpoch int32,] leaderEpoch int32,
           startOffset int64, [createTimestamp int64, writeTimestamp int64,] stateBatches
           [firstOffset int64, lastOffset int64, deliveryState int8, deliveryCount int16];
           tagged 0: deliveryCompleteCount int32 (-1: not given)
           (the bracketed fields are the snapshot's, not the update's)

A snapshot is the whole state; an update overlays its batches on the state before it; a
tombstone (the share group's offsets deleted) forgets it. This
broker writes a snapshot after every change it must not lose (acknowledgements, and records
released), so a restart resumes where members left off; it reads both kinds, so a log dir Kafka
wrote resumes too. Records acquired and not yet acknowledged are not written: after a restart
they are available again, as after Kafka's.

The share group offset admin APIs act here too: AlterShareGroupOffsets initializes a state at
a new start offset (`initialize`), DeleteShareGroupOffsets tombstones it (`delete`) and
DescribeShareGroupOffsets reads its start offset, leader epoch and delivery-complete count
(`summary`).
"""

from __future__ import annotations

import asyncio
import logging
import re
import struct
import uuid
from collections.abc import Sequence

import msgspec

from storage.partition_metadata import uuid_from_base64, uuid_to_base64
from storage.topic_name import SHARE_GROUP_STATE_TOPIC
from wire.records import read_uvarint, write_uvarint

from asyncbroker.offsets_topic import CoordinatorTopic, java_string_hash
from asyncbroker.share_partition import RecordState

log = logging.getLogger(__name__)

SNAPSHOT, UPDATE = 0, 1
StateBatch = tuple[int, int, int, int]  # first offset, last offset, state, delivery count

_I16, _I32, _I64 = struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")


class ShareState(msgspec.Struct):
    start_offset: int
    batches: list[StateBatch]
    state_epoch: int = 0
    snapshot_epoch: int = 0
    create_timestamp: int = 0
    leader_epoch: int = 0
    # Records past the start offset in a final state (acknowledged or archived); -1: unknown
    # (Kafka's deliveryCompleteCount, which DescribeShareGroupOffsets' lag subtracts).
    delivery_complete_count: int = -1


class ShareStateSummary(msgspec.Struct, frozen=True):
    """What DescribeShareGroupOffsets shows of a share partition (Kafka's ReadShareGroupStateSummary)."""

    start_offset: int
    leader_epoch: int
    delivery_complete_count: int


NO_STATE = ShareStateSummary(-1, 0, -1)  # a share partition never initialized
_FINAL_STATES = (int(RecordState.ACKNOWLEDGED), int(RecordState.ARCHIVED))


def delivery_complete_count(batches: Sequence[StateBatch]) -> int:
    """The records of these state batches in a final state (acknowledged or archived)."""
    return sum(last - first + 1 for first, last, st, _ in batches if st in _FINAL_STATES)


def state_partition_for(group_id: str, topic_id: uuid.UUID, partition: int, num_partitions: int) -> int:
    """Kafka's Utils.abs(asCoordinatorKey().hashCode()) % partitions."""
    h = java_string_hash(f"{group_id}:{uuid_to_base64(topic_id)}:{partition}")
    return (0 if h == -(2**31) else abs(h)) % num_partitions


_BASE64_UUID = re.compile(r"[A-Za-z0-9_-]{21,22}={0,2}")
_JAVA_INT = re.compile(r"[+-]?[0-9]+")


def parse_share_partition_key(key: str) -> tuple[str, uuid.UUID, int] | None:
    """A share coordinator key, "group:topic id:partition", read as Kafka's
    SharePartitionKey.getInstance reads it (the group may hold colons, Java's split drops
    trailing empty parts); None where Kafka refuses it."""
    tokens = key.split(":")
    while tokens and not tokens[-1]:
        tokens.pop()
    if len(tokens) < 3 or not ":".join(tokens[:-2]).strip():
        return None
    topic_text, partition_text = tokens[-2], tokens[-1]
    if not _BASE64_UUID.fullmatch(topic_text) or not _JAVA_INT.fullmatch(partition_text):
        return None
    partition = int(partition_text)
    if not -2**31 <= partition < 2**31:
        return None
    try:
        topic_id = uuid_from_base64(topic_text.rstrip("="))
    except ValueError:
        return None
    return ":".join(tokens[:-2]), topic_id, partition


def encode_key(record_type: int, group_id: str, topic_id: uuid.UUID, partition: int) -> bytes:
    raw = group_id.encode()
    return _I16.pack(record_type) + _I16.pack(len(raw)) + raw + topic_id.bytes + _I32.pack(partition)


def decode_key(data: bytes) -> tuple[int, str, uuid.UUID, int] | None:
    if len(data) < 4:
        return None
    record_type = _I16.unpack_from(data, 0)[0]
    if record_type not in (SNAPSHOT, UPDATE):
        return None
    n = _I16.unpack_from(data, 2)[0]
    group = data[4:4 + n].decode()
    topic_id = uuid.UUID(bytes=data[4 + n:20 + n])
    return record_type, group, topic_id, _I32.unpack_from(data, 20 + n)[0]


def encode_snapshot(state: ShareState, write_timestamp: int) -> bytes:
    out = bytearray(_I16.pack(0))
    out += _I32.pack(state.snapshot_epoch) + _I32.pack(state.state_epoch) + _I32.pack(state.leader_epoch)
    out += _I64.pack(state.start_offset) + _I64.pack(state.create_timestamp) + _I64.pack(write_timestamp)
    write_uvarint(out, len(state.batches) + 1)
    for first, last, st, count in state.batches:
        out += _I64.pack(first) + _I64.pack(last) + struct.pack(">bh", st, count)
        write_uvarint(out, 0)
    if state.delivery_complete_count == -1:  # the tagged field's default: not written
        write_uvarint(out, 0)
    else:
        write_uvarint(out, 1)
        write_uvarint(out, 0)
        write_uvarint(out, 4)
        out += _I32.pack(state.delivery_complete_count)
    return bytes(out)


def decode_value(record_type: int, data: bytes) -> ShareState:
    pos = 2  # version 0
    snapshot_epoch = _I32.unpack_from(data, pos)[0]
    pos += 4
    state_epoch = 0
    if record_type == SNAPSHOT:
        state_epoch = _I32.unpack_from(data, pos)[0]
        pos += 4
    leader_epoch = _I32.unpack_from(data, pos)[0]
    pos += 4
    start = _I64.unpack_from(data, pos)[0]
    pos += 8
    created = 0
    if record_type == SNAPSHOT:
        created = _I64.unpack_from(data, pos)[0]
        pos += 16  # create and write timestamps
    count, pos = read_uvarint(data, pos, len(data), 5)
    batches = []
    for _ in range(count - 1):
        first, last = _I64.unpack_from(data, pos)[0], _I64.unpack_from(data, pos + 8)[0]
        st, deliveries = struct.unpack_from(">bh", data, pos + 16)
        pos += 19
        tags, pos = read_uvarint(data, pos, len(data), 5)
        for _ in range(tags):
            _, pos = read_uvarint(data, pos, len(data), 5)
            size, pos = read_uvarint(data, pos, len(data), 5)
            pos += size
        batches.append((first, last, st, deliveries))
    complete = -1
    tags, pos = read_uvarint(data, pos, len(data), 5)
    for _ in range(tags):
        tag, pos = read_uvarint(data, pos, len(data), 5)
        size, pos = read_uvarint(data, pos, len(data), 5)
        if tag == 0 and size == 4:
            complete = _I32.unpack_from(data, pos)[0]
        pos += size
    return ShareState(start, batches, state_epoch, snapshot_epoch, created, leader_epoch, complete)


def _overlay(base: ShareState, update: ShareState) -> ShareState:
    """An update's batches over the state before it (Kafka's PersisterStateBatchCombiner):
    offsets an update names take its state; the start offset moves if it gives one."""
    start = update.start_offset if update.start_offset >= 0 else base.start_offset
    offsets: dict[int, tuple[int, int]] = {}
    for first, last, st, n in [*base.batches, *update.batches]:
        for o in range(max(first, start), last + 1):
            offsets[o] = (st, n)
    batches: list[StateBatch] = []
    for o in sorted(offsets):
        st, n = offsets[o]
        if batches and batches[-1][1] + 1 == o and batches[-1][2:] == (st, n):
            batches[-1] = (batches[-1][0], o, st, n)
        else:
            batches.append((o, o, st, n))
    leader_epoch = update.leader_epoch if update.leader_epoch != -1 else base.leader_epoch
    return ShareState(start, batches, base.state_epoch, base.snapshot_epoch, base.create_timestamp, leader_epoch,
                      update.delivery_complete_count)


class ShareCoordinator:
    """Reads and writes share partitions' state in `__share_group_state`."""

    def __init__(self, topic: CoordinatorTopic) -> None:
        self.topic = topic
        self.states: dict[tuple[str, uuid.UUID, int], ShareState] = {}
        self._loaded = False
        # Snapshots being appended, by share partition. A summary waits for them: the records a
        # leaving member held are written in the background (SharePartitionManager), and a
        # DescribeShareGroupOffsets sent after the member left must see them, as Kafka's share
        # coordinator runs one share partition's operations in order.
        self._appending: dict[tuple[str, uuid.UUID, int], list[asyncio.Future[None]]] = {}

    async def load(self) -> None:
        """Every share partition's state, from the log (once)."""
        if self._loaded:
            return
        self._loaded = True
        if not self.topic.exists():
            return
        for _partition, _offset, key_bytes, value_bytes, _pid, control in await self.topic.read_all():
            if control is not None or key_bytes is None:
                continue
            key = decode_key(key_bytes)
            if key is None:
                continue
            record_type, group, topic_id, partition = key
            k = (group, topic_id, partition)
            if value_bytes is None:
                self.states.pop(k, None)
                continue
            value = decode_value(record_type, value_bytes)
            before = self.states.get(k)
            self.states[k] = value if record_type == SNAPSHOT or before is None else _overlay(before, value)
        log.info("Loaded the state of %d share partition(s) from %s", len(self.states), SHARE_GROUP_STATE_TOPIC)

    async def write(self, group_id: str, topic_id: uuid.UUID, partition: int, start_offset: int,
                    batches: Sequence[StateBatch], now: int) -> None:
        """A snapshot of one share partition's state (written before the caller answers)."""
        k = (group_id, topic_id, partition)
        before = self.states.get(k)
        await self._append_snapshot(k, ShareState(
            start_offset, list(batches), before.state_epoch if before else 0,
            (before.snapshot_epoch + 1) if before else 0, before.create_timestamp if before else now,
            before.leader_epoch if before else 0, delivery_complete_count(batches)), now)

    async def initialize(self, group_id: str, topic_id: uuid.UUID, partition: int, start_offset: int,
                         state_epoch: int, now: int) -> None:
        """A share partition's state set afresh at `start_offset` (-1: decided at the next fetch
        by share.auto.offset.reset), as Kafka's InitializeShareGroupState writes it: a snapshot
        with no state batches, stamped with the group epoch as its state epoch."""
        await self.load()
        k = (group_id, topic_id, partition)
        before = self.states.get(k)
        await self._append_snapshot(k, ShareState(
            start_offset, [], state_epoch, (before.snapshot_epoch + 1) if before else 0, now, 0,
            -1 if start_offset == -1 else 0), now)

    async def delete(self, group_id: str, topic_id: uuid.UUID, partition: int) -> None:
        """Forget a share partition's state (Kafka's DeleteShareGroupState: a tombstone, only for
        a state there is)."""
        await self.load()
        k = (group_id, topic_id, partition)
        if k not in self.states:
            return
        await self.topic.ensure_created()
        num = self.topic.num_partitions
        await self.topic.append(state_partition_for(group_id, topic_id, partition, num),
                                [(encode_key(SNAPSHOT, group_id, topic_id, partition), None)])
        self.states.pop(k, None)

    async def summary(self, group_id: str, topic_id: uuid.UUID, partition: int) -> ShareStateSummary:
        """Kafka's ReadShareGroupStateSummary of one share partition."""
        await self.load()
        appending = self._appending.get((group_id, topic_id, partition))
        if appending:
            await asyncio.gather(*appending)
        state = self.states.get((group_id, topic_id, partition))
        if state is None:
            return NO_STATE
        return ShareStateSummary(state.start_offset, state.leader_epoch, state.delivery_complete_count)

    async def _append_snapshot(self, k: tuple[str, uuid.UUID, int], state: ShareState, now: int) -> None:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        appending = self._appending.setdefault(k, [])
        appending.append(done)  # before the first await: a summary asked from now on waits for it
        try:
            await self.topic.ensure_created()
            group_id, topic_id, partition = k
            num = self.topic.num_partitions
            await self.topic.append(state_partition_for(group_id, topic_id, partition, num),
                                    [(encode_key(SNAPSHOT, group_id, topic_id, partition), encode_snapshot(state, now))])
            self.states[k] = state
        finally:
            done.set_result(None)
            appending.remove(done)
            if not appending:
                del self._appending[k]


def persisted_batches(states: Sequence[tuple[int, int, RecordState, int]]) -> list[StateBatch]:
    """A share partition's runs as state batches (acquired records are written as available)."""
    return [(first, last, int(st), n) for first, last, st, n in states]
