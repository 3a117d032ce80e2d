"""OffsetIndex / TimeIndex / TransactionIndex: layout, lookups against a model, reopen, corruption."""
from __future__ import annotations

import bisect
import os
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage.errors import CorruptIndexError, IndexFullError, InvalidOffsetError
from storage.offset_index import OffsetIndex, OffsetPosition
from storage.time_index import TimeIndex, TimestampOffset
from storage.transaction_index import AbortedTxn, TransactionIndex


def test_offset_index_file_layout(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "00000000000000000100.index", 100, max_index_size=80)
    idx.append(101, 0)
    idx.append(105, 4096)
    assert os.path.getsize(idx.path) == 80  # preallocated
    idx.close()  # trims to the entries
    assert idx.path.read_bytes() == struct.pack(">iiii", 1, 0, 5, 4096)


def test_offset_index_is_mapped_lazily(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "00000000000000000000.index", 0, max_index_size=80)
    assert not idx.is_mapped and not idx.path.exists()
    idx.lookup(5)
    assert idx.is_mapped and idx.path.exists()
    idx.close()


def mapping_flags(path: Path) -> list[str]:
    """The kernel's VmFlags of this process's mapping of `path` (/proc/self/smaps)."""
    lines = Path("/proc/self/smaps").read_text().splitlines()
    for i, line in enumerate(lines):
        if line.endswith(" " + str(path)):
            for following in lines[i + 1:]:
                if following.startswith("VmFlags:"):
                    return following.split()[1:]
    raise AssertionError(f"{path} is not mapped")


@pytest.mark.parametrize("kind", ["offset", "time"])
def test_index_mappings_do_no_readahead(tmp_path: Path, kind: str) -> None:
    """MADV_RANDOM ("rr"): a store into a fresh page of the sparse, preallocated file faults in
    that page alone (readahead zero-filling dozens of pages per fault was most of a 1,000-partition
    broker's CPU)."""
    if kind == "offset":
        idx: OffsetIndex | TimeIndex = OffsetIndex(tmp_path / "00000000000000000000.index", 0, max_index_size=1 << 20)
        idx.append(1, 0)
    else:
        idx = TimeIndex(tmp_path / "00000000000000000000.timeindex", 0, max_index_size=1 << 20)
        idx.maybe_append(1_000, 1)
    try:
        assert "rr" in mapping_flags(idx.path)
    finally:
        idx.close()


class _UnmapOnFirstLock:
    """An index's lock that, the first time a reader takes it, lets a segment deletion on
    another thread unmap the index first (close_handler, which takes the lock too)."""

    def __init__(self, index: OffsetIndex | TimeIndex) -> None:
        self.inner = index._lock
        self.index = index
        self.armed = True

    def __enter__(self) -> object:
        if self.armed:
            self.armed = False
            self.index.close_handler()
        return self.inner.__enter__()

    def __exit__(self, *exc: object) -> None:
        self.inner.__exit__(*exc)


@pytest.mark.parametrize("read", ["offset lookup", "offset entry", "offset last entry", "fetch upper bound",
                                  "time lookup", "time entry"])
def test_a_read_racing_an_unmap_maps_the_index_again(tmp_path: Path, read: str) -> None:
    """Retention unmaps a deleted segment's indexes while a fetch may be reading them: the
    read re-maps the file rather than read a mapping that is gone (which failed the fetch)."""
    offsets = OffsetIndex(tmp_path / "00000000000000000000.index", 0, max_index_size=800)
    times = TimeIndex(tmp_path / "00000000000000000000.timeindex", 0, max_index_size=1200)
    for i in range(1, 11):
        offsets.append(i * 10, i * 100)
        times.maybe_append(1_000 + i, i * 10)
    offsets.trim_to_valid_size()  # as a segment's are once it is not the active one (retention
    times.trim_to_valid_size()  # deletes only those)
    index: OffsetIndex | TimeIndex = times if read.startswith("time") else offsets
    index._lock = _UnmapOnFirstLock(index)  # type: ignore[assignment]
    expected: dict[str, object] = {
        "offset lookup": OffsetPosition(50, 500), "offset entry": OffsetPosition(30, 300),
        "offset last entry": OffsetPosition(100, 1000), "fetch upper bound": OffsetPosition(60, 600),
        "time lookup": TimestampOffset(1_005, 50), "time entry": TimestampOffset(1_003, 30)}
    got = {"offset lookup": lambda: offsets.lookup(55), "offset entry": lambda: offsets.entry(2),
           "offset last entry": offsets.last_entry,
           "fetch upper bound": lambda: offsets.fetch_upper_bound_offset(OffsetPosition(50, 500), 50),
           "time lookup": lambda: times.lookup(1_005), "time entry": lambda: times.entry(2)}[read]()
    assert got == expected[read]
    assert not index._lock.armed  # type: ignore[attr-defined]
    offsets.close()
    times.close()


