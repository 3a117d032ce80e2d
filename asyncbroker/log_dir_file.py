"""LogDirFile: a small state file kept in every log directory, the newest copy winning.

The state Kafka keeps in its metadata log and asyncbroker keeps in files of its own (ACLs,
SCRAM credentials, client quotas) is written whole, atomically, to each log directory, so
that losing a directory loses none of it; at startup the newest readable copy is the state.
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from storage.atomic_file import write_atomically

__all__ = ["LogDirFile"]


class LogDirFile:
    """`name` in each of `log_dirs`."""

    def __init__(self, log_dirs: Sequence[Path], name: str) -> None:
        self.paths = [Path(d) / name for d in log_dirs]
        self._write_lock = asyncio.Lock()

    def copies(self) -> list[tuple[Path, bytes]]:
        """The copies there are, newest first (blocking reads)."""
        found = []
        for path in self.paths:
            try:
                found.append((path.stat().st_mtime, path, path.read_bytes()))
            except FileNotFoundError:
                continue
        return [(path, data) for _, path, data in sorted(found, key=lambda f: f[0], reverse=True)]

    def write(self, data: bytes) -> None:
        """Write every copy (blocking)."""
        for path in self.paths:
            write_atomically(path, data)

    async def persist(self, encode: Callable[[], bytes], run_blocking: Callable[..., Awaitable[None]]) -> None:
        """Write the state `encode` gives now, off the loop. Writes are serialised and each
        encodes at its start, so the last one on disk is the newest state."""
        async with self._write_lock:
            await run_blocking(self.write, encode())
