"""Steps of the log-management scenarios (compaction, retention, random operations).

Compaction and retention run in the background on both brokers (Kafka cannot be told to
clean now), so a scenario waits on a condition that defines the state it compares:
unrecorded reads polled until they show it, with a deadline (ScenarioRun.wait_until).
What is compared afterwards is recorded: ListOffsets earliest/latest, Fetch from 0, the
surviving (offset, key, value) and the partition's size on disk (DescribeLogDirs).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from differential import ScenarioRun, entity
from steps import DELETE_RECORDS, INCREMENTAL_ALTER_CONFIGS, TIMEOUT, fetch, list_offsets
from wire.records import BatchPosition, decode_records, iter_batch_headers

DESCRIBE_LOG_DIRS = 35


@dataclasses.dataclass(frozen=True)
class Survivor:
    offset: int
    key: bytes | None
    value: bytes | None


def fetched_batches(run: ScenarioRun, symbol: str, partition: int = 0,
                    start: int | None = None) -> Iterator[tuple[bytes, BatchPosition, int]]:
    """(fetched bytes, a batch in them, the offset that Fetch asked for) of every batch from
    `start` (default: the log start offset) to the high watermark, by unrecorded fetches."""
    position = earliest(run, symbol, partition) if start is None else start
    for _ in range(10_000):  # bounded: each round makes progress or returns
        p = fetch(run, symbol, {partition: position}, record=False).responses[0].partitions[0]
        if p.error_code.value != 0:
            raise AssertionError(f"{run.broker}: fetch at {position} of {symbol}: {p.error_code.name}")
        data = bytes(p.records or b"")
        batches = list(iter_batch_headers(data))
        for b in batches:
            yield data, b, position
        following = max([position] + [b.header.base_offset + b.header.last_offset_delta + 1 for b in batches])
        if following >= p.high_watermark or following == position:
            return
        position = following
    raise AssertionError(f"{run.broker}: reading {symbol} made no progress")


def read_all(run: ScenarioRun, symbol: str, partition: int = 0, start: int | None = None) -> list[Survivor]:
    """Every record from `start` (default: the log start offset) to the high watermark, by
    unrecorded fetches: what a consumer reading the whole partition sees."""
    return [Survivor(r.offset, r.key, r.value) for data, b, position in fetched_batches(run, symbol, partition, start)
            for r in decode_records(data, b.position) if r.offset >= position]


def list_offset(run: ScenarioRun, symbol: str, target: int, partition: int = 0) -> int:
    """ListOffsets for one target (-2 earliest, -1 latest, ...), unrecorded."""
    p = list_offsets(run, symbol, [(partition, target)], record=False).topics[0].partitions[0]
    if p.error_code.value != 0:
        raise AssertionError(f"{run.broker}: ListOffsets {target} of {symbol}: {p.error_code.name}")
    return int(p.offset)


def earliest(run: ScenarioRun, symbol: str, partition: int = 0) -> int:
    return list_offset(run, symbol, -2, partition)


def partition_size(run: ScenarioRun, symbol: str, partition: int = 0) -> int:
    """The partition's bytes on disk, as DescribeLogDirs reports them (unrecorded)."""
    topic = entity(DESCRIBE_LOG_DIRS, 4, "DescribableLogDirTopic", topic=run.topic(symbol), partitions=(partition,))
    response = run.call(DESCRIBE_LOG_DIRS, 4, _record=False, topics=(topic,))
    sizes = [p.partition_size for result in response.results for t in result.topics for p in t.partitions
             if t.name == run.topic(symbol) and p.partition_index == partition]
    if len(sizes) != 1:
        raise AssertionError(f"{run.broker}: DescribeLogDirs lists {symbol}-{partition} {len(sizes)} times")
    return int(sizes[0])


def wait_for_state(run: ScenarioRun, what: str, condition: Callable[[], bool], timeout: float = 60.0, *,
                   symbol: str | None = None) -> None:
    """Wait until `condition` holds, and record that it did. On Kafka a timeout fails the test
    (the scenario's expectation is wrong); on asyncbroker it is recorded, so the transcripts
    show the divergence and the state it left, step by step: with `symbol`, also every batch
    the partition then served."""
    try:
        run.wait_until(condition, what, timeout=timeout)
    except AssertionError:
        if run.broker == "kafka":
            raise
        # In the step itself, so the transcripts stay aligned and the difference shows it.
        run.note(f"reached: {what}", False if symbol is None else {"not reached; batches": batch_layout(run, symbol)})
        return
    run.note(f"reached: {what}", True)


def batch_layout(run: ScenarioRun, symbol: str, partition: int = 0) -> list[list[object]]:
    """[base offset, last offset, control?, transactional?, [(offset, key, value)]] of every
    batch from the log start to the high watermark: what a divergence in the cleaner's
    outcome is read from."""
    return [[b.header.base_offset, b.header.base_offset + b.header.last_offset_delta, b.header.is_control,
             b.header.is_transactional, [(r.offset, r.key, r.value) for r in decode_records(data, b.position)]]
            for data, b, _ in fetched_batches(run, symbol, partition)]


def record_log_state(run: ScenarioRun, symbol: str, label: str, partition: int = 0) -> list[Survivor]:
    """Record what the partition serves: earliest/latest, Fetch from 0 and from the log start,
    the survivors and the size on disk."""
    list_offsets(run, symbol, [(partition, -2)], label=f"{label}: earliest")
    list_offsets(run, symbol, [(partition, -1)], label=f"{label}: latest")
    fetch(run, symbol, {partition: 0}, label=f"{label}: fetch from 0")
    start = earliest(run, symbol, partition)
    fetch(run, symbol, {partition: start}, label=f"{label}: fetch from the log start")
    survivors = read_all(run, symbol, partition, start)
    run.note(f"{label}: survivors", [[s.offset, s.key, s.value] for s in survivors])
    run.note(f"{label}: partition size", partition_size(run, symbol, partition))
    return survivors


def delete_records(run: ScenarioRun, symbol: str, targets: dict[int, int], *, version: int = 2,
                   label: str | None = None, record: bool = True) -> Any:
    parts = tuple(entity(DELETE_RECORDS, version, "DeleteRecordsPartition", partition_index=p, offset=o)
                  for p, o in targets.items())
    topic = entity(DELETE_RECORDS, version, "DeleteRecordsTopic", name=run.topic(symbol), partitions=parts)
    return run.call(DELETE_RECORDS, version, _label=label, _record=record, topics=(topic,), timeout=TIMEOUT)


def alter_topic_configs(run: ScenarioRun, symbol: str, configs: dict[str, str | None], *, version: int = 1,
                        label: str | None = None, record: bool = True) -> Any:
    """IncrementalAlterConfigs SET (a value) or DELETE (None) of topic configs."""
    entries = tuple(entity(INCREMENTAL_ALTER_CONFIGS, version, "AlterableConfig", name=k,
                           config_operation=0 if v is not None else 1, value=v)
                    for k, v in configs.items())
    resource = entity(INCREMENTAL_ALTER_CONFIGS, version, "AlterConfigsResource", resource_type=2,
                      resource_name=run.topic(symbol), configs=entries)
    return run.call(INCREMENTAL_ALTER_CONFIGS, version, _label=label, _record=record, resources=(resource,),
                    validate_only=False)

