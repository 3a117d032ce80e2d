"""Tiered storage (KIP-405) for the offline readers: where a broker's remote tier is, and which
of its segments a log directory's `__remote_log_metadata` says are there.

A tiered topic's older segments live only in the remote tier; the log directory keeps the hot
tail and, in the `__remote_log_metadata-<n>` partitions, the record of every segment copied,
in Kafka's format (wire.remote_log_metadata_records). Reading a tiered partition from offset 0
therefore takes both: the metadata, replayed with storage's RemoteLogMetadataCache (the
broker's own replay) from the metadata partitions' segment files, read-only as every other
segment here; and the remote tier's files, laid out as both backends lay them out
(storage.local_tiered_storage):

    <root>/<topic>-<partition>-<topic id>/<start offset, 20 digits>-<segment id>.log (.index, ...)

The root is the local directory backend's `rsm.config.dir`, or an S3 bucket and prefix read
through pyarrow's S3 filesystem (pipeline.log_dir_fs), as a log dir copied to an object store
is. It is given as a location (`remoteStorage` / `--remote-storage`: a directory or
`s3://bucket/prefix?endpoint_override=...`), or as the broker's own settings
(`remote.log.storage.manager.class.name` with its `rsm.config.*` keys), which
`remote_tier_from_settings` turns into a location.
"""

from __future__ import annotations

import logging
import os
import re
import uuid
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from urllib.parse import quote, urlsplit

import msgspec

from pipeline.log_dir_fs import list_dir, read_text, remote_log_dir
from pipeline.log_dir_scan import LogDirView, PartitionDir, RemoteSegment, SegmentFile
from pipeline.segment_reader import buffer_batches, segment_bytes, until_unreadable
from storage.file_records import FileBatch
from storage.local_tiered_storage import LOG_SUFFIX, remote_segment_file_name
from storage.partition_metadata import (
    PARTITION_METADATA_FILE,
    PartitionMetadataFile,
    parse_partition_metadata,
    uuid_to_base64,
)
from storage.remote_log_metadata_cache import REMOTE_LOG_METADATA_TOPIC, RemoteLogMetadataCache
from storage.remote_storage_manager import LOCAL_TIERED_STORAGE, RSM_CONFIG_PREFIX, S3_REMOTE_STORAGE
from storage.s3_remote_storage_manager import S3RemoteStorageManager
from wire.errors import CorruptRecordError
from wire.records import BATCH_HEADER_SIZE, LOG_OVERHEAD, compute_crc, decode_records, read_batch_header
from wire.remote_log_metadata_records import (
    RemoteLogSegmentMetadata,
    TopicIdPartition,
    decode_remote_log_metadata,
)

__all__ = ["RemoteTier", "RemoteTierNotGivenError", "remote_tier", "remote_tier_from_settings",
           "remote_tier_from_options", "read_remote_log_metadata", "attach_remote_segments", "redact",
           "REMOTE_STORAGE_OPTION", "LOCAL_ONLY_OPTION", "CLASS_NAME_KEY", "IMPL_PREFIX_KEY"]

logger = logging.getLogger(__name__)

# The kafka-log source's options (camelCase, as its others) ...
REMOTE_STORAGE_OPTION = "remoteStorage"
LOCAL_ONLY_OPTION = "localOnly"
# ... and the broker's keys, taken as server.properties spells them.
CLASS_NAME_KEY = "remote.log.storage.manager.class.name"
IMPL_PREFIX_KEY = "remote.log.storage.manager.impl.prefix"
_METADATA_CHUNK = 8 << 20


class RemoteTierNotGivenError(ValueError):
    """A read needs remote segments and no remote tier was given: never fewer rows, silently."""


