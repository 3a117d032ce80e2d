"""FetchResponse bodies (v4-v17) assembled around record slices that stay in files.

wire.response_encoders.encode_fetch_response avoids copying record bytes but
still needs them in memory (it sizes buffers with the buffer protocol). To
send segment bytes with sendfile, the body here is a list of parts: small
encoded runs of fields, and for each partition's records either bytes or a
`FileRegion` whose bytes never enter Python. Same layout as wire's encoder
(Kafka's FetchResponse schema, no tagged fields: this node is the leader,
so there is no diverging epoch, leader change or snapshot to report);
tests compare it with kio's decoder for every version.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from typing import Any

from asyncbroker.encoded_response import EncodedResponse, FileRegion

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_HEAD_V7 = struct.Struct(">ihi")  # throttle_time_ms, error_code, session_id
_PART = struct.Struct(">ihqq")  # partition_index, error_code, high_watermark, last_stable_offset
_Q = struct.Struct(">q")
_QQ = struct.Struct(">qq")
_ZERO_UUID = uuid.UUID(int=0)


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def encode_fetch_body(version: int, reads: Sequence[Any], error_code: int = 0, session_id: int = 0) -> EncodedResponse:
    """Encode a FetchResponse body from partition reads grouped by topic in request order.

    Each read has: topic, topic_id, index, error, high_watermark,
    last_stable_offset, log_start_offset, aborted (None or [(pid, first)]),
    records (bytes or FileRegion) and size.
    """
    flexible = version >= 12
    parts: list[Any] = []
    buf = bytearray()
    if version >= 7:
        buf += _HEAD_V7.pack(0, error_code, session_id)
    else:
        buf += _I32.pack(0)

    topics: list[tuple[Any, list[Any]]] = []
    last_key: object = object()
    for r in reads:
        key = (r.topic, r.topic_id)
        if key != last_key:
            topics.append((r, []))
            last_key = key
        topics[-1][1].append(r)

    buf += _uvarint(len(topics) + 1) if flexible else _I32.pack(len(topics))
    for first, reads_of_topic in topics:
        if version >= 13:
            buf += (first.topic_id or _ZERO_UUID).bytes
        else:
            name = (first.topic or "").encode()
            buf += (_uvarint(len(name) + 1) if flexible else _I16.pack(len(name))) + name
        buf += _uvarint(len(reads_of_topic) + 1) if flexible else _I32.pack(len(reads_of_topic))
        for r in reads_of_topic:
            buf += _PART.pack(r.index, r.error, r.high_watermark, r.last_stable_offset)
            if version >= 5:
                buf += _Q.pack(r.log_start_offset)
            aborted = r.aborted
            if aborted is None:
                buf += b"\x00" if flexible else _I32.pack(-1)
            else:
                buf += _uvarint(len(aborted) + 1) if flexible else _I32.pack(len(aborted))
                for pid, first_offset in aborted:
                    buf += _QQ.pack(pid, first_offset)
                    if flexible:
                        buf += b"\x00"
            if version >= 11:
                buf += _I32.pack(-1)  # preferred_read_replica
            records = r.records
            size = r.size if isinstance(records, FileRegion) else len(records)
            buf += _uvarint(size + 1) if flexible else _I32.pack(size)
            if size:
                parts.append(bytes(buf))
                buf = bytearray()
                parts.append(records)
            if flexible:
                buf += b"\x00"  # partition tagged fields
        if flexible:
            buf += b"\x00"  # topic tagged fields
    if flexible:
        buf += b"\x00"  # response tagged fields (no node_endpoints: we are the leader)
    parts.append(bytes(buf))
    return EncodedResponse.of(parts)
