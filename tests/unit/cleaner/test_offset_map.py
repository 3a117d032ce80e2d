"""SkimpyOffsetMap: Kafka's fixed-memory key-hash -> offset table."""
from __future__ import annotations

import ctypes
import hashlib
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cleaner.offset_map import BYTES_PER_ENTRY, MAX_MAP_MEMORY, OffsetMapFullError, SkimpyOffsetMap, md5


def test_slots_follow_memory_and_the_24_byte_entry():
    m = SkimpyOffsetMap(24 * 100 + 23)
    assert BYTES_PER_ENTRY == 24
    assert m.slots == 100
    assert m.memory == 24 * 100 + 23


def test_memory_is_capped_at_two_gib_without_allocating_it():
    assert MAX_MAP_MEMORY == 2**31 - 1
    with pytest.raises(ValueError):
        SkimpyOffsetMap(10)


def test_put_get_overwrite_and_latest_offset():
    m = SkimpyOffsetMap(24 * 64)
    assert m.get(b"a") == -1
    assert m.latest_offset == -1
    m.put(b"a", 5)
    m.put(b"b", 6)
    m.put(b"a", 9)
    assert (m.get(b"a"), m.get(b"b"), m.get(b"c")) == (9, 6, -1)
    assert m.size == 2
    assert m.latest_offset == 9
    assert m.utilization == pytest.approx(2 / 64)
    m.update_latest_offset(20)
    assert m.latest_offset == 20


def test_slot_layout_is_md5_then_big_endian_offset_at_the_first_probe():
    m = SkimpyOffsetMap(24 * 1000)
    m.put(b"key", 123456789)
    digest = hashlib.md5(b"key").digest()
    slot = (struct.unpack(">i", digest[:4])[0] & 0x7FFFFFFF) % m.slots
    raw = bytes(m._buf[slot * 24:(slot + 1) * 24])
    assert raw == digest + struct.pack(">q", 123456789)


def test_collisions_probe_and_every_key_stays_retrievable():
    m = SkimpyOffsetMap(24 * 50)
    keys = [b"k%d" % i for i in range(45)]  # 90% full: many collisions
    for i, k in enumerate(keys):
        m.put(k, i)
    assert m.size == 45
    assert [m.get(k) for k in keys] == list(range(45))
    assert m.probes > 0
    assert m.get(b"absent") == -1


def test_full_map_refuses_a_new_key():
    m = SkimpyOffsetMap(24 * 4)
    for i in range(4):
        m.put(b"%d" % i, i)
    with pytest.raises(OffsetMapFullError):
        m.put(b"new", 9)


def test_clear_resets_everything():
    m = SkimpyOffsetMap(24 * 16)
    m.put(b"a", 1)
    m.clear()
    assert (m.size, m.latest_offset, m.get(b"a")) == (0, -1, -1)
    assert not any(bytes(m._buf))


def test_batched_put_and_get_match_single_operations():
    keys = [b"key-%d" % (i % 300) for i in range(2000)]
    offsets = list(range(2000))
    a = SkimpyOffsetMap(24 * 500)
    b = SkimpyOffsetMap(24 * 500)
    assert a.put_keys(keys, offsets, 10**9) == 2000
    for k, o in zip(keys, offsets):
        b.put(k, o)
    assert bytes(a._buf) == bytes(b._buf) and a.size == b.size == 300 and a.latest_offset == b.latest_offset == 1999
    assert a.get_keys(keys[:400] + [b"nope"]) == [b.get(k) for k in keys[:400]] + [-1]


def test_put_keys_stops_when_the_map_reaches_its_desired_size():
    m = SkimpyOffsetMap(24 * 100)
    keys = [b"%d" % i for i in range(50)]
    # Kafka checks the size before every put, even for a key already present.
    assert m.put_keys(keys, list(range(50)), 10) == 10
    assert m.size == 10 and m.latest_offset == 9
    assert m.put_keys([b"0"], [99], 10) == 0


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_the_key_hash_is_md5(key: bytes) -> None:
    # Lengths around 55/56/64 bytes cross MD5's one- and two-block padding cases.
    assert md5(key) == hashlib.md5(key).digest()


