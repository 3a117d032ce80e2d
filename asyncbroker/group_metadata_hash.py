"""The metadata hash of a consumer-protocol group: one int64 that changes when a topic the
group subscribes to is created, deleted or given partitions (Kafka 4.4, KIP-1101).

Kafka stores it in the group's ConsumerGroupMetadata record and bumps the group epoch when
it changes, so that a group whose topics did not change is not rebalanced when the
coordinator moves (or when a log dir is handed over). This broker writes the same number.

Both hashes are XXH3-64 (seed 0) over a stream laid out as hash4j's HashStream64 writes it:
little-endian integers, a string as its UTF-16LE chars then its length as an int32.

    topic hash: 0x00 (magic), topic id (most, then least significant int64), name,
                partition count int32, then each partition index int32 followed by its
                replicas' racks (none on a broker without `broker.rack`)
    group hash: the topic hashes as int64, in topic-name order; 0 for no topic
"""

from __future__ import annotations

import functools
import struct
import uuid
from collections.abc import Mapping

import xxhash

_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _string(text: str) -> bytes:
    return text.encode("utf-16-le") + _I32.pack(len(text))


@functools.lru_cache(maxsize=4096)
def topic_hash(topic_id: uuid.UUID, name: str, partitions: int) -> int:
    raw = topic_id.bytes
    out = bytearray(b"\x00")
    out += _I64.pack(int.from_bytes(raw[:8], "big", signed=True))
    out += _I64.pack(int.from_bytes(raw[8:], "big", signed=True))
    out += _string(name)
    out += _I32.pack(partitions)
    for index in range(partitions):
        out += _I32.pack(index)  # no racks follow: this broker has none
    return _signed(xxhash.xxh3_64_intdigest(bytes(out)))


def group_metadata_hash(topics: Mapping[str, tuple[uuid.UUID, int]]) -> int:
    """The hash of the subscribed topics that exist: name -> (topic id, partition count)."""
    if not topics:
        return 0
    stream = b"".join(_I64.pack(topic_hash(topics[name][0], name, topics[name][1])) for name in sorted(topics))
    return _signed(xxhash.xxh3_64_intdigest(stream))
