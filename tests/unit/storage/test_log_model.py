"""Log against a model (hypothesis), and reads racing appends on threads."""
from __future__ import annotations

import threading
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage.clock import MockClock
from storage.log import Log
from storage.log_config import LogConfig
from storage_testlib import BASE_TS, batch
from wire.records import iter_batch_headers


def _first_batch(log: Log, offset: int) -> tuple[int, int]:
    data = log.read_bytes(offset, 1, min_one_message=True)
    h = next(iter_batch_headers(data)).header
    return h.base_offset, h.base_offset + h.last_offset_delta


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sizes=st.lists(st.tuples(st.integers(1, 6), st.integers(0, 300)), min_size=1, max_size=60),
    segment_bytes=st.integers(2100, 6000),  # the largest batch drawn is < 2100 bytes
    interval=st.integers(1, 600),
    truncate_at=st.integers(0, 400),
)
def test_reads_match_model(tmp_path_factory, sizes, segment_bytes, interval, truncate_at) -> None:
    d = tmp_path_factory.mktemp("model") / "m-0"
    clock = MockClock(BASE_TS)
    config = LogConfig(segment_bytes=segment_bytes, index_interval_bytes=interval)
    log = Log.open(d, config, clock=clock)
    ranges = []
    for n, size in sizes:
        info = log.append_as_leader(batch(n, value_size=size))
        ranges.append((info.first_offset, info.last_offset))
    assert log.log_end_offset == ranges[-1][1] + 1
    for first, last in ranges:
        for offset in {first, last, (first + last) // 2}:
            assert _first_batch(log, offset) == (first, last)
    leo = log.log_end_offset
    log.close()
    log = Log.open(d, config, clock=clock, had_clean_shutdown=False)  # full recovery
    assert log.log_end_offset == leo
    target = min(truncate_at, leo)
    log.truncate_to(target)
    kept = [r for r in ranges if r[1] < target]
    expected_leo = kept[-1][1] + 1 if kept else 0
    # Truncation is to a batch boundary: a batch holding `target` goes entirely.
    assert log.log_end_offset == expected_leo
    for first, last in kept[-3:]:
        assert _first_batch(log, first) == (first, last)
    log.close()


def test_reads_race_appends(make_log) -> None:
    log = make_log(LogConfig(segment_bytes=5000, index_interval_bytes=256))
    stop = threading.Event()
    errors: list[BaseException] = []

    def reader() -> None:
        deadline = time.monotonic() + 20
        try:
            while not stop.is_set() and time.monotonic() < deadline:
                hw = log.high_watermark
                if hw == 0:
                    continue
                offset = hw - 1
                data = log.read_bytes(offset, 10_000)
                headers = [bp.header for bp in iter_batch_headers(data)]
                assert headers and headers[0].base_offset <= offset <= headers[0].base_offset + headers[0].last_offset_delta
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for _ in range(500):
        log.append_as_leader(batch(2, value_size=50))
    stop.set()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert log.num_segments > 5
