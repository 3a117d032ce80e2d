"""SharePartition: what a share group (KIP-932) knows about one partition it reads: which
records are out with a member, which were processed, which may be delivered again.

Records of a partition are shared out to the group's members record by record, not by
partition. Between the share-partition start offset (SPSO: every record before it is done
with) and its end offset (the next offset never yet handed out) each offset is in one state:

    AVAILABLE     may be acquired (again)
    ACQUIRED      handed to one member, locked until it acknowledges or the lock runs out
    ACKNOWLEDGED  processed (ACCEPT): never delivered again
    ARCHIVED      given up (REJECT, or delivered share.delivery.count.limit times)

A member acquires AVAILABLE records (each acquisition counts a delivery), then
acknowledges each: ACCEPT, RELEASE (AVAILABLE again, unless its deliveries are used up),
REJECT, or RENEW (share.version 2: the records stay with it, locked for another
share.record.lock.duration.ms from now, their delivery not counted again). A lock that runs
out releases the records as RELEASE does; so does the member leaving.

Acquisition is batch-optimized (ShareAcquireMode 0: new records by whole log batches, so a
member may get more than it asked for) or record-limited (1: at most the records asked for,
a batch split where the limit falls; the rest of that batch stays AVAILABLE, in flight). The
SPSO moves past every leading ACKNOWLEDGED or ARCHIVED record. At most
share.partition.max.record.locks records are in flight.

The states are kept as runs of offsets (InFlight), split only where acknowledgements differ,
so that work follows the number of runs and not the number of records. Each run belongs to
one of Kafka's in-flight batches (the range one acquisition of new records handed out, or a
batch of the durable state), which Kafka handles whole until an acquisition or
acknowledgement covers only part of it, and offset by offset from then on ("tracked"): a
batch-optimized acquisition takes a whole batch again (or every available offset of a tracked
one) even past max_records, and an acknowledgement's error names the batch or the offset.
Records that keep coming back are redelivered in smaller and smaller parts: from half the
delivery count limit a batch goes alone and halved, and a record on its last attempt alone.
Pure bookkeeping: the caller reads the log, keeps the time and writes the durable state.
"""

from __future__ import annotations

import bisect
import enum
from collections.abc import Sequence

import msgspec

from wire.errors import InvalidRecordStateError, InvalidRequestError

__all__ = ["AcknowledgeType", "Acquired", "InFlight", "InvalidRecordStateError", "RecordState", "RenewDisabledError",
           "SharePartition", "ShareAcquireMode"]


class RecordState(enum.IntEnum):
    """Kafka's RecordState ids (the share-state records use them)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AcknowledgeType(enum.IntEnum):
    """AcknowledgeTypes of ShareFetch and ShareAcknowledge (0: a gap, no record there)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4  # share.version 2 (ShareFetch/ShareAcknowledge v2 with is_renew_ack)


class ShareAcquireMode(enum.IntEnum):
    """ShareFetch v2's share_acquire_mode (kafka-clients' ShareAcquireMode ids)."""

    BATCH_OPTIMIZED = 0
    RECORD_LIMIT = 1


class InFlight(msgspec.Struct):
    """Offsets first..last, all in one state."""

    first: int
    last: int
    state: RecordState
    delivery_count: int
    member: str | None = None  # the holder, while ACQUIRED
    lock_deadline: int = 0  # ms, while ACQUIRED
    batch: int = -1  # the first offset of the in-flight batch it is part of


class Acquired(msgspec.Struct, frozen=True):
    """A range a member acquired (ShareFetch's AcquiredRecords)."""

    first: int
    last: int
    delivery_count: int


class RenewDisabledError(InvalidRecordStateError):
    """A RENEW while the group's share.renew.acknowledge.enable is false (INVALID_RECORD_STATE,
    Kafka's message)."""

    def __init__(self) -> None:
        super().__init__("Renewing acquisition locks is not enabled for the group.")


