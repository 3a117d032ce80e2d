"""Differential scenarios: ShareFetch and ShareAcknowledge v2 (KIP-932 at share.version 2),
raw requests compared with Kafka 4.4.

One member of a share group reads a partition holding a batch of ten records and one of two:
record-limited acquisition hands out exactly max_records of them, splitting the first batch,
and batch-optimized acquisition takes the rest; RENEW acknowledgements extend the locks of
records the member holds, in a renew ShareFetch (which acquires nothing and answers at once)
and in ShareAcknowledge v2 (which answers the lock duration); a renew ShareFetch asking for
records, a RENEW in a request not marked is_renew_ack, a RENEW in v1, and a RENEW of records
not held are refused as Kafka refuses them. Record-limited fetches of a batch delivered often
enough to be throttled take at most the throttled part of it.
"""

from __future__ import annotations

from typing import Any

import pytest

import group_steps
from admin_steps import create_topics, creatable, describe_configs, incremental_alter_configs, metadata_topics
from differential import ScenarioRun, batch, entity
from steps import produce
from test_share_group_membership import hb, until_assigned

pytestmark = pytest.mark.timeout(180)

SHARE_FETCH, SHARE_ACKNOWLEDGE, GROUP_RESOURCE = 78, 79, 32
ACCEPT, RELEASE, RENEW = 1, 2, 4
BATCH_OPTIMIZED, RECORD_LIMIT = 0, 1

Acks = list[tuple[int, int, list[int]]]


def share_fetch(run: ScenarioRun, label: str, epoch: int, *, acks: Acks = (), version: int = 2,  # type: ignore[assignment]
                mode: int = BATCH_OPTIMIZED, max_records: int = 500, wait_ms: int = 5000, min_bytes: int = 1,
                max_bytes: int = 1 << 20, renew: bool = False, member: str = "m-a") -> Any:
    partition = entity(SHARE_FETCH, version, "FetchPartition", partition_index=0, acknowledgement_batches=tuple(
        entity(SHARE_FETCH, version, "AcknowledgementBatch", first_offset=f, last_offset=last,
               acknowledge_types=tuple(types)) for f, last, types in acks))
    return run.call(SHARE_FETCH, version, _label=label, group_id=run.group("g"), member_id=member,
                    share_session_epoch=epoch, max_wait=wait_ms, min_bytes=min_bytes, max_bytes=max_bytes,
                    max_records=max_records, batch_size=max_records, share_acquire_mode=mode, is_renew_ack=renew,
                    topics=(entity(SHARE_FETCH, version, "FetchTopic", topic_id=run.topic_id("s"),
                                   partitions=(partition,)),),
                    forgotten_topics_data=())


def share_acknowledge(run: ScenarioRun, label: str, epoch: int, acks: Acks, *, version: int = 2,
                      renew: bool = False, topic: str = "s", member: str = "m-a") -> Any:
    partition = entity(SHARE_ACKNOWLEDGE, version, "AcknowledgePartition", partition_index=0,
                       acknowledgement_batches=tuple(
                           entity(SHARE_ACKNOWLEDGE, version, "AcknowledgementBatch", first_offset=f, last_offset=last,
                                  acknowledge_types=tuple(types)) for f, last, types in acks))
    return run.call(SHARE_ACKNOWLEDGE, version, _label=label, group_id=run.group("g"), member_id=member,
                    share_session_epoch=epoch, is_renew_ack=renew,
                    topics=(entity(SHARE_ACKNOWLEDGE, version, "AcknowledgeTopic", topic_id=run.topic_id(topic),
                                   partitions=(partition,)),))


def set_group_config(run: ScenarioRun, key: str, value: str) -> None:
    """A share.* key of group g, waited for (unrecorded) until Kafka's broker describes it."""
    group = "=" + run.group("g")
    incremental_alter_configs(run, [(GROUP_RESOURCE, group, [(key, 0, value)])], label=f"set {key}")

    def applied() -> bool:
        entries = describe_configs(run, [(GROUP_RESOURCE, group, (key,))], synonyms=False,
                                   record=False).results[0].configs
        return [e.value for e in entries if int(e.config_source) == 8] == [value]

    run.wait_until(applied, f"{key}={value}")


