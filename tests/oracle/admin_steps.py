"""Steps of the admin scenarios: ApiVersions, Metadata, topic admin, configs, cluster, log dirs.

Each step is a recorded call (compared with Kafka 4.4) unless it says otherwise.
Values are given version-agnostically (`entity` drops the fields a version
lacks). A few answers are recorded as derived views (`run.note`) because part
of them must differ between two brokers; each such step says what it leaves
out and why.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from differential import ScenarioRun, entity
from steps import CREATE_PARTITIONS, CREATE_TOPICS, DELETE_TOPICS, DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS, \
    METADATA, TIMEOUT, wait_for_leaders

API_VERSIONS, FIND_COORDINATOR, ALTER_CONFIGS, DESCRIBE_LOG_DIRS, DESCRIBE_CLUSTER = 18, 10, 33, 35, 60

# ConfigResource types and AlterConfigOp ids, as Kafka numbers them.
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def api_versions(run: ScenarioRun, version: int) -> Any:
    """ApiVersions, recorded as a view: each API by name with its [min, max] range (so one API
    more or less shows as that API, not as every later entry shifted), and the other fields."""
    from kio.schema.index import api_key_map

    response = run.call(API_VERSIONS, version, _record=False, client_software_name="oracle",
                        client_software_version="1.0")
    view = run.normalise(response)
    view["api_keys"] = {
        (api_key_map.get(a["api_key"]) or f"api-{a['api_key']}"): f"{a['min_version']}..{a['max_version']}"
        for a in view["api_keys"]
    }
    run.note(f"ApiVersions v{version}", view)
    return response


def metadata_topics(run: ScenarioRun, topics: Sequence[str | uuid.UUID | None], *, version: int = 12,
                    auto_create: bool = False, topic_ops: bool = False, cluster_ops: bool = False,
                    label: str | None = None, record: bool = True) -> Any:
    """Metadata for named topics (a str is a symbol of this run unless it starts with '='; a
    UUID asks by id; None sends neither)."""
    entries = []
    for t in topics:
        if isinstance(t, uuid.UUID):
            entries.append(entity(METADATA, version, "MetadataRequestTopic", name=None, topic_id=t))
        else:
            name = None if t is None else (t[1:] if t.startswith("=") else run.topic(t))
            entries.append(entity(METADATA, version, "MetadataRequestTopic", name=name, topic_id=None))
    return run.call(METADATA, version, _label=label, _record=record, topics=tuple(entries),
                    allow_auto_topic_creation=auto_create, include_cluster_authorized_operations=cluster_ops,
                    include_topic_authorized_operations=topic_ops)


def metadata_all(run: ScenarioRun, version: int, *, cluster_ops: bool = False, topic_ops: bool = False) -> Any:
    """Metadata for every topic, recorded as a view that keeps only this run's topics: the
    brokers hold other scenarios' topics too, under other run ids."""
    response = run.call(METADATA, version, _record=False, topics=() if version == 0 else None,
                        allow_auto_topic_creation=False, include_cluster_authorized_operations=cluster_ops,
                        include_topic_authorized_operations=topic_ops)
    view = run.normalise(response)
    keep = [view["topics"][i] for i, t in enumerate(response.topics) if t.name and t.name.endswith(run.suffix)]
    view["topics"] = sorted(keep, key=lambda t: t["name"])
    run.note(f"Metadata v{version} (all topics, this run's)", view)
    return response


def creatable(run: ScenarioRun, name: str, partitions: int = 1, replication_factor: int = -1, *,
              assignments: Sequence[Sequence[int]] = (), configs: dict[str, str | None] | None = None,
              version: int = 7, raw_name: bool = False) -> Any:
    """One CreatableTopic: `name` is a symbol of this run unless raw_name; `assignments` are
    replica lists for partitions 0, 1, ... (or (index, [brokers]) pairs for odd orders)."""
    assigned = []
    for i, a in enumerate(assignments):
        pair = len(a) == 2 and isinstance(a[0], int) and isinstance(a[1], (list, tuple))
        index, brokers = (a[0], a[1]) if pair else (i, a)
        assigned.append(entity(CREATE_TOPICS, version, "CreatableReplicaAssignment", partition_index=index,
                               broker_ids=tuple(brokers)))
    return entity(CREATE_TOPICS, version, "CreatableTopic", name=name if raw_name else run.topic(name),
                  num_partitions=partitions, replication_factor=replication_factor, assignments=tuple(assigned),
                  configs=tuple(entity(CREATE_TOPICS, version, "CreatableTopicConfig", name=k, value=v)
                                for k, v in (configs or {}).items()))