class RemoteTier(msgspec.Struct, frozen=True):
    """The root of a broker's remote tier: a local directory, or a directory of a filesystem
    pyarrow reaches (then `filesystem` is its URI, as SegmentFile.filesystem)."""

    location: str  # as given
    filesystem: str  # "" for a local directory
    root: str  # the local path, or the path inside `filesystem` (bucket/prefix on S3)

    def path(self, relative: str) -> str:
        return os.path.join(self.root, relative) if not self.filesystem else f"{self.root}/{relative}"

    def segment_file(self, metadata: RemoteLogSegmentMetadata) -> SegmentFile:
        """The remote segment's `.log` as a closed segment the readers plan and read like a local one
        (its `.index` and `.timeindex` sit beside it under the same stem)."""
        tp = metadata.segment_id.topic_id_partition
        return SegmentFile(tp.topic, tp.partition, metadata.start_offset,
                           self.path(remote_segment_file_name(metadata.segment_id, metadata.start_offset, LOG_SUFFIX)),
                           metadata.segment_size_in_bytes, False, 0, self.filesystem)

    def describe(self) -> str:
        return redact(self.location)


def redact(location: str) -> str:
    """`location` without the credentials a URI may carry (`s3://key:secret@bucket/...`)."""
    return re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/@]*@", r"\1***@", location)


def remote_tier(location: str) -> RemoteTier:
    """The remote tier at `location`: a local directory, or a URI (`s3://bucket/prefix?...`; Hadoop's
    `s3a://` too) read through pyarrow."""
    remote = remote_log_dir(location)
    if remote is None:
        path = location[len("file://"):] if location.startswith("file://") else location
        return RemoteTier(location, "", os.path.abspath(path))
    return RemoteTier(location, remote.uri, remote.path)


def remote_tier_from_settings(settings: Mapping[str, str]) -> RemoteTier | None:
    """The remote tier a broker with these settings (server.properties keys) writes to; None when
    they name none. `remote.log.storage.manager.class.name` picks the backend; without it, an
    `rsm.config.dir` means the local directory backend and an `rsm.config.s3.bucket` S3's.

    S3's keys, checked as the broker's S3RemoteStorageManager checks them, map to a pyarrow S3
    URI: s3.bucket and s3.prefix to its path, s3.endpoint.url to endpoint_override and scheme,
    s3.region, and s3.access.key.id / s3.secret.access.key to its credentials (without them
    pyarrow takes AWS's usual environment chain, as boto3 does). The timeouts, attempts and
    part size are the broker's own; s3.path.style.access.enabled is pyarrow's choice (path
    style for a custom endpoint)."""
    prefix = settings.get(IMPL_PREFIX_KEY, RSM_CONFIG_PREFIX)
    props = {k[len(prefix):]: v.strip() for k, v in settings.items() if prefix and k.startswith(prefix)}
    name = (settings.get(CLASS_NAME_KEY) or "").strip()
    if not name:
        name = LOCAL_TIERED_STORAGE if props.get("dir") else S3_REMOTE_STORAGE if props.get("s3.bucket") else ""
        if not name:
            return None
    if name == LOCAL_TIERED_STORAGE:
        if not props.get("dir"):
            raise ValueError(f"{prefix}dir must name the directory of {LOCAL_TIERED_STORAGE}")
        return remote_tier(props["dir"])
    if name == S3_REMOTE_STORAGE:
        # The broker's backend checks the settings (ConfigException naming the key, as at startup);
        # building it connects to nothing.
        s3 = S3RemoteStorageManager.from_configs(props, config_prefix=prefix)
        key_id, secret = props.get("s3.access.key.id"), props.get("s3.secret.access.key")
        auth = f"{quote(key_id, safe='')}:{quote(secret or '', safe='')}@" if key_id else ""
        path = "/".join(p for p in (s3.bucket, s3.prefix) if p)
        query = [f"region={quote(s3.region, safe='')}"]
        if s3.endpoint_url:
            parts = urlsplit(s3.endpoint_url if "://" in s3.endpoint_url else "https://" + s3.endpoint_url)
            query += [f"endpoint_override={quote(parts.netloc, safe=':')}", f"scheme={parts.scheme}"]
        return remote_tier(f"s3://{auth}{path}?{'&'.join(query)}")
    raise ValueError(f"{CLASS_NAME_KEY}={name} is not a backend the readers know: {LOCAL_TIERED_STORAGE} "
                     f"({prefix}dir) or {S3_REMOTE_STORAGE} ({prefix}s3.*); or give the tier's location itself "
                     f"({REMOTE_STORAGE_OPTION})")


