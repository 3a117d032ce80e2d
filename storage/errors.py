"""Storage-internal failures, typed like Kafka's so the service can map them to error codes."""
from __future__ import annotations

from wire.errors import KafkaStorageError

__all__ = [
    "AppendWouldBlock",
    "CorruptIndexError",
    "IndexFullError",
    "InvalidOffsetError",
    "KafkaStorageError",
    "LogDirLockedError",
    "LogSegmentOffsetOverflowError",
]


class CorruptIndexError(KafkaStorageError):
    """An index file fails its sanity check; the loader rebuilds it from the log."""


class InvalidOffsetError(KafkaStorageError):
    """A non-increasing offset was appended to an index (Kafka's InvalidOffsetException)."""


class IndexFullError(KafkaStorageError):
    """An append to an index that has no free slot; callers must roll first."""


class LogSegmentOffsetOverflowError(KafkaStorageError):
    """A batch's offsets cannot be stored relative to the segment's base offset."""


class LogDirLockedError(KafkaStorageError):
    """Another process holds the `.lock` of a log directory."""


class ReadWouldBlock(Exception):
    """Control flow, not a failure: a nonblocking read (the event loop's fast path) needed
    bytes that are not in the page cache; the caller reads again from an IO thread."""


class AppendWouldBlock(Exception):
    """Control flow, not a failure: a nonblocking append (the event loop's fast path) found
    the lock taken or work that touches the disk (a roll, a checkpoint, an fsync) and
    changed nothing; the caller appends again from an IO thread."""
