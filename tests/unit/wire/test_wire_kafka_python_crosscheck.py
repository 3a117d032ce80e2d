"""Cross-check RecordBatch v2 against kafka-python, both directions, every codec.

kafka-python implements the record format (and the xerial snappy framing)
independently. Its codec back-ends (python-snappy, lz4, zstandard) are not
dependencies of this project; when one is missing, the fixture plugs in the
raw codec primitive from cramjam, so kafka-python's own batch layout and
framing code are still what is exercised.
"""

from __future__ import annotations

import types
import warnings

import cramjam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

with warnings.catch_warnings():
    # kafka-python loads its protocol JSON through deprecated importlib.resources calls.
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.codec
    import kafka.record.default_records as kdr
    from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from wire.compression import CompressionType
from wire.records import ControlRecordType, Record, build_batch, build_control_batch, decode_records, validate_batch

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

CODECS = list(CompressionType)


@pytest.fixture(autouse=True)
def kafka_python_codecs(monkeypatch: pytest.MonkeyPatch) -> None:
    if not kafka.codec.has_snappy():
        monkeypatch.setattr(
            kafka.codec,
            "snappy",
            types.SimpleNamespace(
                compress=lambda b: bytes(cramjam.snappy.compress_raw(bytes(b))),
                decompress=lambda b: bytes(cramjam.snappy.decompress_raw(bytes(b))),
            ),
        )
    if not kafka.codec.has_lz4():

        def lz4_frame(payload: bytes) -> bytes:
            c = cramjam.lz4.Compressor(block_linked=False)
            c.compress(bytes(payload))
            return bytes(c.finish())

        monkeypatch.setattr(kafka.codec, "lz4", types.SimpleNamespace())
        monkeypatch.setattr(kdr, "lz4_encode", lz4_frame)
        monkeypatch.setattr(kdr, "lz4_decode", lambda b: bytes(cramjam.lz4.decompress(bytes(b))))
    if not kafka.codec.has_zstd():
        monkeypatch.setattr(kafka.codec, "zstd", types.SimpleNamespace())
        monkeypatch.setattr(kdr, "zstd_encode", lambda b: bytes(cramjam.zstd.compress(bytes(b))))
        monkeypatch.setattr(kdr, "zstd_decode", lambda b: bytes(cramjam.zstd.decompress(bytes(b))))


records_st = st.lists(
    st.tuples(
        st.integers(-100_000, 100_000),  # timestamp delta from a base
        st.none() | st.binary(max_size=20),
        st.none() | st.binary(max_size=60),
        st.lists(st.tuples(st.text(max_size=6), st.none() | st.binary(max_size=8)), max_size=2),
    ),
    min_size=1,
    max_size=15,
)


def _records(raw: list, base_offset: int) -> list[Record]:
    return [
        Record(base_offset + i, 1_600_000_000_000 + ts, key, value, list(headers))
        for i, (ts, key, value, headers) in enumerate(raw)
    ]


def _kafka_python_view(batch: DefaultRecordBatch) -> list[Record]:
    return [
        Record(r.offset, r.timestamp, r.key, r.value, [(k, v) for k, v in r.headers]) for r in batch
    ]


@pytest.mark.parametrize("codec", CODECS)
@settings(max_examples=15, deadline=None)
@given(raw=records_st, base_offset=st.integers(0, 2**40), transactional=st.booleans())
def test_kafka_python_built_batches_parse_here(codec: CompressionType, raw: list, base_offset: int, transactional: bool) -> None:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=int(codec),
        is_transactional=transactional,
        producer_id=99 if transactional else -1,
        producer_epoch=1 if transactional else -1,
        base_sequence=5 if transactional else -1,
        batch_size=1 << 22,
    )
    records = _records(raw, 0)
    for r in records:
        assert builder.append(r.offset, r.timestamp, r.key, r.value, r.headers) is not None
    data = bytearray(builder.build())
    data[0:8] = base_offset.to_bytes(8, "big")  # baseOffset is outside the CRC
    header = validate_batch(data, from_client=True)
    # kafka-python stores the batch uncompressed when compressing does not shrink it
    assert header.compression in (codec, CompressionType.NONE)
    assert header.is_transactional is transactional
    assert header.records_count == len(records)
    expected = [Record(r.offset + base_offset, r.timestamp, r.key, r.value, r.headers) for r in records]
    assert decode_records(data) == expected


@pytest.mark.parametrize("codec", CODECS)
@settings(max_examples=15, deadline=None)
@given(raw=records_st, base_offset=st.integers(0, 2**40))
def test_batches_built_here_parse_in_kafka_python(codec: CompressionType, raw: list, base_offset: int) -> None:
    records = _records(raw, base_offset)
    data = build_batch(records, base_offset=base_offset, compression=codec, partition_leader_epoch=3)
    batch = DefaultRecordBatch(bytearray(data))
    assert batch.validate_crc()
    assert batch.compression_type == int(codec)
    assert batch.base_offset == base_offset
    assert batch.next_offset == records[-1].offset + 1
    assert batch.max_timestamp == max(r.timestamp for r in records)
    assert _kafka_python_view(batch) == records


@pytest.mark.parametrize("codec", CODECS)
def test_large_batches_both_directions(codec: CompressionType) -> None:
    records = [Record(i, 1_700_000_000_000 + i, b"k%d" % i, bytes(range(100)) + b"%d" % i) for i in range(11_000)]
    ours = build_batch(records, compression=codec)
    batch = DefaultRecordBatch(bytearray(ours))
    assert batch.validate_crc()
    assert _kafka_python_view(batch) == records
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=int(codec), is_transactional=False,
        producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=1 << 24,
    )
    for r in records:
        builder.append(r.offset, r.timestamp, r.key, r.value, [])
    theirs = bytes(builder.build())
    assert validate_batch(theirs, from_client=True).compression is codec
    assert decode_records(theirs) == records


def test_uncompressed_encoding_is_byte_identical_to_kafka_python() -> None:
    records = [Record(i, 1000 - i, None if i % 2 else b"k", b"v" * i, [("a", b"b")]) for i in range(20)]
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=False,
        producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=1 << 20,
    )
    for r in records:
        builder.append(r.offset, r.timestamp, r.key, r.value, r.headers)
    # kafka-python writes partitionLeaderEpoch 0 (outside the CRC); so do we here.
    assert build_batch(records, partition_leader_epoch=0) == bytes(builder.build())


def test_control_batch_recognised_by_kafka_python() -> None:
    data = build_control_batch(ControlRecordType.ABORT, producer_id=5, producer_epoch=2, timestamp=77)
    batch = DefaultRecordBatch(bytearray(data))
    assert batch.validate_crc()
    assert batch.is_control_batch and batch.is_transactional
    assert batch.producer_id == 5
