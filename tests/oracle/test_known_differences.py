"""KNOWN_DIFFERENCES.md and the scenarios that declare its entries stay in step."""

from __future__ import annotations

import re
from pathlib import Path

HERE = Path(__file__).resolve().parent


def listed_ids() -> set[str]:
    return set(re.findall(r"^## (KD-\d+):", (HERE / "KNOWN_DIFFERENCES.md").read_text(), re.M))


# Scenarios that declare known differences: the raw-protocol ones here, and the Java
# client's (tests/java), which compare the facts kafka-clients saw on each broker.
SCENARIO_DIRS = (HERE, HERE.parent / "java")


def declared_ids() -> set[str]:
    ids: set[str] = set()
    for path in (p for d in SCENARIO_DIRS for p in d.glob("*.py")):
        # This test and the harness itself (whose docstring shows `known={"KD-1": ...}` as an
        # example) declare nothing.
        if path.name in (Path(__file__).name, "differential.py"):
            continue
        ids |= set(re.findall(r"[\"'](KD-\d+)[\"']", path.read_text()))
    return ids


def test_every_listed_difference_is_declared_by_a_scenario() -> None:
    unused = listed_ids() - declared_ids()
    assert not unused, f"KNOWN_DIFFERENCES.md lists {sorted(unused)} but no scenario declares them"


def test_every_declared_difference_is_listed() -> None:
    unlisted = declared_ids() - listed_ids()
    assert not unlisted, f"scenarios declare {sorted(unlisted)}, which KNOWN_DIFFERENCES.md does not list"
