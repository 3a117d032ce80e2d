"""Differential scenarios: redelivery of share group records near the delivery count limit
(KIP-932), raw ShareFetch/ShareAcknowledge v1 compared with Kafka 4.4.

Kafka throttles records that keep coming back: from half the limit (share.delivery.count.limit,
rounded up, at least 2) a batch is acquired alone, and each delivery past that halves the
part of it one fetch may take; a record on its last delivery attempt goes alone. A member
releases everything it acquired, fetch after fetch, until the records are archived; the
ranges and delivery counts each fetch acquires are compared, with one batch of 8 records
under the default limit (5) and under 4, with a second batch that is not throttled
waiting behind a throttled one, with a throttled batch waiting behind one that is not, and
with records of one batch delivered different numbers of times (the throttled portion of a
batch counts the records taken before the first throttled one; a record on its last attempt
does not follow others).
"""

from __future__ import annotations

from typing import Any

import pytest

import data_steps
import group_steps
from admin_steps import creatable, create_topics, incremental_alter_configs, metadata_topics
from differential import ScenarioRun, batch
from test_share_fetch_acknowledge import GROUP_RESOURCE, RELEASE, SET, Member
from test_share_group_membership import hb, until_assigned

pytestmark = pytest.mark.timeout(240)

Held = list[tuple[int, int, int]]


def acquired(answer: Any) -> Held:
    """(first, last, delivery count) of the ranges an answer hands out."""
    return [(r.first_offset, r.last_offset, r.delivery_count)
            for t in answer.responses for p in t.partitions for r in p.acquired_records]


def setup(run: ScenarioRun, limit: int | None, size: int = 8) -> Member:
    """Topic "solo" holding one batch of `size` records; group "g" reads from the earliest
    offset, with share.delivery.count.limit `limit` (None: the default, 5); member a holds solo-0."""
    group_steps.wait_for_coordinator(run)
    create_topics(run, [creatable(run, "solo", 1)], label="create solo")
    metadata_topics(run, ["solo"], record=False)
    data_steps.produce(run, "solo", {0: batch([(None, f"a{i}".encode()) for i in range(size)])}, record=False)
    configs = [("share.auto.offset.reset", SET, "earliest")]
    if limit is not None:
        configs.append(("share.delivery.count.limit", SET, str(limit)))
    incremental_alter_configs(run, [(GROUP_RESOURCE, "=" + run.group("g"), configs)], label="group configs")
    a = hb(run, "a joins", "m-a", topics_=["solo"])
    until_assigned(run, "a is given solo-0", "m-a", a.member_epoch)
    return Member(run, "m-a")


def release(a: Member, label: str, held: Held) -> None:
    a.acknowledge(label, tuple((first, last, (RELEASE,)) for first, last, _ in held))


def release_until_archived(a: Member, held: Held, rounds: int) -> None:
    """Release what a holds and fetch again, until nothing comes (every record archived)."""
    for i in range(rounds):
        release(a, f"round {i}: a releases what it holds", held)
        held = acquired(a.fetch(f"round {i}: a fetches again", wait_ms=1000))
        if not held:
            return
    raise AssertionError(f"still delivered after {rounds} rounds: {held}")


def one_batch(limit: int | None) -> Any:
    def scenario(run: ScenarioRun) -> None:
        a = setup(run, limit)
        held = acquired(a.fetch_until_acquired("a acquires the batch"))
        release_until_archived(a, held, 20)
    return scenario


def test_one_batch_released_again_and_again(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(one_batch(None))


def test_one_batch_under_a_limit_of_4(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(one_batch(4))


def two_batches(run: ScenarioRun) -> None:
    """Batch A (0-7) delivered three times, batch B (8-11) once: A is throttled and taken alone,
    half of it at a time, B only once A gives nothing more."""
    a = setup(run, None)
    held_a = acquired(a.fetch_until_acquired("a acquires batch A"))
    data_steps.produce(run, "solo", {0: batch([(None, f"b{i}".encode()) for i in range(4)])}, record=False)
    held_b = acquired(a.fetch("a acquires batch B, A held", wait_ms=5000))
    for i in range(2):
        release(a, f"a releases A ({i})", held_a)
        held_a = acquired(a.fetch(f"a acquires A again ({i})", wait_ms=2000))
    release(a, "a releases A and B", held_a + held_b)
    first = acquired(a.fetch("A's first half alone", wait_ms=2000))
    second = acquired(a.fetch("A's second half alone, B not with it", wait_ms=2000))
    third = acquired(a.fetch("B at last", wait_ms=2000))
    release_until_archived(a, first + second + third, 30)


def test_a_throttled_batch_is_acquired_alone(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(two_batches)


def throttled_behind(run: ScenarioRun) -> None:
    """In-flight batches 0-3 (delivered once) and 4-7 (three times): the first is taken, the
    throttled one waits for the next fetch, and gives half of itself."""
    a = setup(run, None, size=4)
    first = acquired(a.fetch_until_acquired("a acquires 0-3"))
    data_steps.produce(run, "solo", {0: batch([(None, f"b{i}".encode()) for i in range(4)])}, record=False)
    second = acquired(a.fetch("a acquires 4-7, 0-3 held", wait_ms=5000))
    for i in range(2):
        release(a, f"a releases 4-7 ({i})", second)
        second = acquired(a.fetch(f"a acquires 4-7 again ({i})", wait_ms=2000))
    release(a, "a releases both", first + second)
    first = acquired(a.fetch("0-3 alone", wait_ms=2000))
    second = acquired(a.fetch("half of 4-7", wait_ms=2000))
    release_until_archived(a, first + second, 30)


def test_a_throttled_batch_behind_another_waits(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(throttled_behind)


def mixed(often: tuple[int, int]) -> Any:
    def scenario(run: ScenarioRun) -> None:
        """A batch 0-7 delivered once, its offsets `often` three times, then all released."""
        a = setup(run, None)
        held = acquired(a.fetch_until_acquired("a acquires 0-7"))
        for i in range(2):
            a.acknowledge(f"a releases {often} ({i})", ((often[0], often[1], (RELEASE,)),))
            a.fetch(f"a acquires {often} again ({i})", wait_ms=2000)
        release_until_archived(a, held, 30)
    return scenario


def test_the_portion_counts_records_before_the_throttled_one(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(mixed((2, 7)))


def test_a_portion_already_passed_does_not_stop_the_batch(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(mixed((6, 7)))
