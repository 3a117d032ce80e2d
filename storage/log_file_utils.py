"""Segment file naming: 20-digit zero-padded base offsets and Kafka's suffixes."""
from __future__ import annotations

from pathlib import Path

LOG_FILE_SUFFIX = ".log"
INDEX_FILE_SUFFIX = ".index"
TIME_INDEX_FILE_SUFFIX = ".timeindex"
TXN_INDEX_FILE_SUFFIX = ".txnindex"
PRODUCER_SNAPSHOT_FILE_SUFFIX = ".snapshot"
DELETED_FILE_SUFFIX = ".deleted"
CLEANED_FILE_SUFFIX = ".cleaned"
SWAP_FILE_SUFFIX = ".swap"
DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"
STRAY_DIR_SUFFIX = "-stray"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"


def filename_prefix_from_offset(offset: int) -> str:
    return f"{offset:020d}"


def log_file(dir: Path, offset: int, suffix: str = "") -> Path:
    return Path(dir) / (filename_prefix_from_offset(offset) + LOG_FILE_SUFFIX + suffix)


def offset_index_file(dir: Path, offset: int, suffix: str = "") -> Path:
    return Path(dir) / (filename_prefix_from_offset(offset) + INDEX_FILE_SUFFIX + suffix)


def time_index_file(dir: Path, offset: int, suffix: str = "") -> Path:
    return Path(dir) / (filename_prefix_from_offset(offset) + TIME_INDEX_FILE_SUFFIX + suffix)


def transaction_index_file(dir: Path, offset: int, suffix: str = "") -> Path:
    return Path(dir) / (filename_prefix_from_offset(offset) + TXN_INDEX_FILE_SUFFIX + suffix)


def producer_snapshot_file(dir: Path, offset: int) -> Path:
    return Path(dir) / (filename_prefix_from_offset(offset) + PRODUCER_SNAPSHOT_FILE_SUFFIX)


def offset_from_file_name(name: str) -> int:
    """The base offset encoded in a segment/index/snapshot file name."""
    return int(name[: name.index(".")])


def is_index_file(name: str) -> bool:
    return name.endswith((INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX))


def is_log_file(name: str) -> bool:
    return name.endswith(LOG_FILE_SUFFIX)
