"""Types of the C extension wire/_record_walker.c (the per-record loops of RecordBatch v2)."""
from collections.abc import Sequence

from typing_extensions import Buffer
from typing import Any

def decode_records(data: Buffer, count: int, base_offset: int, base_timestamp: int, max_timestamp: int,
                   log_append_time: bool, record_type: type[Any], /) -> list[Any]: ...
def decode_columns(data: Buffer, count: int, base_offset: int, base_timestamp: int, max_timestamp: int,
                   log_append_time: bool, start_offset: int, end_offset: int, value_lengths: bool, /
                   ) -> tuple[list[int], list[int], list[bytes | None], list[Any],
                              list[list[tuple[str, bytes | None]] | None] | None]: ...
def record_layouts(data: Buffer, count: int, /) -> list[tuple[int, int, int, int, bytes | None, bool]]: ...
def record_keys_and_offsets(data: Buffer, count: int, base_offset: int, start_offset: int, /
                            ) -> tuple[list[bytes], list[int]]: ...
def rebuild_records(data: Buffer, spans: Sequence[tuple[int, int]], base_timestamp: int, new_base_timestamp: int,
                    max_timestamp: int, log_append_time: bool, /) -> tuple[bytes, int]: ...
