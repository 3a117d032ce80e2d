"""Steps that scenarios share: topic set-up, produce, fetch, list offsets.

Each one is a recorded call (it lands in the transcript and is compared)
unless it says otherwise. Set-up waits on conditions: Kafka's CreateTopics
returns when the controller has committed the topic, and its broker serves
the partitions a moment later.
"""

from __future__ import annotations

import datetime
from typing import Any

from differential import DEFAULT_TIMEOUT_MS, ScenarioRun, entity

PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
CREATE_TOPICS, DELETE_TOPICS, DELETE_RECORDS = 19, 20, 21
INIT_PRODUCER_ID = 22
DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS, CREATE_PARTITIONS = 32, 44, 37

TIMEOUT = datetime.timedelta(milliseconds=DEFAULT_TIMEOUT_MS)


def create_topic(run: ScenarioRun, symbol: str, partitions: int = 1, configs: dict[str, str] | None = None, *,
                 version: int = 7, record: bool = True) -> Any:
    """CreateTopics for one topic, then wait until every partition has a leader in Metadata."""
    topic = entity(CREATE_TOPICS, version, "CreatableTopic", name=run.topic(symbol), num_partitions=partitions,
                   replication_factor=-1, assignments=(),
                   configs=tuple(entity(CREATE_TOPICS, version, "CreatableTopicConfig", name=k, value=v)
                                 for k, v in (configs or {}).items()))
    response = run.call(CREATE_TOPICS, version, _record=record, topics=(topic,), timeout=TIMEOUT,
                        validate_only=False)
    if response.topics[0].error_code.value == 0:
        wait_for_leaders(run, symbol, partitions)
    return response


def wait_for_leaders(run: ScenarioRun, symbol: str, partitions: int) -> None:
    name = run.topic(symbol)

    def ready() -> bool:
        response = metadata(run, [symbol], record=False)
        t = response.topics[0]
        return (t.error_code.value == 0 and len(t.partitions) == partitions
                and all(p.error_code.value == 0 and p.leader_id >= 0 for p in t.partitions))

    run.wait_until(ready, f"leaders for {name}")
    # Kafka's broker learns the topic from the metadata log; a Produce right after
    # Metadata shows the leader can still race its partition's creation, so wait
    # until ListOffsets (which needs the local log) answers too.
    def log_ready() -> bool:
        r = list_offsets(run, symbol, [(p, -1) for p in range(partitions)], record=False)
        return all(p.error_code.value == 0 for t in r.topics for p in t.partitions)

    run.wait_until(log_ready, f"logs of {name}")


def metadata(run: ScenarioRun, symbols: list[str] | None, *, version: int = 12, auto_create: bool = False,
             record: bool = True) -> Any:
    topics = None if symbols is None else tuple(
        entity(METADATA, version, "MetadataRequestTopic", name=run.topic(s), topic_id=None) for s in symbols
    )
    return run.call(METADATA, version, _record=record, topics=topics, allow_auto_topic_creation=auto_create,
                    include_cluster_authorized_operations=False, include_topic_authorized_operations=False)


def produce(run: ScenarioRun, symbol: str, batches: dict[int, bytes | None], *, version: int = 11, acks: int = -1,
            label: str | None = None, record: bool = True, transactional_id: str | None = None) -> Any:
    data = tuple(entity(PRODUCE, version, "PartitionProduceData", index=p, records=b) for p, b in batches.items())
    topic = entity(PRODUCE, version, "TopicProduceData", name=run.topic(symbol), partition_data=data)
    return run.call(PRODUCE, version, _label=label, _record=record, transactional_id=transactional_id, acks=acks,
                    timeout=TIMEOUT, topic_data=(topic,))


def fetch(run: ScenarioRun, symbol: str, partitions: dict[int, int], *, version: int = 12, max_wait_ms: int = 0,
          min_bytes: int = 1, max_bytes: int = 52_428_800, partition_max_bytes: int = 1_048_576,
          isolation_level: int = 0, log_start_offset: int = -1, label: str | None = None,
          record: bool = True) -> Any:
    parts = tuple(
        entity(FETCH, version, "FetchPartition", partition=p, current_leader_epoch=-1, fetch_offset=o,
               last_fetched_epoch=-1, log_start_offset=log_start_offset, partition_max_bytes=partition_max_bytes)
        for p, o in partitions.items()
    )
    topic_fields: dict[str, Any] = {"partitions": parts}
    if version >= 13:
        topic_fields["topic_id"] = run.topic_id(symbol)
    else:
        topic_fields["topic"] = run.topic(symbol)
    topic = entity(FETCH, version, "FetchTopic", **topic_fields)
    return run.call(FETCH, version, _label=label, _record=record, cluster_id=None, replica_id=-1,
                    replica_state=None, max_wait=datetime.timedelta(milliseconds=max_wait_ms),
                    min_bytes=min_bytes, max_bytes=max_bytes, isolation_level=isolation_level, session_id=0,
                    session_epoch=-1, topics=(topic,), forgotten_topics_data=(), rack_id="")


def list_offsets(run: ScenarioRun, symbol: str, targets: list[tuple[int, int]], *, version: int = 9,
                 isolation_level: int = 0, label: str | None = None, record: bool = True) -> Any:
    parts = tuple(
        entity(LIST_OFFSETS, version, "ListOffsetsPartition", partition_index=p, current_leader_epoch=-1,
               timestamp=ts)
        for p, ts in targets
    )
    topic = entity(LIST_OFFSETS, version, "ListOffsetsTopic", name=run.topic(symbol), partitions=parts)
    return run.call(LIST_OFFSETS, version, _label=label, _record=record, replica_id=-1,
                    isolation_level=isolation_level, topics=(topic,))