def member_reads_a_partition(run: ScenarioRun, configs: dict[str, str]) -> None:
    """Topic s (one partition: a batch of offsets 0-9, one of 10-11), group g reading from the
    earliest offset, member m-a assigned s-0."""
    group_steps.wait_for_coordinator(run)
    create_topics(run, [creatable(run, "s", 1)])
    metadata_topics(run, ["s"], record=False)
    for key, value in {"share.auto.offset.reset": "earliest", **configs}.items():
        set_group_config(run, key, value)
    produce(run, "s", {0: batch(10)}, label="a batch of ten")
    produce(run, "s", {0: batch(2)}, label="a batch of two")
    a = hb(run, "a joins", "m-a", topics_=["s"])
    until_assigned(run, "a is given s-0", "m-a", a.member_epoch)


def renew_and_record_limit(run: ScenarioRun) -> None:
    member_reads_a_partition(run, {})
    share_fetch(run, "record-limit: 3 records of the batch of ten", 0, mode=RECORD_LIMIT, max_records=3)
    share_fetch(run, "record-limit: the next 3", 1, mode=RECORD_LIMIT, max_records=3)
    share_fetch(run, "batch-optimized: the rest of the batch, and the next batch", 2)
    share_fetch(run, "a renew ShareFetch that asks for records is refused", 3, acks=[(0, 2, [RENEW])], renew=True)
    share_fetch(run, "renew 0-2 in a renew ShareFetch: nothing acquired, answered at once", 3,
                acks=[(0, 2, [RENEW])], renew=True, max_records=0, wait_ms=0, min_bytes=0, max_bytes=0)
    share_fetch(run, "RENEW in a ShareFetch not marked renew", 4, acks=[(3, 5, [RENEW])], wait_ms=200)
    share_acknowledge(run, "ShareAcknowledge v2 renews 3-5", 5, [(3, 5, [RENEW])], renew=True)
    share_acknowledge(run, "RENEW in ShareAcknowledge v1", 6, [(6, 9, [RENEW])], version=1)
    share_acknowledge(run, "RENEW in ShareAcknowledge v2 not marked renew", 7, [(6, 9, [RENEW])])
    share_fetch(run, "RENEW in ShareFetch v1", 8, acks=[(6, 9, [RENEW])], version=1, wait_ms=200)
    share_acknowledge(run, "renew and accept offset by offset", 9, [(6, 9, [ACCEPT, RENEW, ACCEPT, RENEW])],
                      renew=True)
    share_acknowledge(run, "an unknown acknowledge type", 10, [(10, 10, [5])], renew=True)
    share_acknowledge(run, "accept what is held, renewed or not", 11,
                      [(0, 5, [ACCEPT]), (7, 7, [ACCEPT]), (9, 11, [ACCEPT])])
    share_fetch(run, "an unknown acquire mode", 12, mode=7, wait_ms=0)
    share_fetch(run, "the session went on past it", 13, wait_ms=0)
    share_fetch(run, "close the session", -1, wait_ms=0)


