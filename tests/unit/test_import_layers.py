"""The packages import one way (asyncbroker -> cleaner -> storage -> wire, pipeline -> storage
-> wire) and no module of a package takes part in an import cycle, counting every import a
file makes: at the top, inside functions and under TYPE_CHECKING (a cycle hidden in a
function is still two modules that each need the other)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("wire", "storage", "cleaner", "asyncbroker", "pipeline")
MAY_IMPORT = {
    "wire": set(),
    "storage": {"wire"},
    "cleaner": {"storage", "wire"},
    "asyncbroker": {"cleaner", "storage", "wire"},
    "pipeline": {"storage", "wire"},
}
# The one command line: `asyncbroker audit|export` hands its arguments to the pipeline's CLI
# (imported when those subcommands run, as they need the [spark] extra).
ENTRY_POINTS = {("asyncbroker.cli", "pipeline.cli")}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for package in PACKAGES for p in (ROOT / package).rglob("*.py")
            if ".venv" not in p.parts}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ours that `path` imports (a `from pkg import name` counts as pkg.name
    when that is a module, else as pkg)."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.add(candidate if candidate in known else base)
    return {m for m in found if m in known and m != name}


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: imports_of(name, path, known) for name, path in mods.items()}


def test_packages_import_only_downward() -> None:
    wrong = sorted(f"{m} imports {dep}" for m, deps in graph().items() for dep in deps
                   if dep.split(".")[0] != m.split(".")[0]
                   and dep.split(".")[0] not in MAY_IMPORT[m.split(".")[0]] and (m, dep) not in ENTRY_POINTS)
    assert wrong == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle_inside_a_package(package: str) -> None:
    g = {m: {d for d in deps if d.split(".")[0] == package}
         for m, deps in graph().items() if m.split(".")[0] == package}
    # A module imported by its own package's __init__ re-export is not a cycle of concepts.
    for m in g:
        g[m].discard(package)
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in sorted(g.get(m, ())):
            if state.get(d) == 1:
                cycles.append(stack[stack.index(d):] + [d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(g):
        if m not in state:
            visit(m)
    assert cycles == []