def remote_tier_from_options(options: Mapping[str, str]) -> RemoteTier | None:
    """The remote tier of the kafka-log source's options (keys in any case): `remoteStorage`, else
    the broker's settings given as options."""
    opts = {k.lower(): v for k, v in options.items()}
    location = (opts.get(REMOTE_STORAGE_OPTION.lower()) or "").strip()
    if location:
        return remote_tier(location)
    prefix = opts.get(IMPL_PREFIX_KEY, RSM_CONFIG_PREFIX).lower()
    settings = {k: v for k, v in opts.items() if k in (CLASS_NAME_KEY, IMPL_PREFIX_KEY) or k.startswith(prefix)}
    return remote_tier_from_settings(settings)


# -- __remote_log_metadata ---------------------------------------------------------------------


def _batches(segment: SegmentFile) -> Iterator[FileBatch]:
    """The whole batches of a segment, read a chunk at a time (a batch larger than a chunk whole)."""
    position = 0
    while segment.size - position >= LOG_OVERHEAD:
        chunk = segment_bytes(segment, position, min(_METADATA_CHUNK, segment.size - position))
        if not chunk:
            return
        end = position
        for batch in buffer_batches(chunk, position):
            end = batch.position + batch.header.batch_length + LOG_OVERHEAD
            yield batch
        if end == position:  # no whole batch in the chunk: one larger than it, or a torn tail
            if len(chunk) < BATCH_HEADER_SIZE:
                return
            size = read_batch_header(chunk, 0).batch_length + LOG_OVERHEAD
            if size <= len(chunk) or position + size > segment.size:
                return
            whole = segment_bytes(segment, position, size)
            if whole is None or len(whole) < size:
                return
            yield from buffer_batches(whole, position)
            end = position + size
        position = end


def read_remote_log_metadata(partitions: Iterable[PartitionDir]) -> RemoteLogMetadataCache:
    """Replay the `__remote_log_metadata` partitions among `partitions` (their segment files, read
    only; records below a partition's log start are gone, as for any reader). A torn tail of an
    active segment ends its partition, as for the broker; a corrupt closed segment raises."""
    cache = RemoteLogMetadataCache()
    for part in partitions:
        if part.topic != REMOTE_LOG_METADATA_TOPIC:
            continue
        for segment in part.segments:
            for batch in until_unreadable(_batches(segment), active=segment.is_active,
                                          where=f"{segment.path}: unreadable batch"):
                header = batch.header
                if header.is_control or header.base_offset + header.last_offset_delta < part.log_start_offset:
                    continue
                buf = batch.buf
                assert buf is not None
                if compute_crc(buf, batch.offset_in_buf, header.batch_length) != header.crc:
                    if segment.is_active:
                        break
                    raise CorruptRecordError(f"{segment.path}: CRC mismatch in the batch at position {batch.position}")
                for record in decode_records(buf, batch.offset_in_buf):
                    if record.value is not None and record.offset >= part.log_start_offset:
                        cache.apply(decode_remote_log_metadata(record.value))
    return cache


def _topic_id(part: PartitionDir) -> uuid.UUID | None:
    """The partition dir's topic id, from its partition.metadata; None without one."""
    remote = remote_log_dir(part.log_dir)
    if remote is None:
        return PartitionMetadataFile(Path(part.path)).read()
    where = f"{part.path}/{PARTITION_METADATA_FILE}"
    text = read_text(remote.uri, where)
    return parse_partition_metadata(text, where) if text is not None else None


def _listed_logs(tier: RemoteTier, directory: str) -> set[str] | None:
    """Names of the `.log` files in one partition directory of the tier; None when it is missing."""
    if not tier.filesystem:
        try:
            with os.scandir(tier.path(directory)) as it:
                return {e.name for e in it if e.name.endswith("." + LOG_SUFFIX)}
        except (FileNotFoundError, NotADirectoryError):
            return None
    entries = list_dir(tier.filesystem, tier.path(directory))
    return {e.base_name for e in entries if e.base_name.endswith("." + LOG_SUFFIX)} or None


