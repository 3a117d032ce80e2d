"""Size-prefixed framing of the Kafka byte stream (sans-io).

Every request and response is a 4-byte big-endian signed size followed by
that many bytes. `FrameReader` accepts bytes in any chunking and hands out
complete frame payloads; it never buffers more than one partial frame
(bounded by max_size + 4), and a bad size prefix is a typed error raised as
soon as the 4 size bytes are seen, so a hostile peer can neither hang the
reader nor make it allocate.
"""

from __future__ import annotations

import struct

from wire.errors import FrameTooLargeError, FramingError, InvalidFrameError

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "FrameReader",
    "frame",
    "size_prefix",
    "FramingError",
    "InvalidFrameError",
    "FrameTooLargeError",
]

# socket.request.max.bytes default
DEFAULT_MAX_FRAME_SIZE = 104857600
_SIZE = struct.Struct(">i")


class FrameReader:
    """Incremental splitter of a size-prefixed stream into frame payloads.

    After an error the reader is poisoned (every later `feed` re-raises):
    the stream position is lost and the connection must be closed.
    """

    __slots__ = ("max_size", "_buf", "_need", "_error")

    def __init__(self, max_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        if max_size < 0:
            raise ValueError("max_size must be >= 0")
        self.max_size = max_size
        self._buf = bytearray()
        # Payload size of the frame being assembled, or -1 while reading the prefix.
        self._need = -1
        self._error: FramingError | None = None

    @property
    def buffered(self) -> int:
        """Bytes held for the incomplete frame (prefix included)."""
        return len(self._buf)

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """Add received bytes; return the payloads of all frames now complete."""
        if self._error is not None:
            raise self._error
        frames: list[bytes] = []
        buf = self._buf
        mv = memoryview(data).cast("B")
        pos = 0
        end = len(mv)
        if buf:
            # Finish the frame already started, copying only its missing bytes.
            if self._need < 0:
                take = min(4 - len(buf), end)
                buf += mv[:take]
                pos = take
                if len(buf) < 4:
                    return frames
                self._need = self._check(_SIZE.unpack_from(buf, 0)[0])
            take = min(4 + self._need - len(buf), end - pos)
            buf += mv[pos : pos + take]
            pos += take
            if len(buf) < 4 + self._need:
                return frames
            frames.append(bytes(buf[4:]))
            buf.clear()
            self._need = -1
        # Whole frames are sliced straight out of `data`; only a trailing
        # partial frame is copied into the buffer.
        while end - pos >= 4:
            size = self._check(_SIZE.unpack_from(mv, pos)[0])
            if end - pos - 4 < size:
                self._need = size
                break
            frames.append(bytes(mv[pos + 4 : pos + 4 + size]))
            pos += 4 + size
        if pos < end:
            buf += mv[pos:]
        return frames

    def _check(self, size: int) -> int:
        if size < 0:
            self._error = InvalidFrameError(f"invalid frame size {size}")
            raise self._error
        if size > self.max_size:
            self._error = FrameTooLargeError(
                f"frame of {size} bytes exceeds socket.request.max.bytes ({self.max_size})"
            )
            raise self._error
        return size


def size_prefix(size: int) -> bytes:
    """The 4-byte big-endian prefix for a frame of `size` payload bytes."""
    return _SIZE.pack(size)


def frame(payload: bytes | bytearray | memoryview) -> bytes:
    """Prefix `payload` with its size."""
    return _SIZE.pack(len(payload)) + bytes(payload)
