"""The wire/ decoders a hostile client reaches, as fuzz targets (hypothesis in `make test`,
atheris in `make torture`).

Contract under test: whatever the bytes, a decoder returns or raises a typed KafkaError
(which the service maps to an error code or a closed connection). Any other exception
(IndexError, struct.error, MemoryError, RecursionError, ...) is a bug; so is a decoded
result that cannot be re-encoded.
"""
from __future__ import annotations

import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from wire.compression import CompressionType, decompress  # noqa: E402
from wire.errors import KafkaError  # noqa: E402
from wire.framing import FrameReader  # noqa: E402
from wire.headers import parse_request_header  # noqa: E402
from wire.messages import decode_request  # noqa: E402
from wire.records import (  # noqa: E402
    decode_columns,
    decode_records,
    iter_batch_headers,
    parse_control_record,
    rebuild_records,
    record_layouts,
    records_section,
    validate_batch,
)

MAX_FRAME = 1 << 20


def fuzz_framing(data: bytes) -> None:
    reader = FrameReader(MAX_FRAME)
    # Feed in uneven pieces: the split points must not matter.
    cut = data[0] % 7 + 1 if data else 1
    for i in range(0, len(data), cut):
        for frame in reader.feed(data[i:i + cut]):
            assert len(frame) <= MAX_FRAME
    assert reader.buffered <= MAX_FRAME + 4


def fuzz_request(data: bytes) -> None:
    header, body_offset = parse_request_header(data)
    assert 0 <= body_offset <= len(data)
    decode_request(header, data, body_offset)


def fuzz_records(data: bytes) -> None:
    for bp in iter_batch_headers(data):
        if bp.position + bp.header.size_in_bytes > len(data):
            break
        header = validate_batch(data, bp.position, from_client=True)
        records = decode_records(data, bp.position)
        for record in records:
            if header.is_control:
                parse_control_record(record.key, record.value)
        # The other C walkers over the same bytes: they must agree with decode_records.
        lo, hi = -(2**63), 2**63 - 1
        columns = decode_columns(data, bp.position, lo, hi)
        assert columns[0] == [r.offset for r in records if lo <= r.offset < hi]
        section = records_section(data, bp.position, header)
        layouts = record_layouts(section, header.records_count)
        assert [lay[4] for lay in layouts] == [r.key for r in records]
        rebuild_records(section, [lay[:2] for lay in layouts], header.base_timestamp, 0, header.max_timestamp, False)


def fuzz_records_unchecked_crc(data: bytes) -> None:
    """Records behind a *valid* CRC: the CRC is recomputed so decoding goes past it."""
    from wire.records import compute_crc

    if len(data) < 61:
        return
    buf = bytearray(data)
    length = struct.unpack_from(">i", buf, 8)[0]
    if length < 49 or length + 12 > len(buf):
        struct.pack_into(">i", buf, 8, len(buf) - 12)
        length = len(buf) - 12
    buf[16] = 2  # magic v2
    struct.pack_into(">I", buf, 17, compute_crc(buf, 0, length))
    fuzz_records(bytes(buf))


def fuzz_decompress(data: bytes) -> None:
    if not data:
        return
    kind = CompressionType(data[0] % 5)
    decompress(kind, data[1:])


TARGETS = (fuzz_framing, fuzz_request, fuzz_records, fuzz_records_unchecked_crc, fuzz_decompress)


def run_one(target_index: int, data: bytes) -> None:
    """Run one target; typed KafkaErrors are the allowed outcome, anything else propagates."""
    try:
        TARGETS[target_index % len(TARGETS)](data)
    except KafkaError:
        pass
