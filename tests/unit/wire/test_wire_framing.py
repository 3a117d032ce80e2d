"""FrameReader: any chunking through either interface (feed, or the BufferedProtocol
get_buffer/buffer_updated pair), typed errors for bad sizes, bounded buffering,
large frames received in place, and read-only frames that kio can decode."""

from __future__ import annotations

import datetime
import importlib
import random
import struct
import subprocess
import sys
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.static.primitive import i32Timedelta

from wire._receive_buffer import receive_buffer
from wire.errors import KafkaError
from wire.framing import (
    DEFAULT_MAX_FRAME_SIZE,
    SCRATCH_SIZE,
    FrameReader,
    FrameTooLargeError,
    FramingError,
    InvalidFrameError,
    frame,
    patchable,
    size_prefix,
)
from wire.headers import encode_request_header, parse_request_header
from wire.messages import ApiKey, decode_request, encode_request
from wire.records import Record, build_batch


def _feed_in_chunks(reader: FrameReader, stream: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
    out: list[bytes] = []
    for a, b in zip(points, points[1:]):
        out.extend(bytes(f) for f in reader.feed(stream[a:b]))
    return out


def _receive(
    reader: FrameReader,
    data: bytes,
    next_size: Callable[[], int],
    check: Callable[[FrameReader], None] = lambda r: None,
) -> list[bytes | memoryview]:
    """Play a transport: recv_into each `get_buffer()` at most `next_size()` bytes."""
    out: list[bytes | memoryview] = []
    pos = 0
    while pos < len(data):
        buf = reader.get_buffer(-1)
        assert len(buf) > 0 and not buf.readonly
        n = min(len(buf), len(data) - pos, max(1, next_size()))
        buf[:n] = data[pos : pos + n]
        pos += n
        out += reader.buffer_updated(n)
        check(reader)
    return out


def _assert_read_only(frames: list[bytes | memoryview]) -> None:
    # kio's native decoder rejects writable buffers.
    for f in frames:
        assert memoryview(f).readonly, type(f)


# -- arbitrary chunking, both interfaces -----------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    payloads=st.lists(st.binary(max_size=300), max_size=20),
    cuts=st.lists(st.integers(0, 10_000), max_size=30),
    as_view=st.booleans(),
    scratch=st.sampled_from([4, 5, 17, 64, 301, SCRATCH_SIZE]),
)
def test_feed_survives_arbitrary_chunking(
    payloads: list[bytes], cuts: list[int], as_view: bool, scratch: int
) -> None:
    stream = b"".join(frame(p) for p in payloads)
    reader = FrameReader(max_size=300, scratch_size=scratch)
    points = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
    got: list[bytes | memoryview] = []
    source = memoryview(bytearray(stream)) if as_view else stream
    for a, b in zip(points, points[1:]):
        got += reader.feed(source[a:b])
    _assert_read_only(got)
    assert [bytes(f) for f in got] == payloads
    assert reader.buffered == 0


@settings(max_examples=150, deadline=None)
@given(
    payloads=st.lists(st.binary(max_size=300), max_size=20),
    recv_sizes=st.lists(st.integers(1, 700), min_size=1, max_size=30),
    scratch=st.sampled_from([4, 5, 17, 64, 301, SCRATCH_SIZE]),
)
def test_buffered_protocol_survives_arbitrary_recv_sizes(
    payloads: list[bytes], recv_sizes: list[int], scratch: int
) -> None:
    stream = b"".join(frame(p) for p in payloads)
    reader = FrameReader(max_size=300, scratch_size=scratch)
    sizes = iter(recv_sizes * (len(stream) + 1))
    got = _receive(reader, stream, lambda: next(sizes), lambda r: _check_bounded(r, 300))
    _assert_read_only(got)
    assert [bytes(f) for f in got] == payloads
    assert reader.buffered == 0


def _check_bounded(reader: FrameReader, max_size: int) -> None:
    assert reader.buffered <= max_size + 4


