"""Receive-side framing for asyncio's BufferedProtocol: the socket writes into our buffers.

wire.framing.FrameReader takes bytes the transport already allocated and
copies every frame out of them (twice for frames spanning reads). For
Produce requests of a megabyte that copying costs as much as the append
itself. With BufferedProtocol the transport asks us where to put incoming
bytes: small frames arrive in a reusable scratch buffer (several per recv),
and once a frame's size prefix is known to exceed the scratch space, the rest
of that frame is received straight into a bytearray of exactly its size,
which becomes the frame without another copy.

Size checks and their errors are wire's (InvalidFrameError for a negative
size, FrameTooLargeError above socket.request.max.bytes).
"""

from __future__ import annotations

import struct

from wire.errors import FrameTooLargeError, InvalidFrameError

_SIZE = struct.Struct(">i")
# Per-connection receive buffer for small frames (large ones get their own).
SCRATCH_SIZE = 64 * 1024


class FrameAssembler:
    """`get_buffer()` / `buffer_updated(n)` in, complete frame payloads out."""

    __slots__ = ("max_size", "_scratch", "_view", "_start", "_end", "_big", "_big_pos")

    def __init__(self, max_size: int) -> None:
        self.max_size = max_size
        self._scratch = bytearray(SCRATCH_SIZE)
        self._view = memoryview(self._scratch)
        self._start = 0  # first unconsumed byte in scratch
        self._end = 0  # end of received bytes in scratch
        self._big: bytearray | None = None  # a large frame being received in place
        self._big_pos = 0

    def get_buffer(self) -> memoryview:
        if self._big is not None:
            return memoryview(self._big)[self._big_pos :]
        if self._end == len(self._scratch):
            # Move the partial frame to the front to make room.
            pending = self._end - self._start
            self._scratch[:pending] = self._scratch[self._start : self._end]
            self._start, self._end = 0, pending
        return self._view[self._end :]

    def buffer_updated(self, nbytes: int) -> list[bytes | memoryview]:
        """Account for `nbytes` received; return the frames now complete.

        A large frame comes back as a read-only memoryview of its own buffer
        (kio's native decoder refuses writable buffers).
        """
        frames: list[bytes | memoryview] = []
        if self._big is not None:
            self._big_pos += nbytes
            if self._big_pos < len(self._big):
                return frames
            frames.append(memoryview(self._big).toreadonly())
            self._big = None
            return frames
        self._end += nbytes
        view = self._view
        while self._end - self._start >= 4:
            size = _SIZE.unpack_from(self._scratch, self._start)[0]
            if size < 0:
                raise InvalidFrameError(f"invalid frame size {size}")
            if size > self.max_size:
                raise FrameTooLargeError(f"frame of {size} bytes exceeds socket.request.max.bytes ({self.max_size})")
            available = self._end - self._start - 4
            if available >= size:
                begin = self._start + 4
                frames.append(bytes(view[begin : begin + size]))
                self._start = begin + size
                continue
            if size > SCRATCH_SIZE - 4:
                # Large frame: receive the rest directly into its own buffer.
                big = bytearray(size)
                begin = self._start + 4
                big[:available] = view[begin : self._end]
                self._big, self._big_pos = big, available
                self._start = self._end = 0
            break
        if self._start == self._end:
            self._start = self._end = 0
        return frames
