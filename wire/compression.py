"""Record-batch compression codecs (gzip, snappy, lz4, zstd) via cramjam.

Kafka puts the compressed bytes of all records of a batch after the 61-byte
batch header; the codec is in the low 3 bits of the batch attributes. The
on-the-wire flavours are not the codecs' defaults, so they are pinned here:

* snappy: Java (snappy-java) and librdkafka write the *xerial* framing
  (magic header + length-prefixed raw blocks); some clients write a bare raw
  snappy block. We read both and write xerial like Java does.
* lz4: the LZ4 *frame* format with independent blocks (Kafka's reader does
  not support linked blocks).
* zstd, gzip: standard single frames / members.
"""

from __future__ import annotations

import enum
import struct
from types import ModuleType

from wire.errors import CorruptRecordError

__all__ = ["CODEC_IDS", "CompressionType", "compress", "decompress", "XERIAL_HEADER", "MAX_DECOMPRESSED_SIZE"]

MAX_DECOMPRESSED_SIZE = 128 * 1024 * 1024
"""Largest records section we inflate. A few KiB of zstd or gzip can expand to gigabytes
(a decompression bomb); Kafka's Java reader streams records and never holds them all, we
decompress whole sections, so the output is capped and a bigger one is CorruptRecordError."""


_CRAMJAM: ModuleType | None = None


def _cramjam() -> ModuleType:
    """cramjam, imported at the first compressed batch rather than with this module: its
    extension is 1.4 MB of an idle broker's RSS, and a broker whose clients never compress
    never needs it."""
    global _CRAMJAM
    if _CRAMJAM is None:
        import cramjam

        _CRAMJAM = cramjam
    return _CRAMJAM


class CompressionType(enum.IntEnum):
    """Codec ids as stored in the batch attributes (bits 0-2)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @classmethod
    def from_name(cls, name: str) -> CompressionType:
        """Parse a `compression.type` value ("none", "gzip", ...)."""
        try:
            return cls[name.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown compression type {name!r}") from None


CODEC_IDS = frozenset(int(c) for c in CompressionType)
"""The codec ids a batch's attributes may carry; 5-7 are no codec."""


# snappy-java's stream header: magic, then version and min-compatible version.
XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
# snappy-java's default block size; Java writes blocks of this many input bytes.
_XERIAL_BLOCK = 32 * 1024
_INT32 = struct.Struct(">i")


def compress(codec: CompressionType | int, data: bytes | bytearray | memoryview) -> bytes:
    """Compress `data` in the flavour Kafka clients expect for `codec`."""
    codec = CompressionType(codec)
    if codec is CompressionType.NONE:
        return bytes(data)
    if codec is CompressionType.GZIP:
        return bytes(_cramjam().gzip.compress(data))
    if codec is CompressionType.SNAPPY:
        return _xerial_compress(data)
    if codec is CompressionType.LZ4:
        # Independent blocks: Kafka's KafkaLZ4BlockInputStream rejects linked blocks.
        c = _cramjam().lz4.Compressor(block_linked=False, content_checksum=False)
        c.compress(data if isinstance(data, bytes) else bytes(data))
        return bytes(c.finish())
    if codec is CompressionType.ZSTD:
        return bytes(_cramjam().zstd.compress(data, level=3))
    raise ValueError(f"unsupported codec {codec}")  # pragma: no cover


def decompress(codec: CompressionType | int, data: bytes | bytearray | memoryview) -> bytes:
    """Decompress a batch's records section; any codec failure is CorruptRecordError."""
    try:
        codec = CompressionType(codec)
    except ValueError:
        raise CorruptRecordError(f"unknown compression codec id {codec}") from None
    if codec is CompressionType.NONE:
        return bytes(data)
    try:
        if codec is CompressionType.GZIP:
            return _bounded(_cramjam().gzip.decompress_into, data)
        if codec is CompressionType.SNAPPY:
            return _snappy_decompress(data)
        if codec is CompressionType.LZ4:
            return _bounded(_cramjam().lz4.decompress_into, data)
        return _bounded(_cramjam().zstd.decompress_into, data)
    except CorruptRecordError:
        raise
    except Exception as exc:  # cramjam raises its own DecompressionError / ValueError
        raise CorruptRecordError(f"{codec.name} decompression failed: {exc}") from None


def _xerial_compress(data: bytes | bytearray | memoryview) -> bytes:
    mv = memoryview(data).cast("B")
    parts = [XERIAL_HEADER]
    for start in range(0, len(mv), _XERIAL_BLOCK):
        block = bytes(_cramjam().snappy.compress_raw(mv[start : start + _XERIAL_BLOCK]))
        parts.append(_INT32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _bounded(decompress_into: object, data: bytes | bytearray | memoryview,
             limit: int = MAX_DECOMPRESSED_SIZE) -> bytes:
    """Decompress into a growing buffer, never past `limit` bytes (the bomb guard)."""
    size = min(limit, max(64 * 1024, 8 * len(data)))
    while True:
        out = bytearray(size)
        try:
            n = decompress_into(data, out)  # type: ignore[operator]
        except Exception as exc:  # cramjam: "failed to write whole buffer" or corrupt input
            message = str(exc)
            too_small = "whole buffer" in message or "smaller than required" in message
            if not too_small:
                raise CorruptRecordError(f"records section cannot be decompressed: {message}") from None
            if size >= limit:
                raise CorruptRecordError(f"records section inflates past the {limit} byte limit") from None
            size = min(limit, size * 8)
            continue
        return bytes(memoryview(out)[:n])


def _check_raw_snappy_len(mv: memoryview, budget: int) -> int:
    n: int = _cramjam().snappy.decompress_raw_len(mv)
    if n > budget:
        raise CorruptRecordError(f"snappy block inflates past the {MAX_DECOMPRESSED_SIZE} byte limit")
    return n


def _snappy_decompress(data: bytes | bytearray | memoryview) -> bytes:
    mv = memoryview(data).cast("B")
    if bytes(mv[:8]) == XERIAL_MAGIC:
        return _xerial_decompress(mv)
    if bytes(mv[:10]) == b"\xff\x06\x00\x00sNaPpY":
        # The official snappy *framing* format; not what Kafka clients write,
        # but unambiguous, so accept it.
        return _bounded(_cramjam().snappy.decompress_into, mv)
    _check_raw_snappy_len(mv, MAX_DECOMPRESSED_SIZE)
    return bytes(_cramjam().snappy.decompress_raw(mv))


def _xerial_decompress(mv: memoryview) -> bytes:
    if len(mv) < 16:
        raise CorruptRecordError("truncated xerial snappy header")
    pos = 16  # magic(8) + version(4) + compatible version(4)
    end = len(mv)
    out: list[bytes] = []
    budget = MAX_DECOMPRESSED_SIZE
    while pos < end:
        if pos + 4 > end:
            raise CorruptRecordError("truncated xerial snappy block length")
        (n,) = _INT32.unpack_from(mv, pos)
        pos += 4
        if n < 0 or pos + n > end:
            raise CorruptRecordError("xerial snappy block length past the data")
        budget -= _check_raw_snappy_len(mv[pos : pos + n], budget)
        out.append(bytes(_cramjam().snappy.decompress_raw(mv[pos : pos + n])))
        pos += n
    return b"".join(out)
