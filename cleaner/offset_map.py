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
import mmap

from cleaner import _offset_map as _native
from cleaner.errors import OffsetMapFullError

__all__ = ["SkimpyOffsetMap", "OffsetMapFullError", "HASH_SIZE", "BYTES_PER_ENTRY", "MAX_MAP_MEMORY", "md5"]

HASH_SIZE = 16
BYTES_PER_ENTRY = HASH_SIZE + 8
MAX_MAP_MEMORY = 2**31 - 1
"""Kafka caps one thread's buffer at Int.MaxValue bytes (a Java ByteBuffer's limit)."""

md5 = _native.md5
"""The key hash (MD5 digest bytes), computed in C with the probing (cleaner/_offset_map.c)."""


def _table_memory(size: int) -> mmap.mmap:
    """`size` zeroed bytes for the table, private and anonymous, in huge pages where the
    kernel offers them: every probe lands on a random slot of a table larger than the
    caches, and with 4 KiB pages most probes also missed the TLB (pass 1 and 2 spent about
    a tenth less time probing in 2 MiB pages). Without transparent huge pages the advice
    is refused or ignored, and the table is in ordinary pages."""
    memory = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    advice = getattr(mmap, "MADV_HUGEPAGE", None)  # Linux only
    if advice is not None:
        try:
            memory.madvise(advice)
        except OSError:  # EINVAL: a kernel built without transparent huge pages
            pass
    return memory


class SkimpyOffsetMap:
    """Open-addressing hash table over one buffer of `memory // 24` slots.

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
        self._buf = _table_memory(slots * BYTES_PER_ENTRY)
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

    def put(self, key: bytes, offset: int) -> None:
        if self.put_keys([key], [offset], self.slots + 1) == 0:
            raise OffsetMapFullError(f"attempted to add a new entry to a full offset map ({self.slots} slots)")

    def get(self, key: bytes) -> int:
        """The latest offset stored for `key`, or -1 when absent."""
        return self.get_keys([key])[0]

    def put_keys(self, keys: list[bytes], offsets: list[int], max_entries: int) -> int:
        """Put keys[i] -> offsets[i] in order while the map holds fewer than `max_entries`
        entries (checked before every put, as Kafka's buildOffsetMapForSegment does).

        Returns how many pairs were stored; fewer than len(keys) means the map is "full".
        Hashing and probing run in C over the whole list (pass 1's hot loop).
        """
        stored, self._entries, last, probes = _native.put_keys(self._buf, self.slots, self._entries, max_entries,
                                                               keys, offsets)
        self.lookups += stored
        self.probes += probes
        if last is not None:
            self._last_offset = last
        return stored

    def get_keys(self, keys: list[bytes]) -> list[int]:
        """Latest offsets of many keys (-1 where absent): the hot lookup of pass 2."""
        found, probes = _native.get_keys(self._buf, self.slots, keys)
        self.lookups += len(keys)
        self.probes += probes
        return found

    def __repr__(self) -> str:
        return f"SkimpyOffsetMap(slots={self.slots}, entries={self._entries}, latest_offset={self._last_offset})"
