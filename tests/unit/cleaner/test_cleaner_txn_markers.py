"""The cleaner finds an aborted transaction whose marker sits in a later segment."""
from __future__ import annotations

from cleaner_testlib import clean, compact_config, latest_values, put
from test_cleaner import _txn_batch
from wire.records import ControlRecordType, build_control_batch


def test_aborted_records_go_when_their_marker_is_in_a_later_segment(make_log, clock) -> None:
    """The abort is indexed in the marker's segment (Kafka's .txnindex); cleaning the segment
    with the aborted records must look there, or the aborted values would replace committed
    ones (found by comparing compaction of transactions with Kafka 4.4)."""
    log = make_log(compact_config(segment_bytes=1_000_000, delete_retention_ms=0))
    ts = clock.milliseconds()
    put(log, b"k1", b"a1")
    log.roll()
    log.append_as_leader(_txn_batch(2, [(b"k1", b"B1"), (b"k3", b"B3")], ts))
    log.roll()
    log.append_as_leader(build_control_batch(ControlRecordType.ABORT, producer_id=2, producer_epoch=0, timestamp=ts),
                         origin="coordinator")
    log.roll()
    put(log, b"k2", b"p2")
    log.roll()
    put(log, b"end", b"x")
    assert [len(s.txn_index.all_aborted_txns()) for s in log.segments.values()] == [0, 0, 1, 0, 0]
    clean(log)
    values = latest_values(log)
    assert values[b"k1"] == b"a1" and b"k3" not in values and values[b"k2"] == b"p2"
