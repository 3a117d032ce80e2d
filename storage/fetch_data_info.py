"""FetchDataInfo: what a read of the log found, for Fetch to send."""
from __future__ import annotations

from typing import Any

import msgspec

from storage.file_records import pread
from storage.log_offset_metadata import LogOffsetMetadata
from storage.transaction_index import AbortedTxn

__all__ = ["FetchDataInfo"]


class FetchDataInfo(msgspec.Struct):
    """Where a fetch's bytes are: `size` bytes of `file` at `position` (send them with sendfile).

    `file` is None when the fetch is empty.
    """

    fetch_offset_metadata: LogOffsetMetadata
    file: Any = None
    position: int = 0
    size: int = 0
    first_entry_incomplete: bool = False
    aborted_transactions: list[AbortedTxn] | None = None
    path: str | None = None  # the segment file read (a str: no Path built per read)
    data: bytes | None = None  # the bytes, when the read took them already (a small read: LogSegment.read)

    def read_bytes(self, *, nonblocking: bool = False) -> bytes:
        """The bytes; `nonblocking`: only from the page cache, else ReadWouldBlock."""
        if self.file is None or self.size == 0:
            return b""
        if self.data is not None:
            return self.data
        return pread(self.file.fileno(), self.size, self.position, nonblocking=nonblocking)