def test_renew_and_record_limit(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(renew_and_record_limit)


def renew_not_held(run: ScenarioRun) -> None:
    """A RENEW of records the member released: INVALID_RECORD_STATE; of records it accepted,
    before the start offset by then: passed over."""
    member_reads_a_partition(run, {})
    share_fetch(run, "acquire both batches: one range", 0)
    share_acknowledge(run, "accept the batch of ten, release the batch of two", 1,
                      [(0, 9, [ACCEPT]), (10, 11, [RELEASE])])
    share_acknowledge(run, "renew the released records", 2, [(10, 11, [RENEW])], renew=True)
    share_acknowledge(run, "renew the accepted records", 3, [(0, 9, [RENEW])], renew=True)
    share_fetch(run, "the released records again", 4)
    share_acknowledge(run, "renew them, then accept them", 5, [(10, 11, [RENEW])], renew=True)
    share_acknowledge(run, "accept them", 6, [(10, 11, [ACCEPT])])


def test_renew_of_records_not_held(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(renew_not_held)


def renew_disabled(run: ScenarioRun) -> None:
    """share.renew.acknowledge.enable=false: a RENEW is INVALID_RECORD_STATE, other types pass."""
    member_reads_a_partition(run, {"share.renew.acknowledge.enable": "false"})
    share_fetch(run, "acquire both batches", 0)
    share_acknowledge(run, "renew while the group disables it", 1, [(0, 9, [RENEW])], renew=True)
    share_acknowledge(run, "accept in a renew request", 2, [(0, 11, [ACCEPT])], renew=True)


def test_renew_disabled_by_the_group(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(renew_disabled)


def acknowledgement_errors(run: ScenarioRun) -> None:
    """Ranges past what was acquired are INVALID_REQUEST (and undo the batches before them),
    batches out of order too; a range when nothing is in flight is INVALID_RECORD_STATE; a
    partition the group never read is UNKNOWN_TOPIC_OR_PARTITION."""
    member_reads_a_partition(run, {})
    create_topics(run, [creatable(run, "other", 1)])
    metadata_topics(run, ["other"], record=False)
    share_fetch(run, "acquire both batches: one range", 0)
    share_acknowledge(run, "accept 0-4, then a range past the acquired records", 1,
                      [(0, 4, [ACCEPT]), (20, 21, [ACCEPT])])
    share_acknowledge(run, "a range ending past the acquired records", 2, [(10, 13, [ACCEPT])])
    share_acknowledge(run, "batches out of order", 3, [(2, 3, [ACCEPT]), (1, 1, [ACCEPT])])
    share_acknowledge(run, "accept all: 0-4 were not accepted before", 4, [(0, 11, [ACCEPT])])
    share_acknowledge(run, "nothing in flight any more", 5, [(12, 12, [ACCEPT])])
    share_acknowledge(run, "a partition the group never read", 6, [(0, 0, [ACCEPT])], topic="other")
    share_acknowledge(run, "a partition with no batches", 7, [])


def test_acknowledgement_errors(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(acknowledgement_errors)


def redelivery_by_batch(run: ScenarioRun) -> None:
    """Records released and acquired again: batch-optimized takes Kafka's in-flight batch whole."""
    member_reads_a_partition(run, {})
    share_fetch(run, "acquire both batches: one range", 0)
    share_acknowledge(run, "release them all", 1, [(0, 11, [RELEASE])])
    share_fetch(run, "batch-optimized, max 3: the whole in-flight batch again", 2, max_records=3)
    share_acknowledge(run, "release them all again", 3, [(0, 11, [RELEASE])])
    share_fetch(run, "record-limit, max 3", 4, max_records=3, mode=RECORD_LIMIT)
    share_fetch(run, "batch-optimized, max 3, once offset-tracked", 5, max_records=3)


def test_redelivery_by_batch(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(redelivery_by_batch)


def another_members_records(run: ScenarioRun) -> None:
    """Member b acknowledges what a holds: refused, naming the batch while Kafka handles it
    whole, the offset once it is tracked offset by offset."""
    member_reads_a_partition(run, {})
    share_fetch(run, "a acquires both batches: one range", 0)
    hb(run, "b joins and shares s-0 at once: its share state is initialized", "m-b", topics_=["s"])
    share_fetch(run, "b finds nothing to acquire", 0, member="m-b", wait_ms=200)
    share_acknowledge(run, "b accepts a's record", 1, [(1, 1, [ACCEPT])], member="m-b")
    share_acknowledge(run, "a accepts 0", 1, [(0, 0, [ACCEPT])])
    share_acknowledge(run, "b renews a's record, the batch tracked now", 2, [(1, 1, [RENEW])], member="m-b",
                      renew=True)
    share_acknowledge(run, "b accepts 0, done with", 3, [(0, 0, [ACCEPT])], member="m-b")
    share_acknowledge(run, "a releases the rest", 2, [(1, 11, [RELEASE])])
    share_fetch(run, "b acquires the rest", 4, member="m-b")
    share_acknowledge(run, "a renews what b holds", 3, [(5, 5, [RENEW])], renew=True)


def test_another_members_records(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(another_members_records)


def record_limit_throttled(run: ScenarioRun) -> None:
    """Record-limited fetches of a batch delivered three times (throttled under the default
    limit, 5): each takes the records asked for, at most half the batch (6 of 12); one on its last
    attempt comes alone whatever the mode."""
    member_reads_a_partition(run, {})
    epoch = 0
    for i in range(3):
        if i:
            share_acknowledge(run, f"release 0-11 ({i})", epoch, [(0, 11, [RELEASE])])
            epoch += 1
        share_fetch(run, f"batch-optimized: 0-11 ({i})", epoch)
        epoch += 1
    share_acknowledge(run, "release 0-11, delivered three times", epoch, [(0, 11, [RELEASE])])
    for max_records in (10, 4, 10):
        share_fetch(run, f"record-limit {max_records}, throttled", epoch + 1, mode=RECORD_LIMIT,
                    max_records=max_records)
        epoch += 1
    share_acknowledge(run, "release 0-11, delivered four times", epoch + 1, [(0, 11, [RELEASE])])
    share_fetch(run, "record-limit 3: 0, on its last attempt, alone", epoch + 2, mode=RECORD_LIMIT, max_records=3)
    share_fetch(run, "batch-optimized: 1 alone", epoch + 3)


def test_record_limit_of_a_throttled_batch(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(record_limit_throttled)
