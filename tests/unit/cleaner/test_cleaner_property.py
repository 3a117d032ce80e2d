"""Property: for any keyed workload with tombstones, a full clean leaves exactly the latest
value of each key at its original offset (tombstones per their horizon), offsets increasing."""
from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cleaner_testlib import BASE_TS, clean, compact_config, new_cleaner, put_many, read_all
from storage.clock import MockClock
from storage.log import Log
from wire.compression import CompressionType

record = st.tuples(st.integers(0, 15), st.one_of(st.none(), st.binary(min_size=0, max_size=40)))
workload = st.lists(st.lists(record, min_size=1, max_size=6), min_size=1, max_size=60)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=workload, codec=st.sampled_from([CompressionType.NONE, CompressionType.LZ4, CompressionType.GZIP]),
       segment_bytes=st.sampled_from([300, 700, 5000]), map_slots=st.sampled_from([8, 64]))
def test_full_clean_matches_the_latest_value_model(batches, codec, segment_bytes, map_slots):
    clock = MockClock(BASE_TS)
    with tempfile.TemporaryDirectory() as tmp:
        log = Log.open(Path(tmp) / "p-0", compact_config(segment_bytes=segment_bytes, delete_retention_ms=1000),
                       clock=clock)
        try:
            model: dict[bytes, tuple[int, bytes | None]] = {}
            for batch in batches:
                pairs = [(b"key-%d" % k, v) for k, v in batch]
                first = put_many(log, pairs, compression=codec)
                for i, (k, v) in enumerate(pairs):
                    model[k] = (first + i, v)
                clock.advance(1)
            log.roll()
            cleaner = new_cleaner(map_slots=map_slots)  # small maps force partial, multi-round cleans
            end = 0
            for _ in range(200):
                result = clean(log, cleaner, first_dirty=end)
                end = result.end_offset
                if end >= log.log_end_offset:
                    break
            _check(log, model)
            # After the delete horizon a later clean drops the tombstones too.
            clock.advance(1000)
            end = 0
            for _ in range(200):
                end = clean(log, cleaner, first_dirty=end).end_offset
                if end >= log.log_end_offset:
                    break
            _check(log, {k: v for k, v in model.items() if v[1] is not None})
        finally:
            log.close()


def _check(log: Log, model: dict) -> None:
    records = read_all(log)
    offsets = [r.offset for r in records]
    assert offsets == sorted(set(offsets))
    seen = {r.key: (r.offset, r.value) for r in records}
    # Every key's latest record is present, at its original offset...
    assert seen == model
    # ...and nothing older than it survives for any key.
    assert len(records) == len(model)
