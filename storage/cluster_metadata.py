"""Kafka's KRaft metadata log in a log directory, read for what one node needs from it.

A log directory written by Kafka 4.x keeps its topics' configs not beside the partitions but
in `__cluster_metadata-0`: snapshots (`<end offset>-<epoch>.checkpoint`, record batches like
any segment's) and the metadata log itself. Replaying the latest snapshot and then the log
from the snapshot's end offset gives the image this module returns: which topics exist (with
their ids), their config overrides, and the dynamic broker configs. So a log dir copied from
a stopped Kafka broker opens in asyncbroker with its topics configured as Kafka had them.

The records are decoded by wire.metadata_records; a torn tail ends the log quietly, as
recovery would.

Going the other way, `write_bootstrap_snapshot` writes the file `kafka-storage.sh format`
leaves for a new node, `00000000000000000000-0000000000.checkpoint`: a snapshot (header
control batch, the records, footer control batch) that the controller of a node with an
empty metadata log appends as its first records. Kafka's format tool puts the feature
levels there; `asyncbroker migrate` adds the topics of a log dir it hands to Kafka.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from pathlib import Path

import msgspec

from storage.log_file_utils import LOG_FILE_SUFFIX
from storage.atomic_file import write_atomically
from wire.errors import CorruptRecordError
from wire.metadata_records import (
    BROKER_RESOURCE,
    GROUP_RESOURCE,
    TOPIC_RESOURCE,
    AccessControlEntryRecord,
    ClientQuotaRecord,
    ConfigRecord,
    RemoveAccessControlEntryRecord,
    RemoveTopicRecord,
    RemoveUserScramCredentialRecord,
    TopicRecord,
    UserScramCredentialRecord,
    decode_metadata_record,
    encode_snapshot_footer,
    encode_snapshot_header,
)
from wire.records import ControlRecordType, Record, build_batch, decode_records, encode_control_key, iter_batch_headers

__all__ = ["CLUSTER_METADATA_DIR", "BOOTSTRAP_SNAPSHOT_FILE", "ClusterMetadataImage", "read_cluster_metadata",
           "first_cluster_metadata",
           "encode_bootstrap_snapshot", "write_bootstrap_snapshot"]

logger = logging.getLogger(__name__)

CLUSTER_METADATA_DIR = "__cluster_metadata-0"
SNAPSHOT_SUFFIX = ".checkpoint"
# Snapshot id (end offset 0, epoch 0): the bootstrap snapshot the format tool writes.
BOOTSTRAP_SNAPSHOT_FILE = f"{0:020d}-{0:010d}{SNAPSHOT_SUFFIX}"
# Records per data batch of a snapshot, as Kafka's snapshot writer batches them.
_RECORDS_PER_BATCH = 1000


class ClusterMetadataImage(msgspec.Struct):
    topics: dict[str, uuid.UUID] = msgspec.field(default_factory=dict)
    topic_configs: dict[str, dict[str, str]] = msgspec.field(default_factory=dict)
    # resource name ("" for the cluster-wide default, else a node id) -> key -> value
    broker_configs: dict[str, dict[str, str]] = msgspec.field(default_factory=dict)
    group_configs: dict[str, dict[str, str]] = msgspec.field(default_factory=dict)  # group id -> key -> value
    # The security state: ACLs by id, SCRAM credentials by (user, mechanism id), client quotas
    # by entity ((type, name or None) pairs, sorted) -> key -> value.
    acls: dict[uuid.UUID, AccessControlEntryRecord] = msgspec.field(default_factory=dict)
    scram_credentials: dict[tuple[str, int], UserScramCredentialRecord] = msgspec.field(default_factory=dict)
    client_quotas: dict[tuple[tuple[str, str | None], ...], dict[str, float]] = msgspec.field(default_factory=dict)

    def apply(self, record: object) -> None:
        if isinstance(record, AccessControlEntryRecord):
            self.acls[record.id] = record
        elif isinstance(record, RemoveAccessControlEntryRecord):
            self.acls.pop(record.id, None)
        elif isinstance(record, UserScramCredentialRecord):
            self.scram_credentials[(record.name, record.mechanism)] = record
        elif isinstance(record, RemoveUserScramCredentialRecord):
            self.scram_credentials.pop((record.name, record.mechanism), None)
        elif isinstance(record, ClientQuotaRecord):
            entity = tuple(sorted(record.entity, key=lambda part: part[0]))
            values = self.client_quotas.setdefault(entity, {})
            if record.remove:
                values.pop(record.key, None)
                if not values:
                    del self.client_quotas[entity]
            else:
                values[record.key] = record.value
        elif isinstance(record, TopicRecord):
            self.topics[record.name] = record.topic_id
        elif isinstance(record, RemoveTopicRecord):
            for name, topic_id in list(self.topics.items()):
                if topic_id == record.topic_id:
                    del self.topics[name]
                    self.topic_configs.pop(name, None)
        elif isinstance(record, ConfigRecord):
            if record.resource_type == TOPIC_RESOURCE:
                layer = self.topic_configs.setdefault(record.resource_name, {})
            elif record.resource_type == BROKER_RESOURCE:
                layer = self.broker_configs.setdefault(record.resource_name, {})
            elif record.resource_type == GROUP_RESOURCE:
                layer = self.group_configs.setdefault(record.resource_name, {})
            else:
                return
            if record.value is None:
                layer.pop(record.name, None)
            else:
                layer[record.name] = record.value


def read_cluster_metadata(log_dir: Path) -> ClusterMetadataImage | None:
    """The image of the metadata log in `log_dir`; None when there is none (not a Kafka dir)."""
    directory = Path(log_dir) / CLUSTER_METADATA_DIR
    if not directory.is_dir():
        return None
    image = ClusterMetadataImage()
    snapshots = sorted(directory.glob(f"*{SNAPSHOT_SUFFIX}"), key=_snapshot_end_offset)
    start = 0
    if snapshots:
        latest = snapshots[-1]
        _replay(latest.read_bytes(), image, 0, latest)
        start = _snapshot_end_offset(latest)
    for segment in sorted(directory.glob(f"*{LOG_FILE_SUFFIX}")):
        _replay(segment.read_bytes(), image, start, segment)
    # Configs of topics that no longer exist (their records came before the removal).
    image.topic_configs = {t: c for t, c in image.topic_configs.items() if t in image.topics and c}
    return image


def _snapshot_end_offset(path: Path) -> int:
    return int(path.name.split("-", 1)[0])


def _replay(data: bytes, image: ClusterMetadataImage, start: int, source: Path) -> None:
    try:
        for batch in iter_batch_headers(data):
            header = batch.header
            if header.is_control or header.base_offset + header.last_offset_delta < start:
                continue
            for record in decode_records(data, batch.position):
                if record.offset >= start and record.value is not None:
                    image.apply(decode_metadata_record(bytes(record.value)))
    except CorruptRecordError as exc:
        logger.warning("Stopped reading the metadata log at an unreadable record in %s: %s", source, exc)


def encode_bootstrap_snapshot(values: Sequence[bytes], timestamp: int) -> bytes:
    """A snapshot holding `values` (framed metadata records): header and footer control
    batches around data batches, offsets from 0, epoch 0, as the format tool writes it."""
    def control(offset: int, kind: ControlRecordType, value: bytes) -> bytes:
        return build_batch([Record(offset, timestamp, encode_control_key(kind), value)], base_offset=offset,
                           is_control=True, partition_leader_epoch=0)

    out = [control(0, ControlRecordType.SNAPSHOT_HEADER, encode_snapshot_header(timestamp))]
    for start in range(0, len(values), _RECORDS_PER_BATCH):
        chunk = values[start:start + _RECORDS_PER_BATCH]
        records = [Record(1 + start + i, timestamp, None, v) for i, v in enumerate(chunk)]
        out.append(build_batch(records, base_offset=1 + start, partition_leader_epoch=0))
    out.append(control(1 + len(values), ControlRecordType.SNAPSHOT_FOOTER, encode_snapshot_footer()))
    return b"".join(out)


def write_bootstrap_snapshot(metadata_log_dir: Path, values: Sequence[bytes], timestamp: int) -> Path:
    """Write the bootstrap snapshot into `metadata_log_dir`/__cluster_metadata-0 (created)."""
    directory = Path(metadata_log_dir) / CLUSTER_METADATA_DIR
    directory.mkdir(exist_ok=True)
    path = directory / BOOTSTRAP_SNAPSHOT_FILE
    write_atomically(path, encode_bootstrap_snapshot(values, timestamp))
    return path


def first_cluster_metadata(log_dirs: Sequence[Path]) -> ClusterMetadataImage | None:
    """The image of the first log directory that holds a metadata log (a directory Kafka
    wrote, or `asyncbroker migrate` handed to it), for state asyncbroker otherwise keeps in its
    own files; None when none does."""
    for d in log_dirs:
        image = read_cluster_metadata(d)
        if image is not None:
            return image
    return None