def create_topics(run: ScenarioRun, topics: Iterable[Any], *, version: int = 7, validate_only: bool = False,
                  label: str | None = None, wait: bool = True) -> Any:
    """CreateTopics; the topics it created are then waited for (leaders and logs) unrecorded."""
    topics = tuple(topics)
    response = run.call(CREATE_TOPICS, version, _label=label, topics=topics, timeout=TIMEOUT,
                        validate_only=validate_only)
    if wait and not validate_only:
        asked = {t.name: t for t in topics}
        for t in response.topics:
            if t.error_code.value == 0 and t.name.endswith(run.suffix):
                # The count asked for, or the assignments', or the session's num.partitions (1).
                request = asked[t.name]
                count = request.num_partitions if request.num_partitions > 0 else len(request.assignments) or 1
                wait_for_leaders(run, t.name[: -len(run.suffix)], count)
    return response


def delete_topics(run: ScenarioRun, names: Sequence[str | None] = (), ids: Sequence[uuid.UUID] = (), *,
                  both: Sequence[tuple[str, uuid.UUID]] = (), version: int = 6, label: str | None = None) -> Any:
    """DeleteTopics by name (symbols, or '='-prefixed raw names, None for neither) and, v6+, by id."""
    def raw(n: str | None) -> str | None:
        return None if n is None else (n[1:] if n.startswith("=") else run.topic(n))

    if version < 6:
        return run.call(DELETE_TOPICS, version, _label=label, topic_names=tuple(raw(n) for n in names),
                        timeout=TIMEOUT)
    states = [entity(DELETE_TOPICS, version, "DeleteTopicState", name=raw(n), topic_id=None) for n in names]
    states += [entity(DELETE_TOPICS, version, "DeleteTopicState", name=None, topic_id=i) for i in ids]
    states += [entity(DELETE_TOPICS, version, "DeleteTopicState", name=raw(n), topic_id=i) for n, i in both]
    return run.call(DELETE_TOPICS, version, _label=label, topics=tuple(states), timeout=TIMEOUT)


def wait_until_gone(run: ScenarioRun, symbol: str) -> None:
    """Kafka's DeleteTopics returns once the controller committed the deletion; its broker
    drops the topic from Metadata a moment later."""
    def gone() -> bool:
        t = metadata_topics(run, [symbol], record=False).topics[0]
        return t.error_code.value != 0

    run.wait_until(gone, f"deletion of {run.topic(symbol)}")


def create_partitions(run: ScenarioRun, topics: Sequence[tuple[str, int, Sequence[Sequence[int]] | None]], *,
                      version: int = 3, validate_only: bool = False, label: str | None = None) -> Any:
    """CreatePartitions for (symbol or '='-raw name, new total count, assignments or None)."""
    entries = tuple(
        entity(CREATE_PARTITIONS, version, "CreatePartitionsTopic",
               name=name[1:] if name.startswith("=") else run.topic(name), count=count,
               assignments=None if assignments is None else tuple(
                   entity(CREATE_PARTITIONS, version, "CreatePartitionsAssignment", broker_ids=tuple(b))
                   for b in assignments))
        for name, count, assignments in topics
    )
    return run.call(CREATE_PARTITIONS, version, _label=label, topics=entries, timeout=TIMEOUT,
                    validate_only=validate_only)


def wait_for_partitions(run: ScenarioRun, symbol: str, count: int) -> None:
    wait_for_leaders(run, symbol, count)


def resource_name(run: ScenarioRun, resource_type: int, name: str) -> str:
    """A topic resource's name is a symbol of this run unless it starts with '='."""
    if resource_type == TOPIC and not name.startswith("="):
        return run.topic(name)
    return name[1:] if name.startswith("=") else name


def describe_configs(run: ScenarioRun, resources: Sequence[tuple[int, str, Sequence[str] | None]], *,
                     version: int = 4, synonyms: bool = True, documentation: bool = False,
                     label: str | None = None, record: bool = True) -> Any:
    """DescribeConfigs of (resource type, name, keys or None for all)."""
    entries = tuple(
        entity(DESCRIBE_CONFIGS, version, "DescribeConfigsResource", resource_type=t,
               resource_name=resource_name(run, t, n), configuration_keys=None if keys is None else tuple(keys))
        for t, n, keys in resources
    )
    return run.call(DESCRIBE_CONFIGS, version, _label=label, _record=record, resources=entries,
                    include_synonyms=synonyms, include_documentation=documentation)


