"""Differential scenarios: client quotas through AlterClientQuotas and DescribeClientQuotas
(issue 20): every entity kind, each check Kafka makes of an alteration and of a filter, and
what describing finds after changes and removals.

The brokers are shared by the session: entity names carry the run's suffix, describing all
entities is recorded as this run's view, and default entities (which would throttle other
scenarios) get values no client reaches and are removed at the end.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from differential import ScenarioRun, entity

pytestmark = pytest.mark.timeout(120)

DESCRIBE, ALTER = 48, 49
EXACT, DEFAULT, ANY = 0, 1, 2
HUGE = 1e15  # a default no client of the session comes near


def parts(version: int, *pairs: tuple[str, str | None], api: int = ALTER) -> tuple[Any, ...]:
    return tuple(entity(api, version, "EntityData", entity_type=t, entity_name=n) for t, n in pairs)


def op(version: int, key: str, value: float = 0.0, remove: bool = False) -> Any:
    return entity(ALTER, version, "OpData", key=key, value=value, remove=remove)


def alter(run: ScenarioRun, version: int, entries: Sequence[tuple[Sequence[tuple[str, str | None]], Sequence[Any]]],
          *, validate_only: bool = False, record: bool = True) -> Any:
    return run.call(ALTER, version, _record=record, validate_only=validate_only, entries=tuple(
        entity(ALTER, version, "EntryData", entity=parts(version, *e), ops=tuple(ops)) for e, ops in entries))


def describe(run: ScenarioRun, version: int, components: Sequence[tuple[str, int, str | None]], *,
             strict: bool = False, label: str | None = None) -> Any:
    """DescribeClientQuotas, recorded with only this run's entities (and the defaults)."""
    response = run.call(DESCRIBE, version, _record=False, strict=strict, components=tuple(
        entity(DESCRIBE, version, "ComponentData", entity_type=t, match_type=m, match=n) for t, m, n in components))
    view = run.normalise(response)
    if view["entries"] is not None:
        view["entries"] = sorted(
            ({"entity": e["entity"], "values": sorted(e["values"], key=lambda v: v["key"])}
             for raw, e in zip(response.entries, view["entries"])
             if all(p.entity_name is None or p.entity_name.endswith(run.suffix) or p.entity_type == "ip"
                    for p in raw.entity)),
            key=repr)
    run.note(label or run.normalise(f"DescribeClientQuotas v{version} {components} strict={strict}"), view)
    return response


@pytest.mark.parametrize("version", [0, 1])
def test_client_quota_administration(brokers, version: int) -> None:  # type: ignore[no-untyped-def]
    def scenario(run: ScenarioRun) -> None:
        alice, bob, c1 = run.topic("alice"), run.topic("bob"), run.topic("c1")
        defaults = [([("user", None)], [op(version, "producer_byte_rate", HUGE)]),
                    ([("client-id", None)], [op(version, "consumer_byte_rate", HUGE)]),
                    ([("user", None), ("client-id", None)], [op(version, "controller_mutation_rate", HUGE)])]
        try:
            alter(run, version, [
                ([("user", alice)], [op(version, "producer_byte_rate", 1024), op(version, "request_percentage", 50)]),
                ([("client-id", c1)], [op(version, "consumer_byte_rate", 2048)]),
                ([("user", alice), ("client-id", c1)], [op(version, "producer_byte_rate", 10)]),
                ([("client-id", c1), ("user", None)], [op(version, "request_percentage", 0.5)]),
                ([("ip", "127.0.0.7")], [op(version, "connection_creation_rate", 5)]),
                *defaults,
            ])
            # Each check, on an entity of its own.
            bad = [("nope", 1.0), ("connection_creation_rate", 1.0), ("producer_byte_rate", 1.5),
                   ("producer_byte_rate", -1.0), ("producer_byte_rate", 0.0), ("request_percentage", -2.0),
                   ("producer_byte_rate", 1e20), ("consumer_byte_rate", 2.5), ("controller_mutation_rate", 0.0),
                   ("producer_byte_rate", float("nan")), ("request_percentage", float("inf"))]
            alter(run, version, [([("user", run.topic(f"b{i}"))], [op(version, k, v)]) for i, (k, v) in enumerate(bad)])
            alter(run, version, [
                ([], [op(version, "producer_byte_rate", 1)]),
                ([("group", "g")], [op(version, "producer_byte_rate", 1)]),
                ([("user", "")], [op(version, "producer_byte_rate", 1)]),
                ([("client-id", "")], [op(version, "producer_byte_rate", 1)]),
                ([("user", bob), ("ip", "1.2.3.4")], [op(version, "producer_byte_rate", 1)]),
                ([("ip", "not an ip")], [op(version, "connection_creation_rate", 1)]),
                ([("ip", "1.2.3.9")], [op(version, "producer_byte_rate", 1)]),
                ([("ip", "1.2.3.8")], [op(version, "connection_creation_rate", 2.5)]),
                ([("user", run.topic("twice"))], [op(version, "producer_byte_rate", 5), op(version, "producer_byte_rate", 6)]),
                ([("user", bob)], [op(version, "producer_byte_rate", 7)]),
                ([("user", bob)], [op(version, "consumer_byte_rate", 8)]),  # bob twice: refused once
                ([("user", run.topic("nothing"))], [op(version, "producer_byte_rate", remove=True)]),
            ])
            alter(run, version, [([("user", run.topic("only-checked"))], [op(version, "producer_byte_rate", 1)])],
                  validate_only=True)
            wait_for_the_metadata_image(run, version)
            for components, strict in [
                    ([], False), ([("user", EXACT, alice)], False), ([("user", EXACT, alice)], True),
                    ([("user", DEFAULT, None)], False), ([("user", ANY, None)], False), ([("client-id", ANY, None)], True),
                    ([("user", ANY, None), ("client-id", ANY, None)], False), ([("ip", EXACT, "127.0.0.7")], False),
                    ([("user", EXACT, run.topic("only-checked"))], False)]:
                describe(run, version, components, strict=strict)
            # Filters Kafka refuses.
            for components in [[("user", 5, None)], [("user", EXACT, "a"), ("user", EXACT, "b")],
                               [("user", EXACT, None)], [("user", DEFAULT, "x")], [("group", ANY, None)],
                               [("user", ANY, None), ("ip", ANY, None)]]:
                describe(run, version, components)
            alter(run, version, [([("user", alice)], [op(version, "producer_byte_rate", remove=True),
                                                      op(version, "request_percentage", remove=True)]),
                                 ([("client-id", c1)], [op(version, "consumer_byte_rate", 4096)])])
            run.wait_until(lambda: not describe_raw(run, version, alice), "alice's quotas to go")
            describe(run, version, [("user", EXACT, alice)])
            describe(run, version, [("client-id", EXACT, c1)])
        finally:
            alter(run, version, [(e, [op(version, o.key, remove=True) for o in ops]) for e, ops in defaults]
                  + [([("ip", "127.0.0.7")], [op(version, "connection_creation_rate", remove=True)])], record=False)

    brokers.compare(scenario)


