"""LogValidator's one-pass path for the usual produce (_usual_client_batch) against its full
validation: for every batch, valid or broken, the two give the same result or raise the same
error, and the one-pass path takes the usual batches (not only declines)."""
from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage.log_config import LogConfig
from storage.log_validator import LogValidator, header_to_restore, restore_header
from storage_testlib import BASE_TS, batch
from wire.compression import CompressionType
from wire.records import (
    ATTRIBUTES_OFFSET,
    BATCH_HEADER_SIZE,
    CONTROL_FLAG_MASK,
    TIMESTAMP_TYPE_MASK,
    TimestampType,
    compute_crc,
)

NOW = BASE_TS + 1_000

CONFIGS = {
    "default": LogConfig(),
    "after bound": LogConfig(message_timestamp_after_max_ms=500),
    "before bound": LogConfig(message_timestamp_before_max_ms=60_000),
    "small max": LogConfig(max_message_bytes=200),
    "LogAppendTime": LogConfig(message_timestamp_type="LogAppendTime"),
    "compacted": LogConfig(cleanup_policy=("compact",)),
    "topic codec": LogConfig(compression_type="gzip"),
}

# (offset in the batch, struct format) of each header field a mutation may rewrite.
FIELDS = {
    "base_offset": (0, ">q"), "batch_length": (8, ">i"), "magic": (16, ">b"), "crc": (17, ">I"),
    "attributes": (21, ">h"), "last_offset_delta": (23, ">i"), "max_timestamp": (35, ">q"),
    "producer_id": (43, ">q"), "base_sequence": (53, ">i"), "records_count": (57, ">i"),
}


def _outcome(validator: LogValidator, records: bytes, *, usual: bool) -> Any:
    """The validation's result, or the error it raised (type and message)."""
    validator._usual_possible = usual and validator.per_batch and not validator.config.log_append_time
    try:
        return validator.validate_and_assign_offsets(bytearray(records), 7, NOW, 3, in_place=True)
    except Exception as exc:  # noqa: BLE001 - compared below
        return type(exc), str(exc), getattr(exc, "record_errors", None)


def _assert_same(config: LogConfig, records: bytes) -> Any:
    validator = LogValidator(config)
    full = _outcome(validator, records, usual=False)
    one_pass = _outcome(validator, records, usual=True)
    assert one_pass == full
    return full


def _resigned(records: bytearray) -> bytes:
    struct.pack_into(">I", records, 17, compute_crc(records, 0, len(records) - 12))
    return bytes(records)


USUAL = [
    batch(1),
    batch(5, key=None),
    batch(3, compression=CompressionType.GZIP),
    batch(3, compression=CompressionType.LZ4),
    batch(3, compression=CompressionType.ZSTD),
    batch(2, producer_id=9, producer_epoch=0, base_sequence=0),
    batch(2, producer_id=9, producer_epoch=0, base_sequence=0, is_transactional=True),
    batch(1, ts=-1),  # no timestamp: the log's max timestamp stays -1
]


@pytest.mark.parametrize("records", USUAL)
def test_usual_batches_take_the_one_pass_path_with_the_full_result(records: bytes) -> None:
    validator = LogValidator(LogConfig())
    assert validator._usual_client_batch(bytearray(records), 7, NOW, 3) is not None
    result = _assert_same(LogConfig(), records)
    assert result.first_offset == 7 and result.batches[0][0].base_offset == 7


def test_the_one_pass_path_declines_what_needs_more_than_the_header() -> None:
    """A topic whose rules read records, and batches the full validation rewrites or refuses."""
    usual = batch(2)
    for name in ("before bound", "LogAppendTime", "compacted", "topic codec"):
        validator = LogValidator(CONFIGS[name])
        assert not validator._usual_possible or validator._usual_client_batch(bytearray(usual), 0, NOW, 0) is None, name
    validator = LogValidator(LogConfig())
    log_append = batch(2, timestamp_type=TimestampType.LOG_APPEND_TIME)
    control = bytearray(usual)
    struct.pack_into(">h", control, ATTRIBUTES_OFFSET, CONTROL_FLAG_MASK)
    for records in (log_append, _resigned(control), usual + batch(1), usual[:-1], b"", usual[:BATCH_HEADER_SIZE - 1]):
        before = bytearray(records)
        assert validator._usual_client_batch(before, 0, NOW, 0) is None
        assert before == bytearray(records)  # untouched


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
@pytest.mark.parametrize("records", USUAL + [
    batch(2, timestamp_type=TimestampType.LOG_APPEND_TIME),
    batch(2, ts=NOW + 10_000),
    batch(1, ts=BASE_TS - 10**9),
    batch(40, value_size=20),
    batch(2) + batch(1),
])
def test_each_config_and_batch_validates_alike(config: LogConfig, records: bytes) -> None:
    _assert_same(config, records)


