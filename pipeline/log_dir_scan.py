"""A read-only view of Kafka log directories: partitions, live segments, checkpoints.

The Spark jobs plan work on the driver from this view without opening a `Log`:
`Log.open` runs recovery (truncates torn tails, deletes `.cleaned` leftovers,
completes `.swap` renames, creates files), which a reader must never do to a
directory a broker may be writing. So this module only lists and stats files,
using storage's file-name rules, and reads the offset checkpoints with
storage's `OffsetCheckpointFile`.

Live segments are the `.log` files with no suffix; `.deleted`, `.cleaned` and
`.swap` files belong to a swap or deletion in flight and are counted (an
operator signal) but never read. Partition directories with a `-delete`,
`-future` or `-stray` suffix are skipped, and so is Kafka's metadata log
(`__cluster_metadata-0`), from which a log dir Kafka wrote gives its topic configs.

A log dir given as a URI (`s3://bucket/prefix`, see pipeline.log_dir_fs) is listed
through its filesystem with the same rules; its segments carry that URI, so a Spark
worker reads them from there.

A tiered partition (KIP-405) also has remote segments: those its log dir's
`__remote_log_metadata` partitions list as copied. This module lists those partitions
(`LogDirView.remote_log_metadata`); pipeline.remote_tier replays them and fills the
tiered partitions' `remote_segments`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

import msgspec

from pipeline.log_dir_fs import RemoteLogDir, list_dir, read_text, remote_log_dir
from storage.cluster_metadata import CLUSTER_METADATA_DIR, read_cluster_metadata
from storage.log_config import LogConfig
from storage.log_file_utils import (
    CLEANED_FILE_SUFFIX,
    DELETE_DIR_SUFFIX,
    DELETED_FILE_SUFFIX,
    FUTURE_DIR_SUFFIX,
    INDEX_FILE_SUFFIX,
    LOG_FILE_SUFFIX,
    STRAY_DIR_SUFFIX,
    SWAP_FILE_SUFFIX,
    offset_from_file_name,
)
from storage.log_manager import TOPIC_CONFIGS_FILE
from storage.offset_checkpoint import (
    CLEANER_OFFSET_CHECKPOINT_FILE,
    LOG_START_OFFSET_CHECKPOINT_FILE,
    CorruptCheckpointError,
    OffsetCheckpointFile,
)
from storage.remote_log_metadata_cache import REMOTE_LOG_METADATA_TOPIC
from storage.topic_partition import TopicPartition

__all__ = [
    "SegmentFile",
    "RemoteSegment",
    "PartitionDir",
    "LogDirView",
    "scan_log_dirs",
    "live_segments",
    "partition_dirs",
]

_SKIPPED_DIR_SUFFIXES = (DELETE_DIR_SUFFIX, FUTURE_DIR_SUFFIX, STRAY_DIR_SUFFIX)
_IN_FLIGHT_SUFFIXES = (DELETED_FILE_SUFFIX, CLEANED_FILE_SUFFIX, SWAP_FILE_SUFFIX)


class SegmentFile(msgspec.Struct, frozen=True):
    """One live segment as it was when the directory was listed."""

    topic: str
    partition: int
    base_offset: int
    path: str  # the .log file
    size: int  # bytes at listing time: readers never go past it
    is_active: bool  # the partition's last segment (the one a broker appends to)
    inode: int = 0  # identifies these bytes across the cleaner's renames (0: unknown)
    filesystem: str = ""  # the log dir's URI when it is not local (then `path` is inside it)

    @property
    def index_path(self) -> str:
        return self.path[: -len(LOG_FILE_SUFFIX)] + INDEX_FILE_SUFFIX


class RemoteSegment(msgspec.Struct, frozen=True):
    """A segment of a tiered partition in the remote tier (COPY_SEGMENT_FINISHED in
    `__remote_log_metadata`; pipeline.remote_tier)."""

    start_offset: int
    end_offset: int  # inclusive
    size: int
    max_timestamp_ms: int
    segment_id: str  # as Kafka prints it (base64)
    file: SegmentFile | None = None  # where it is read from; None when the remote tier was not given


class PartitionDir(msgspec.Struct, frozen=True):
    """A partition directory and what the driver needs to plan and audit it."""

    topic: str
    partition: int
    path: str
    log_dir: str
    segments: list[SegmentFile]  # the local ones
    log_start_offset: int  # max(first offset held, remote or local; log-start-offset-checkpoint)
    cleaner_checkpoint: int | None  # first dirty offset, None when never cleaned
    in_flight_files: int  # .deleted/.cleaned/.swap files present when listed
    log_start_checkpoint: int | None = None  # the log-start-offset-checkpoint entry
    remote_segments: list[RemoteSegment] = msgspec.field(default_factory=list)  # by start offset

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def size_in_bytes(self) -> int:
        """Bytes of the local segments."""
        return sum(s.size for s in self.segments)

    @property
    def remote_size_in_bytes(self) -> int:
        return sum(s.size for s in self.remote_segments)

    @property
    def local_log_start_offset(self) -> int:
        """The first offset on local disk (Kafka's localLogStartOffset): below it, a tiered
        partition's records are in the remote tier only."""
        if self.segments:
            return max(self.segments[0].base_offset, self.log_start_offset)
        if self.remote_segments:
            return max(self.remote_segments[-1].end_offset + 1, self.log_start_offset)
        return self.log_start_offset


class LogDirView(msgspec.Struct, frozen=True):
    """Every partition of one or more log dirs plus the topic config overrides found."""

    partitions: list[PartitionDir]
    topic_overrides: dict[str, dict[str, str]]
    # The `__remote_log_metadata` partitions, listed whatever the topics asked for: what
    # pipeline.remote_tier replays to know the tiered partitions' remote segments.
    remote_log_metadata: list[PartitionDir] = msgspec.field(default_factory=list)

    def topic_config(self, topic: str, defaults: LogConfig | None = None) -> LogConfig:
        """The topic's effective LogConfig: persisted overrides over `defaults`."""
        base = defaults or LogConfig()
        overrides = self.topic_overrides.get(topic)
        return LogConfig.from_props(overrides, base) if overrides else base


def live_segments(partition_path: Path | str, topic: str, partition: int) -> tuple[list[SegmentFile], int]:
    """Live segments of a partition dir, sorted by base offset, and the count of in-flight files.

    A file that vanishes between listing and stat (a concurrent deletion) is
    skipped: the reader plans over what exists now.
    """
    bases: list[tuple[int, str]] = []
    in_flight = 0
    with os.scandir(partition_path) as it:
        for entry in it:
            name = entry.name
            if name.endswith(_IN_FLIGHT_SUFFIXES):
                in_flight += 1
                continue
            if not name.endswith(LOG_FILE_SUFFIX):
                continue
            try:
                base = offset_from_file_name(name)
            except ValueError:
                continue  # not a segment (e.g. a stray file with a .log name)
            bases.append((base, entry.path))
    bases.sort()
    segments: list[SegmentFile] = []
    for i, (base, path) in enumerate(bases):
        try:
            st = os.stat(path)
        except FileNotFoundError:
            continue
        segments.append(SegmentFile(topic, partition, base, path, st.st_size, i == len(bases) - 1, st.st_ino))
    if segments and not segments[-1].is_active:
        # the true last segment vanished after listing: the last survivor is now the tail
        last = segments[-1]
        segments[-1] = SegmentFile(last.topic, last.partition, last.base_offset, last.path, last.size, True,
                                   last.inode)
    return segments, in_flight


def partition_dirs(log_dir: Path | str) -> Iterable[tuple[TopicPartition, Path]]:
    """`(TopicPartition, path)` of every serving partition directory in `log_dir`."""
    with os.scandir(log_dir) as it:
        entries = sorted(it, key=lambda e: e.name)
    for entry in entries:
        if not entry.is_dir() or entry.name.endswith(_SKIPPED_DIR_SUFFIXES) or entry.name == CLUSTER_METADATA_DIR:
            continue
        try:
            tp = TopicPartition.from_dir_name(entry.name)
        except ValueError:
            continue
        yield tp, Path(entry.path)


def _read_checkpoint(path: Path) -> dict[TopicPartition, int]:
    try:
        return OffsetCheckpointFile(path).read()
    except CorruptCheckpointError:
        return {}  # as the broker does: a corrupt checkpoint is as good as none


def _read_topic_overrides(log_dir: Path) -> tuple[float, dict[str, dict[str, str]]]:
    path = log_dir / TOPIC_CONFIGS_FILE
    try:
        mtime = path.stat().st_mtime
        data = json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        # A log dir Kafka wrote keeps the overrides in its metadata log.
        image = read_cluster_metadata(log_dir)
        return (0.0, image.topic_configs) if image is not None else (-1.0, {})
    return mtime, _overrides_from_json(data)


def _overrides_from_json(data: dict[str, dict[str, object]]) -> dict[str, dict[str, str]]:
    """asyncbroker's topic config file, parsed: topic -> key -> value."""
    return {str(t): {str(k): str(v) for k, v in props.items()} for t, props in data.items()}


def scan_log_dirs(
    log_dirs: Iterable[Path | str],
    *,
    topics: Iterable[str] | None = None,
    partitions: Iterable[int] | None = None,
) -> LogDirView:
    """List every partition (optionally only some topics/partition numbers) of `log_dirs`, and
    the `__remote_log_metadata` partitions (asked for or not) in `remote_log_metadata`."""
    topic_set = set(topics) if topics is not None else None
    partition_set = set(partitions) if partitions is not None else None
    found: list[PartitionDir] = []
    metadata_partitions: list[PartitionDir] = []
    newest = -1.0
    overrides: dict[str, dict[str, str]] = {}
    for raw in log_dirs:
        remote = remote_log_dir(str(raw))
        if remote is not None:
            mtime, dir_overrides, partitions_found = _scan_remote(remote, topic_set, partition_set)
            if mtime > newest:
                newest, overrides = mtime, dir_overrides
            for part in partitions_found:
                _sort_in(part, topic_set, partition_set, found, metadata_partitions)
            continue
        log_dir = Path(raw)
        if not log_dir.is_dir():
            raise FileNotFoundError(f"log dir {log_dir} does not exist")
        mtime, dir_overrides = _read_topic_overrides(log_dir)
        if mtime > newest:  # the broker writes the same file to every dir: newest wins
            newest, overrides = mtime, dir_overrides
        log_starts = _read_checkpoint(log_dir / LOG_START_OFFSET_CHECKPOINT_FILE)
        cleaner = _read_checkpoint(log_dir / CLEANER_OFFSET_CHECKPOINT_FILE)
        for tp, path in partition_dirs(log_dir):
            if not _wanted(tp, topic_set, partition_set) and tp.topic != REMOTE_LOG_METADATA_TOPIC:
                continue
            segments, in_flight = live_segments(path, tp.topic, tp.partition)
            first_base = segments[0].base_offset if segments else 0
            _sort_in(
                PartitionDir(
                    topic=tp.topic,
                    partition=tp.partition,
                    path=str(path),
                    log_dir=str(log_dir),
                    segments=segments,
                    log_start_offset=max(first_base, log_starts.get(tp, 0)),
                    cleaner_checkpoint=cleaner.get(tp),
                    in_flight_files=in_flight,
                    log_start_checkpoint=log_starts.get(tp),
                ),
                topic_set, partition_set, found, metadata_partitions,
            )
    found.sort(key=lambda p: (p.topic, p.partition, p.log_dir))
    metadata_partitions.sort(key=lambda p: (p.partition, p.log_dir))
    return LogDirView(found, overrides, metadata_partitions)


def _wanted(tp: TopicPartition, topic_set: set[str] | None, partition_set: set[int] | None) -> bool:
    return (topic_set is None or tp.topic in topic_set) and (partition_set is None or tp.partition in partition_set)


def _sort_in(part: PartitionDir, topic_set: set[str] | None, partition_set: set[int] | None,
             found: list[PartitionDir], metadata_partitions: list[PartitionDir]) -> None:
    """A listed partition goes to the result when asked for, and to the metadata to replay when it
    is one of `__remote_log_metadata`'s (asked for or not)."""
    if _wanted(part.topic_partition, topic_set, partition_set):
        found.append(part)
    if part.topic == REMOTE_LOG_METADATA_TOPIC:
        metadata_partitions.append(part)


def _scan_remote(remote: RemoteLogDir, topic_set: set[str] | None, partition_set: set[int] | None
                 ) -> tuple[float, dict[str, dict[str, str]], list[PartitionDir]]:
    """scan_log_dirs for one log dir on another filesystem (no inodes: its files do not change)."""
    from pyarrow import fs as pafs

    entries = list_dir(remote.uri, remote.path)
    if not entries:
        raise FileNotFoundError(f"log dir {remote.uri} does not exist or is empty")
    by_name = {e.base_name: e for e in entries}

    def checkpoint(name: str) -> dict[TopicPartition, int]:
        text = read_text(remote.uri, f"{remote.path}/{name}") if name in by_name else None
        try:
            return OffsetCheckpointFile.parse(text, f"{remote.uri}/{name}") if text else {}
        except CorruptCheckpointError:
            return {}

    overrides: dict[str, dict[str, str]] = {}
    mtime = -1.0
    if TOPIC_CONFIGS_FILE in by_name:
        text = read_text(remote.uri, f"{remote.path}/{TOPIC_CONFIGS_FILE}")
        try:
            data = json.loads(text or "")
            overrides = _overrides_from_json(data)
            modified = by_name[TOPIC_CONFIGS_FILE].mtime
            mtime = modified.timestamp() if modified is not None else 0.0
        except ValueError:
            pass
    log_starts = checkpoint(LOG_START_OFFSET_CHECKPOINT_FILE)
    cleaner = checkpoint(CLEANER_OFFSET_CHECKPOINT_FILE)
    found: list[PartitionDir] = []
    for entry in sorted(entries, key=lambda e: e.base_name):
        if entry.type != pafs.FileType.Directory or entry.base_name.endswith(_SKIPPED_DIR_SUFFIXES) \
                or entry.base_name == CLUSTER_METADATA_DIR:
            continue
        try:
            tp = TopicPartition.from_dir_name(entry.base_name)
        except ValueError:
            continue
        if not _wanted(tp, topic_set, partition_set) and tp.topic != REMOTE_LOG_METADATA_TOPIC:
            continue
        bases: list[tuple[int, str, int]] = []
        in_flight = 0
        for f in list_dir(remote.uri, entry.path):
            name = f.base_name
            if name.endswith(_IN_FLIGHT_SUFFIXES):
                in_flight += 1
            elif name.endswith(LOG_FILE_SUFFIX):
                try:
                    bases.append((offset_from_file_name(name), f.path, int(f.size or 0)))
                except ValueError:
                    continue
        bases.sort()
        segments = [SegmentFile(tp.topic, tp.partition, base, path, size, i == len(bases) - 1,
                                filesystem=remote.uri) for i, (base, path, size) in enumerate(bases)]
        first_base = segments[0].base_offset if segments else 0
        found.append(PartitionDir(
            topic=tp.topic, partition=tp.partition, path=entry.path, log_dir=remote.uri, segments=segments,
            log_start_offset=max(first_base, log_starts.get(tp, 0)), cleaner_checkpoint=cleaner.get(tp),
            in_flight_files=in_flight, log_start_checkpoint=log_starts.get(tp)))
    return mtime, overrides, found
