"""The hand-assembled FetchResponse decodes with kio to the same fields, every version."""

from __future__ import annotations

import os
import tempfile
import uuid

import pytest

from asyncbroker.encoded_response import FileRegion
from asyncbroker.fetch_response import encode_fetch_body
from asyncbroker.handlers.fetch import PartitionRead
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
        body = encode_fetch_body(version, reads, error_code=0, session_id=0)
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