@pytest.mark.parametrize("seed", range(5))
def test_recv_sizes_around_the_scratch_buffer(seed: int) -> None:
    """Real scratch size, frames just below/at/above it, recvs from 1 byte to 1 MiB."""
    rng = random.Random(seed)
    lengths = [0, 1, 10, 1000, SCRATCH_SIZE - 4, SCRATCH_SIZE - 3, SCRATCH_SIZE, 3 * SCRATCH_SIZE + 17]
    payloads = [rng.randbytes(rng.choice(lengths)) for _ in range(40)]
    data = b"".join(frame(p) for p in payloads)
    got = _receive(FrameReader(10 << 20), data, lambda: rng.choice([1, 3, 7, 100, 4096, 65536, 1 << 20]))
    _assert_read_only(got)
    assert [bytes(f) for f in got] == payloads
    cuts = sorted(rng.randrange(len(data)) for _ in range(60))
    assert _feed_in_chunks(FrameReader(10 << 20), data, cuts) == payloads


def test_byte_by_byte() -> None:
    payloads = [b"", b"a", b"hello" * 100]
    stream = b"".join(frame(p) for p in payloads)
    reader = FrameReader()
    got = [f for i in range(len(stream)) for f in reader.feed(stream[i : i + 1])]
    assert got == payloads
    got = _receive(FrameReader(scratch_size=8), stream, lambda: 1)
    assert [bytes(f) for f in got] == payloads


def test_frame_and_prefix() -> None:
    assert frame(b"abc") == b"\x00\x00\x00\x03abc"
    assert size_prefix(258) == b"\x00\x00\x01\x02"
    assert DEFAULT_MAX_FRAME_SIZE == 104857600


def test_frame_exactly_at_max_is_accepted() -> None:
    reader = FrameReader(max_size=10)
    assert reader.feed(frame(b"x" * 10)) == [b"x" * 10]
    reader = FrameReader(max_size=100_000)
    assert [bytes(f) for f in reader.feed(frame(b"y" * 100_000))] == [b"y" * 100_000]


# -- bad sizes ---------------------------------------------------------------------


def _feed_all(reader: FrameReader, data: bytes) -> list[bytes | memoryview]:
    return reader.feed(data)


def _receive_all(reader: FrameReader, data: bytes) -> list[bytes | memoryview]:
    return _receive(reader, data, lambda: 3)


both_interfaces = pytest.mark.parametrize("deliver", [_feed_all, _receive_all], ids=["feed", "get_buffer"])


@both_interfaces
def test_oversized_frame_is_rejected_from_the_prefix_alone(deliver: Callable[..., list]) -> None:
    reader = FrameReader(max_size=1000)
    with pytest.raises(FrameTooLargeError) as info:
        deliver(reader, struct.pack(">i", 1001))
    assert isinstance(info.value, FramingError) and isinstance(info.value, KafkaError)
    assert reader.buffered <= 4
    # poisoned: the stream position is lost, the connection must close
    with pytest.raises(FrameTooLargeError):
        reader.feed(b"more")
    with pytest.raises(FrameTooLargeError):
        reader.buffer_updated(0)


@both_interfaces
def test_oversized_frame_after_good_frames_in_one_chunk(deliver: Callable[..., list]) -> None:
    reader = FrameReader(max_size=10)
    with pytest.raises(FrameTooLargeError):
        deliver(reader, frame(b"ok") + struct.pack(">i", 2**31 - 1) + b"x" * 50)
    with pytest.raises(FrameTooLargeError):
        deliver(FrameReader(1000), struct.pack(">i", 1001) + b"x")


@both_interfaces
@pytest.mark.parametrize("size", [-1, -(2**31)])
def test_negative_size(deliver: Callable[..., list], size: int) -> None:
    reader = FrameReader()
    with pytest.raises(InvalidFrameError):
        deliver(reader, frame(b"a") + struct.pack(">i", size))
    with pytest.raises(InvalidFrameError):
        deliver(FrameReader(1000), struct.pack(">i", -1))


def test_negative_size_split_across_feeds() -> None:
    reader = FrameReader()
    reader.feed(frame(b"abc")[:5])
    reader.feed(b"bc\xff")
    with pytest.raises(InvalidFrameError):
        reader.feed(b"\xff\xff\xff")


