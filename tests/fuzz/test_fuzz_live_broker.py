"""Hostile bytes against a live broker: it answers or closes the connection, never crashes or
hangs, and its memory stays bounded.

Requests are generated three ways: whole kio request entities of every API and version the
broker advertises (plus versions just outside), drawn by hypothesis from the schema types
and encoded properly, optionally mutated after encoding; valid headers with random bodies;
and Produce requests carrying random, mutated or almost-valid (re-CRC'd) record batches.
After every case the broker process must be alive; a case without an answer within the
deadline is accepted only if the broker still answers ApiVersions on a fresh connection
(a legitimately parked request, e.g. a long Fetch wait). The run prints its tally.
"""
from __future__ import annotations

import os
import socket
import struct
import time
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.static.primitive import Records

from asyncbroker.testing import BrokerProcess
from asyncbroker.testing.process_stats import fd_count, rss_kib
from wire.compression import CompressionType
from wire.headers import encode_request_header
from wire.messages import encode_request, request_class
from wire.records import Record, build_batch, compute_crc

pytestmark = pytest.mark.timeout(900)

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "0")) or None
ANSWER_DEADLINE = 3.0
RSS_LIMIT_KIB = 1_000_000  # 1 GB: far above a healthy broker, far below an unbounded buffer
SUPPORTED = {0: (3, 12), 1: (4, 17), 2: (1, 9), 3: (0, 12), 8: (2, 9), 9: (1, 9), 10: (0, 6), 11: (0, 9),
             12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 18: (0, 4), 19: (2, 7), 20: (1, 6),
             21: (0, 2), 22: (0, 5), 23: (2, 4), 32: (1, 4), 35: (1, 4), 37: (0, 3), 42: (0, 2), 44: (0, 1),
             47: (0, 0), 60: (0, 1), 61: (0, 0)}

TALLY: Counter[str] = Counter()


# -- record batches ---------------------------------------------------------------------------
@st.composite
def record_batches(draw: st.DrawFn) -> bytes:
    n = draw(st.integers(1, 5))
    now = int(time.time() * 1000)
    records = [Record(offset=i, timestamp=now + draw(st.integers(-10**6, 10**6)),
                      key=draw(st.none() | st.binary(max_size=20)), value=draw(st.none() | st.binary(max_size=200)),
                      headers=draw(st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=5)), max_size=2)))
               for i in range(n)]
    batch = bytearray(build_batch(records, compression=draw(st.sampled_from(list(CompressionType)))))
    mode = draw(st.integers(0, 3))
    if mode == 0:
        return bytes(batch)  # valid
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, len(batch) - 1))
        batch[pos] = draw(st.integers(0, 255))
    if mode == 1:
        return bytes(batch)  # bad CRC (almost always)
    if mode == 2 and len(batch) >= 61:
        length = struct.unpack_from(">i", batch, 8)[0]
        if 49 <= length <= len(batch) - 12:
            batch[16] = 2
            struct.pack_into(">I", batch, 17, compute_crc(batch, 0, length))  # mutated inside a valid CRC
        return bytes(batch)
    return bytes(batch) + draw(st.binary(max_size=64))  # trailing garbage / a partial batch


st.register_type_strategy(Records, record_batches() | st.binary(max_size=300))  # type: ignore[arg-type]


@st.composite
def mutate(draw: st.DrawFn, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, max(0, len(buf) - 1)))
        op = draw(st.integers(0, 3))
        if op == 0 and buf:
            buf[pos] = draw(st.integers(0, 255))
        elif op == 1:
            del buf[pos:pos + draw(st.integers(1, 8))]
        elif op == 2 and len(buf) >= pos + 4:
            struct.pack_into(">i", buf, pos, draw(st.sampled_from([-1, -2, 0x7FFFFFFF, 1 << 24, 0])))
        else:
            buf[pos:pos] = draw(st.binary(min_size=1, max_size=8))
    return bytes(buf)


@st.composite
def whole_requests(draw: st.DrawFn) -> tuple[str, bytes]:
    """(kind, frame payload)."""
    kind = draw(st.sampled_from(["entity", "entity", "mutated-entity", "random-body", "produce"]))
    if kind == "random-body":
        key = draw(st.sampled_from(sorted(SUPPORTED)) | st.integers(-2, 100))
        version = draw(st.integers(-1, 20))
        header = struct.pack(">hhi", key, version, draw(st.integers(-2**31, 2**31 - 1)))
        header += draw(st.sampled_from([b"", b"\x00\x01c", b"\xff\xff", b"\x00\x01c\x00", b"\x7f\xff"]))
        return kind, header + draw(st.binary(max_size=400))
    if kind == "produce":
        key, version = 0, draw(st.integers(3, 12))
    else:
        key = draw(st.sampled_from(sorted(SUPPORTED)))
        lo, hi = SUPPORTED[key]
        version = draw(st.integers(lo, hi))
    entity = draw(st.from_type(request_class(key, version)))
    header = encode_request_header(key, version, draw(st.integers(0, 2**31 - 1)),
                                   draw(st.none() | st.text(max_size=20)))
    try:
        payload = header + encode_request(entity)
    except Exception:  # noqa: BLE001 - a value the schema cannot encode: send the header alone
        payload = header
    if kind == "mutated-entity":
        payload = draw(mutate(payload))
    return f"{kind}:{key}", payload


