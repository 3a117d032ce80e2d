"""SkimpyOffsetMap: the cleaner's fixed-memory dedupe table, key hash -> latest offset.

Kafka stores MD5(key) (16 bytes) and the offset (8 bytes) in one flat buffer of
`memory // 24` slots with open addressing, so a pass can remember millions of keys
in bounded memory regardless of key size. The price is a tiny chance that two keys
share a digest (then the older one is wrongly dropped); Kafka accepts it and so do we.

Probe sequence (as Kafka's SkimpyOffsetMap.positionOf): attempt `a` reads the
big-endian int32 at byte `min(a, 12)` of the digest, adds `max(0, a - 12)` (linear
probing once the digest's ints are used up) and takes it modulo the slot count.
A slot is empty when all its 24 bytes are zero.
"""
from __future__ import annotations

import ctypes
import struct

try:  # CPython's built-in MD5 is about twice as fast as OpenSSL's for short keys
    from _md5 import md5 as _md5
except ImportError:  # pragma: no cover
    from hashlib import md5 as _md5

__all__ = ["SkimpyOffsetMap", "OffsetMapFullError", "HASH_SIZE", "BYTES_PER_ENTRY", "MAX_MAP_MEMORY"]

HASH_SIZE = 16
BYTES_PER_ENTRY = HASH_SIZE + 8
MAX_MAP_MEMORY = 2**31 - 1
"""Kafka caps one thread's buffer at Int.MaxValue bytes (a Java ByteBuffer's limit)."""

_EMPTY_SLOT = bytes(BYTES_PER_ENTRY)
_U32 = struct.Struct(">I")
_OFFSET = struct.Struct(">q")


class OffsetMapFullError(Exception):
    """put() on a map whose every slot is taken (callers stop at slots * load factor first)."""


