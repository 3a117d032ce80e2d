"""`meta.properties`: which cluster and node a log directory belongs to (KRaft v1 format)."""
from __future__ import annotations

import datetime
import uuid
from pathlib import Path

import msgspec

from storage.atomic_file import write_atomically
from storage.errors import KafkaStorageError
from storage.partition_metadata import uuid_from_base64, uuid_to_base64

META_PROPERTIES_FILE = "meta.properties"


def random_kafka_uuid() -> str:
    """A Kafka Uuid string (22 chars of url-safe base64), never starting with '-' like Kafka's."""
    while True:
        text = uuid_to_base64(uuid.uuid4())
        if not text.startswith("-"):
            return text


class MetaProperties(msgspec.Struct, frozen=True):
    version: int
    cluster_id: str
    node_id: int
    directory_id: str | None = None

    def to_text(self) -> str:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%a %b %d %H:%M:%S UTC %Y")
        lines = ["#", f"#{stamp}", f"cluster.id={self.cluster_id}"]
        if self.directory_id is not None:
            lines.append(f"directory.id={self.directory_id}")
        lines += [f"node.id={self.node_id}", f"version={self.version}"]
        return "\n".join(lines) + "\n"

    @classmethod
    def parse(cls, text: str) -> "MetaProperties":
        props: dict[str, str] = {}
        for line in text.splitlines():
            line = line.strip()
            if not line or line[0] in "#!":
                continue
            key, _, value = line.partition("=")
            props[key.strip()] = value.strip()
        try:
            version = int(props["version"])
            node_id = int(props.get("node.id", props.get("broker.id", "-1")))
            directory_id = props.get("directory.id")
            if directory_id is not None:
                uuid_from_base64(directory_id)
            return cls(version, props["cluster.id"], node_id, directory_id)
        except (KeyError, ValueError) as exc:
            raise KafkaStorageError(f"Invalid meta.properties: {exc}") from None


def read_meta_properties(dir: Path) -> MetaProperties | None:
    try:
        return MetaProperties.parse((Path(dir) / META_PROPERTIES_FILE).read_text())
    except FileNotFoundError:
        return None


def write_meta_properties(dir: Path, meta: MetaProperties) -> None:
    write_atomically(Path(dir) / META_PROPERTIES_FILE, meta.to_text().encode())