def wait_for_the_metadata_image(run: ScenarioRun, version: int) -> None:
    """On Kafka, wait until the broker's metadata image holds every quota alteration answered so
    far: Kafka answers an alteration once its controller has committed it, and describes quotas
    from the image, which can lag behind. A quota on a user of the run's own is set, seen, removed
    and seen gone: the image applies the log in order, so the alterations before it are in too.
    asyncbroker describes what it answered at once."""
    if run.broker != "kafka":
        return
    barrier = run.topic("image-barrier")
    alter(run, version, [([("user", barrier)], [op(version, "producer_byte_rate", 1)])], record=False)
    run.wait_until(lambda: describe_raw(run, version, barrier), "the barrier quota in the metadata image")
    alter(run, version, [([("user", barrier)], [op(version, "producer_byte_rate", remove=True)])], record=False)
    run.wait_until(lambda: not describe_raw(run, version, barrier), "the barrier quota gone from the image")


def describe_raw(run: ScenarioRun, version: int, user: str) -> Any:
    r = run.call(DESCRIBE, version, _record=False, strict=True, components=(
        entity(DESCRIBE, version, "ComponentData", entity_type="user", match_type=EXACT, match=user),))
    return r.entries


def test_controller_mutation_rate(brokers) -> None:  # type: ignore[no-untyped-def]
    """controller_mutation_rate=0.01 for one client id (KIP-599): its bucket starts with a tenth
    of a partition, the first change overdraws it (a change that fits is let through whatever
    its size), and for the minutes it takes to come back the versions that know
    THROTTLING_QUOTA_EXCEEDED (CreateTopics v6+, DeleteTopics v5+, CreatePartitions v3+) refuse
    every further change, validate_only ones included, while older versions are let through."""
    from admin_steps import create_partitions, create_topics, creatable, delete_topics
    from steps import wait_for_leaders

    def scenario(run: ScenarioRun) -> None:
        client = run.topic("mutator")
        alter(run, 1, [([("client-id", client)], [op(1, "controller_mutation_rate", 0.01)])])
        run.wait_until(lambda: describe_client(run, client), "the quota to apply")
        admin = run.conn
        # A throttled answer mutes its connection for minutes here (on Kafka too): each step
        # goes on a connection of its own, and the waits on the admin's.
        steps = [
            lambda: create_topics(run, [creatable(run, "four", 4), creatable(run, "one", 1)], wait=False),
            lambda: create_topics(run, [creatable(run, "checked", 1)], validate_only=True),
            lambda: create_topics(run, [creatable(run, "old-version", 2)], version=5, wait=False),
            lambda: delete_topics(run, ["four"]),
            lambda: delete_topics(run, ["old-version"], version=4),
            lambda: create_partitions(run, [("four", 5, None)]),
        ]
        try:
            for i, step in enumerate(steps):
                run.conn = run.connect(client_id=client)
                step()
                run.conn = admin
                if i == 0:
                    wait_for_leaders(run, "four", 4)
                if i == 2:
                    wait_for_leaders(run, "old-version", 2)
        finally:
            run.conn = admin
            alter(run, 1, [([("client-id", client)], [op(1, "controller_mutation_rate", remove=True)])], record=False)

    brokers.compare(scenario)


def describe_client(run: ScenarioRun, client: str) -> Any:
    r = run.call(DESCRIBE, 1, _record=False, strict=True, components=(
        entity(DESCRIBE, 1, "ComponentData", entity_type="client-id", match_type=EXACT, match=client),))
    return r.entries
