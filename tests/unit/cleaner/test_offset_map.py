"""SkimpyOffsetMap: Kafka's fixed-memory key-hash -> offset table."""
from __future__ import annotations

import hashlib
import struct

import pytest

from cleaner.offset_map import BYTES_PER_ENTRY, MAX_MAP_MEMORY, OffsetMapFullError, SkimpyOffsetMap


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
    assert not any(m._buf)


def test_batched_put_and_get_match_single_operations():
    keys = [b"key-%d" % (i % 300) for i in range(2000)]
    offsets = list(range(2000))
    a = SkimpyOffsetMap(24 * 500)
    b = SkimpyOffsetMap(24 * 500)
    assert a.put_keys(keys, offsets, 10**9) == 2000
    for k, o in zip(keys, offsets):
        b.put(k, o)
    assert a._buf == b._buf and a.size == b.size == 300 and a.latest_offset == b.latest_offset == 1999
    assert a.get_keys(keys[:400] + [b"nope"]) == [b.get(k) for k in keys[:400]] + [-1]


def test_put_keys_stops_when_the_map_reaches_its_desired_size():
    m = SkimpyOffsetMap(24 * 100)
    keys = [b"%d" % i for i in range(50)]
    # Kafka checks the size before every put, even for a key already present.
    assert m.put_keys(keys, list(range(50)), 10) == 10
    assert m.size == 10 and m.latest_offset == 9
    assert m.put_keys([b"0"], [99], 10) == 0
