"""LogAppendInfo: what an append assigned (offsets, timestamps). Rejected records are not
here: the append raises instead (the validator's errors carry their record_errors)."""
from __future__ import annotations

import msgspec

__all__ = ["LogAppendInfo"]


class LogAppendInfo(msgspec.Struct, gc=False):
    """(Untracked by the cyclic GC: scalars only, and one is made per append.)"""

    first_offset: int
    last_offset: int
    max_timestamp: int
    log_append_time: int
    log_start_offset: int
    num_messages: int
    valid_bytes: int
    shallow_offset_of_max_timestamp: int = -1
