"""TopicPartition: the key of every per-partition map, and the partition directory name."""
from __future__ import annotations

import msgspec


class TopicPartition(msgspec.Struct, frozen=True, order=True):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def dir_name(self) -> str:
        """Kafka's partition directory name `<topic>-<partition>`."""
        return f"{self.topic}-{self.partition}"

    @classmethod
    def from_dir_name(cls, name: str) -> "TopicPartition":
        """Parse `<topic>-<p>`, `<topic>-<p>.<uuid>-delete` or `...-future`/`-stray` names."""
        base = name
        for suffix in ("-delete", "-future", "-stray"):
            if base.endswith(suffix):
                base = base[: -len(suffix)]
                dot = base.rfind(".")
                if dot < 0:
                    raise ValueError(f"not a partition directory: {name!r}")
                base = base[:dot]
                break
        dash = base.rfind("-")
        if dash <= 0:
            raise ValueError(f"not a partition directory: {name!r}")
        topic, part = base[:dash], base[dash + 1 :]
        if not part.isdigit():
            raise ValueError(f"not a partition directory: {name!r}")
        return cls(topic, int(part))
