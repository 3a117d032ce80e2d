"""FrameAssembler yields the same frames whatever the recv sizes; bad sizes raise wire's errors."""

from __future__ import annotations

import random
import struct

import pytest

from asyncbroker.frame_assembler import SCRATCH_SIZE, FrameAssembler
from wire.errors import FrameTooLargeError, InvalidFrameError


def feed(assembler: FrameAssembler, data: bytes, rng: random.Random) -> list[bytes]:
    out: list[bytes] = []
    pos = 0
    while pos < len(data):
        buf = assembler.get_buffer()
        n = min(len(buf), len(data) - pos, rng.choice([1, 3, 7, 100, 4096, 65536, 1 << 20]))
        buf[:n] = data[pos : pos + n]
        pos += n
        out += [bytes(f) for f in assembler.buffer_updated(n)]
    return out


@pytest.mark.parametrize("seed", range(5))
def test_any_chunking_gives_the_same_frames(seed: int) -> None:
    rng = random.Random(seed)
    payloads = [rng.randbytes(rng.choice([0, 1, 10, 1000, SCRATCH_SIZE - 4, SCRATCH_SIZE, 3 * SCRATCH_SIZE + 17]))
                for _ in range(40)]
    data = b"".join(struct.pack(">i", len(p)) + p for p in payloads)
    assert feed(FrameAssembler(10 << 20), data, rng) == payloads


def test_negative_and_oversized_sizes() -> None:
    with pytest.raises(InvalidFrameError):
        feed(FrameAssembler(1000), struct.pack(">i", -1), random.Random(0))
    with pytest.raises(FrameTooLargeError):
        feed(FrameAssembler(1000), struct.pack(">i", 1001) + b"x", random.Random(0))
