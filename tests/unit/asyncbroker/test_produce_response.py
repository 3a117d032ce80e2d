"""The struct-written ProduceResponse decodes with kio to the same fields, every version."""

from __future__ import annotations

import pytest

from asyncbroker.handlers.produce import PartitionResult
from asyncbroker.produce_response import encode_produce_body
from wire.messages import decode_response


@pytest.mark.parametrize("version", range(3, 13))
def test_matches_kio_decoder(version: int) -> None:
    ok = PartitionResult(0)
    ok.base_offset, ok.log_append_time, ok.log_start_offset = 42, 1_700_000_000_000, 3
    bad = PartitionResult(1)
    bad.error, bad.message = 87, "keyless record on a compacted topic"
    bad.record_errors = [(0, "no key"), (5, None)]
    body = encode_produce_body(version, [("tópic", [ok, bad]), ("other", [])])
    resp = decode_response(0, version, body)
    t0, t1 = resp.responses
    assert (t0.name, t1.name) == ("tópic", "other") and t1.partition_responses == ()
    p0, p1 = t0.partition_responses
    assert (p0.index, p0.error_code, p0.base_offset) == (0, 0, 42)
    assert round(p0.log_append_time.timestamp() * 1000) == 1_700_000_000_000
    assert (p1.index, p1.error_code, p1.base_offset, p1.log_append_time) == (1, 87, -1, None)
    if version >= 5:
        assert (p0.log_start_offset, p1.log_start_offset) == (3, -1)
    if version >= 8:
        assert p0.error_message is None and p1.error_message == "keyless record on a compacted topic"
        assert [(e.batch_index, e.batch_index_error_message) for e in p1.record_errors] == [(0, "no key"), (5, None)]