# -- the broker under test --------------------------------------------------------------------
@pytest.fixture(scope="module")
def broker() -> BrokerProcess:
    with BrokerProcess(["socket.request.max.bytes=1048576", "num.partitions=1"]) as b:
        yield b


PROBE_CID = 0x5EED
PROBE = encode_request_header(18, 0, PROBE_CID, "probe")


def exchange(bootstrap: str, payload: bytes, *, probe: bool = True) -> str:
    """Send one framed request, then (pipelined) an ApiVersions probe.

    'answered' when the probe's answer arrives (the fuzz request was answered or, for acks=0,
    silently served before it), 'closed' when the broker closed the connection, 'silent' when
    nothing came by the deadline (a parked request such as a long Fetch wait).
    """
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=ANSWER_DEADLINE) as sock:
        data = struct.pack(">i", len(payload)) + payload
        if probe:
            data += struct.pack(">i", len(PROBE)) + PROBE
        try:
            sock.sendall(data)
            buf = b""
            while True:
                while len(buf) >= 8:
                    size, cid = struct.unpack_from(">ii", buf)
                    if len(buf) < 4 + size:
                        break
                    if cid == PROBE_CID or not probe:
                        return "answered"
                    buf = buf[4 + size:]
                chunk = sock.recv(65536)
                if not chunk:
                    return "closed"
                buf += chunk
        except (ConnectionResetError, BrokenPipeError):
            return "closed"
        except TimeoutError:
            return "silent"


def still_serving(bootstrap: str) -> bool:
    try:
        return exchange(bootstrap, PROBE, probe=False) == "answered"
    except OSError:
        return False


def check_case(broker: BrokerProcess, kind: str, payload: bytes) -> None:
    try:
        outcome = exchange(broker.bootstrap, payload)
    except OSError:
        outcome = "closed"
    TALLY["cases"] += 1
    TALLY[outcome] += 1
    assert broker.returncode is None, f"broker died on a {kind} case: {payload[:200]!r}\n{broker.output()[-3000:]}"
    if outcome == "silent":
        assert still_serving(broker.bootstrap), f"broker hangs after a {kind} case: {payload[:200]!r}"


@settings(max_examples=EXAMPLES or 250, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(whole_requests())
def test_fuzz_whole_requests(broker: BrokerProcess, case: tuple[str, bytes]) -> None:
    kind, payload = case
    check_case(broker, kind, payload)


@settings(max_examples=EXAMPLES or 60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.lists(whole_requests(), min_size=2, max_size=6))
def test_fuzz_pipelined_requests(broker: BrokerProcess, cases: list[tuple[str, bytes]]) -> None:
    """Several requests in one write: answered in order or the connection closes."""
    host, port = broker.bootstrap.rsplit(":", 1)
    blob = b"".join(struct.pack(">i", len(p)) + p for _, p in cases)
    with socket.create_connection((host, int(port)), timeout=ANSWER_DEADLINE) as sock:
        outcome = "answered"
        try:
            sock.sendall(blob)
            sock.shutdown(socket.SHUT_WR)  # half-close: the broker answers what it got, then closes
            while sock.recv(65536):
                pass
        except TimeoutError:
            outcome = "silent"
        except OSError:
            pass
    TALLY["cases"] += 1
    TALLY["pipelined"] += 1
    if outcome == "silent":
        assert still_serving(broker.bootstrap), "broker hangs after pipelined cases"
        TALLY["silent"] += 1
    assert broker.returncode is None, broker.output()[-3000:]


def test_fuzz_broker_survived_with_bounded_memory(broker: BrokerProcess, capsys: pytest.CaptureFixture[str]) -> None:
    """Runs after the fuzz tests (file order): the broker serves, its RSS and fds are bounded."""
    assert broker.returncode is None
    assert still_serving(broker.bootstrap)
    pid = broker.process.pid  # type: ignore[union-attr]
    rss, fds = rss_kib(pid), fd_count(pid)
    with capsys.disabled():
        print(f"\nfuzz: {TALLY['cases']} cases ({TALLY['answered']} answered, {TALLY['closed']} closed, "
              f"{TALLY['silent']} parked, {TALLY['pipelined']} pipelined batches), 0 crashes, 0 hangs; "
              f"broker RSS {rss // 1024} MiB, {fds} fds")
    assert rss < RSS_LIMIT_KIB
