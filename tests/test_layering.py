"""Imports flow one way: asyncbroker -> cleaner -> storage -> wire, and pipeline -> storage ->
wire. Each package may import only the ones below it (at any point in a module, lazily too)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ALLOWED = {
    "wire": set(),
    "storage": {"wire"},
    "cleaner": {"storage", "wire"},
    "asyncbroker": {"cleaner", "storage", "wire"},
    "pipeline": {"storage", "wire"},
}
# The one command line hands `asyncbroker audit` and `export` to pipeline.cli (lazily): the
# program's entry point, not the broker, which never imports the pipeline.
ENTRY_POINTS = {"asyncbroker/cli.py": {"pipeline"}}


def imported_packages(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found & set(ALLOWED)


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_a_package_imports_only_the_packages_below_it(package: str) -> None:
    wrong = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        name = str(path.relative_to(ROOT))
        bad = imported_packages(path) - ALLOWED[package] - {package} - ENTRY_POINTS.get(name, set())
        if bad:
            wrong[name] = sorted(bad)
    assert wrong == {}