def test_lookup_greatest_lower_bound(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "00000000000000000050.index", 50, max_index_size=8 * 100)
    for i in range(10):
        idx.append(50 + i * 10 + 1, i * 100)
    assert idx.lookup(10) == OffsetPosition(50, 0)  # before the first entry
    assert idx.lookup(51) == OffsetPosition(51, 0)
    assert idx.lookup(60) == OffsetPosition(51, 0)
    assert idx.lookup(61) == OffsetPosition(61, 100)
    assert idx.lookup(10_000) == OffsetPosition(141, 900)
    idx.close()


def test_append_rejects_non_increasing_offsets_and_full_index(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "00000000000000000000.index", 0, max_index_size=16)
    idx.append(5, 0)
    with pytest.raises(InvalidOffsetError):
        idx.append(5, 10)
    idx.append(6, 10)
    assert idx.is_full()
    with pytest.raises(IndexFullError):
        idx.append(7, 20)
    idx.close()


def test_relative_offset_overflow_rejected(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "00000000000000000000.index", 0, max_index_size=80)
    with pytest.raises(InvalidOffsetError):
        idx.append(2**31, 0)
    idx.close()


@settings(max_examples=60, deadline=None)
@given(
    deltas=st.lists(st.integers(1, 1000), min_size=0, max_size=3000),
    targets=st.lists(st.integers(0, 3_000_000), min_size=1, max_size=40),
)
def test_lookup_matches_model(tmp_path_factory, deltas: list[int], targets: list[int]) -> None:
    """Greatest-lower-bound (with the warm-section search) equals bisect on a list."""
    path = tmp_path_factory.mktemp("idx") / "00000000000000001000.index"
    idx = OffsetIndex(path, 1000, max_index_size=8 * 4000)
    offsets, offset = [], 1000
    for i, d in enumerate(deltas):
        offset += d
        idx.append(offset, i * 7)
        offsets.append(offset)
    for t in targets + offsets[-3:] + offsets[:3]:
        i = bisect.bisect_right(offsets, t) - 1
        expected = OffsetPosition(1000, 0) if i < 0 else OffsetPosition(offsets[i], i * 7)
        assert idx.lookup(t) == expected
    idx.close()
    path.unlink()


def test_truncate_to(tmp_path: Path) -> None:
    idx = OffsetIndex(tmp_path / "00000000000000000000.index", 0, max_index_size=8 * 100)
    for i in range(1, 11):
        idx.append(i * 10, i * 100)
    idx.truncate_to(55)  # removes entries >= 55
    assert idx.entries == 5 and idx.last_offset == 50
    idx.truncate_to(50)
    assert idx.entries == 4 and idx.last_offset == 40
    idx.truncate_to(0)
    assert idx.entries == 0 and idx.lookup(100) == OffsetPosition(0, 0)
    idx.append(5, 7)  # appends work again after truncation
    idx.close()


