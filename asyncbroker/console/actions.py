"""The console's forms that change data, each through the code the Kafka API or the monitor
lever it mirrors runs: CreateTopics/DeleteTopics/IncrementalAlterConfigs (TopicManager),
Produce (ReplicaManager.append_records with acks=all), an admin client's offset reset
(OffsetCommit without a member on an empty group, as Kafka's alterConsumerGroupOffsets), and
the monitor's `retention` and `clean` levers. Each returns a line for the page; a refusal
raises the Kafka error the API would answer, or ActionError."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from storage.topic_partition import TopicPartition
from wire.errors import ErrorCode, KafkaError, NonEmptyGroupError, UnknownTopicOrPartitionError

from asyncbroker.alter_config_op import AlterConfigOp

if TYPE_CHECKING:
    from asyncbroker.broker import Broker

PRODUCE_VERSION = 11
OFFSET_COMMIT_VERSION = 9


class ActionError(Exception):
    """A form whose input cannot be acted on; the message is shown on the page."""


def parse_configs(text: str) -> dict[str, str]:
    """`key=value` lines (or comma-separated) -> overrides."""
    out: dict[str, str] = {}
    for item in text.replace(",", "\n").splitlines():
        item = item.strip()
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ActionError(f"{item!r} is not key=value")
        out[key.strip()] = value.strip()
    return out


async def create_topic(broker: Broker, name: str, partitions: int, configs: Mapping[str, str]) -> str:
    meta = await broker.topics.create_topic(name, partitions, -1, dict(configs))
    return f"Created topic {meta.name} with {meta.partitions} partition(s)."


async def delete_topic(broker: Broker, name: str) -> str:
    await broker.topics.delete_topic(name)
    return f"Deleted topic {name}."


async def alter_topic(broker: Broker, name: str, key: str, value: str) -> str:
    """Set `key` (or, with an empty value, remove its override)."""
    ops = [(key, AlterConfigOp.SET, value)] if value else [(key, AlterConfigOp.DELETE, None)]
    await broker.topics.incremental_alter_configs(name, ops)
    return f"Set {key}={value} on topic {name}." if value else f"Removed the override of {key} on topic {name}."


async def produce(broker: Broker, topic: str, partition: int, key: bytes | None, value: bytes | None,
                  headers: list[tuple[str, bytes | None]]) -> str:
    """One record, as a producer with acks=all sends it (a v2 batch, CreateTime now)."""
    from wire.records import Record, build_batch

    batch = build_batch([Record(0, int(time.time() * 1000), key, value, headers)])
    tp = TopicPartition(topic, partition)
    result = (await broker.replica_manager.append_records({tp: batch}, acks=-1, transactional_id=None,
                                                          produce_version=PRODUCE_VERSION))[tp]
    if result.error_code != ErrorCode.NONE:
        raise ActionError(f"Produce to {tp} failed: {ErrorCode(result.error_code).name}"
                          + (f" ({result.error_message})" if result.error_message else ""))
    return f"Produced 1 record to {topic}-{partition} at offset {result.base_offset}."


async def reset_offsets(broker: Broker, group_id: str, topic: str, to: str, value: str) -> str:
    """Kafka's kafka-consumer-groups.sh --reset-offsets (--to-earliest, --to-latest,
    --to-datetime as epoch ms, --to-offset) on every partition of `topic`; only while the
    group has no members, as Kafka requires."""
    from asyncbroker.replica_manager import OffsetQuery

    coordinator = await broker.loaded_group_coordinator()
    listed = {g.group_id: g for g in coordinator.list_groups()}
    group = listed.get(group_id)
    if group is not None and group.state.lower() not in ("empty", "dead"):
        raise NonEmptyGroupError(f"Group {group_id} is {group.state}: offsets can be reset only while it has "
                                 "no members (stop its consumers first).")
    meta = broker.topics.get(topic)
    if meta is None:
        raise UnknownTopicOrPartitionError(f"Topic {topic} does not exist.")
    tps = meta.topic_partitions()
    if to in ("earliest", "latest", "timestamp"):
        ts = {"earliest": -2, "latest": -1}.get(to)
        if ts is None:
            try:
                ts = int(value)
            except ValueError:
                raise ActionError(f"{value!r} is not a timestamp in milliseconds") from None
        found = await broker.replica_manager.fetch_offsets({tp: OffsetQuery(ts) for tp in tps}, version=9,
                                                           read_committed=False)
        targets = {}
        for tp in tps:
            f = found[tp]
            if f.error != ErrorCode.NONE:
                raise ActionError(f"ListOffsets for {tp} failed: {ErrorCode(f.error).name}")
            log_ = broker.replica_manager.log_of(tp)
            targets[tp] = f.offset if f.offset >= 0 else (log_.high_watermark if log_ is not None else 0)
    elif to == "offset":
        try:
            wanted = int(value)
        except ValueError:
            raise ActionError(f"{value!r} is not an offset") from None
        targets = {}
        for tp in tps:
            log_ = broker.replica_manager.log_of(tp)
            # Kafka's tool clamps an offset outside the partition to its nearest end.
            targets[tp] = wanted if log_ is None else min(max(wanted, log_.log_start_offset), log_.high_watermark)
    else:
        raise ActionError(f"unknown reset target {to!r} (earliest, latest, timestamp, offset)")
    results = await coordinator.commit_offsets(
        group_id=group_id, member_id="", group_instance_id=None, generation_id=-1, retention_time_ms=-1,
        offsets=[(tp.topic, tp.partition, off, -1, "") for tp, off in sorted(targets.items())],
        api_version=OFFSET_COMMIT_VERSION)
    failed = {f"{t}-{p}": ErrorCode(c).name for (t, p), c in results.items() if c != ErrorCode.NONE}
    if failed:
        raise ActionError(f"Reset of {group_id} failed: {failed}")
    shown = ", ".join(f"{tp.partition}->{off}" for tp, off in sorted(targets.items()))
    return f"Reset group {group_id} on {topic}: {shown}."


async def run_retention(broker: Broker) -> str:
    """The monitor's `retention` lever."""
    run = await broker.log_jobs.run_retention_now()
    return (f"Retention: {run.segments_deleted} segment(s), {run.bytes_deleted} bytes deleted from "
            f"{len(run.deletions)} partition(s) of {run.logs_checked} checked in {run.duration_ms:.1f} ms.")


async def compact(broker: Broker, topic: str, partition: int | None) -> str:
    """The monitor's `clean` lever: roll and clean now, waiting for the swap."""
    if broker.topics.get(topic) is None:
        raise UnknownTopicOrPartitionError(f"Topic {topic} does not exist.")
    if not broker.topics.log_config(topic).compact:
        raise ActionError(f"Topic {topic} is not compacted (cleanup.policy does not include compact).")
    try:
        per_partition = await broker.clean_now(topic, partition)
    except RuntimeError as exc:
        raise ActionError(str(exc)) from exc
    cleaned = sum(1 for stats in per_partition.values() if stats is not None)
    return f"Compacted {topic}: {cleaned} of {len(per_partition)} partition(s) cleaned."


__all__ = ["ActionError", "KafkaError", "alter_topic", "compact", "create_topic", "delete_topic", "parse_configs",
           "produce", "reset_offsets", "run_retention"]