@settings(max_examples=400, deadline=None)
@given(records=st.sampled_from(USUAL), config=st.sampled_from(sorted(CONFIGS)),
       field=st.sampled_from(sorted(FIELDS)), value=st.integers(-2**63, 2**63 - 1),
       resign=st.booleans())
def test_a_changed_header_field_validates_alike(records: bytes, config: str, field: str, value: int,
                                                 resign: bool) -> None:
    """Any header field rewritten (CRC fixed up or not): the same result or the same error."""
    offset, fmt = FIELDS[field]
    bits = struct.calcsize(fmt) * 8
    lo, hi = (0, 2**bits - 1) if fmt.endswith("I") else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    changed = bytearray(records)
    struct.pack_into(fmt, changed, offset, lo + (value - lo) % (hi - lo + 1))
    if resign and field != "crc" and len(changed) >= BATCH_HEADER_SIZE:
        changed = bytearray(_resigned(changed))
    _assert_same(CONFIGS[config], bytes(changed))


@settings(max_examples=200, deadline=None)
@given(records=st.sampled_from(USUAL), position=st.integers(0, 200), byte=st.integers(0, 255),
       cut=st.integers(0, 5))
def test_changed_or_cut_bytes_validate_alike(records: bytes, position: int, byte: int, cut: int) -> None:
    changed = bytearray(records)
    changed[position % len(changed)] = byte
    _assert_same(LogConfig(), bytes(changed[: len(changed) - cut]))


def test_a_producer_timestamp_type_bit_is_cleared_by_the_full_validation() -> None:
    """(The one-pass path declines it: the full validation clears the bit and re-signs.)"""
    records = batch(2, timestamp_type=TimestampType.LOG_APPEND_TIME)
    assert records[ATTRIBUTES_OFFSET + 1] & TIMESTAMP_TYPE_MASK
    result = _assert_same(LogConfig(), records)
    assert not result.records[ATTRIBUTES_OFFSET + 1] & TIMESTAMP_TYPE_MASK


@pytest.mark.parametrize("timestamp_type", ["CreateTime", "LogAppendTime"])
def test_the_saved_header_undoes_an_in_place_validation(timestamp_type: str) -> None:
    """Every byte an in-place offset assignment patches in one batch is in the header that
    header_to_restore saves: putting it back restores the records exactly."""
    sent = batch(3, timestamp_type=1) if timestamp_type == "CreateTime" else batch(3)
    owned = bytearray(sent)
    saved = header_to_restore(memoryview(owned))
    assert saved is not None and len(saved) == 61
    LogValidator(LogConfig(message_timestamp_type=timestamp_type)).validate_and_assign_offsets(
        memoryview(owned), 100, BASE_TS + 5, 7, in_place=True)
    assert owned != sent
    restore_header(memoryview(owned), saved)
    assert owned == sent


@pytest.mark.parametrize("records", [
    pytest.param(lambda: batch(2), id="bytes"),
    pytest.param(lambda: memoryview(bytearray(batch(2))).toreadonly(), id="read-only"),
    pytest.param(lambda: bytearray(batch(1) + batch(1)), id="two batches"),
    pytest.param(lambda: bytearray(batch(2))[:-1], id="cut short"),
    pytest.param(lambda: memoryview(bytearray(batch(2))).cast("b"), id="signed bytes"),
])
def test_no_header_is_saved_where_only_a_copy_can_be_patched(records: Any) -> None:
    assert header_to_restore(records()) is None
