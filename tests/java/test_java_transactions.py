"""kafka-clients 4.4's transactional producer (transactions v2, as transaction.version 2 is
finalized) against Kafka 4.4 and asyncbroker: the same facts from both (issue 14)."""

from __future__ import annotations

from facts import assert_same_facts
from java_harness import Targets


def test_commit_and_abort(targets: Targets) -> None:
    kafka, ours = targets.run("txn.commit_and_abort")
    assert_same_facts(kafka, ours)
    committed = [f"t{n}-{i}" for n in (0, 2) for i in range(10)]
    assert ours["read_committed"] == {"0": committed[0:10:2] + committed[10:20:2],
                                      "1": committed[1:10:2] + committed[11:20:2]}
    assert len(ours["read_uncommitted"]["0"]) == 15


def test_consume_transform_produce(targets: Targets) -> None:
    kafka, ours = targets.run("txn.consume_transform_produce")
    assert_same_facts(kafka, ours)
    assert ours["committed"] == {"0": 10, "1": 10}
    assert sorted(ours["output"]["0"] + ours["output"]["1"]) == sorted(f"IN-{i}" for i in range(20))


def test_a_second_producer_fences_the_first(targets: Targets) -> None:
    kafka, ours = targets.run("txn.fencing")
    assert_same_facts(kafka, ours)
    assert ours["read_committed"] == {"0": ["successor"]}