# -- bounded memory ----------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(
    data=st.binary(max_size=400),
    cuts=st.lists(st.integers(0, 1000), max_size=10),
    recv=st.integers(1, 100),
    scratch=st.sampled_from([4, 16, SCRATCH_SIZE]),
)
def test_garbage_never_buffers_more_than_max_plus_prefix(data: bytes, cuts: list[int], recv: int, scratch: int) -> None:
    reader = FrameReader(max_size=64, scratch_size=scratch)
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    try:
        for a, b in zip(points, points[1:]):
            for f in reader.feed(data[a:b]):
                assert len(f) <= 64
            assert reader.buffered <= 64 + 4
    except FramingError:
        pass
    reader = FrameReader(max_size=64, scratch_size=scratch)
    try:
        for f in _receive(reader, data, lambda: recv, lambda r: _check_bounded(r, 64)):
            assert len(f) <= 64
    except FramingError:
        pass


def test_scratch_is_never_larger_than_one_max_frame() -> None:
    reader = FrameReader(max_size=10)
    assert len(reader.get_buffer()) == 14


def test_large_frame_assembled_from_many_chunks() -> None:
    payload = bytes(range(256)) * 8192  # 2 MiB
    stream = frame(payload)
    reader = FrameReader()
    got = []
    for i in range(0, len(stream), 65536):
        got.extend(reader.feed(stream[i : i + 65536]))
        assert reader.buffered <= len(payload) + 4
    assert [bytes(f) for f in got] == [payload]
    _assert_read_only(got)


def test_large_frame_is_received_in_place() -> None:
    """Zero copy: after the prefix, the socket writes into the frame's own buffer,
    which is handed out (read-only) as the frame; the buffer offered never
    reaches past the frame, so the next frame's bytes stay out of it."""
    big = bytes(range(256)) * 1024  # 256 KiB
    data = frame(big) + frame(b"next")
    reader = FrameReader()
    first = reader.get_buffer()
    first[:100] = data[:100]
    assert reader.buffer_updated(100) == []
    target = reader.get_buffer()
    assert len(target) == len(big) - 96  # exactly the missing bytes
    owner = target.obj
    pos = 100
    frames: list[bytes | memoryview] = []
    while not frames:
        buf = reader.get_buffer()
        assert buf.obj is owner
        n = min(len(buf), 50_000)
        buf[:n] = data[pos : pos + n]
        pos += n
        frames = reader.buffer_updated(n)
    assert pos == 4 + len(big)
    [got] = frames
    assert isinstance(got, memoryview) and got.readonly and got.obj is owner
    assert got == big
    assert reader.buffered == 0
    assert [bytes(f) for f in reader.feed(data[pos:])] == [b"next"]


def test_receive_buffer_is_a_bytearray_of_the_size_asked() -> None:
    assert [type(receive_buffer(n)) for n in (0, 1, 1 << 20)] == [bytearray] * 3
    assert [len(receive_buffer(n)) for n in (0, 1, 1 << 20)] == [0, 1, 1 << 20]
    with pytest.raises(ValueError, match=">= 0"):
        receive_buffer(-1)


def test_large_frames_show_only_their_own_bytes() -> None:
    """A large frame's buffer is not zero-filled, and the allocator hands the memory of a freed
    frame to the next one: each frame still holds exactly the bytes sent for it, whichever
    sizes the socket reads come in, and a dropped partial frame shows in none."""
    reader = FrameReader()
    for round_, fill in enumerate((0xAA, 0x00, 0x55, 0x00)):
        payload = bytes([fill]) * (300_000 - round_)  # shrinking: the same memory fits again
        stream = frame(payload)
        got: list[bytes | memoryview] = []
        for i in range(0, len(stream), 7_777):
            got += reader.feed(stream[i : i + 7_777])
        assert len(got) == 1 and got[0] == payload and len(got[0]) == len(payload)
        del got  # the frame's buffer goes back to the allocator
    partial = FrameReader()
    partial.feed(frame(b"\xee" * 200_000)[:150_000])
    del partial  # a connection closed mid-frame
    [last] = reader.feed(frame(bytes(250_000)))
    assert last == bytes(250_000)


