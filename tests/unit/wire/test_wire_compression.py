"""Codecs: round trips and the wire flavours Kafka clients write."""

from __future__ import annotations

import os
import struct

import cramjam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wire.compression import XERIAL_HEADER, CompressionType, compress, decompress
from wire.errors import CorruptRecordError


@pytest.mark.parametrize("codec", list(CompressionType))
@settings(max_examples=20, deadline=None)
@given(data=st.binary(max_size=5000))
def test_round_trip(codec: CompressionType, data: bytes) -> None:
    assert decompress(codec, compress(codec, data)) == data
    assert decompress(codec, memoryview(compress(codec, bytearray(data)))) == data


def test_snappy_writes_xerial_in_32k_blocks() -> None:
    data = os.urandom(100_000)
    out = compress(CompressionType.SNAPPY, data)
    assert out.startswith(XERIAL_HEADER)
    assert XERIAL_HEADER == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    pos, blocks = 16, []
    while pos < len(out):
        (n,) = struct.unpack_from(">i", out, pos)
        blocks.append(bytes(cramjam.snappy.decompress_raw(out[pos + 4 : pos + 4 + n])))
        pos += 4 + n
    assert [len(b) for b in blocks] == [32768, 32768, 32768, 1696]
    assert b"".join(blocks) == data


def test_snappy_reads_raw_and_framed_blocks() -> None:
    data = b"abc" * 10_000
    assert decompress(CompressionType.SNAPPY, bytes(cramjam.snappy.compress_raw(data))) == data
    assert decompress(CompressionType.SNAPPY, bytes(cramjam.snappy.compress(data))) == data


def test_lz4_frame_has_independent_blocks() -> None:
    out = compress(CompressionType.LZ4, b"x" * 200_000)
    assert out[:4] == b"\x04\x22\x4d\x18"  # LZ4 frame magic
    flg = out[4]
    assert flg >> 6 == 1  # version 01
    assert flg & 0x20  # block independence (Kafka's reader requires it)


@pytest.mark.parametrize("codec", [c for c in CompressionType if c is not CompressionType.NONE])
@pytest.mark.parametrize("data", [b"garbage!" * 3, b"", b"\x00"])
def test_garbage_is_corrupt_record(codec: CompressionType, data: bytes) -> None:
    try:
        decompress(codec, data)
    except CorruptRecordError:
        pass  # an empty/garbage input may also legitimately decode to b""


@pytest.mark.parametrize("codec", [c for c in CompressionType if c is not CompressionType.NONE])
def test_truncated_stream_is_corrupt_record(codec: CompressionType) -> None:
    good = compress(codec, os.urandom(50_000))
    with pytest.raises(CorruptRecordError):
        decompress(codec, good[: len(good) // 2])


def test_bad_xerial_block_length() -> None:
    bad = XERIAL_HEADER + struct.pack(">i", 1000) + b"abc"
    with pytest.raises(CorruptRecordError):
        decompress(CompressionType.SNAPPY, bad)
    with pytest.raises(CorruptRecordError):
        decompress(CompressionType.SNAPPY, XERIAL_HEADER[:12])


def test_unknown_codec_id() -> None:
    with pytest.raises(CorruptRecordError):
        decompress(7, b"x")
    assert CompressionType.from_name("ZSTD") is CompressionType.ZSTD
    with pytest.raises(ValueError):
        CompressionType.from_name("brotli")
