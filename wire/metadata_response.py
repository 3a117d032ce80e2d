"""A hand-written encoder for the Metadata answer, versions 0-13.

Every client's first requests are ApiVersions and Metadata; through kio, answering Metadata
meant importing kio and its Metadata schemas (about 16 ms of the broker's ~100 ms start). And
Metadata is asked again and again (a producer's or consumer's periodic refresh, every
leader change): for a topic of 1,000 partitions, kio's writer walked 1,000 frozen dataclasses
field by field. `encode_metadata_response` writes the same bytes as kio's writer (the unit
tests compare them byte for byte for every version) from msgspec structs, with no kio import:
each partition in one `struct.Struct.pack` (the Struct for its arrays' lengths compiled once
and cached), the body written into one buffer.

The structs have kio's field names, except the throttle time, an int of milliseconds. A field
a version lacks is not written. Kafka's schema has no tagged field up to v13 (v14 adds a
partition's CreationTimeMs, tag 0), and kio writes none: each flexible struct ends with an
empty tagged-field section.

Layout (Kafka's MetadataResponse.json; v9+ are flexible: compact lengths, tagged fields)::

    throttle_time_ms               int32 (v3+)
    brokers                        [node_id int32, host string, port int32,
                                    rack string (nullable, v1+), tags]
    cluster_id                     string (nullable, v2+)
    controller_id                  int32 (v1+)
    topics                         [error_code int16, name string (nullable v12+),
                                    topic_id uuid (v10+; None writes the zero uuid),
                                    is_internal bool (v1+),
                                    partitions [error_code int16, partition_index int32,
                                                leader_id int32, leader_epoch int32 (v7+),
                                                replica_nodes [int32], isr_nodes [int32],
                                                offline_replicas [int32] (v5+), tags],
                                    topic_authorized_operations int32 (v8+), tags]
    cluster_authorized_operations  int32 (v8-10)
    error_code                     int16 (v13+)
    tags                           (v9+)
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence

import msgspec

from wire.body_writer import write_length, write_string, write_uuid

__all__ = [
    "VERSIONS",
    "MetadataResponse",
    "MetadataResponseBroker",
    "MetadataResponsePartition",
    "MetadataResponseTopic",
    "encode_metadata_response",
]

VERSIONS = range(0, 14)
FIRST_FLEXIBLE_VERSION = 9
NO_AUTHORIZED_OPERATIONS = -2147483648
"""Kafka's default for the authorized-operations bitfields: not asked for."""

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class MetadataResponseBroker(msgspec.Struct, frozen=True, gc=False):
    node_id: int
    host: str
    port: int
    rack: str | None = None
    """Written from v1."""


class MetadataResponsePartition(msgspec.Struct, frozen=True, gc=False):
    error_code: int
    partition_index: int
    leader_id: int
    leader_epoch: int
    """Written from v7."""
    replica_nodes: tuple[int, ...]
    isr_nodes: tuple[int, ...]
    offline_replicas: tuple[int, ...]
    """Written from v5."""


class MetadataResponseTopic(msgspec.Struct, frozen=True, gc=False):
    error_code: int
    name: str | None
    """None (a topic asked for by an id this broker does not know) from v12 only."""
    topic_id: uuid.UUID | None
    """Written from v10; None writes the zero uuid."""
    is_internal: bool
    """Written from v1."""
    partitions: tuple[MetadataResponsePartition, ...]
    topic_authorized_operations: int = NO_AUTHORIZED_OPERATIONS
    """Written from v8."""


class MetadataResponse(msgspec.Struct, frozen=True, gc=False):
    throttle_time_ms: int
    """Written from v3."""
    brokers: tuple[MetadataResponseBroker, ...]
    cluster_id: str | None
    """Written from v2."""
    controller_id: int
    """Written from v1."""
    topics: tuple[MetadataResponseTopic, ...]
    cluster_authorized_operations: int = NO_AUTHORIZED_OPERATIONS
    """Written in v8-10 only."""
    error_code: int = 0
    """Written from v13."""


# -- partitions ------------------------------------------------------------------
#
# A partition is written in one pack, by a Struct for its version's layout and its three
# arrays' lengths ("shape"): the counts are arguments, the ids follow them, and a flexible
# partition's empty tagged-field section is a pad byte ("x", written as 0). The Structs are
# cached per layout and shape: a broker's partitions have a handful of shapes (a replication
# factor, a shrunk ISR). A flexible array of 127 ids or more has a count of two bytes or more
# and is written field by field (_flexible_partition).

# Layouts: 0 (v0-4) without leader_epoch and offline_replicas, 1 (v5-6) with offline_replicas,
# 2 (v7-8) with leader_epoch too, 3 (v9+) flexible.
_LAYOUT_FLEXIBLE = 3
_SHAPES: tuple[dict[tuple[int, int, int], struct.Struct], ...] = ({}, {}, {}, {})
_MAX_SHAPES = 1024  # a layout's cache is cleared past this many shapes
_FLEXIBLE_ONE_BYTE_COUNT = 0x7F  # arrays shorter than this have a one-byte compact count
_FLEXIBLE_PARTITION_HEAD = struct.Struct(">hiii")  # error_code, partition_index, leader_id, leader_epoch


def _layout(version: int) -> int:
    return 3 if version >= FIRST_FLEXIBLE_VERSION else 2 if version >= 7 else 1 if version >= 5 else 0


