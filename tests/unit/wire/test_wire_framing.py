"""FrameReader: any chunking, typed errors for bad sizes, bounded buffering."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wire.errors import KafkaError
from wire.framing import (
    DEFAULT_MAX_FRAME_SIZE,
    FrameReader,
    FrameTooLargeError,
    FramingError,
    InvalidFrameError,
    frame,
    size_prefix,
)


def _feed_in_chunks(reader: FrameReader, stream: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
    out: list[bytes] = []
    for a, b in zip(points, points[1:]):
        out.extend(bytes(f) for f in reader.feed(stream[a:b]))
    return out


@settings(max_examples=150, deadline=None)
@given(
    payloads=st.lists(st.binary(max_size=300), max_size=20),
    cuts=st.lists(st.integers(0, 10_000), max_size=30),
    as_view=st.booleans(),
)
def test_frames_survive_arbitrary_chunking(payloads: list[bytes], cuts: list[int], as_view: bool) -> None:
    stream = b"".join(frame(p) for p in payloads)
    reader = FrameReader(max_size=300)
    if as_view:
        stream_obj = memoryview(bytearray(stream))
        points = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
        got = [bytes(f) for a, b in zip(points, points[1:]) for f in reader.feed(stream_obj[a:b])]
    else:
        got = _feed_in_chunks(reader, stream, cuts)
    assert got == payloads
    assert reader.buffered == 0


def test_byte_by_byte() -> None:
    payloads = [b"", b"a", b"hello" * 100]
    stream = b"".join(frame(p) for p in payloads)
    reader = FrameReader()
    got = [f for i in range(len(stream)) for f in reader.feed(stream[i : i + 1])]
    assert got == payloads


def test_frame_and_prefix() -> None:
    assert frame(b"abc") == b"\x00\x00\x00\x03abc"
    assert size_prefix(258) == b"\x00\x00\x01\x02"
    assert DEFAULT_MAX_FRAME_SIZE == 104857600


def test_frame_exactly_at_max_is_accepted() -> None:
    reader = FrameReader(max_size=10)
    assert reader.feed(frame(b"x" * 10)) == [b"x" * 10]


def test_oversized_frame_is_rejected_from_the_prefix_alone() -> None:
    reader = FrameReader(max_size=1000)
    with pytest.raises(FrameTooLargeError) as info:
        reader.feed(struct.pack(">i", 1001))
    assert isinstance(info.value, FramingError) and isinstance(info.value, KafkaError)
    assert reader.buffered <= 4
    # poisoned: the stream position is lost, the connection must close
    with pytest.raises(FrameTooLargeError):
        reader.feed(b"more")


def test_oversized_frame_after_good_frames_in_one_chunk() -> None:
    reader = FrameReader(max_size=10)
    with pytest.raises(FrameTooLargeError):
        reader.feed(frame(b"ok") + struct.pack(">i", 2**31 - 1) + b"x" * 50)


@pytest.mark.parametrize("size", [-1, -(2**31)])
def test_negative_size(size: int) -> None:
    reader = FrameReader()
    with pytest.raises(InvalidFrameError):
        reader.feed(frame(b"a") + struct.pack(">i", size))


def test_negative_size_split_across_feeds() -> None:
    reader = FrameReader()
    reader.feed(frame(b"abc")[:5])
    reader.feed(b"bc\xff")
    with pytest.raises(InvalidFrameError):
        reader.feed(b"\xff\xff\xff")


@settings(max_examples=100, deadline=None)
@given(data=st.binary(max_size=400), cuts=st.lists(st.integers(0, 1000), max_size=10))
def test_garbage_never_buffers_more_than_max_plus_prefix(data: bytes, cuts: list[int]) -> None:
    reader = FrameReader(max_size=64)
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    try:
        for a, b in zip(points, points[1:]):
            for f in reader.feed(data[a:b]):
                assert len(f) <= 64
            assert reader.buffered <= 64 + 4
    except FramingError:
        pass


def test_large_frame_assembled_from_many_chunks() -> None:
    payload = bytes(range(256)) * 8192  # 2 MiB
    stream = frame(payload)
    reader = FrameReader()
    got = []
    for i in range(0, len(stream), 65536):
        got.extend(reader.feed(stream[i : i + 65536]))
        assert reader.buffered <= len(payload) + 4
    assert got == [payload]