def wait_for_topic_config(run: ScenarioRun, symbol: str, key: str, value: str | None) -> None:
    """Kafka's config changes return once its controller committed them; its broker describes
    them a moment later. Wait (unrecorded) until the topic's `key` has the override `value`
    (None: no override)."""
    def applied() -> bool:
        entries = describe_configs(run, [(TOPIC, symbol, (key,))], synonyms=False, record=False).results[0].configs
        override = [e.value for e in entries if e.name == key and int(e.config_source) == 1]
        return override == ([] if value is None else [value])

    run.wait_until(applied, f"{key}={value} on {run.topic(symbol)}")


def incremental_alter_configs(run: ScenarioRun,
                              resources: Sequence[tuple[int, str, Sequence[tuple[str, int, str | None]]]], *,
                              version: int = 1, validate_only: bool = False, label: str | None = None) -> Any:
    """IncrementalAlterConfigs of (resource type, name, [(key, op, value)])."""
    entries = tuple(
        entity(INCREMENTAL_ALTER_CONFIGS, version, "AlterConfigsResource", resource_type=t,
               resource_name=resource_name(run, t, n),
               configs=tuple(entity(INCREMENTAL_ALTER_CONFIGS, version, "AlterableConfig", name=k,
                                    config_operation=op, value=v) for k, op, v in ops))
        for t, n, ops in resources
    )
    return run.call(INCREMENTAL_ALTER_CONFIGS, version, _label=label, resources=entries, validate_only=validate_only)


def alter_configs(run: ScenarioRun, resources: Sequence[tuple[int, str, dict[str, str | None]]], *,
                  version: int = 2, validate_only: bool = False, label: str | None = None) -> Any:
    """AlterConfigs of (resource type, name, {key: value}): the whole override set."""
    entries = tuple(
        entity(ALTER_CONFIGS, version, "AlterConfigsResource", resource_type=t, resource_name=resource_name(run, t, n),
               configs=tuple(entity(ALTER_CONFIGS, version, "AlterableConfig", name=k, value=v)
                             for k, v in configs.items()))
        for t, n, configs in resources
    )
    return run.call(ALTER_CONFIGS, version, _label=label, resources=entries, validate_only=validate_only)


def describe_cluster(run: ScenarioRun, version: int, *, endpoint_type: int = 1, cluster_ops: bool = False,
                     fenced: bool = False, label: str | None = None) -> Any:
    return run.call(DESCRIBE_CLUSTER, version, _label=label, include_cluster_authorized_operations=cluster_ops,
                    endpoint_type=endpoint_type, include_fenced_brokers=fenced)


def describe_log_dirs(run: ScenarioRun, version: int, topics: dict[str, Sequence[int]] | None) -> Any:
    """DescribeLogDirs, recorded as a view of this run's topics. Left out, because they must
    differ between two brokers: the log dir's path (each broker's temporary directory), the
    other scenarios' topics (other run ids) and the disk's free bytes (it changes as anything
    on the machine writes); the total bytes are kept as whether they are known (> 0)."""
    request_topics = None if topics is None else tuple(
        entity(DESCRIBE_LOG_DIRS, version, "DescribableLogDirTopic", topic=run.topic(s), partitions=tuple(p))
        for s, p in topics.items()
    )
    response = run.call(DESCRIBE_LOG_DIRS, version, _record=False, topics=request_topics)
    view = run.normalise(response)
    for raw, result in zip(response.results, view["results"]):
        result["log_dir"] = "<log-dir>"
        keep = [result["topics"][i] for i, t in enumerate(raw.topics) if t.name.endswith(run.suffix)]
        result["topics"] = sorted(keep, key=lambda t: t["name"])
        for t in result["topics"]:
            t["partitions"].sort(key=lambda p: p["partition_index"])
        if "total_bytes" in result:
            result["total_bytes"] = result["total_bytes"] > 0
            result["usable_bytes"] = result["usable_bytes"] > 0
    run.note(f"DescribeLogDirs v{version}", view)
    return response


def find_coordinator(run: ScenarioRun, group_symbol: str) -> Any:
    """FindCoordinator (unrecorded): makes a broker create __consumer_offsets if it lacks it."""
    return run.call(FIND_COORDINATOR, 4, _record=False, key_type=0, coordinator_keys=(run.group(group_symbol),),
                    key=run.group(group_symbol))
