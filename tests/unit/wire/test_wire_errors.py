"""Kafka's error-code table and the typed exceptions; wire stays sans-io."""

from __future__ import annotations

import ast
import pathlib

import pytest
from kio.schema.errors import ErrorCode as KioErrorCode

import wire
from wire import errors
from wire.errors import ErrorCode, KafkaError, error_for_code


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("UNKNOWN_SERVER_ERROR", -1), ("NONE", 0), ("OFFSET_OUT_OF_RANGE", 1), ("CORRUPT_MESSAGE", 2),
        ("UNKNOWN_TOPIC_OR_PARTITION", 3), ("INVALID_FETCH_SIZE", 4), ("NOT_LEADER_OR_FOLLOWER", 6),
        ("MESSAGE_TOO_LARGE", 10), ("INVALID_TOPIC_EXCEPTION", 17), ("RECORD_LIST_TOO_LARGE", 18),
        ("INVALID_REQUIRED_ACKS", 21), ("INVALID_TIMESTAMP", 32), ("UNSUPPORTED_VERSION", 35),
        ("TOPIC_ALREADY_EXISTS", 36), ("INVALID_PARTITIONS", 37), ("INVALID_REPLICATION_FACTOR", 38),
        ("INVALID_CONFIG", 40), ("INVALID_REQUEST", 42), ("UNSUPPORTED_FOR_MESSAGE_FORMAT", 43),
        ("POLICY_VIOLATION", 44), ("KAFKA_STORAGE_ERROR", 56), ("FENCED_LEADER_EPOCH", 74),
        ("INVALID_RECORD", 87), ("UNKNOWN_TOPIC_ID", 100), ("INCONSISTENT_TOPIC_ID", 103),
    ],
)
def test_well_known_codes(name: str, value: int) -> None:
    assert ErrorCode[name] == value


def test_table_is_complete_and_contiguous() -> None:
    values = sorted(int(e) for e in ErrorCode)
    assert values == list(range(-1, values[-1] + 1))
    assert {e.name.upper(): int(e) for e in KioErrorCode} == {e.name: int(e) for e in ErrorCode}
    assert ErrorCode.NOT_LEADER_OR_FOLLOWER.retriable and not ErrorCode.INVALID_CONFIG.retriable


@pytest.mark.parametrize(
    ("cls", "code"),
    [
        (errors.CorruptRecordError, ErrorCode.CORRUPT_MESSAGE),
        (errors.OffsetOutOfRangeError, ErrorCode.OFFSET_OUT_OF_RANGE),
        (errors.UnknownTopicOrPartitionError, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        (errors.RecordTooLargeError, ErrorCode.MESSAGE_TOO_LARGE),
        (errors.RecordBatchTooLargeError, ErrorCode.RECORD_LIST_TOO_LARGE),
        (errors.InvalidRecordError, ErrorCode.INVALID_RECORD),
        (errors.InvalidTimestampError, ErrorCode.INVALID_TIMESTAMP),
        (errors.UnsupportedForMessageFormatError, ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT),
        (errors.UnsupportedVersionError, ErrorCode.UNSUPPORTED_VERSION),
        (errors.InvalidTopicError, ErrorCode.INVALID_TOPIC_EXCEPTION),
        (errors.TopicExistsError, ErrorCode.TOPIC_ALREADY_EXISTS),
        (errors.InvalidPartitionsError, ErrorCode.INVALID_PARTITIONS),
        (errors.InvalidConfigurationError, ErrorCode.INVALID_CONFIG),
        (errors.InvalidRequiredAcksError, ErrorCode.INVALID_REQUIRED_ACKS),
        (errors.KafkaStorageError, ErrorCode.KAFKA_STORAGE_ERROR),
        (errors.PolicyViolationError, ErrorCode.POLICY_VIOLATION),
        (errors.FramingError, ErrorCode.INVALID_REQUEST),
    ],
)
def test_exceptions_carry_their_code(cls: type[KafkaError], code: ErrorCode) -> None:
    exc = cls("details")
    assert isinstance(exc, KafkaError)
    assert exc.error_code is code and cls.error_code is code
    assert str(exc) == "details" and exc.message == "details"
    assert str(cls()) == code.name


def test_error_for_code() -> None:
    assert type(error_for_code(2)) is errors.CorruptRecordError
    assert type(error_for_code(42)) is errors.InvalidRequestError
    generic = error_for_code(int(ErrorCode.STREAMS_TOPOLOGY_FENCED))
    assert generic.error_code is ErrorCode.STREAMS_TOPOLOGY_FENCED
    assert KafkaError.error_code is ErrorCode.UNKNOWN_SERVER_ERROR  # class default untouched


def test_wire_source_is_sans_io() -> None:
    """No asyncio/socket/file access in our wire code (kio's own imports aside)."""
    forbidden_modules = {"asyncio", "socket", "selectors", "os", "io", "pathlib", "uvloop", "mmap"}
    for path in pathlib.Path(wire.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                names = {(node.module or "").split(".")[0]}
            else:
                names = set()
            bad = names & forbidden_modules
            if path.name == "messages.py":
                bad -= {"io"}  # in-memory BytesIO for kio's writer only
            assert not bad, f"{path.name} imports {bad}"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id != "open", f"{path.name} calls open()"
