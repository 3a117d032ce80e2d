"""`partition.metadata`: binds a partition directory to its topic id (`version: 0`, `topic_id: <base64url>`)."""
from __future__ import annotations

import base64
import uuid
from pathlib import Path

from storage.atomic_file import write_atomically
from storage.errors import KafkaStorageError

PARTITION_METADATA_FILE = "partition.metadata"
CURRENT_VERSION = 0


def uuid_to_base64(value: uuid.UUID) -> str:
    """Kafka's Uuid.toString(): url-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def uuid_from_base64(text: str) -> uuid.UUID:
    padded = text + "=" * (-len(text) % 4)
    raw = base64.urlsafe_b64decode(padded)
    if len(raw) != 16:
        raise ValueError(f"not a Kafka Uuid: {text!r}")
    return uuid.UUID(bytes=raw)


class PartitionMetadataFile:
    def __init__(self, dir: Path) -> None:
        self.path = Path(dir) / PARTITION_METADATA_FILE

    def exists(self) -> bool:
        return self.path.exists()

    def write(self, topic_id: uuid.UUID) -> None:
        write_atomically(self.path, f"version: {CURRENT_VERSION}\ntopic_id: {uuid_to_base64(topic_id)}".encode())

    def read(self) -> uuid.UUID | None:
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return None
        return parse_partition_metadata(text, str(self.path))


def parse_partition_metadata(text: str, where: str) -> uuid.UUID:
    """The topic id a `partition.metadata` file's text binds (`where` names it in errors)."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            fields[k.strip()] = v.strip()
    try:
        if int(fields["version"]) != CURRENT_VERSION:
            raise KafkaStorageError(f"Unrecognized version of partition metadata file {where}")
        return uuid_from_base64(fields["topic_id"])
    except (KeyError, ValueError) as exc:
        raise KafkaStorageError(f"Malformed partition metadata file {where}: {exc}") from None
