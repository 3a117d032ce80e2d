"""Crash-consistent small-file replacement (Kafka's Utils.atomicMoveWithFallback + flushDir)."""
from __future__ import annotations

import os
from pathlib import Path

from storage import fault_injection


def fsync_dir(path: Path) -> None:
    """fsync a directory so a rename or create inside it is durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes, *, sync: bool = True, fault_point: str | None = None) -> None:
    """Write temp file, fsync it, rename over `path`, fsync the directory.

    After a crash the file is either the old or the new content, never a mix.
    `fault_point` names this write for the crash tests (storage/fault_injection.py):
    `<name>.torn` dies with half the temp file written, `<name>` just before the rename.
    """
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        if fault_point is not None and fault_injection.hit(fault_point + ".torn"):
            os.write(fd, view[: len(view) // 2])
            fault_injection.crash()
        while view:
            written = os.write(fd, view)
            view = view[written:]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    if fault_point is not None:
        fault_injection.fault_point(fault_point)
    os.replace(tmp, path)
    if sync:
        fsync_dir(path.parent)
