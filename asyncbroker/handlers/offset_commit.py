"""OffsetCommit (key 8): store a group's consumed positions in `__consumer_offsets`.

Partitions of topics this broker does not have are UNKNOWN_TOPIC_OR_PARTITION
(as Kafka checks against its metadata); group/member problems apply to every
partition of the request.
"""

from __future__ import annotations

import struct
from typing import Any

from wire.errors import ErrorCode
from wire.messages import ApiKey

from asyncbroker.encoded_response import EncodedResponse
from asyncbroker.group_coordinator import group_coordinator_for, millis
from asyncbroker.handlers import error_code_for

API_KEY = ApiKey.OFFSET_COMMIT
MIN_VERSION = 2
MAX_VERSION = 9


async def handle(broker: Any, header: Any, request: Any) -> Any:
    version = header.api_version
    errors: dict[tuple[str, int], int] = {}
    items: list[tuple[str, int, int, int, str | None]] = []
    for t in request.topics:
        meta = broker.topics.get(t.name)
        for p in t.partitions:
            if meta is None or not 0 <= p.partition_index < meta.partitions:
                errors[(t.name, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                items.append((t.name, p.partition_index, p.committed_offset,
                              getattr(p, "committed_leader_epoch", -1), p.committed_metadata))
    if items:
        retention = getattr(request, "retention_time", None)
        try:
            coordinator = await group_coordinator_for(broker)
            errors.update(await coordinator.commit_offsets(
                group_id=request.group_id,
                member_id=request.member_id,
                group_instance_id=getattr(request, "group_instance_id", None),
                generation_id=request.generation_id_or_member_epoch,
                retention_time_ms=millis(retention) if retention is not None else -1,
                offsets=items,
                api_version=version,
            ))
        except Exception as exc:  # noqa: BLE001 - mapped at the boundary
            code = error_code_for(exc)
            for topic, partition, *_ in items:
                errors[(topic, partition)] = code
    body = encode_offset_commit_response(version, [
        (t.name, [(p.partition_index, errors.get((t.name, p.partition_index), ErrorCode.NONE)) for p in t.partitions])
        for t in request.topics
    ])
    return EncodedResponse([body], len(body))


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_PARTITION = struct.Struct(">ih")


def encode_offset_commit_response(version: int, topics: list[tuple[str, list[tuple[int, int]]]]) -> bytes:
    """OffsetCommitResponse v2-v9 body, written directly: consumers commit often and
    building kio entities for this tiny answer costs more than the rest of the request."""
    out = bytearray()
    flexible = version >= 8
    if version >= 3:
        out += b"\x00\x00\x00\x00"  # throttle_time_ms
    out += _uvarint(len(topics) + 1) if flexible else struct.pack(">i", len(topics))
    for name, partitions in topics:
        raw = name.encode("utf-8")
        out += _uvarint(len(raw) + 1) if flexible else struct.pack(">h", len(raw))
        out += raw
        out += _uvarint(len(partitions) + 1) if flexible else struct.pack(">i", len(partitions))
        for index, error in partitions:
            out += _PARTITION.pack(index, error)
            if flexible:
                out += b"\x00"
        if flexible:
            out += b"\x00"
    if flexible:
        out += b"\x00"
    return bytes(out)