def attach_remote_segments(view: LogDirView, tier: RemoteTier | None) -> LogDirView:
    """`view` with its tiered partitions' remote segments (COPY_SEGMENT_FINISHED in the metadata
    replayed from its `__remote_log_metadata` partitions), each with its file in `tier` when one
    is given, and a log start offset that counts them: max(first offset held, remote or local;
    the log-start-offset-checkpoint). A partition dir is matched to its remote segments by topic
    id (a topic deleted and made again under its name has other segments), by name when it has
    no partition.metadata.

    With a tier, each tiered partition's directory in it is listed once: a segment the metadata
    lists and the tier lacks is an error (a wrong location, or a tier that lost files), except
    the oldest ones when newer ones are there, which is what remote retention deleting them
    meanwhile looks like: they are left out and the log start moves past them, as the broker's
    did before it deleted them."""
    if not view.remote_log_metadata:
        return view
    cache = read_remote_log_metadata(view.remote_log_metadata)
    by_name: dict[tuple[str, int], list[TopicIdPartition]] = {}
    for tip in cache.partition_ids():
        by_name.setdefault((tip.topic, tip.partition), []).append(tip)
    if not by_name:
        return view
    out: list[PartitionDir] = []
    for part in view.partitions:
        tips = by_name.get((part.topic, part.partition), [])
        if tips:
            topic_id = _topic_id(part)
            if topic_id is not None:
                tips = [t for t in tips if t.topic_id == topic_id]
            elif len(tips) > 1:
                tips = []  # several topics of that name were tiered: none is known to be this one
        copied = sorted((m for t in tips for m in cache.copied_segments(t)), key=lambda m: m.start_offset)
        if tier is not None and copied:
            copied = _check_in_tier(part, copied, tier)
        if not copied:
            out.append(part)
            continue
        remote = [RemoteSegment(m.start_offset, m.end_offset, m.segment_size_in_bytes, m.max_timestamp_ms,
                                uuid_to_base64(m.segment_id.id), tier.segment_file(m) if tier is not None else None)
                  for m in copied]
        first = remote[0].start_offset
        if part.segments:
            first = min(first, part.segments[0].base_offset)
        checkpoint = part.log_start_checkpoint
        log_start = max(first, checkpoint) if checkpoint is not None else first
        out.append(msgspec.structs.replace(part, remote_segments=remote, log_start_offset=log_start))
    return msgspec.structs.replace(view, partitions=out)


def _check_in_tier(part: PartitionDir, copied: list[RemoteLogSegmentMetadata],
                   tier: RemoteTier) -> list[RemoteLogSegmentMetadata]:
    """The segments of `copied` the tier has (see attach_remote_segments). Those wholly below the
    checkpointed log start need not be there: their deletion is due."""
    names = [remote_segment_file_name(m.segment_id, m.start_offset, LOG_SUFFIX) for m in copied]
    directory = names[0].split("/", 1)[0]
    listed = _listed_logs(tier, directory) or set()
    present = [n.split("/", 1)[1] in listed for n in names]
    floor = part.log_start_checkpoint if part.log_start_checkpoint is not None else -1
    due = [m.end_offset < floor for m in copied]
    if all(due):
        return [m for m, here in zip(copied, present) if here]
    kept = [(m, here, name) for m, here, name, gone in zip(copied, present, names, due) if not gone]
    where = f"{part.topic}-{part.partition}"
    if not any(here for _m, here, _name in kept):
        raise FileNotFoundError(
            f"{where}: __remote_log_metadata lists {len(kept)} remote segment(s) (offsets {kept[0][0].start_offset} "
            f"to {kept[-1][0].end_offset}) and the remote storage {tier.describe()} has none of them (no "
            f"{tier.path(directory)}/*.log): is it the broker's rsm.config.dir, or its bucket and prefix?")
    first_present = [here for _m, here, _name in kept].index(True)
    hole = next((name for _m, here, name in kept[first_present:] if not here), None)
    if hole is not None:
        raise FileNotFoundError(f"{where}: the remote storage {tier.describe()} lacks {hole}, a segment "
                                f"__remote_log_metadata lists as copied, while older ones are there")
    if first_present:
        logger.warning("%s: the %d oldest remote segment(s) listed in __remote_log_metadata are gone from %s "
                       "(remote retention deleting them); reading from offset %d", where, first_present,
                       tier.describe(), kept[first_present][0].start_offset)
    below = [m for m, here, gone in zip(copied, present, due) if gone and here]
    return sorted(below + [m for m, _here, _name in kept[first_present:]], key=lambda m: m.start_offset)