def test_only_a_large_frame_is_patchable_and_in_its_own_buffer() -> None:
    """A large frame's buffer is its own: patchable gives a writable view of that memory, so a
    change shows through the frame itself. A small frame is bytes (a copy out of the scratch
    space the next frames reuse) and comes back as it is."""
    big, small = bytes(range(256)) * 400, b"small"
    [large_frame, small_frame] = FrameReader().feed(frame(big) + frame(small))
    view = patchable(large_frame)
    assert isinstance(view, memoryview) and not view.readonly and view.obj is large_frame.obj
    view[:4] = b"\xff\xff\xff\xff"
    assert bytes(large_frame[:4]) == b"\xff\xff\xff\xff" and large_frame[4:] == big[4:]
    assert patchable(small_frame) is small_frame and isinstance(small_frame, bytes)
    # A view of part of a buffer is not the frame's own: it stays as it is.
    shared = memoryview(bytearray(big)).toreadonly()[10:]
    assert patchable(shared) is shared


@pytest.mark.parametrize("value_size", [100, 1000])  # frame below / above the scratch buffer
def test_produce_records_of_a_large_frame_are_writable_slices_of_it(value_size: int) -> None:
    batch = build_batch([Record(i, 1000 + i, None, bytes([i % 256]) * value_size) for i in range(200)])
    [f] = FrameReader().feed(frame(_produce_frame(9, batch)))
    header, offset = parse_request_header(f)
    records = decode_request(header, f, offset).topic_data[0].partition_data[0].records
    assert bytes(records) == batch
    if isinstance(f, bytes):
        assert value_size == 100 and isinstance(records, bytes)
    else:
        assert value_size == 1000 and isinstance(records, memoryview) and not records.readonly
        assert records.obj is f.obj  # a slice of the frame's buffer, not a copy


def test_retained_receive_buffers_stop_the_page_faults() -> None:
    """Four 1 MiB buffers live at once, freed, again and again (a producer's pipelined batches):
    glibc's default hands the freed heap back each round and page-faults it in again the next;
    with retain_receive_buffers the same pages serve every round. In a fresh process, since the
    setting is process-wide."""
    script = (
        "import resource, sys\n"
        "from wire.framing import retain_receive_buffers\n"
        "from wire._receive_buffer import receive_buffer\n"
        "if sys.argv[1] == 'retain':\n"
        "    assert retain_receive_buffers(4 << 20)\n"
        "def round_():\n"
        "    bufs = [receive_buffer(1 << 20) for _ in range(4)]\n"
        "    for b in bufs:\n"
        "        b[::4096] = bytes(256)\n"
        "for _ in range(3):\n"
        "    round_()\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
        "for _ in range(20):\n"
        "    round_()\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)\n"
    )
    faults = {mode: int(subprocess.run([sys.executable, "-c", script, mode], check=True, capture_output=True,
                                       text=True, timeout=60).stdout) for mode in ("default", "retain")}
    assert faults["default"] >= 20 * 256  # at least a megabyte's pages each round
    assert faults["retain"] < 256  # not one round's worth


def test_released_receive_buffers_leave_the_process() -> None:
    """What malloc keeps under retain_receive_buffers goes back to the kernel on
    release_receive_buffers: the process's resident memory falls by it."""
    script = (
        "from wire.framing import release_receive_buffers, retain_receive_buffers\n"
        "from wire._receive_buffer import receive_buffer\n"
        "def rss():\n"
        "    with open('/proc/self/status') as f:\n"
        "        return next(int(l.split()[1]) for l in f if l.startswith('VmRSS:'))\n"
        "assert retain_receive_buffers(4 << 20)\n"
        "bufs = [receive_buffer(1 << 20) for _ in range(6)]\n"
        "for b in bufs:\n"
        "    b[::4096] = bytes(256)\n"
        "del b, bufs\n"
        "kept = rss()\n"
        "released = release_receive_buffers()\n"
        "print(released, kept - rss())\n"
    )
    released, freed_kb = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True,
                                        timeout=60).stdout.split()
    assert released == "True" and int(freed_kb) >= 5 * 1024


