"""AsyncLogDirFile: a storage.log_dir_file.LogDirFile written from the event loop.

The ACLs, SCRAM credentials and client quotas change on the loop and are written off it; the
writes are serialised and each encodes the state at its start, so the last one on disk is the
newest state.
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from storage.log_dir_file import LogDirFile

__all__ = ["AsyncLogDirFile"]


class AsyncLogDirFile(LogDirFile):
    def __init__(self, log_dirs: Sequence[str | Path], name: str) -> None:
        super().__init__(log_dirs, name)
        self._write_lock = asyncio.Lock()

    async def persist(self, encode: Callable[[], bytes], run_blocking: Callable[..., Awaitable[None]]) -> None:
        """Write the state `encode` gives now to every copy, off the loop."""
        async with self._write_lock:
            await run_blocking(self.write, encode())