def test_reopen_keeps_entries(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.index"
    idx = OffsetIndex(path, 0, max_index_size=8 * 100)
    for i in range(1, 6):
        idx.append(i, i * 10)
    idx.close()
    again = OffsetIndex(path, 0, max_index_size=8 * 100)
    assert again.entries == 5 and again.lookup(3) == OffsetPosition(3, 30)
    again.resize(800)  # active segment: grow back to the preallocated size
    again.append(6, 60)
    assert again.entries == 6
    again.close()


def test_sanity_check_detects_corruption(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.index"
    idx = OffsetIndex(path, 0, max_index_size=80)
    idx.append(1, 10)
    idx.append(2, 20)
    idx.close()
    OffsetIndex(path, 0, 80).sanity_check()
    with open(path, "ab") as f:
        f.write(b"\x00\x00\x00")  # not a whole entry
    with pytest.raises(CorruptIndexError):
        OffsetIndex(path, 0, 80).sanity_check()
    path.write_bytes(struct.pack(">iiii", 5, 50, 2, 20))  # decreasing entries
    with pytest.raises(CorruptIndexError):
        OffsetIndex(path, 0, 80).sanity_check()


def test_time_index_layout_and_monotonic(tmp_path: Path) -> None:
    idx = TimeIndex(tmp_path / "00000000000000000010.timeindex", 10, max_index_size=12 * 10)
    idx.maybe_append(1000, 12)
    idx.maybe_append(1000, 15)  # same timestamp: not appended
    with pytest.raises(InvalidOffsetError):
        idx.maybe_append(1001, 11)  # offset went backwards
    with pytest.raises(InvalidOffsetError):
        idx.maybe_append(900, 20)  # timestamp went backwards
    idx.maybe_append(2000, 20)
    assert idx.entries_list() == [TimestampOffset(1000, 12), TimestampOffset(2000, 20)]
    idx.close()
    assert idx.path.read_bytes() == struct.pack(">qiqi", 1000, 2, 2000, 10)


def test_time_index_lookup_and_reserved_slot(tmp_path: Path) -> None:
    idx = TimeIndex(tmp_path / "00000000000000000000.timeindex", 0, max_index_size=12 * 3)
    assert idx.lookup(5) == TimestampOffset(-1, 0)
    idx.maybe_append(100, 1)
    idx.maybe_append(200, 2)
    assert idx.is_full()  # one slot is kept for the inactive-segment entry
    with pytest.raises(IndexFullError):
        idx.maybe_append(300, 3)
    idx.maybe_append(300, 3, skip_full_check=True)
    assert idx.lookup(50) == TimestampOffset(-1, 0)
    assert idx.lookup(150) == TimestampOffset(100, 1)
    assert idx.lookup(300) == TimestampOffset(300, 3)
    idx.truncate_to(2)
    assert idx.entries_list() == [TimestampOffset(100, 1)]
    idx.close()


def test_time_index_sanity_check(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.timeindex"
    path.write_bytes(struct.pack(">qiqi", 500, 1, 100, 2))  # last timestamp < first
    with pytest.raises(CorruptIndexError):
        TimeIndex(path, 0, 120).sanity_check()


def test_transaction_index_format_and_collect(tmp_path: Path) -> None:
    idx = TransactionIndex(0, tmp_path / "00000000000000000000.txnindex")
    assert not idx.path.exists()  # created only when needed
    txns = [AbortedTxn(1, 0, 10, 11), AbortedTxn(2, 5, 20, 21), AbortedTxn(3, 30, 40, 50)]
    for t in txns:
        idx.append(t)
    data = idx.path.read_bytes()
    assert len(data) == 3 * 34
    assert data[:34] == struct.pack(">hqqqq", 0, 1, 0, 10, 11)
    assert idx.all_aborted_txns() == txns
    result = idx.collect_aborted_txns(12, 35)
    assert result.aborted_transactions == [txns[1], txns[2]] and result.is_complete
    result = idx.collect_aborted_txns(0, 100)
    assert result.aborted_transactions == txns and not result.is_complete
    with pytest.raises(ValueError):
        idx.append(AbortedTxn(4, 0, 40, 41))  # last offsets must increase
    idx.truncate_to(20)
    assert idx.all_aborted_txns() == [txns[0]]
    idx.path.write_bytes(data[:40])
    with pytest.raises(CorruptIndexError):
        idx.sanity_check()


@settings(max_examples=40, deadline=None)
@given(
    steps=st.lists(st.tuples(st.integers(0, 50), st.integers(1, 20)), min_size=1, max_size=1500),
    targets=st.lists(st.integers(0, 200_000), min_size=1, max_size=30),
)
def test_time_index_lookup_matches_model(tmp_path_factory, steps, targets) -> None:
    path = tmp_path_factory.mktemp("tidx") / "00000000000000000000.timeindex"
    idx = TimeIndex(path, 0, max_index_size=12 * 2000)
    model: list[tuple[int, int]] = []
    ts, offset = 1000, 0
    for dts, doff in steps:
        ts, offset = ts + dts, offset + doff
        idx.maybe_append(ts, offset)
        if not model or ts > model[-1][0]:
            model.append((ts, offset))
    assert [(e.timestamp, e.offset) for e in idx.entries_list()] == model
    keys = [t for t, _ in model]
    for target in targets + keys[:2] + keys[-2:]:
        i = bisect.bisect_right(keys, target) - 1
        expected = TimestampOffset(-1, 0) if i < 0 else TimestampOffset(*model[i])
        assert idx.lookup(target) == expected
    idx.close()
    path.unlink()
