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
REJECT. A lock that runs out (share.record.lock.duration.ms) releases the records as RELEASE
does; so does the member leaving. The SPSO moves past every leading ACKNOWLEDGED or
ARCHIVED record. At most share.partition.max.record.locks records are in flight.

The states are kept as runs of offsets (InFlight), split only where acknowledgements differ,
so that work follows the number of runs and not the number of records. Pure bookkeeping: the
caller reads the log, keeps the time and writes the durable state.
"""

from __future__ import annotations

import bisect
import enum
from collections.abc import Sequence

import msgspec

__all__ = ["AcknowledgeType", "Acquired", "InFlight", "RecordState", "SharePartition"]


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


class InFlight(msgspec.Struct):
    """Offsets first..last, all in one state."""

    first: int
    last: int
    state: RecordState
    delivery_count: int
    member: str | None = None  # the holder, while ACQUIRED
    lock_deadline: int = 0  # ms, while ACQUIRED


class Acquired(msgspec.Struct, frozen=True):
    """A range a member acquired (ShareFetch's AcquiredRecords)."""

    first: int
    last: int
    delivery_count: int


class InvalidRecordStateError(ValueError):
    """An acknowledgement for records the member does not hold (INVALID_RECORD_STATE)."""


class SharePartition:
    def __init__(self, start_offset: int, *, delivery_count_limit: int, max_in_flight: int) -> None:
        self.start_offset = start_offset
        self.end_offset = start_offset  # the next offset never handed out
        self.delivery_count_limit = delivery_count_limit
        self.max_in_flight = max_in_flight
        self.runs: list[InFlight] = []  # sorted, contiguous from start_offset to end_offset - 1
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
                sp.runs.append(InFlight(sp.end_offset, first - 1, RecordState.AVAILABLE, 0))
            settled = RecordState(state) if state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED) \
                else RecordState.AVAILABLE
            sp.runs.append(InFlight(first, last, settled, count))
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
                lock_ms: int) -> list[Acquired]:
        """Acquire for `member` from the log batches read at next_fetch_offset() ((base offset,
        last offset) each, in order): AVAILABLE records already in flight first, then new ones
        (whole batches, as Kafka), up to `max_records` and the in-flight limit."""
        budget = min(max_records, self.max_in_flight - self.acquired_count())
        out: list[Acquired] = []
        if budget <= 0 or not batches:
            return out
        limit = batches[-1][1]
        for r in list(self.runs):
            if budget <= 0 or r.first > limit:
                break
            if r.state != RecordState.AVAILABLE:
                continue
            last = min(r.last, r.first + budget - 1, limit)
            run = self._split_at(r, r.first, last)
            run.state, run.member, run.lock_deadline = RecordState.ACQUIRED, member, now + lock_ms
            run.delivery_count += 1
            out.append(Acquired(run.first, run.last, run.delivery_count))
            budget -= run.last - run.first + 1
        for base, last in batches:
            if budget <= 0:
                break
            if last < self.end_offset:
                continue
            first = max(base, self.end_offset)
            if first > self.end_offset:  # offsets the log no longer has (compacted away): done with
                self.runs.append(InFlight(self.end_offset, first - 1, RecordState.ARCHIVED, 0))
            self.runs.append(InFlight(first, last, RecordState.ACQUIRED, 1, member, now + lock_ms))
            self.end_offset = last + 1
            out.append(Acquired(first, last, 1))
            budget -= last - first + 1
        self._merge_and_advance()
        return sorted(out, key=lambda a: a.first)

    # ------------------------------------------------------------ acknowledging

    def acknowledge(self, member: str, first: int, last: int, types: Sequence[int]) -> None:
        """One acknowledgement batch: one type for the whole range, or one per offset."""
        if last < first or (len(types) != 1 and len(types) != last - first + 1) or \
                any(t not in AcknowledgeType._value2member_map_ for t in types):
            raise InvalidRecordStateError(f"Acknowledgement batch {first}-{last} does not match its types")
        for offset in range(first, last + 1):
            run = self._run_of(offset)
            if run is None or run.state != RecordState.ACQUIRED or run.member != member:
                raise InvalidRecordStateError(f"The record at offset {offset} is not acquired by member {member}.")
        segments = [(first, last, types[0])] if len(types) == 1 else \
            [(o, o, t) for o, t in zip(range(first, last + 1), types)]
        for seg_first, seg_last, kind in segments:
            offset = seg_first
            while offset <= seg_last:  # each run the segment covers, cut to it
                run = self._run_of(offset)
                assert run is not None  # checked above: every offset is held
                piece = self._split_at(run, offset, min(run.last, seg_last))
                if kind == AcknowledgeType.ACCEPT:
                    self._settle(piece, RecordState.ACKNOWLEDGED)
                elif kind == AcknowledgeType.RELEASE:
                    self._release(piece)
                else:  # REJECT, or GAP (no record there)
                    self._settle(piece, RecordState.ARCHIVED)
                offset = piece.last + 1
        self._merge_and_advance()

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
        """The run of exactly first..last (within `run`), splitting `run` around it."""
        i = self.runs.index(run)
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
                    and prev.delivery_count == run.delivery_count and prev.last + 1 == run.first):
                prev.last = run.last
            else:
                merged.append(run)
        self.retired = []
        while merged and merged[0].state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
            self.retired.append(merged[0])
            self.start_offset = merged.pop(0).last + 1
        self.runs = merged
        if not self.runs:
            self.start_offset = max(self.start_offset, self.end_offset)
            self.end_offset = self.start_offset
