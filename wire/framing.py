"""Size-prefixed framing of the Kafka byte stream (sans-io).

Every request and response is a 4-byte big-endian signed size followed by
that many bytes. `FrameReader` splits the stream into frame payloads and
owns the receive buffers, so it serves two callers:

* asyncio.BufferedProtocol (the service): `get_buffer()` says where the
  socket should write, `buffer_updated(n)` returns the frames now complete.
  Small frames land in a reusable scratch buffer (many per recv); once a
  size prefix announces a frame larger than the scratch space, the rest of
  that frame is received straight into a buffer of exactly its size, which
  becomes the frame without another copy. That buffer is not zero-filled
  (`wire._receive_buffer`): every byte of it is received before the frame
  is handed out.
* `feed(data)` (tests, fuzzing, tools): copies the given bytes through the
  same two methods.

Every frame handed out is read-only (`bytes`, or a read-only memoryview of
a large frame's own buffer): kio's native decoder rejects writable buffers.
A large frame's buffer belongs to that frame alone, so its consumer may
patch it rather than copy it (`patchable`), as a Produce's append does.

Memory is bounded: apart from the fixed scratch buffer, at most one partial
frame is held (<= max_size + 4 bytes), and a bad size prefix is a typed
error raised as soon as its 4 bytes are seen, so a hostile peer can neither
hang the reader nor make it allocate.

A broker-wide budget (queued.max.request.bytes) plugs in as `reserve`: asked
once for each frame's size, when the frame is complete or (a large one)
before its own buffer is allocated, it may refuse. The reader then stops at
that frame, which stays in the scratch buffer; the caller stops reading and
later calls `buffer_updated(0)` to try again.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from wire._receive_buffer import receive_buffer, release_freed_buffers, retain_freed_buffers
from wire.errors import FrameTooLargeError, FramingError, InvalidFrameError

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "SCRATCH_SIZE",
    "FrameReader",
    "frame",
    "patchable",
    "release_receive_buffers",
    "retain_receive_buffers",
    "size_prefix",
    "FramingError",
    "InvalidFrameError",
    "FrameTooLargeError",
]

# socket.request.max.bytes default
DEFAULT_MAX_FRAME_SIZE = 104857600
# Per-reader receive buffer for small frames; larger frames get their own buffer.
SCRATCH_SIZE = 64 * 1024
_SIZE = struct.Struct(">i")

Frame = bytes | memoryview


class FrameReader:
    """Incremental splitter of a size-prefixed stream into read-only frame payloads.

    After an error the reader is poisoned (every later `buffer_updated` or
    `feed` re-raises): the stream position is lost and the connection must
    be closed.
    """

    __slots__ = ("max_size", "reserve", "_scratch", "_view", "_start", "_end", "_big", "_big_pos", "_error")

    def __init__(self, max_size: int = DEFAULT_MAX_FRAME_SIZE, *, scratch_size: int = SCRATCH_SIZE) -> None:
        if max_size < 0:
            raise ValueError("max_size must be >= 0")
        if scratch_size < 4:
            raise ValueError("scratch_size must be >= 4")
        self.max_size = max_size
        # frame size -> whether it may be received now (see the module docstring); None: always.
        self.reserve: Callable[[int], bool] | None = None
        # No frame can outgrow max_size + 4, so a larger scratch would be waste. Not zero-filled
        # (only received bytes are ever read): the pages a connection's small requests never
        # reach stay unallocated, which with a thousand connections is most of their memory.
        self._scratch = receive_buffer(min(scratch_size, max_size + 4))
        self._view = memoryview(self._scratch)
        self._start = 0  # first unconsumed byte in scratch
        self._end = 0  # end of received bytes in scratch
        self._big: bytearray | None = None  # a large frame being received in place
        self._big_pos = 0  # bytes of _big received so far
        self._error: FramingError | None = None

    @property
    def buffered(self) -> int:
        """Bytes held for the incomplete frame (its size prefix included)."""
        if self._big is not None:
            return 4 + self._big_pos
        return self._end - self._start

    def get_buffer(self, sizehint: int = -1) -> memoryview:
        """Writable space for the next receive (never empty, never past the current large frame)."""
        if self._big is not None:
            # Exactly the missing bytes of the large frame: bytes of the next
            # frame must not land in this frame's buffer.
            return memoryview(self._big)[self._big_pos :]
        if self._end == len(self._scratch):
            # Scratch full with a partial small frame: move it to the front.
            # It fits, since frames longer than the scratch go to their own buffer.
            pending = self._end - self._start
            self._scratch[:pending] = self._view[self._start : self._end]
            self._start, self._end = 0, pending
        return self._view[self._end :]

    def buffer_updated(self, nbytes: int) -> list[Frame]:
        """Account for `nbytes` written into the last `get_buffer()`; return the frames now complete."""
        if self._error is not None:
            raise self._error
        big = self._big
        if big is not None:
            self._big_pos += nbytes
            if self._big_pos < len(big):
                return []
            self._big = None
            return [memoryview(big).toreadonly()]
        frames: list[Frame] = []
        view = self._view
        start = self._start
        end = self._end + nbytes
        unpack = _SIZE.unpack_from
        max_size = self.max_size
        reserve = self.reserve
        while end - start >= 4:
            size = unpack(view, start)[0]
            if size < 0 or size > max_size:
                self._start, self._end = start, end
                raise self._fail(size)
            begin = start + 4
            available = end - begin
            # (reserve is asked once per frame: when it is handed out, or gets its own buffer.)
            if available >= size:
                if reserve is not None and not reserve(size):
                    break  # no budget for it: it waits here for buffer_updated(0)
                start = begin + size
                frames.append(bytes(view[begin:start]))
                continue
            if size > len(view) - 4:
                if reserve is not None and not reserve(size):
                    break  # no budget for it: its first bytes wait here for buffer_updated(0)
                # Large frame: receive the rest directly into its own buffer.
                big = receive_buffer(size)  # not zero-filled: the rest is received into it
                big[:available] = view[begin:end]
                self._big, self._big_pos = big, available
                start = end = 0
            break
        if start == end:
            start = end = 0
        self._start, self._end = start, end
        return frames

    def feed(self, data: bytes | bytearray | memoryview) -> list[Frame]:
        """Add received bytes; return the payloads of all frames now complete."""
        if self._error is not None:
            raise self._error
        mv = memoryview(data).cast("B")
        frames: list[Frame] = []
        pos, end = 0, len(mv)
        while pos < end:
            buf = self.get_buffer()
            if not buf:  # a frame `reserve` refused fills the scratch: nothing more fits now
                raise BufferError("FrameReader.feed: the scratch buffer is full behind a frame reserve refused")
            n = min(len(buf), end - pos)
            buf[:n] = mv[pos : pos + n]
            pos += n
            frames += self.buffer_updated(n)
        return frames

    def _fail(self, size: int) -> FramingError:
        if size < 0:
            self._error = InvalidFrameError(f"invalid frame size {size}")
        else:
            self._error = FrameTooLargeError(
                f"frame of {size} bytes exceeds socket.request.max.bytes ({self.max_size})"
            )
        return self._error


def patchable(frame: bytes | bytearray | memoryview) -> bytes | bytearray | memoryview:
    """A writable view of a large frame's own buffer, or the frame itself (a small frame is
    `bytes`, copied out of the shared scratch). For a consumer that changes the bytes once and
    reads them no more, as a Produce's append assigns offsets in the records."""
    if isinstance(frame, memoryview) and isinstance(frame.obj, bytearray) and frame.nbytes == len(frame.obj):
        return memoryview(frame.obj)
    return frame


def retain_receive_buffers(read_ahead: int) -> bool:
    """Process-wide: have malloc serve large frames' buffers of up to `read_ahead` bytes from its
    heap, and keep up to twice that freed for the next ones instead of returning it to the kernel
    (which zero-fills the pages again on the next request). For a process that bounds what each
    connection reads ahead, as the broker does. False where the C library has no such setting."""
    return retain_freed_buffers(read_ahead, 2 * read_ahead)


def release_receive_buffers() -> bool:
    """Hand the freed memory malloc keeps (retain_receive_buffers) back to the kernel, for a
    process whose load is over; True if any was returned."""
    return release_freed_buffers()


def size_prefix(size: int) -> bytes:
    """The 4-byte big-endian prefix for a frame of `size` payload bytes."""
    return _SIZE.pack(size)


def frame(payload: bytes | bytearray | memoryview) -> bytes:
    """Prefix `payload` with its size."""
    return _SIZE.pack(len(payload)) + bytes(payload)
