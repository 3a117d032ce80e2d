"""A share partition's record states (KIP-932): acquisition (by whole batches or limited to a
record count), the acknowledgements (RENEW among them), lock expiry, the delivery count limit,
the in-flight limit, and the start offset moving on."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncbroker.share_partition import (
    Acquired,
    InvalidRecordStateError,
    RecordState,
    RenewDisabledError,
    ShareAcquireMode,
    SharePartition,
)
from wire.errors import InvalidRequestError

LOCK = 30_000


def partition(start: int = 0, limit: int = 5, max_in_flight: int = 200) -> SharePartition:
    return SharePartition(start, delivery_count_limit=limit, max_in_flight=max_in_flight)


def test_new_batches_are_acquired_whole_in_one_range_and_accepted() -> None:
    sp = partition()
    assert sp.acquire("a", [(0, 2), (3, 4)], 500, 0, LOCK) == [Acquired(0, 4, 1)]
    assert sp.next_fetch_offset() == 5 and sp.acquired_count() == 5
    sp.acknowledge("a", [(0, 4, [1])])
    assert (sp.start_offset, sp.end_offset, sp.runs) == (5, 5, [])


def test_a_range_longer_than_the_batch_size_is_cut_at_batch_boundaries() -> None:
    sp = partition()
    got = sp.acquire("a", [(0, 0), (1, 1), (2, 2), (3, 4), (5, 5)], 500, 0, LOCK, batch_size=2)
    assert got == [Acquired(0, 1, 1), Acquired(2, 4, 1), Acquired(5, 5, 1)]


def test_released_records_are_delivered_again_with_their_count_raised() -> None:
    sp = partition()
    sp.acquire("a", [(0, 2)], 500, 0, LOCK)
    sp.acknowledge("a", [(0, 2, [1, 2, 1])])  # accept 0, release 1, accept 2
    assert sp.start_offset == 1 and sp.next_fetch_offset() == 1
    assert sp.acquire("b", [(0, 2)], 500, 10, LOCK) == [Acquired(1, 1, 2)]
    sp.acknowledge("b", [(1, 1, [1])])
    assert sp.start_offset == 3 and sp.runs == []


def test_rejected_records_are_never_delivered_again() -> None:
    sp = partition()
    sp.acquire("a", [(0, 1)], 500, 0, LOCK)
    sp.acknowledge("a", [(1, 1, [3])])
    assert sp.states() == [(0, 0, RecordState.AVAILABLE, 1), (1, 1, RecordState.ARCHIVED, 1)]
    sp.acknowledge("a", [(0, 0, [1])])
    assert sp.start_offset == 2


def test_a_lock_that_runs_out_releases_the_records() -> None:
    sp = partition()
    sp.acquire("a", [(0, 0)], 500, 0, LOCK)
    assert not sp.expire_locks(LOCK - 1)
    assert sp.expire_locks(LOCK)
    assert sp.states() == [(0, 0, RecordState.AVAILABLE, 1)]
    with pytest.raises(InvalidRecordStateError):
        sp.acknowledge("a", [(0, 0, [1])])  # too late: not held any more


def test_records_delivered_too_often_are_archived() -> None:
    sp = partition(limit=2)
    sp.acquire("a", [(0, 0)], 500, 0, LOCK)
    sp.acknowledge("a", [(0, 0, [2])])
    assert sp.acquire("a", [(0, 0)], 500, 0, LOCK) == [Acquired(0, 0, 2)]
    sp.acknowledge("a", [(0, 0, [2])])  # the second release: its deliveries are used up
    assert sp.start_offset == 1 and sp.runs == []


def test_only_the_holder_acknowledges() -> None:
    sp = partition()
    sp.acquire("a", [(0, 0)], 500, 0, LOCK)
    with pytest.raises(InvalidRecordStateError):
        sp.acknowledge("b", [(0, 0, [1])])
    with pytest.raises(InvalidRequestError, match="The last offset in request is past acquired records."):
        sp.acknowledge("a", [(0, 1, [1])])  # offset 1 was never acquired
    sp.acknowledge("a", [(0, 0, [1])])


def test_ranges_past_what_was_acquired_are_invalid_requests_as_kafka_answers() -> None:
    sp = partition()
    with pytest.raises(InvalidRecordStateError, match="The request batch offsets are not found in the cache."):
        sp.acknowledge("a", [(0, 0, [ACCEPT])])  # nothing in flight
    sp.acquire("a", [(0, 1)], 500, 0, LOCK)
    with pytest.raises(InvalidRequestError, match="The first offset in request is past acquired records."):
        sp.acknowledge("a", [(2, 3, [ACCEPT])])


def test_batch_optimized_takes_an_in_flight_batch_whole_again() -> None:
    sp = partition()
    sp.acquire("a", [(0, 9), (10, 11)], 500, 0, LOCK)  # one in-flight batch, 0-11
    sp.acknowledge("a", [(0, 11, [RELEASE])])
    assert sp.acquire("a", [(0, 9), (10, 11)], 3, 0, LOCK) == [Acquired(0, 11, 2)]  # past max_records
    sp.acknowledge("a", [(0, 11, [RELEASE])])
    # record-limited, the batch is cut (tracked from then on), and batch-optimized then takes
    # every available offset of it
    assert sp.acquire("a", [(0, 9), (10, 11)], 3, 0, LOCK, RECORD_LIMIT) == [Acquired(0, 2, 3)]
    assert sp.acquire("b", [(0, 9), (10, 11)], 3, 0, LOCK) == [Acquired(3, 11, 3)]


def test_errors_name_the_batch_while_whole_and_the_offset_once_tracked() -> None:
    sp = partition()
    sp.acquire("a", [(0, 3)], 500, 0, LOCK)
    with pytest.raises(InvalidRecordStateError, match="^Member is not the owner of batch record$"):
        sp.acknowledge("b", [(1, 1, [ACCEPT])])
    sp.acknowledge("a", [(0, 3, [RELEASE])])
    with pytest.raises(InvalidRecordStateError, match="The batch is not in the acquired state."):
        sp.acknowledge("a", [(0, 0, [ACCEPT])])
    sp.acquire("a", [(0, 3)], 500, 0, LOCK)
    sp.acknowledge("a", [(0, 0, [RELEASE])])  # a part: tracked offset by offset now
    with pytest.raises(InvalidRecordStateError, match="^Member is not the owner of offset$"):
        sp.acknowledge("b", [(2, 2, [ACCEPT])])
    with pytest.raises(InvalidRecordStateError, match="The offset is not acquired."):
        sp.acknowledge("a", [(0, 1, [ACCEPT])])


def test_a_failing_batch_undoes_the_batches_before_it() -> None:
    sp = partition()
    sp.acquire("a", [(0, 3)], 500, 0, LOCK)
    sp.acknowledge("a", [(3, 3, [RELEASE])])
    before = [msgspec.structs.replace(r) for r in sp.runs]
    with pytest.raises(InvalidRecordStateError):
        sp.acknowledge("a", [(0, 1, [ACCEPT]), (2, 3, [ACCEPT])], now=1, lock_ms=LOCK)  # 3 is not held
    assert sp.runs == before and sp.start_offset == 0


def test_a_member_leaving_releases_what_it_holds() -> None:
    sp = partition()
    sp.acquire("a", [(0, 1)], 500, 0, LOCK)
    sp.acquire("b", [(2, 3)], 500, 0, LOCK)
    sp.release_member("a")
    assert sp.next_fetch_offset() == 0 and sp.acquired_count() == 2


def test_the_in_flight_limit_stops_acquisition() -> None:
    sp = partition(max_in_flight=3)
    assert sp.acquire("a", [(0, 1), (2, 3), (4, 5)], 500, 0, LOCK) == [Acquired(0, 3, 1)]
    assert sp.acquire("b", [(4, 5)], 500, 0, LOCK) == []


def test_at_the_in_flight_limit_only_records_in_flight_are_taken() -> None:
    """Every record from the start offset to the end offset counts, held or not (Kafka's
    numInFlightRecords): at the limit a fetch takes released records, never new ones."""
    sp = partition(max_in_flight=100)
    assert sp.acquire("a", [(0, 49), (50, 99)], 500, 0, LOCK) == [Acquired(0, 99, 1)]
    sp.acknowledge("a", [(50, 99, [2])])  # 0-49 still held: the start offset stays at 0
    assert sp.acquire("b", [(50, 99), (100, 149)], 500, 0, LOCK) == [Acquired(50, 99, 2)]
    sp.acknowledge("b", [(50, 99, [1])])
    assert sp.acquire("b", [(100, 149)], 500, 0, LOCK) == []  # 0-99 in flight, 50 of them done


def test_offsets_missing_from_the_log_are_passed_over() -> None:
    sp = partition()
    assert sp.acquire("a", [(3, 4)], 500, 0, LOCK) == [Acquired(3, 4, 1)]
    sp.acknowledge("a", [(3, 4, [1])])
    assert sp.start_offset == 5


ACCEPT, RELEASE, RENEW = 1, 2, 4
RECORD_LIMIT = ShareAcquireMode.RECORD_LIMIT


def test_renew_extends_the_lock_and_counts_no_delivery() -> None:
    sp = partition()
    sp.acquire("a", [(0, 3)], 500, 0, LOCK)
    sp.acknowledge("a", [(1, 2, [RENEW])], now=20_000, lock_ms=LOCK)
    # 0 and 3 keep the first lock; 1-2 are held until 50 s, their delivery count still 1
    assert sp.expire_locks(LOCK)
    assert [(r.first, r.last, r.state, r.delivery_count) for r in sp.runs] == [
        (0, 0, RecordState.AVAILABLE, 1), (1, 2, RecordState.ACQUIRED, 1), (3, 3, RecordState.AVAILABLE, 1)]
    assert sp.next_lock_deadline() == 50_000
    sp.acknowledge("a", [(1, 2, [ACCEPT])])  # still held: the renewed lock has not run out
    assert sp.acquire("b", [(0, 3)], 500, LOCK, LOCK) == [Acquired(0, 0, 2), Acquired(3, 3, 2)]


def test_renew_per_offset_among_other_types() -> None:
    sp = partition()
    sp.acquire("a", [(0, 2)], 500, 0, LOCK)
    sp.acknowledge("a", [(0, 2, [ACCEPT, RENEW, RELEASE])], now=10_000, lock_ms=LOCK)
    assert sp.start_offset == 1
    assert [(r.first, r.state, r.member, r.lock_deadline) for r in sp.runs] == [
        (1, RecordState.ACQUIRED, "a", 40_000), (2, RecordState.AVAILABLE, None, 0)]


def test_only_the_holder_renews_and_only_what_it_holds() -> None:
    sp = partition()
    sp.acquire("a", [(0, 1)], 500, 0, LOCK)
    with pytest.raises(InvalidRecordStateError):
        sp.acknowledge("b", [(0, 0, [RENEW])], now=1, lock_ms=LOCK)
    sp.acknowledge("a", [(1, 1, [ACCEPT])])
    with pytest.raises(InvalidRecordStateError):
        sp.acknowledge("a", [(1, 1, [RENEW])], now=1, lock_ms=LOCK)  # acknowledged: not held any more
    sp.acknowledge("a", [(0, 0, [ACCEPT])])
    sp.acknowledge("a", [(0, 1, [RENEW])], now=1, lock_ms=LOCK)  # before the start offset: passed over, as Kafka


def test_renew_refused_when_the_group_disables_it_changes_nothing() -> None:
    sp = partition()
    sp.acquire("a", [(0, 1)], 500, 0, LOCK)
    with pytest.raises(RenewDisabledError, match="Renewing acquisition locks is not enabled for the group."):
        sp.acknowledge("a", [(0, 1, [ACCEPT, RENEW])], now=1, lock_ms=LOCK, renew_enabled=False)
    assert sp.acquired_count() == 2 and sp.next_lock_deadline() == LOCK


def test_record_limit_splits_a_batch_and_leaves_its_rest_available() -> None:
    sp = partition()
    assert sp.acquire("a", [(0, 9)], 3, 0, LOCK, RECORD_LIMIT) == [Acquired(0, 2, 1)]
    assert sp.end_offset == 10 and sp.next_fetch_offset() == 3
    assert sp.states() == [(0, 2, RecordState.AVAILABLE, 1), (3, 9, RecordState.AVAILABLE, 0)]
    assert sp.acquire("b", [(0, 9)], 3, 0, LOCK, RECORD_LIMIT) == [Acquired(3, 5, 1)]
    # batch-optimized, the rest of the batch in flight is still taken by the record
    assert sp.acquire("a", [(0, 9)], 500, 0, LOCK) == [Acquired(6, 9, 1)]
    assert sp.acquired_count() == 10


def test_record_limit_spans_batches_up_to_the_limit() -> None:
    sp = partition()
    assert sp.acquire("a", [(0, 1), (2, 4), (5, 9)], 4, 0, LOCK, RECORD_LIMIT) == [Acquired(0, 3, 1)]
    assert sp.end_offset == 5 and sp.acquired_count() == 4
    # batch-optimized, the same request takes whole batches
    other = partition()
    assert other.acquire("a", [(0, 1), (2, 4), (5, 9)], 4, 0, LOCK) == [Acquired(0, 4, 1)]


def release_all(sp: SharePartition, member: str, got: list[Acquired]) -> None:
    sp.acknowledge(member, [(a.first, a.last, [2]) for a in got])


def redeliveries(sp: SharePartition, log: list[tuple[int, int]], rounds: int = 40) -> list[list[tuple[int, int, int]]]:
    """What each fetch acquires when everything acquired is released again, until nothing comes."""
    out: list[list[tuple[int, int, int]]] = []
    for _ in range(rounds):
        got = sp.acquire("a", log, 500, 0, LOCK)
        if not got:
            break
        out.append([(a.first, a.last, a.delivery_count) for a in got])
        release_all(sp, "a", got)
    return out


@pytest.mark.parametrize(("limit", "throttled_from"), [(2, 2), (3, 2), (4, 2), (5, 3), (6, 3), (10, 5)])
def test_throttling_starts_at_half_the_delivery_count_limit(limit: int, throttled_from: int) -> None:
    assert partition(limit=limit).throttle_limit() == throttled_from


def test_a_batch_released_again_and_again_comes_back_halved_then_record_by_record() -> None:
    # limit 5: throttled from 3 deliveries (half the batch at the 4th); the 5th, the last, one by one
    assert redeliveries(partition(limit=5), [(0, 7)]) == [
        [(0, 7, 1)], [(0, 7, 2)], [(0, 7, 3)], [(0, 3, 4)],
        [(0, 0, 5)], [(1, 1, 5)], [(2, 2, 5)], [(3, 3, 5)],
        [(4, 7, 4)], [(4, 4, 5)], [(5, 5, 5)], [(6, 6, 5)], [(7, 7, 5)]]
    # limit 4: throttled from 2 deliveries
    assert redeliveries(partition(limit=4), [(0, 7)]) == [
        [(0, 7, 1)], [(0, 7, 2)], [(0, 3, 3)],
        [(0, 0, 4)], [(1, 1, 4)], [(2, 2, 4)], [(3, 3, 4)],
        [(4, 7, 3)], [(4, 4, 4)], [(5, 5, 4)], [(6, 6, 4)], [(7, 7, 4)]]


def test_the_portion_halves_with_each_delivery_past_the_throttle_limit() -> None:
    # limit 10: throttled from 5; a batch of 32 gives 16, then 8, 4, 2 records (the 10th alone)
    sizes = [sum(last - first + 1 for first, last, _ in got) for got in redeliveries(partition(limit=10), [(0, 31)])]
    assert sizes[:9] == [32, 32, 32, 32, 32, 16, 8, 4, 2]


def test_nothing_is_throttled_under_a_limit_of_2() -> None:
    # throttled from 2 deliveries, but the second is the last: released, the records are archived
    assert redeliveries(partition(limit=2), [(0, 3)]) == [[(0, 3, 1)], [(0, 3, 2)]]


def test_a_throttled_batch_is_acquired_alone_and_new_records_wait() -> None:
    sp = partition(limit=5)
    a = sp.acquire("a", [(0, 7)], 500, 0, LOCK)
    b = sp.acquire("a", [(8, 11)], 500, 0, LOCK)  # a second in-flight batch
    for _ in range(2):
        release_all(sp, "a", a)
        a = sp.acquire("a", [(0, 7)], 500, 0, LOCK)
    release_all(sp, "a", a + b)
    log = [(0, 7), (8, 11), (12, 15)]
    assert sp.acquire("a", log, 500, 0, LOCK) == [Acquired(0, 3, 4)]  # not 8-11, not the new 12-15
    assert sp.acquire("a", log, 500, 0, LOCK) == [Acquired(4, 7, 4)]
    assert sp.acquire("a", log[1:], 500, 0, LOCK) == [Acquired(8, 11, 2), Acquired(12, 15, 1)]  # B and the new ones


def test_a_throttled_batch_after_others_waits_for_the_next_fetch() -> None:
    sp = partition(limit=5)
    a = sp.acquire("a", [(0, 3)], 500, 0, LOCK)
    b = sp.acquire("a", [(4, 7)], 500, 0, LOCK)
    for _ in range(2):
        release_all(sp, "a", b)
        b = sp.acquire("a", [(4, 7)], 500, 0, LOCK)
    release_all(sp, "a", a + b)  # 0-3 delivered once, 4-7 three times
    assert sp.acquire("a", [(0, 3), (4, 7)], 500, 0, LOCK) == [Acquired(0, 3, 2)]
    assert sp.acquire("a", [(4, 7)], 500, 0, LOCK) == [Acquired(4, 5, 4)]


def mixed(limit: int, often: tuple[int, int], times: int) -> SharePartition:
    """A batch 0-7 delivered once, its offsets `often` (first, last) `times` times, all available."""
    sp = partition(limit=limit)
    sp.acquire("a", [(0, 7)], 500, 0, LOCK)
    for _ in range(times - 1):
        sp.acknowledge("a", [(often[0], often[1], [2])])
        sp.acquire("a", [(0, 7)], 500, 0, LOCK)
    sp.acknowledge("a", [(0, 7, [2])])
    return sp


def test_records_before_the_first_throttled_one_count_towards_its_portion() -> None:
    sp = mixed(5, (2, 7), 3)  # 0-1 once, 2-7 three times: the portion, 8 >> 1, counts 0-1 too
    assert sp.acquire("a", [(0, 7)], 500, 0, LOCK) == [Acquired(0, 1, 2), Acquired(2, 3, 4)]
    sp.acknowledge("a", [(0, 3, [2])])
    # 2 is on its last attempt: it does not follow 0-1
    assert sp.acquire("a", [(0, 7)], 500, 0, LOCK) == [Acquired(0, 1, 3)]


def test_a_portion_already_passed_does_not_stop_the_batch() -> None:
    # 0-5 once, 6-7 three times: six records are taken before the portion (4) is known, and
    # Kafka stops only when the count equals it
    sp = mixed(5, (6, 7), 3)
    assert sp.acquire("a", [(0, 7)], 500, 0, LOCK) == [Acquired(0, 5, 2), Acquired(6, 7, 4)]


def test_record_limit_applies_within_a_throttled_batch() -> None:
    sp = partition(limit=5)
    got = sp.acquire("a", [(0, 7)], 500, 0, LOCK)
    for _ in range(2):
        release_all(sp, "a", got)
        got = sp.acquire("a", [(0, 7)], 500, 0, LOCK)
    release_all(sp, "a", got)
    assert sp.acquire("a", [(0, 7)], 3, 0, LOCK, ShareAcquireMode.RECORD_LIMIT) == [Acquired(0, 2, 4)]
    # the portion is worked out again each fetch: 3-7, 8 >> 1 = 4, cut to the 3 asked for
    assert sp.acquire("a", [(0, 7)], 3, 0, LOCK, ShareAcquireMode.RECORD_LIMIT) == [Acquired(3, 5, 4)]


@settings(max_examples=200)
@given(st.lists(st.tuples(st.sampled_from(["acquire", "acquire-limited", "ack", "renew", "expire", "leave"]),
                          st.sampled_from("ab"), st.integers(0, 3)), max_size=40))
def test_every_record_is_in_one_state_and_the_start_offset_only_moves_on(steps: list[tuple[str, str, int]]) -> None:
    sp = partition(limit=3, max_in_flight=6)
    log_end, now, previous_start = 12, 0, 0
    for action, member, n in steps:
        now += 5_000
        if action == "acquire":
            start = sp.next_fetch_offset()
            batches = [(o, o) for o in range(start, min(start + n + 1, log_end))]
            sp.acquire(member, batches, n + 1, now, LOCK)
        elif action == "acquire-limited":  # batches of three records, split at the limit
            start, before = sp.next_fetch_offset(), sp.acquired_count()
            batches = [(o, min(o + 2, log_end - 1)) for o in range(start - start % 3, log_end, 3)]
            got = sp.acquire(member, batches, n + 1, now, LOCK, RECORD_LIMIT)
            assert sum(a.last - a.first + 1 for a in got) <= n + 1
            assert sp.acquired_count() - before == sum(a.last - a.first + 1 for a in got)
        elif action in ("ack", "renew"):
            held = [r for r in sp.runs if r.state == RecordState.ACQUIRED and r.member == member]
            if held:
                kind = RENEW if action == "renew" else 1 + n % 3
                counts = [r.delivery_count for r in held]
                sp.acknowledge(member, [(held[0].first, held[0].last, [kind])], now=now, lock_ms=LOCK)
                if kind == RENEW:
                    assert sp.acquired_count() >= sum(r.last - r.first + 1 for r in held)
                    assert [r.delivery_count for r in sp.runs if r.member == member] == counts
        elif action == "expire":
            sp.expire_locks(now)
        else:
            sp.release_member(member)
        assert sp.start_offset >= previous_start
        previous_start = sp.start_offset
        expected = sp.start_offset
        for r in sp.runs:  # contiguous, in order, from the start offset to the end offset
            assert r.first == expected and r.last >= r.first
            assert 0 <= r.delivery_count <= 3
            assert (r.member is not None) == (r.state == RecordState.ACQUIRED)
            expected = r.last + 1
        assert expected == sp.end_offset
        batches = [r.batch for r in sp.runs]
        assert batches == sorted(batches)  # an in-flight batch's runs are together
        # Kafka handles a batch whole until it is cut: an untracked batch is one run
        assert all(batches.count(b) == 1 for b in set(batches) - sp.tracked)
        assert sp.acquired_count() <= 6 + 4  # whole batches may pass the limit by one batch
