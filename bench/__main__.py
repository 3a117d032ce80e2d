"""`python -m bench`: run every bench/bench_*.py and print a summary table.

Each bench script is standalone (runnable as `python bench/bench_x.py`) and
prints its own report; lines of the form

    RESULT <name> | <value> | <unit> | <target>

are collected here into the summary. A script that fails is reported and
the others still run.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    only = set(argv)
    scripts = sorted(p for p in HERE.glob("bench_*.py") if not only or p.stem in only or p.name in only)
    rows: list[tuple[str, str, str, str, str]] = []
    failures = 0
    for script in scripts:
        print(f"=== {script.name}", flush=True)
        started = time.monotonic()
        proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=HERE.parent)
        assert proc.stdout is not None
        for line in proc.stdout:
            print(line, end="", flush=True)
            if line.startswith("RESULT "):
                parts = [p.strip() for p in line[len("RESULT "):].split("|")]
                parts += [""] * (4 - len(parts))
                rows.append((script.stem, *parts[:4]))
        rc = proc.wait()
        print(f"=== {script.name}: exit {rc} in {time.monotonic() - started:.1f}s\n", flush=True)
        if rc != 0:
            failures += 1
            rows.append((script.stem, "FAILED", f"exit {rc}", "", ""))
    if rows:
        widths = [max(len(r[i]) for r in rows + [("script", "metric", "value", "unit", "target")]) for i in range(5)]
        header = ("script", "metric", "value", "unit", "target")
        print("Summary")
        print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
        print("  ".join("-" * w for w in widths))
        for r in rows:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
