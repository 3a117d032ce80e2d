"""A share partition's record states (KIP-932): acquisition, the three acknowledgements, lock
expiry, the delivery count limit, the in-flight limit, and the start offset moving on."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncbroker.share_partition import Acquired, InvalidRecordStateError, RecordState, SharePartition

LOCK = 30_000


def partition(start: int = 0, limit: int = 5, max_in_flight: int = 200) -> SharePartition:
    return SharePartition(start, delivery_count_limit=limit, max_in_flight=max_in_flight)


def test_new_batches_are_acquired_whole_and_accepted() -> None:
    sp = partition()
    assert sp.acquire("a", [(0, 2), (3, 4)], 500, 0, LOCK) == [Acquired(0, 2, 1), Acquired(3, 4, 1)]
    assert sp.next_fetch_offset() == 5 and sp.acquired_count() == 5
    sp.acknowledge("a", 0, 4, [1])
    assert (sp.start_offset, sp.end_offset, sp.runs) == (5, 5, [])


def test_released_records_are_delivered_again_with_their_count_raised() -> None:
    sp = partition()
    sp.acquire("a", [(0, 2)], 500, 0, LOCK)
    sp.acknowledge("a", 0, 2, [1, 2, 1])  # accept 0, release 1, accept 2
    assert sp.start_offset == 1 and sp.next_fetch_offset() == 1
    assert sp.acquire("b", [(0, 2)], 500, 10, LOCK) == [Acquired(1, 1, 2)]
    sp.acknowledge("b", 1, 1, [1])
    assert sp.start_offset == 3 and sp.runs == []


def test_rejected_records_are_never_delivered_again() -> None:
    sp = partition()
    sp.acquire("a", [(0, 1)], 500, 0, LOCK)
    sp.acknowledge("a", 1, 1, [3])
    assert sp.states() == [(0, 0, RecordState.AVAILABLE, 1), (1, 1, RecordState.ARCHIVED, 1)]
    sp.acknowledge("a", 0, 0, [1])
    assert sp.start_offset == 2


def test_a_lock_that_runs_out_releases_the_records() -> None:
    sp = partition()
    sp.acquire("a", [(0, 0)], 500, 0, LOCK)
    assert not sp.expire_locks(LOCK - 1)
    assert sp.expire_locks(LOCK)
    assert sp.states() == [(0, 0, RecordState.AVAILABLE, 1)]
    with pytest.raises(InvalidRecordStateError):
        sp.acknowledge("a", 0, 0, [1])  # too late: not held any more


def test_records_delivered_too_often_are_archived() -> None:
    sp = partition(limit=2)
    sp.acquire("a", [(0, 0)], 500, 0, LOCK)
    sp.acknowledge("a", 0, 0, [2])
    assert sp.acquire("a", [(0, 0)], 500, 0, LOCK) == [Acquired(0, 0, 2)]
    sp.acknowledge("a", 0, 0, [2])  # the second release: its deliveries are used up
    assert sp.start_offset == 1 and sp.runs == []


def test_only_the_holder_acknowledges() -> None:
    sp = partition()
    sp.acquire("a", [(0, 0)], 500, 0, LOCK)
    with pytest.raises(InvalidRecordStateError):
        sp.acknowledge("b", 0, 0, [1])
    with pytest.raises(InvalidRecordStateError):
        sp.acknowledge("a", 0, 1, [1])  # offset 1 was never acquired
    sp.acknowledge("a", 0, 0, [1])


def test_a_member_leaving_releases_what_it_holds() -> None:
    sp = partition()
    sp.acquire("a", [(0, 1)], 500, 0, LOCK)
    sp.acquire("b", [(2, 3)], 500, 0, LOCK)
    sp.release_member("a")
    assert sp.next_fetch_offset() == 0 and sp.acquired_count() == 2


def test_the_in_flight_limit_stops_acquisition() -> None:
    sp = partition(max_in_flight=3)
    assert sp.acquire("a", [(0, 1), (2, 3), (4, 5)], 500, 0, LOCK) == [Acquired(0, 1, 1), Acquired(2, 3, 1)]
    assert sp.acquire("b", [(4, 5)], 500, 0, LOCK) == []


def test_offsets_missing_from_the_log_are_passed_over() -> None:
    sp = partition()
    assert sp.acquire("a", [(3, 4)], 500, 0, LOCK) == [Acquired(3, 4, 1)]
    sp.acknowledge("a", 3, 4, [1])
    assert sp.start_offset == 5


@settings(max_examples=200)
@given(st.lists(st.tuples(st.sampled_from(["acquire", "ack", "expire", "leave"]), st.sampled_from("ab"),
                          st.integers(0, 3)), max_size=40))
def test_every_record_is_in_one_state_and_the_start_offset_only_moves_on(steps: list[tuple[str, str, int]]) -> None:
    sp = partition(limit=3, max_in_flight=6)
    log_end, now, previous_start = 12, 0, 0
    for action, member, n in steps:
        now += 5_000
        if action == "acquire":
            start = sp.next_fetch_offset()
            batches = [(o, o) for o in range(start, min(start + n + 1, log_end))]
            sp.acquire(member, batches, n + 1, now, LOCK)
        elif action == "ack":
            held = [r for r in sp.runs if r.state == RecordState.ACQUIRED and r.member == member]
            if held:
                sp.acknowledge(member, held[0].first, held[0].last, [1 + n % 3])
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
        assert sp.acquired_count() <= 6 + 4  # whole batches may pass the limit by one batch