class SkimpyOffsetMap:
    """Open-addressing hash table over one bytearray of `memory // 24` slots.

    Not thread-safe: each cleaner worker process owns one and clears it per log.
    """

    __slots__ = ("memory", "slots", "_buf", "_entries", "lookups", "probes", "_last_offset")

    def __init__(self, memory: int) -> None:
        memory = min(int(memory), MAX_MAP_MEMORY)
        slots = memory // BYTES_PER_ENTRY
        if slots < 1:
            raise ValueError(f"offset map memory {memory} is below one {BYTES_PER_ENTRY}-byte slot")
        self.memory = memory
        self.slots = slots
        self._buf = bytearray(slots * BYTES_PER_ENTRY)
        self._entries = 0
        self.lookups = 0
        self.probes = 0
        self._last_offset = -1

    # -- sizes ----------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._entries

    @property
    def size(self) -> int:
        """Number of distinct key hashes stored."""
        return self._entries

    @property
    def utilization(self) -> float:
        return self._entries / self.slots

    @property
    def latest_offset(self) -> int:
        """The highest offset put (or fast-forwarded to); -1 on an empty map."""
        return self._last_offset

    def update_latest_offset(self, offset: int) -> None:
        """Fast-forward past offsets with no keyed record (aborted batches, gaps, markers)."""
        self._last_offset = offset

    # -- operations -----------------------------------------------------------------------------
    def clear(self) -> None:
        """Zero the buffer between logs (the table does not support deletes)."""
        if self._entries or self._last_offset != -1:
            self._zero()
        self._entries = 0
        self.lookups = 0
        self.probes = 0
        self._last_offset = -1

    def _zero(self) -> None:
        # memset, not a fresh zero buffer: the map can be 2 GiB.
        view = (ctypes.c_char * len(self._buf)).from_buffer(self._buf)
        ctypes.memset(view, 0, len(self._buf))
        del view

    def prefault(self) -> None:
        """Touch every page now (a fresh buffer's pages are mapped lazily): a worker pays
        for its map once at start-up, not with page faults in its first clean."""
        self._zero()

    def put(self, key: bytes | bytearray | memoryview, offset: int) -> None:
        self.put_digest(_md5(key).digest(), offset)

    def get(self, key: bytes | bytearray | memoryview) -> int:
        """The latest offset stored for `key`, or -1 when absent."""
        return self.get_digest(_md5(key).digest())

    def put_digest(self, digest: bytes, offset: int) -> None:
        """Store `offset` for the key whose MD5 is `digest` (overwriting an older offset)."""
        if self._entries >= self.slots:
            raise OffsetMapFullError(f"attempted to add a new entry to a full offset map ({self.slots} slots)")
        self.lookups += 1
        pos = self._find_slot(digest)
        buf = self._buf
        if buf[pos:pos + HASH_SIZE] != digest:
            buf[pos:pos + HASH_SIZE] = digest
            self._entries += 1
        _OFFSET.pack_into(buf, pos + HASH_SIZE, offset)
        self._last_offset = offset

    def get_digest(self, digest: bytes) -> int:
        self.lookups += 1
        pos = self._find_slot(digest)
        buf = self._buf
        if buf[pos:pos + HASH_SIZE] == digest:
            return _OFFSET.unpack_from(buf, pos + HASH_SIZE)[0]
        return -1

    def _find_slot(self, digest: bytes) -> int:
        """Byte position of `digest`'s slot, or of the empty slot where it would go."""
        buf = self._buf
        slots = self.slots
        attempt = 0
        while True:
            if attempt <= 12:
                probe = _U32.unpack_from(digest, attempt)[0]
            else:
                probe = _U32.unpack_from(digest, 12)[0] + attempt - 12
            pos = ((probe & 0x7FFFFFFF) % slots) * BYTES_PER_ENTRY
            stored = buf[pos:pos + BYTES_PER_ENTRY]
            if stored[:HASH_SIZE] == digest or stored == _EMPTY_SLOT:
                return pos
            attempt += 1
            self.probes += 1
            if attempt > slots + 12:
                raise OffsetMapFullError("no free slot in the offset map")

    def put_keys(self, keys: list, offsets: list, max_entries: int) -> int:
        """Put keys[i] -> offsets[i] in order while the map holds fewer than `max_entries`
        entries (checked before every put, as Kafka's buildOffsetMapForSegment does).

        Returns how many pairs were stored; fewer than len(keys) means the map is "full".
        The hot loop of pass 1: hashing and the first probe are inlined.
        """
        buf = self._buf
        slots = self.slots
        entries = self._entries
        limit = min(max_entries, slots)
        md5 = _md5
        unpack = _U32.unpack_from
        pack_offset = _OFFSET.pack_into
        empty = _EMPTY_SLOT
        done = 0
        last = self._last_offset
        for key in keys:
            if entries >= limit:
                break
            digest = md5(key).digest()
            pos = ((unpack(digest)[0] & 0x7FFFFFFF) % slots) * BYTES_PER_ENTRY
            stored = buf[pos:pos + BYTES_PER_ENTRY]
            if stored[:HASH_SIZE] != digest:
                if stored != empty:
                    pos = self._find_slot(digest)
                    if buf[pos:pos + HASH_SIZE] == digest:
                        last = offsets[done]
                        pack_offset(buf, pos + HASH_SIZE, last)
                        done += 1
                        continue
                buf[pos:pos + HASH_SIZE] = digest
                entries += 1
            last = offsets[done]
            pack_offset(buf, pos + HASH_SIZE, last)
            done += 1
        self.lookups += done
        self._entries = entries
        self._last_offset = last
        return done

    def get_keys(self, keys: list) -> list[int]:
        """Latest offsets of many keys (-1 where absent): the hot lookup of pass 2."""
        buf = self._buf
        slots = self.slots
        md5 = _md5
        unpack = _U32.unpack_from
        unpack_offset = _OFFSET.unpack_from
        empty = _EMPTY_SLOT
        out: list[int] = []
        append = out.append
        for key in keys:
            digest = md5(key).digest()
            pos = ((unpack(digest)[0] & 0x7FFFFFFF) % slots) * BYTES_PER_ENTRY
            stored = buf[pos:pos + BYTES_PER_ENTRY]
            if stored[:HASH_SIZE] == digest:
                append(unpack_offset(stored, HASH_SIZE)[0])
            elif stored == empty:
                append(-1)
            else:
                pos = self._find_slot(digest)
                if buf[pos:pos + HASH_SIZE] == digest:
                    append(unpack_offset(buf, pos + HASH_SIZE)[0])
                else:
                    append(-1)
        self.lookups += len(keys)
        return out

    def __repr__(self) -> str:
        return f"SkimpyOffsetMap(slots={self.slots}, entries={self._entries}, latest_offset={self._last_offset})"