class SharePartition:
    def __init__(self, start_offset: int, *, delivery_count_limit: int, max_in_flight: int) -> None:
        self.start_offset = start_offset
        self.end_offset = start_offset  # the next offset never handed out
        self.delivery_count_limit = delivery_count_limit
        self.max_in_flight = max_in_flight
        self.runs: list[InFlight] = []  # sorted, contiguous from start_offset to end_offset - 1
        self.tracked: set[int] = set()  # in-flight batches handled offset by offset
        # The runs the last change moved the start offset past: Kafka writes a change's state
        # before it moves the start offset, so the durable state still holds them (persisted()).
        self.retired: list[InFlight] = []

    @classmethod
    def from_state(cls, start_offset: int, batches: Sequence[tuple[int, int, int, int]], *,
                   delivery_count_limit: int, max_in_flight: int) -> SharePartition:
        """A share partition as its durable state left it ((first, last, state, delivery count)
        batches; offsets between them, never handed out, are available)."""
        sp = cls(start_offset, delivery_count_limit=delivery_count_limit, max_in_flight=max_in_flight)
        for first, last, state, count in sorted(batches):
            if last < sp.end_offset:
                continue
            first = max(first, sp.end_offset)
            if first > sp.end_offset:
                sp.runs.append(InFlight(sp.end_offset, first - 1, RecordState.AVAILABLE, 0, batch=sp.end_offset))
            settled = RecordState(state) if state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED) \
                else RecordState.AVAILABLE
            sp.runs.append(InFlight(first, last, settled, count, batch=first))
            sp.end_offset = last + 1
        sp._merge_and_advance()
        return sp

    # ------------------------------------------------------------ reading

    def acquired_count(self) -> int:
        return sum(r.last - r.first + 1 for r in self.runs if r.state == RecordState.ACQUIRED)

    def next_fetch_offset(self) -> int:
        """Where the next acquisition reads from: the first AVAILABLE record, else the end."""
        for r in self.runs:
            if r.state == RecordState.AVAILABLE:
                return r.first
        return self.end_offset

    def states(self) -> list[tuple[int, int, RecordState, int]]:
        """(first, last, state, delivery count) runs, merged where equal (for the durable state)."""
        return self._states(self.runs)

    def persisted(self) -> tuple[int, list[tuple[int, int, RecordState, int]]]:
        """The start offset and runs to write after the last change, as Kafka's share partition
        writes them: from the start offset before that change moved it (the records it settled
        still there, counted as delivered for good)."""
        start = self.retired[0].first if self.retired else self.start_offset
        return start, self._states([*self.retired, *self.runs])

    @staticmethod
    def _states(runs: Sequence[InFlight]) -> list[tuple[int, int, RecordState, int]]:
        out: list[tuple[int, int, RecordState, int]] = []
        for r in runs:
            state = RecordState.AVAILABLE if r.state == RecordState.ACQUIRED else r.state
            if out and out[-1][2] == state and out[-1][3] == r.delivery_count and out[-1][1] + 1 == r.first:
                out[-1] = (out[-1][0], r.last, state, r.delivery_count)
            else:
                out.append((r.first, r.last, state, r.delivery_count))
        return out

    # ------------------------------------------------------------ acquiring

    def acquire(self, member: str, batches: Sequence[tuple[int, int]], max_records: int, now: int,
                lock_ms: int, mode: ShareAcquireMode = ShareAcquireMode.BATCH_OPTIMIZED,
                batch_size: int | None = None) -> list[Acquired]:
        """Acquire for `member` from the log batches read at next_fetch_offset() ((base offset,
        last offset) each, in order): AVAILABLE records already in flight first, then new ones,
        up to `max_records` and the in-flight limit, as Kafka's SharePartition.acquire.

        In flight, BATCH_OPTIMIZED takes whole in-flight batches (every available offset of a
        tracked one) while fewer than the limit are taken; RECORD_LIMIT stops at the limit,
        tracking a batch it cuts. New records are handed out as one range, to the end of the
        log batch the limit falls in (BATCH_OPTIMIZED; cut at log batch boundaries into ranges
        of at least `batch_size` offsets when longer), or exactly to the limit (RECORD_LIMIT: the
        rest of that log batch stays in flight, AVAILABLE, no delivery counted).

        Records near the delivery count limit are throttled as Kafka 4.4 throttles them: a batch
        holding one delivered throttle_limit() times or more is acquired alone (nothing before
        it, nothing after it, no new records) and only in part (see _acquire_offsets)."""
        out: list[Acquired] = []
        if not batches:
            return out
        limit = batches[-1][1]
        # Kafka counts every record from the start offset to the end offset as in flight, held
        # or not; at the limit, only records already in flight (before the end offset) are taken.
        in_flight = self.end_offset - self.start_offset if self.runs else 0
        budget = min(max_records, self.max_in_flight - in_flight)
        if budget <= 0:
            fetch_offset = self.next_fetch_offset()
            if fetch_offset >= self.end_offset:
                return out
            budget = min(max_records, self.end_offset - fetch_offset)
            limit = min(limit, self.end_offset - 1)
        record_limit = mode == ShareAcquireMode.RECORD_LIMIT
        deadline = now + lock_ms
        throttle_limit = self.throttle_limit()
        taken = 0
        done = False  # a throttled batch was acquired from, or passed over: nothing else this time
        for batch_id, runs in self._in_flight_batches():
            if taken >= budget or runs[0].first > limit:
                break
            # A batch holding a record delivered throttle_limit() times or more is acquired alone,
            # never with records before or after it (nor new ones): redelivering a record that may
            # be what makes consumers fail costs as little as possible.
            throttled = any(r.state == RecordState.AVAILABLE and r.first <= limit
                            and r.delivery_count >= throttle_limit for r in runs)
            if throttled and taken > 0:
                done = True
                break
            whole = batch_id not in self.tracked
            if whole and runs[0].state != RecordState.AVAILABLE:  # one run, the batch: nothing to take
                continue
            if whole and (throttled or runs[-1].last > limit
                          or (record_limit and runs[0].last - runs[0].first + 1 > budget - taken)):
                whole = False
                self.tracked.add(batch_id)
            if whole:  # one run, the batch
                run = runs[0]
                self._acquire_run(run, member, deadline)
                out.append(Acquired(run.first, run.last, run.delivery_count))
                taken += run.last - run.first + 1
                continue
            got = self._acquire_offsets(member, batch_id, runs, limit, budget - taken if record_limit else None,
                                        deadline, out)
            taken += got
            if throttled and got > 0:
                done = True
                break
        new = [(max(base, self.end_offset), last) for base, last in batches
               if last >= self.end_offset and max(base, self.end_offset) <= limit]
        if taken < budget and new and not done:
            out += self._acquire_new(member, new, budget - taken, deadline, mode,
                                     budget if batch_size is None else batch_size)
        self._merge_and_advance()
        return sorted(out, key=lambda a: a.first)

    def throttle_limit(self) -> int:
        """The delivery count from which a record's batch is redelivered in shrinking portions
        (Kafka: half the delivery count limit, rounded up, and at least 2)."""
        return max(2, -(-self.delivery_count_limit // 2))

    def _acquire_offsets(self, member: str, batch_id: int, runs: Sequence[InFlight], limit: int,
                         max_records: int | None, deadline: int, out: list[Acquired]) -> int:
        """Acquire the AVAILABLE offsets up to `limit` of a batch tracked offset by offset, in
        order, as Kafka's acquireSubsetBatchRecords: at most `max_records` (record_limit mode);
        a record on its last delivery attempt goes alone (nothing before it, nothing after it);
        from the first record delivered throttle_limit() times or more, the batch gives at most
        its size halved once per delivery past that limit (at least one record). Returns how
        many were acquired; the ranges are appended to `out`, neighbours with one count merged."""
        throttle_limit = self.throttle_limit()
        last_attempt = self.delivery_count_limit - 1 if self.delivery_count_limit > 2 else None
        size = runs[-1].last - batch_id + 1  # the whole batch, offsets before the SPSO too (Kafka keeps them)
        cap: int | None = None  # the throttled portion, once a throttled record is met
        capped = False  # whether the portion still stops this batch
        got = 0
        pieces: list[Acquired] = []
        for run in list(runs):
            if run.state != RecordState.AVAILABLE or run.first > limit:
                continue
            n = min(run.last, limit) - run.first + 1
            if max_records is not None:
                n = min(n, max_records - got)
            on_last_attempt = run.delivery_count == last_attempt
            if on_last_attempt:
                if got > 0:  # it is delivered alone, in a later fetch
                    break
                n = 1
            if cap is None and run.delivery_count >= throttle_limit:
                cap = max(1, size >> (run.delivery_count - throttle_limit + 1))
                # Kafka stops when the count acquired equals the portion: once past it, it never does
                capped = got < cap
            if capped and cap is not None:
                n = min(n, cap - got)
            piece = self._split_at(run, run.first, run.first + n - 1)
            self._acquire_run(piece, member, deadline)
            if pieces and pieces[-1].last + 1 == piece.first and pieces[-1].delivery_count == piece.delivery_count:
                pieces[-1] = Acquired(pieces[-1].first, piece.last, piece.delivery_count)
            else:
                pieces.append(Acquired(piece.first, piece.last, piece.delivery_count))
            got += n
            if on_last_attempt or got == max_records or (capped and got == cap):
                break
        out += pieces
        return got

    @staticmethod
    def _acquire_run(run: InFlight, member: str, deadline: int) -> None:
        run.state, run.member, run.lock_deadline = RecordState.ACQUIRED, member, deadline
        run.delivery_count += 1

    def _acquire_new(self, member: str, batches: Sequence[tuple[int, int]], budget: int, deadline: int,
                     mode: ShareAcquireMode, batch_size: int) -> list[Acquired]:
        first = batches[0][0]
        if first > self.end_offset:  # offsets the log no longer has (compacted away): done with
            self.runs.append(InFlight(self.end_offset, first - 1, RecordState.ARCHIVED, 0, batch=self.end_offset))
        wanted = first + budget - 1
        # The end of the log batch holding the last offset wanted (or of the last batch read).
        batch_end = next((last for base, last in batches if base <= wanted <= last), min(wanted, batches[-1][1]))
        taken = batch_end if mode == ShareAcquireMode.BATCH_OPTIMIZED else min(batch_end, wanted)
        starts = [first]
        if mode == ShareAcquireMode.BATCH_OPTIMIZED and taken - first + 1 > batch_size:
            for base, _ in batches:
                if base > taken:
                    break
                if base - starts[-1] >= batch_size:
                    starts.append(base)
        ends = [s - 1 for s in starts[1:]] + [taken]
        for range_first, range_last in zip(starts, ends):
            self.runs.append(InFlight(range_first, range_last, RecordState.ACQUIRED, 1, member, deadline,
                                      batch=range_first))
        if taken < batch_end:  # the log batch's rest: in flight, not yet delivered; the batch tracked
            self.runs.append(InFlight(taken + 1, batch_end, RecordState.AVAILABLE, 0, batch=starts[-1]))
            self.tracked.add(starts[-1])
        self.end_offset = batch_end + 1
        return [Acquired(f, last, 1) for f, last in zip(starts, ends)]

    def _in_flight_batches(self) -> list[tuple[int, list[InFlight]]]:
        """The runs grouped by in-flight batch, in order, from the next fetch offset's batch."""
        out: list[tuple[int, list[InFlight]]] = []
        start = self.next_fetch_offset()
        for run in self.runs:
            if run.last < start:
                continue
            if out and out[-1][0] == run.batch:
                out[-1][1].append(run)
            else:
                out.append((run.batch, [run]))
        return out

    # ------------------------------------------------------------ acknowledging

    def acknowledge(self, member: str, batches: Sequence[tuple[int, int, Sequence[int]]], *, now: int = 0,
                    lock_ms: int = 0, renew_enabled: bool = True) -> None:
        """A partition's acknowledgement batches ((first, last, types): one type for the range,
        or one per offset), all or none: a batch that fails undoes the ones before it, as
        Kafka's SharePartition.acknowledge rolls back. RENEW keeps the records with `member`,
        locked until now + lock_ms. Offsets before the start offset are done with and passed
        over."""
        saved = ([msgspec.structs.replace(r) for r in self.runs], self.start_offset, self.end_offset, set(self.tracked))
        try:
            for first, last, types in batches:
                self._acknowledge_batch(member, first, last, types, now + lock_ms, renew_enabled)
        except BaseException:
            self.runs, self.start_offset, self.end_offset, self.tracked = saved
            raise
        self._merge_and_advance()

    def _acknowledge_batch(self, member: str, first: int, last: int, types: Sequence[int], deadline: int,
                           renew_enabled: bool) -> None:
        if last < first or (len(types) != 1 and len(types) != last - first + 1) or \
                any(t not in AcknowledgeType._value2member_map_ for t in types):
            raise InvalidRequestError(f"Invalid acknowledge type: {list(types)}")
        if last < self.start_offset:  # all done with already: nothing to do, no error (as Kafka)
            return
        if first < self.start_offset:
            types = types if len(types) == 1 else types[self.start_offset - first:]
            first = self.start_offset
        # Kafka's lookup of the in-flight batches a range falls in (fetchSubMapForAcknowledgementBatch)
        if not self.runs:
            raise InvalidRecordStateError(
                "Batch record not found. The request batch offsets are not found in the cache.")
        if first >= self.end_offset:
            raise InvalidRequestError("Batch record not found. The first offset in request is past acquired records.")
        if last >= self.end_offset:
            raise InvalidRequestError("Batch record not found. The last offset in request is past acquired records.")
        self._check_held(member, first, last)
        if not renew_enabled and AcknowledgeType.RENEW in types:
            raise RenewDisabledError()
        segments = [(first, last, types[0])] if len(types) == 1 else \
            [(o, o, t) for o, t in zip(range(first, last + 1), types)]
        for seg_first, seg_last, kind in segments:
            offset = max(seg_first, self.start_offset)
            while offset <= seg_last:  # each run the segment covers, cut to it
                run = self._run_of(offset)
                assert run is not None  # checked above: every offset is held
                piece = self._split_at(run, offset, min(run.last, seg_last))
                if kind == AcknowledgeType.ACCEPT:
                    self._settle(piece, RecordState.ACKNOWLEDGED)
                elif kind == AcknowledgeType.RELEASE:
                    self._release(piece)
                elif kind == AcknowledgeType.RENEW:
                    piece.lock_deadline = deadline
                else:  # REJECT, or GAP (no record there)
                    self._settle(piece, RecordState.ARCHIVED)
                offset = piece.last + 1

    def _check_held(self, member: str, first: int, last: int) -> None:
        """Every offset of first..last is acquired by `member`, or Kafka's error for the first
        in-flight batch (or, in a tracked one, offset) that is not."""
        for run in self.runs:
            if run.last < first or run.first > last:
                continue
            if run.batch not in self.tracked:  # the whole batch, one run
                if run.state != RecordState.ACQUIRED:
                    raise InvalidRecordStateError(
                        "The batch cannot be acknowledged. The batch is not in the acquired state.")
                if run.member != member:
                    raise InvalidRecordStateError("Member is not the owner of batch record")
            else:
                if run.state != RecordState.ACQUIRED:
                    raise InvalidRecordStateError("The offset cannot be acknowledged. The offset is not acquired.")
                if run.member != member:
                    raise InvalidRecordStateError("Member is not the owner of offset")

    def release_member(self, member: str) -> None:
        """A member that left: what it holds may be delivered again (its deliveries counted)."""
        for run in self.runs:
            if run.state == RecordState.ACQUIRED and run.member == member:
                self._release(run)
        self._merge_and_advance()

    def expire_locks(self, now: int) -> bool:
        """Release the records whose lock ran out; whether any did."""
        expired = False
        for run in self.runs:
            if run.state == RecordState.ACQUIRED and run.lock_deadline <= now:
                self._release(run)
                expired = True
        if expired:
            self._merge_and_advance()
        return expired

    def next_lock_deadline(self) -> int | None:
        deadlines = [r.lock_deadline for r in self.runs if r.state == RecordState.ACQUIRED]
        return min(deadlines) if deadlines else None

    # ------------------------------------------------------------ runs

    def _release(self, run: InFlight) -> None:
        if run.delivery_count >= self.delivery_count_limit:
            self._settle(run, RecordState.ARCHIVED)
        else:
            self._settle(run, RecordState.AVAILABLE)

    @staticmethod
    def _settle(run: InFlight, state: RecordState) -> None:
        run.state, run.member, run.lock_deadline = state, None, 0

    def _run_of(self, offset: int) -> InFlight | None:
        i = bisect.bisect_right([r.first for r in self.runs], offset) - 1
        if i >= 0 and self.runs[i].first <= offset <= self.runs[i].last:
            return self.runs[i]
        return None

    def _split_at(self, run: InFlight, first: int, last: int) -> InFlight:
        """The run of exactly first..last (within `run`), splitting `run` around it (its in-flight
        batch is handled offset by offset from then on, as Kafka does)."""
        i = self.runs.index(run)
        if first > run.first or last < run.last:
            self.tracked.add(run.batch)
        pieces = []
        if run.first < first:
            pieces.append(msgspec.structs.replace(run, last=first - 1))
        middle = msgspec.structs.replace(run, first=first, last=last)
        pieces.append(middle)
        if last < run.last:
            pieces.append(msgspec.structs.replace(run, first=last + 1))
        self.runs[i:i + 1] = pieces
        return middle

    def _merge_and_advance(self) -> None:
        """Merge neighbours in the same settled state, and move the SPSO past the leading
        ACKNOWLEDGED and ARCHIVED records."""
        merged: list[InFlight] = []
        for run in self.runs:
            prev = merged[-1] if merged else None
            if (prev is not None and run.state != RecordState.ACQUIRED and prev.state == run.state
                    and prev.delivery_count == run.delivery_count and prev.last + 1 == run.first
                    and prev.batch == run.batch):
                prev.last = run.last
            else:
                merged.append(run)
        self.retired = []
        while merged and merged[0].state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
            self.retired.append(merged[0])
            self.start_offset = merged.pop(0).last + 1
        self.runs = merged
        if self.tracked:
            self.tracked &= {r.batch for r in merged}
        if not self.runs:
            self.start_offset = max(self.start_offset, self.end_offset)
            self.end_offset = self.start_offset
