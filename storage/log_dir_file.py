"""LogDirFile: a small state file kept whole in every log directory, the newest copy winning.

State Kafka keeps in its metadata log and asyncbroker keeps in files of its own (topic config
overrides, dynamic broker configs, ACLs, SCRAM credentials, client quotas) is written whole,
atomically, to each log directory, so that losing a directory loses none of it; at startup
the newest readable copy is the state. Blocking: callers on the event loop use an executor.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from storage.atomic_file import write_atomically

__all__ = ["LogDirFile"]


class LogDirFile:
    """`name` in each of `log_dirs`."""

    def __init__(self, log_dirs: Sequence[str | Path], name: str) -> None:
        self.paths = [Path(d) / name for d in log_dirs]

    def copies(self) -> list[tuple[Path, bytes]]:
        """The copies there are, newest first."""
        found = []
        for path in self.paths:
            try:
                found.append((path.stat().st_mtime, path, path.read_bytes()))
            except FileNotFoundError:
                continue
        return [(path, data) for _, path, data in sorted(found, key=lambda f: f[0], reverse=True)]

    def write(self, data: bytes) -> None:
        """Write every copy."""
        for path in self.paths:
            write_atomically(path, data)
