"""Differential scenarios: FindCoordinator (v0-v6, every key type) and InitProducerId without
a transactional id (v0-v5), each compared with Kafka 4.4."""

from __future__ import annotations

import base64

import pytest

import group_steps as gs
from differential import ScenarioRun
from steps import create_topic

pytestmark = pytest.mark.timeout(180)

UNKNOWN_KEY_TYPES = (3, -1)


def find_coordinator_version(version: int):  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        gs.wait_for_coordinator(run)
        if version >= 1:
            gs.wait_for_coordinator(run, key_type=1)
        gs.find_coordinator(run, [run.group("g")], version=version)
        gs.find_coordinator(run, [""], version=version)
        if version >= 1:
            gs.find_coordinator(run, [run.group("txn")], version=version, key_type=1)
            gs.find_coordinator(run, [""], version=version, key_type=1)
            # SHARE (2) with a key that names no share partition, then key types Kafka does not know.
            gs.find_coordinator(run, ["x"], version=version, key_type=2)
            for key_type in UNKNOWN_KEY_TYPES:
                gs.find_coordinator(run, ["x"], version=version, key_type=key_type)
        if version >= 4:
            gs.find_coordinator(run, [run.group("a"), "", run.group("b"), run.group("a")], version=version)
            gs.find_coordinator(run, [run.group("t1"), run.group("t2")], version=version, key_type=1)
            gs.find_coordinator(run, [], version=version)
            gs.find_coordinator(run, [run.group("a"), "b"], version=version, key_type=3)
    return scenario


@pytest.mark.parametrize("version", range(0, 7))
def test_find_coordinator(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(find_coordinator_version(version))


def share_coordinator(run: ScenarioRun) -> None:
    """Share-partition keys ("group:topic id:partition") at v6: a well-formed one names this
    node (the first lookup creates __share_group_state); malformed ones, and any share key
    before v6, are INVALID_REQUEST."""
    create_topic(run, "t", 1, record=False)
    topic_id = base64.urlsafe_b64encode(run.topic_id("t").bytes).decode().rstrip("=")
    run.alias(topic_id, "<topic id t>")
    key = f"{run.group('g')}:{topic_id}:0"

    def settled() -> bool:  # Kafka creates __share_group_state on the first lookup
        r = gs.find_coordinator(run, [key], key_type=2, record=False)
        return r.coordinators[0].error_code.value != 15  # COORDINATOR_NOT_AVAILABLE

    run.wait_until(settled, "the share coordinator's answer")
    gs.find_coordinator(run, [key], key_type=2, label="a share-partition key")
    group = run.group("g")
    malformed = ["", group, f"{group}:{topic_id}", f"{group}:{topic_id}:", f":{topic_id}:0", f"{group}:not-an-id:0",
                 f"{group}:{topic_id}:x", f"{group}:{topic_id}:99999999999", f"{group}:{topic_id}==:1"]
    gs.find_coordinator(run, malformed, key_type=2, label="malformed share keys")
    gs.find_coordinator(run, [f"a:b:{group}:{topic_id}:-1", f"{group}:{topic_id}:+2", key], key_type=2,
                        label="colons in the group, signed partitions, beside a good key")
    gs.find_coordinator(run, [key], key_type=2, version=5, label="a share key at v5")


def init_producer_id_version(version: int):  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        gs.wait_for_producer_ids(run)
        first = gs.init_producer_id(run, version=version)
        gs.init_producer_id(run, version=version, timeout_ms=-1)
        if version >= 3:
            # KIP-360 fields: a producer id with its epoch gets a new id (no bump without a
            # transactional id); exactly one of them set is refused.
            gs.init_producer_id(run, version=version, producer_id=first.producer_id,
                                producer_epoch=first.producer_epoch)
            gs.init_producer_id(run, version=version, producer_id=first.producer_id, producer_epoch=32767)
            gs.init_producer_id(run, version=version, producer_id=first.producer_id, producer_epoch=-1)
            gs.init_producer_id(run, version=version, producer_id=-1, producer_epoch=3)
        gs.init_producer_id(run, version=version, transactional_id="")
    return scenario


@pytest.mark.parametrize("version", range(0, 6))
def test_init_producer_id(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(init_producer_id_version(version))


def transactional_init_producer_id(run: ScenarioRun) -> None:
    """A transactional id's first InitProducerId: a producer id at epoch 0, then epoch 1."""
    gs.wait_for_coordinator(run, key_type=1)

    def settled() -> bool:  # Kafka loads __transaction_state partitions after creating it
        r = gs.init_producer_id(run, transactional_id=run.group("warm-up"), record=False)
        return r.error_code.value not in (14, 15, 16)  # LOAD_IN_PROGRESS, NOT_AVAILABLE, NOT_COORDINATOR

    run.wait_until(settled, "the transaction coordinator")
    gs.init_producer_id(run, transactional_id=run.group("txn"))
    gs.init_producer_id(run, transactional_id=run.group("txn"))


def test_init_producer_id_transactional(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(transactional_init_producer_id)
