"""LogDirFile: a small state file kept whole in every log directory, the newest copy winning.

State Kafka keeps in its metadata log and asyncbroker keeps in files of its own (topic config
overrides, dynamic broker configs, ACLs, SCRAM credentials, client quotas) is written whole,
atomically, to each log directory, so that losing a directory loses none of it; at startup
the newest readable copy is the state. Blocking: callers on the event loop use an executor.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from storage.atomic_file import write_atomically

__all__ = ["LogDirFile", "encode_json"]


def encode_json(value: Any) -> bytes:
    """A state file's JSON: keys sorted and one space an indent level, so a person can read it
    and two copies compare line by line."""
    return msgspec.json.format(msgspec.json.encode(value, order="sorted"), indent=1)


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

    def newest_json(self) -> Any | None:
        """The newest copy that is JSON, decoded (a torn or garbled copy is passed over); None
        when there is none."""
        for _path, raw in self.copies():
            try:
                return msgspec.json.decode(raw)
            except msgspec.DecodeError:
                continue
        return None

    def write(self, data: bytes) -> None:
        """Write every copy."""
        for path in self.paths:
            write_atomically(path, data)
