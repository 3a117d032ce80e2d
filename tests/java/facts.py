"""Comparing the facts a Java scenario returned on Kafka 4.4 and on asyncbroker.

Facts are nested JSON; they are compared path by path. A path that differs
because of an accepted divergence is declared with its KNOWN_DIFFERENCES.md id
(`known={"KD-4xx": {"path", ...}}`), and then it must differ, so the list
cannot rot.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any


def flatten(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, v in value.items():
            yield from flatten(v, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from flatten(v, f"{path}[{i}]")
        if not value:
            yield path, []
    else:
        yield path, value


def differences(kafka: Any, ours: Any) -> dict[str, tuple[Any, Any]]:
    a, b = dict(flatten(kafka)), dict(flatten(ours))
    return {p: (a.get(p, "<absent>"), b.get(p, "<absent>")) for p in sorted(set(a) | set(b))
            if a.get(p, "<absent>") != b.get(p, "<absent>")}


def assert_same_facts(kafka: Any, ours: Any, known: Mapping[str, Iterable[str]] | None = None) -> None:
    """Kafka's facts and asyncbroker's are equal except exactly the declared known paths."""
    found = differences(kafka, ours)
    expected = {p for paths in (known or {}).values() for p in paths}
    unexpected = {p: d for p, d in found.items() if p not in expected}
    missing = sorted(expected - set(found))
    lines = [f"{p}: kafka={k!r} asyncbroker={o!r}" for p, (k, o) in unexpected.items()]
    if missing:
        lines.append(f"declared known differences that did not occur (update KNOWN_DIFFERENCES.md): {missing}")
    assert not lines, "asyncbroker's facts differ from Kafka 4.4's:\n  " + "\n  ".join(lines)
