"""Cleaner control-flow exceptions."""
from __future__ import annotations

__all__ = ["LogCleaningAbortedError", "CleanerStateError", "OffsetMapFullError"]


class LogCleaningAbortedError(Exception):
    """The manager asked this clean to stop (truncation, retention, deletion, shutdown).

    Not a failure: the worker deletes its partial `.cleaned` output and the partition
    moves from Aborted to Paused(1) instead of being marked uncleanable.
    """


class CleanerStateError(RuntimeError):
    """An illegal LogCleanerManager state transition (Kafka's IllegalStateException)."""


class OffsetMapFullError(Exception):
    """A put on a SkimpyOffsetMap whose every slot is taken (callers stop at slots * load factor first)."""
