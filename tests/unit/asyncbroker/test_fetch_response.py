"""The Fetch handler's response (wire's encoder around FileRegions) decodes with kio, every version.

wire's encoder itself is tested byte for byte against kio in
tests/unit/wire/test_wire_response_encoders.py; this covers the service
side: reads grouped into topics, a real FileRegion passed through as a part
of its own and sized by len(), and the whole-response error code.
"""

from __future__ import annotations

import os
import tempfile
import uuid

import pytest

from asyncbroker.encoded_response import EncodedResponse, FileRegion
from asyncbroker.handlers import fetch
from asyncbroker.replica_manager import PartitionRead
from wire.errors import ErrorCode
from wire.messages import decode_response


def make_reads(records_b: object, size_b: int) -> list[PartitionRead]:
    tid = uuid.uuid4()
    a = PartitionRead("alpha", tid, 0, 0, 1 << 20)
    a.high_watermark, a.last_stable_offset, a.log_start_offset = 10, 9, 2
    a.records, a.size = b"\x01\x02\x03", 3
    a.aborted = [(7, 3), (8, 5)]
    b = PartitionRead("alpha", tid, 1, 0, 1 << 20)
    b.error = 1
    c = PartitionRead("beta", uuid.uuid4(), 3, 0, 1 << 20)
    c.high_watermark, c.last_stable_offset, c.log_start_offset = 100, 100, 0
    c.records, c.size = records_b, size_b
    return [a, b, c]


def flatten(parts: list[object]) -> bytes:
    out = bytearray()
    for p in parts:
        out += p.read() if isinstance(p, FileRegion) else p  # type: ignore[operator]
    return bytes(out)


@pytest.mark.parametrize("version", range(4, 18))
def test_matches_kio_decoder(version: int) -> None:
    with tempfile.TemporaryFile() as f:
        f.write(b"xxxxPAYLOAD-FROM-FILEyyyy")
        f.flush()
        region = FileRegion(os.dup(f.fileno()), 4, 17)
        reads = make_reads(region, 17)
        body = fetch._response(version, reads)
        assert isinstance(body, EncodedResponse) and body.has_file_regions
        assert sum(1 for p in body.parts if p is region) == 1  # passed through, not read
        data = flatten(body.parts)
        region.close()
    assert len(data) == body.size
    resp = decode_response(1, version, data)
    topics = resp.responses
    assert len(topics) == 2
    if version >= 13:
        assert topics[0].topic_id == reads[0].topic_id
    else:
        assert (topics[0].topic, topics[1].topic) == ("alpha", "beta")
    p0, p1 = topics[0].partitions
    assert (p0.partition_index, p0.error_code, p0.high_watermark, p0.last_stable_offset) == (0, 0, 10, 9)
    assert bytes(p0.records) == b"\x01\x02\x03"
    assert [(t.producer_id, t.first_offset) for t in p0.aborted_transactions] == [(7, 3), (8, 5)]
    if version >= 5:
        assert p0.log_start_offset == 2
    assert p1.error_code == 1 and p1.aborted_transactions is None and not p1.records
    p2 = topics[1].partitions[0]
    assert p2.partition_index == 3 and bytes(p2.records) == b"PAYLOAD-FROM-FILE"


@pytest.mark.parametrize("version", [4, 12, 17])
def test_in_memory_records_and_session_error(version: int) -> None:
    reads = make_reads(b"in-memory", 9)
    body = fetch._response(version, reads)
    assert not body.has_file_regions
    data = flatten(body.parts)
    assert len(data) == body.size
    assert bytes(decode_response(1, version, data).responses[1].partitions[0].records) == b"in-memory"

    body = fetch._response(version, [], error=ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
    resp = decode_response(1, version, flatten(body.parts))
    assert resp.responses == ()
    if version >= 7:
        assert resp.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
