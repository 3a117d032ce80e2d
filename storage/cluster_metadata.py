"""Kafka's KRaft metadata log in a log directory, read for what one node needs from it.

A log directory written by Kafka 4.x keeps its topics' configs not beside the partitions but
in `__cluster_metadata-0`: snapshots (`<end offset>-<epoch>.checkpoint`, record batches like
any segment's) and the metadata log itself. Replaying the latest snapshot and then the log
from the snapshot's end offset gives the image this module returns: which topics exist (with
their ids), their config overrides, and the dynamic broker configs. So a log dir copied from
a stopped Kafka broker opens in asyncbroker with its topics configured as Kafka had them.

The records are decoded by wire.metadata_records; a torn tail ends the log quietly, as
recovery would.
"""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

import msgspec

from storage.log_file_utils import LOG_FILE_SUFFIX
from wire.errors import CorruptRecordError
from wire.metadata_records import (
    BROKER_RESOURCE,
    TOPIC_RESOURCE,
    ConfigRecord,
    RemoveTopicRecord,
    TopicRecord,
    decode_metadata_record,
)
from wire.records import decode_records, iter_batch_headers

__all__ = ["CLUSTER_METADATA_DIR", "ClusterMetadataImage", "read_cluster_metadata"]

logger = logging.getLogger(__name__)

CLUSTER_METADATA_DIR = "__cluster_metadata-0"
SNAPSHOT_SUFFIX = ".checkpoint"


class ClusterMetadataImage(msgspec.Struct):
    topics: dict[str, uuid.UUID] = msgspec.field(default_factory=dict)
    topic_configs: dict[str, dict[str, str]] = msgspec.field(default_factory=dict)
    # resource name ("" for the cluster-wide default, else a node id) -> key -> value
    broker_configs: dict[str, dict[str, str]] = msgspec.field(default_factory=dict)

    def apply(self, record: object) -> None:
        if isinstance(record, TopicRecord):
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