def _kafka_position_of(digest: bytes, attempt: int, slots: int) -> int:
    """Kafka's SkimpyOffsetMap.positionOf, written from its description as a model."""
    probe = struct.unpack(">i", digest[min(attempt, 12):min(attempt, 12) + 4])[0] + max(0, attempt - 12)
    return ((probe & 0x7FFFFFFF) % slots) * 24


@settings(max_examples=60, deadline=None)
@given(keys=st.lists(st.binary(min_size=1, max_size=12), min_size=1, max_size=40, unique=True),
       slots=st.integers(40, 60))
def test_slots_follow_kafkas_probe_sequence_under_collisions(keys: list[bytes], slots: int) -> None:
    m = SkimpyOffsetMap(24 * slots)
    for i, key in enumerate(keys):
        m.put(key, i)
    assert bytes(m._buf) == _kafka_table(keys, slots)
    assert [m.get(k) for k in keys] == list(range(len(keys)))


def _kafka_table(keys: list[bytes], slots: int) -> bytes:
    """The table Kafka's SkimpyOffsetMap holds after putting keys[i] -> i in order (a model)."""
    model = bytearray(24 * slots)
    for i, key in enumerate(keys):
        digest = hashlib.md5(key).digest()
        attempt = 0
        while True:
            pos = _kafka_position_of(digest, attempt, slots)
            if model[pos:pos + 16] == digest or not any(model[pos:pos + 24]):
                break
            attempt += 1
        model[pos:pos + 16] = digest
        model[pos + 16:pos + 24] = struct.pack(">q", i)
    return bytes(model)


def test_keys_must_be_bytes() -> None:
    m = SkimpyOffsetMap(24 * 8)
    with pytest.raises(TypeError):
        m.put_keys(["text"], [1], 8)  # type: ignore[list-item]
    assert m.size == 0


@settings(max_examples=60, deadline=None)
@given(keys=st.lists(st.binary(max_size=80), min_size=1, max_size=120, unique=True),
       slots=st.integers(130, 200))
def test_keys_put_and_got_in_one_call_land_where_kafkas_probes_put_them(keys: list[bytes], slots: int) -> None:
    # One call takes keys a chunk at a time and hashes the short ones (< 56 bytes: one MD5
    # block) several at once: lengths up to 80 mix them with two-block keys, and up to 120
    # keys span chunks and leave lanes unfilled at a chunk's end.
    m = SkimpyOffsetMap(24 * slots)
    assert m.put_keys(keys, list(range(len(keys))), 10**9) == len(keys)
    assert bytes(m._buf) == _kafka_table(keys, slots)
    assert m.get_keys(keys + [b"absent" * 20]) == list(range(len(keys))) + [-1]


def test_the_table_is_anonymous_memory_advised_into_huge_pages() -> None:
    m = SkimpyOffsetMap(64 * 1024 * 1024)
    mapping = _mapping_of(ctypes.addressof(ctypes.c_char.from_buffer(m._buf)))
    assert mapping["path"] == "" and mapping["perms"].endswith("p")  # anonymous, private: no file, not shared
    assert "hg" in mapping["VmFlags"].split()  # madvise(MADV_HUGEPAGE)
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    offered = thp.exists() and "[never]" not in thp.read_text()
    # With transparent huge pages on ("always" or "madvise"), the mapping is eligible for them.
    assert mapping["THPeligible"] == ("1" if offered else "0")


def _mapping_of(address: int) -> dict[str, str]:
    """The /proc/self/smaps entry of the mapping holding `address`: its perms, path and fields."""
    entry: dict[str, str] | None = None
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()
        if not head[0].endswith(":"):  # a mapping's first line: start-end perms offset dev inode [path]
            start, end = (int(x, 16) for x in head[0].split("-"))
            entry = {"perms": head[1], "path": " ".join(head[5:])} if start <= address < end else None
        elif entry is not None:
            entry[head[0][:-1]] = " ".join(head[1:])
            if head[0] == "VmFlags:":
                return entry
    raise AssertionError(f"no mapping holds {address:#x}")
