"""`mypy --strict` passes on every package (wire, storage, cleaner, asyncbroker, pipeline),
run as CI runs it: from the repository root, with pyproject.toml's [tool.mypy] settings."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STRICT_PACKAGES = ("wire", "storage", "cleaner", "asyncbroker", "pipeline")

pytestmark = pytest.mark.timeout(300)


def test_mypy_strict(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"),
                             *STRICT_PACKAGES], cwd=ROOT, capture_output=True, text=True, timeout=280, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
