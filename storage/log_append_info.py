"""LogAppendInfo: what an append assigned (offsets, timestamps) and what it refused."""
from __future__ import annotations

import msgspec

__all__ = ["LogAppendInfo"]


class LogAppendInfo(msgspec.Struct):
    first_offset: int
    last_offset: int
    max_timestamp: int
    log_append_time: int
    log_start_offset: int
    num_messages: int
    valid_bytes: int
    shallow_offset_of_max_timestamp: int = -1
    record_errors: list[tuple[int, str]] = msgspec.field(default_factory=list)