def _partition_struct(layout: int, shape: tuple[int, int, int]) -> struct.Struct:
    cache = _SHAPES[layout]
    compiled = cache.get(shape)
    if compiled is None:
        replicas, isr, offline = shape
        if layout == _LAYOUT_FLEXIBLE:
            fmt = f">hiiiB{replicas}iB{isr}iB{offline}ix"
        elif layout == 2:
            fmt = f">hiiii{replicas}ii{isr}ii{offline}i"
        elif layout == 1:
            fmt = f">hiii{replicas}ii{isr}ii{offline}i"
        else:
            fmt = f">hiii{replicas}ii{isr}i"
        if len(cache) >= _MAX_SHAPES:
            cache.clear()
        compiled = cache[shape] = struct.Struct(fmt)
    return compiled


def _write_flexible_partition(out: bytearray, p: MetadataResponsePartition) -> None:
    """A flexible partition with an array of 127 ids or more (a count of two bytes or more)."""
    out += _FLEXIBLE_PARTITION_HEAD.pack(p.error_code, p.partition_index, p.leader_id, p.leader_epoch)
    for ids in (p.replica_nodes, p.isr_nodes, p.offline_replicas):
        write_length(out, len(ids), True)
        out += struct.pack(f">{len(ids)}i", *ids)
    out.append(0)  # no tagged fields


def _write_partitions(out: bytearray, layout: int, partitions: Sequence[MetadataResponsePartition]) -> None:
    """Each partition's bytes. (The loops are written out per layout: no call in them but the
    pack, and a Struct lookup when the shape changes.)"""
    append = out.extend
    n_replicas = n_isr = n_offline = -1  # the shape `pack` was compiled for
    pack = _partition_struct(layout, (0, 0, 0)).pack
    if layout == _LAYOUT_FLEXIBLE:
        for p in partitions:
            replicas, isr, offline = p.replica_nodes, p.isr_nodes, p.offline_replicas
            nr, ni, no = len(replicas), len(isr), len(offline)
            if nr != n_replicas or ni != n_isr or no != n_offline:
                if nr >= _FLEXIBLE_ONE_BYTE_COUNT or ni >= _FLEXIBLE_ONE_BYTE_COUNT \
                        or no >= _FLEXIBLE_ONE_BYTE_COUNT:
                    _write_flexible_partition(out, p)
                    continue
                pack = _partition_struct(layout, (nr, ni, no)).pack
                n_replicas, n_isr, n_offline = nr, ni, no
            append(pack(p.error_code, p.partition_index, p.leader_id, p.leader_epoch, nr + 1, *replicas, ni + 1,
                        *isr, no + 1, *offline))
    elif layout == 2:
        for p in partitions:
            replicas, isr, offline = p.replica_nodes, p.isr_nodes, p.offline_replicas
            nr, ni, no = len(replicas), len(isr), len(offline)
            if nr != n_replicas or ni != n_isr or no != n_offline:
                pack = _partition_struct(layout, (nr, ni, no)).pack
                n_replicas, n_isr, n_offline = nr, ni, no
            append(pack(p.error_code, p.partition_index, p.leader_id, p.leader_epoch, nr, *replicas, ni, *isr, no,
                        *offline))
    elif layout == 1:
        for p in partitions:
            replicas, isr, offline = p.replica_nodes, p.isr_nodes, p.offline_replicas
            nr, ni, no = len(replicas), len(isr), len(offline)
            if nr != n_replicas or ni != n_isr or no != n_offline:
                pack = _partition_struct(layout, (nr, ni, no)).pack
                n_replicas, n_isr, n_offline = nr, ni, no
            append(pack(p.error_code, p.partition_index, p.leader_id, nr, *replicas, ni, *isr, no, *offline))
    else:
        for p in partitions:
            replicas, isr = p.replica_nodes, p.isr_nodes
            nr, ni = len(replicas), len(isr)
            if nr != n_replicas or ni != n_isr:
                pack = _partition_struct(layout, (nr, ni, 0)).pack
                n_replicas, n_isr = nr, ni
            append(pack(p.error_code, p.partition_index, p.leader_id, nr, *replicas, ni, *isr))


# -- the response ----------------------------------------------------------------


def encode_metadata_response(version: int, response: MetadataResponse) -> bytes:
    """The MetadataResponse body for `version` (0-13), byte for byte kio's.

    ValueError for a version outside 0-13, or a topic without a name before v12 (which kio
    refuses too; Kafka's schema makes the name nullable from v12).
    """
    if version not in VERSIONS:
        raise ValueError(f"metadata response version {version} not in 0-13")
    flexible = version >= FIRST_FLEXIBLE_VERSION
    tags = b"\x00" if flexible else b""
    out = bytearray()
    if version >= 3:
        out += _I32.pack(response.throttle_time_ms)
    write_length(out, len(response.brokers), flexible)
    for broker in response.brokers:
        out += _I32.pack(broker.node_id)
        write_string(out, broker.host, flexible)
        out += _I32.pack(broker.port)
        if version >= 1:
            write_string(out, broker.rack, flexible)
        out += tags
    if version >= 2:
        write_string(out, response.cluster_id, flexible)
    if version >= 1:
        out += _I32.pack(response.controller_id)
    write_length(out, len(response.topics), flexible)
    layout = _layout(version)
    for topic in response.topics:
        out += _I16.pack(topic.error_code)
        if topic.name is None and version < 12:
            raise ValueError(f"a topic without a name in a metadata response v{version} (nullable from v12)")
        write_string(out, topic.name, flexible)
        if version >= 10:
            write_uuid(out, topic.topic_id)
        if version >= 1:
            out.append(1 if topic.is_internal else 0)
        write_length(out, len(topic.partitions), flexible)
        _write_partitions(out, layout, topic.partitions)
        if version >= 8:
            out += _I32.pack(topic.topic_authorized_operations)
        out += tags
    if 8 <= version <= 10:
        out += _I32.pack(response.cluster_authorized_operations)
    elif version >= 13:
        out += _I16.pack(response.error_code)
    out += tags
    return bytes(out)