# -- read-only frames reach kio's decoder ------------------------------------------


def _produce_frame(version: int, records: bytes) -> bytes:
    m = importlib.import_module(f"kio.schema.produce.v{version}.request")
    req = m.ProduceRequest(
        transactional_id=None,
        acks=1,
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
        topic_data=(m.TopicProduceData(name="t", partition_data=(m.PartitionProduceData(index=0, records=records),)),),
    )
    return encode_request_header(ApiKey.PRODUCE, version, 5, "producer") + encode_request(req)


@pytest.mark.parametrize("version", [3, 9])
@pytest.mark.parametrize("value_size", [100, 1000])  # frame below / above the scratch buffer
def test_multi_chunk_produce_frame_decodes_with_kio(version: int, value_size: int) -> None:
    batch = build_batch([Record(i, 1000 + i, None, bytes([i % 256]) * value_size) for i in range(200)])
    payload = _produce_frame(version, batch)
    stream = frame(payload) * 2
    sizes = iter([1, 2, 3, 1000, 7000, 40_000] * 100)
    received = _receive(FrameReader(), stream, lambda: next(sizes))
    fed = FrameReader().feed(stream[:50]) + FrameReader().feed(stream)  # first call: nothing complete
    for f in received + fed:
        header, offset = parse_request_header(f)
        request = decode_request(header, f, offset)
        assert bytes(request.topic_data[0].partition_data[0].records) == batch
    assert len(received) == 2 and len(fed) == 2


# -- reserve: a budget that may refuse a frame (queued.max.request.bytes) -----------------------------

class _Budget:
    """A reserve callback that grants while `left` > 0 (non-strict, as Kafka's pool) and logs asks."""

    def __init__(self, left: int) -> None:
        self.left = left
        self.asked: list[int] = []

    def __call__(self, size: int) -> bool:
        self.asked.append(size)
        if self.left <= 0:
            return False
        self.left -= size
        return True


def test_a_refused_frame_waits_in_the_reader_until_asked_again() -> None:
    payloads = [b"a" * 10, b"b" * 20, b"c" * 30]
    r = FrameReader(1 << 20)
    budget = r.reserve = _Budget(25)
    assert r.feed(b"".join(frame(p) for p in payloads)) == [payloads[0], payloads[1]]  # 25 - 10 - 20 < 0
    assert budget.asked == [10, 20, 30]
    assert r.buffered == 4 + 30  # the refused frame, whole, stays
    assert r.buffer_updated(0) == []  # still refused
    budget.left = 1
    assert r.buffer_updated(0) == [payloads[2]]
    assert budget.asked == [10, 20, 30, 30, 30]
    assert r.buffered == 0


def test_reserve_is_asked_once_per_frame_however_it_arrives() -> None:
    payloads = [bytes([n]) * n for n in range(1, 40)] + [b"L" * (SCRATCH_SIZE * 3)]
    data = b"".join(frame(p) for p in payloads)
    r = FrameReader(1 << 20)
    budget = r.reserve = _Budget(1 << 30)
    out: list[bytes] = []
    for i in range(0, len(data), 7):
        out += [bytes(f) for f in r.feed(data[i:i + 7])]
    assert out == payloads
    assert budget.asked == [len(p) for p in payloads]


def test_a_large_frame_is_asked_for_before_its_buffer_exists() -> None:
    big = b"L" * (SCRATCH_SIZE * 2)
    data = frame(big)
    r = FrameReader(1 << 20)
    budget = r.reserve = _Budget(0)
    buf = r.get_buffer()
    buf[:1000] = data[:1000]
    assert r.buffer_updated(1000) == []
    assert budget.asked == [len(big)]
    assert r.buffered == 1000  # its first bytes wait in the scratch: no buffer of its size yet
    budget.left = 1
    assert r.buffer_updated(0) == []  # granted: the frame now has its own buffer
    assert budget.asked == [len(big), len(big)]
    assert r.feed(data[1000:]) == [big]
    assert budget.asked == [len(big), len(big)]
