"""ProduceResponse bodies (v3-v12) written directly with struct.

Produce answers are on the latency path of every acks=1/-1 send; building
kio entities and running its generic writer costs more than the append of a
small batch. The layout follows Kafka's ProduceResponse schema; tests
compare it with kio's decoder for every version.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_PART = struct.Struct(">ihqq")  # index, error_code, base_offset, log_append_time_ms
_Q = struct.Struct(">q")


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _string(value: str | None, flexible: bool) -> bytes:
    if value is None:
        return b"\x00" if flexible else _I16.pack(-1)
    raw = value.encode()
    return (_uvarint(len(raw) + 1) if flexible else _I16.pack(len(raw))) + raw


def encode_produce_body(version: int, topics: Sequence[tuple[str, Sequence[Any]]]) -> bytes:
    """topics: (name, results); each result has index, error, base_offset,
    log_append_time, log_start_offset, record_errors [(batch_index, message)], message."""
    flexible = version >= 9
    out = bytearray()
    out += _uvarint(len(topics) + 1) if flexible else _I32.pack(len(topics))
    for name, results in topics:
        out += _string(name, flexible)
        out += _uvarint(len(results) + 1) if flexible else _I32.pack(len(results))
        for r in results:
            out += _PART.pack(r.index, r.error, r.base_offset, r.log_append_time)
            if version >= 5:
                out += _Q.pack(r.log_start_offset)
            if version >= 8:
                errors = r.record_errors
                out += _uvarint(len(errors) + 1) if flexible else _I32.pack(len(errors))
                for batch_index, message in errors:
                    out += _I32.pack(batch_index) + _string(message, flexible)
                    if flexible:
                        out += b"\x00"
                out += _string(r.message if r.error else None, flexible)
            if flexible:
                out += b"\x00"  # partition tagged fields (current_leader only on NOT_LEADER)
        if flexible:
            out += b"\x00"
    out += _I32.pack(0)  # throttle_time_ms
    if flexible:
        out += b"\x00"  # no node_endpoints: nothing moved
    return bytes(out)
