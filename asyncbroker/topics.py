"""TopicManager: the broker's topic metadata on top of storage's LogManager.

What a topic is here: a name, a topic id (persisted by storage in every
partition's `partition.metadata`, so it is stable across restarts), a
partition count (the partition directories that exist) and the topic config
overrides (persisted by LogManager's per-topic override store). This module
checks every admin request the way Kafka's controller does before anything
touches the file system, so an illegal name such as `../x` is refused before
a path is built from it.

Mutations (create, delete, add partitions, alter configs) are serialized by
one asyncio lock: each is a check-then-act on the topic table, and two
CreateTopics for one name must yield exactly one TOPIC_ALREADY_EXISTS. The
blocking storage work runs on the broker's executor (`broker.run_blocking`).
Readers (`get`, `all`, `by_id`, `log_config`) are plain dict lookups, safe to
call from any handler at any time.
"""
from __future__ import annotations

import asyncio
import enum
import logging
import uuid
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from storage.config_def import TOPIC_KEYS, ConfigType
from storage.log_config import LogConfig
from storage.log_manager import LogManager
from storage.topic_name import has_collision_chars, is_internal, unify_collision_chars, validate_topic_name
from storage.topic_partition import TopicPartition
from wire.errors import (
    PolicyViolationError,
    ErrorCode,
    InvalidConfigurationError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    InvalidTopicError,
    KafkaError,
    TopicExistsError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
)

from asyncbroker.alter_config_op import AlterConfigOp, apply_op
from asyncbroker.broker_config_changes import changed_layers, write_dynamic_configs
from asyncbroker.leader_epoch import become_leader
from asyncbroker.config import (
    TOPIC_DEFAULT_SYNONYMS,
    ConfigEntry,
    ConfigSource,
    ConfigSynonym,
    KafkaConfig,
)

if TYPE_CHECKING:
    from cleaner.log_cleaner_manager import LogCleanerManager

log = logging.getLogger(__name__)

ZERO_UUID = uuid.UUID(int=0)
# Namespace for ids of topics whose directories carry no partition.metadata
# (written by a very old Kafka): deriving the id from the name keeps it stable.
_LEGACY_ID_NAMESPACE = uuid.UUID("6d2b3f0e-4c1a-4f57-9d1e-4a7f3f1b2c90")


class TopicMetadata(msgspec.Struct, frozen=True):
    """A topic as the handlers see it; `configs` holds only the overrides."""

    name: str
    topic_id: uuid.UUID
    partitions: int
    is_internal: bool = False
    configs: dict[str, str] = msgspec.field(default_factory=dict)

    def topic_partitions(self) -> list[TopicPartition]:
        return [TopicPartition(self.name, p) for p in range(self.partitions)]


class TopicDeletionDisabledError(KafkaError):
    """DeleteTopics while delete.topic.enable=false."""

    error_code = ErrorCode.TOPIC_DELETION_DISABLED


class TopicManager:
    """Topic table + admin operations over `broker.log_manager`.

    Built by the Broker after `LogManager.startup()`; reads the topics the log
    directories hold and their persisted config overrides. A deleted topic's
    partitions are first taken from the cleaner (`cleaner_manager`, None while
    it is disabled or starting), and its committed offsets go afterwards
    (`on_partitions_deleted`, the group coordinator's), as in Kafka. A change to
    the dynamic broker configs is announced to `on_broker_configs_changed` once
    it is in force (the cleaner reads its knobs again).
    """

    def __init__(
        self,
        *,
        config: KafkaConfig,
        log_manager: LogManager,
        run_blocking: Callable[..., Awaitable[Any]],
        cleaner_manager: Callable[[], LogCleanerManager | None] = lambda: None,
        on_partitions_deleted: Callable[[Iterable[tuple[str, int]]], Awaitable[object]] | None = None,
        on_broker_configs_changed: Callable[[], None] = lambda: None,
        remote_log_manager: Callable[[], Any] = lambda: None,
    ) -> None:
        self.config = config
        self.log_manager = log_manager
        self._run_blocking = run_blocking
        self._cleaner_manager = cleaner_manager
        self._on_partitions_deleted = on_partitions_deleted
        self._on_broker_configs_changed = on_broker_configs_changed
        # Tiered storage's RemoteLogManager (None without it): a deleted tiered topic's remote
        # segments go with it, and so do those of a topic whose remote storage is turned off.
        self._remote_log_manager = remote_log_manager
        self.defaults: LogConfig = self.config.log_config_defaults()
        self._lock = asyncio.Lock()
        self._topics: dict[str, TopicMetadata] = {}
        self._by_id: dict[uuid.UUID, str] = {}
        self._log_configs: dict[str, LogConfig] = {}
        # Bumped by every change to a topic's metadata: what was derived from an older
        # generation (the encoded Metadata answers) is stale.
        self.generation = 0
        # The generation that last added a topic: a subscription regex resolved before it may
        # be missing a topic (Kafka's lastMetadataImageWithNewTopics).
        self.new_topics_generation = 0
        self._load()

    # ------------------------------------------------------------ reading

    def _load(self) -> None:
        for name, info in self.log_manager.topics().items():
            topic_id = getattr(info, "topic_id", None)
            if topic_id is None or topic_id == ZERO_UUID:
                topic_id = uuid.uuid5(_LEGACY_ID_NAMESPACE, name)
            overrides = dict(self.log_manager.topic_config_overrides(name))
            partitions = _partition_count(info)
            self._put(TopicMetadata(name, topic_id, partitions, is_internal(name), overrides))
            if (overrides.get("remote.storage.enable", "").strip().lower() == "true"
                    and not self.config.remote_log_storage_system_enable):
                # Kafka refuses to start so: the topic's older records are in remote storage.
                raise InvalidConfigurationError(
                    f"You have to delete all topics with the property remote.storage.enable=true before disabling "
                    f"tiered storage cluster-wide (topic {name} has it; remote.log.storage.system.enable=false)")
        log.info("Loaded metadata of %d topic(s)", len(self._topics))

    def _put(self, meta: TopicMetadata) -> None:
        old = self._topics.get(meta.name)
        if old is not None:
            self._by_id.pop(old.topic_id, None)
        self._topics[meta.name] = meta
        self._by_id[meta.topic_id] = meta.name
        self._log_configs.pop(meta.name, None)
        self.generation += 1
        if old is None:
            self.new_topics_generation = self.generation

    def _drop(self, name: str) -> None:
        meta = self._topics.pop(name, None)
        if meta is not None:
            self._by_id.pop(meta.topic_id, None)
        self._log_configs.pop(name, None)
        self.generation += 1

    def get(self, name: str) -> TopicMetadata | None:
        return self._topics.get(name)

    def exists(self, name: str) -> bool:
        return name in self._topics

    def all(self) -> list[TopicMetadata]:
        return list(self._topics.values())

    def by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        name = self._by_id.get(topic_id)
        return self._topics.get(name) if name is not None else None

    def log_config(self, name: str) -> LogConfig:
        """The effective LogConfig of a topic (broker defaults + its overrides)."""
        cached = self._log_configs.get(name)
        if cached is not None:
            return cached
        meta = self._topics.get(name)
        if meta is None:
            raise UnknownTopicOrPartitionError(f"Topic {name} not found.")
        cfg = LogConfig.from_props(meta.configs, self.defaults) if meta.configs else self.defaults
        self._log_configs[name] = cfg
        return cfg

    # ------------------------------------------------------------ validation

    def _check_new_name(self, name: str) -> None:
        validate_topic_name(name)  # before any path is built from the name
        if name in self._topics:
            raise TopicExistsError(f"Topic '{name}' already exists.")
        if has_collision_chars(name):
            unified = unify_collision_chars(name)
            for other in self._topics:
                if has_collision_chars(other) and unify_collision_chars(other) == unified:
                    raise InvalidTopicError(
                        f"Topic '{name}' collides with existing topic: {other}"
                    )

    def _resolve_partitions(self, num_partitions: int) -> int:
        if num_partitions == -1:
            return self.config.num_partitions
        if num_partitions <= 0:
            raise InvalidPartitionsError("Number of partitions was set to an invalid non-positive value.")
        _check_partition_limit(num_partitions)
        return num_partitions

    def _check_replication_factor(self, replication_factor: int) -> None:
        if replication_factor == -1:
            replication_factor = self.config.default_replication_factor
        if replication_factor <= 0:
            raise InvalidReplicationFactorError(
                "Replication factor must be larger than 0, or -1 to use the default value."
            )
        if replication_factor > 1:
            raise InvalidReplicationFactorError(
                f"Unable to replicate the partition {replication_factor} time(s): The target replication "
                f"factor of {replication_factor} cannot be reached because only 1 broker(s) are registered "
                "or some brokers have all their log directories cordoned."
            )

    def _validate_configs(self, configs: Mapping[str, str | None], *,
                          was_remote: bool = False) -> tuple[dict[str, str], LogConfig]:
        overrides: dict[str, str] = {}
        for key, value in configs.items():
            if value is None:
                raise InvalidConfigurationError(f"Null value not supported for topic configs: {key}")
            overrides[key] = value
        # Unknown keys and bad values raise InvalidConfigurationError naming the key.
        log_config = LogConfig.from_props(overrides, self.defaults)
        log_config.validate_remote_storage(system_enabled=self.config.remote_log_storage_system_enable,
                                           was_remote=was_remote)
        return overrides, log_config

    # ------------------------------------------------------------ mutations

    async def create_topic(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str | None] | None = None,
        validate_only: bool = False,
    ) -> TopicMetadata:
        """Create a topic (or only check that it could be created).

        Raises InvalidTopicError, TopicExistsError, InvalidPartitionsError,
        InvalidReplicationFactorError, InvalidConfigurationError. With
        validate_only the returned metadata has the zero topic id.
        """
        async with self._lock:
            self._check_new_name(name)
            partitions = self._resolve_partitions(num_partitions)
            self._check_replication_factor(replication_factor)
            overrides, log_config = self._validate_configs(configs or {})
            if validate_only:
                return TopicMetadata(name, ZERO_UUID, partitions, is_internal(name), overrides)
            topic_id = uuid.uuid4()
            await self._run_blocking(self._create_logs_blocking, name, topic_id, 0, partitions, overrides, log_config)
            meta = TopicMetadata(name, topic_id, partitions, is_internal(name), overrides)
            self._put(meta)
            self._log_configs[name] = log_config
            log.info("Created topic %s (id %s) with %d partition(s)%s", name, topic_id, partitions,
                     f", configs {overrides}" if overrides else "")
            return meta

    def _create_logs_blocking(
        self,
        name: str,
        topic_id: uuid.UUID,
        first: int,
        end: int,
        overrides: dict[str, str] | None,
        log_config: LogConfig,
    ) -> None:
        # Overrides are persisted before the partitions exist, so a partition
        # found at startup never lacks its topic's configs.
        if overrides is not None:
            self.log_manager.set_topic_config(name, overrides)
        partitions = [TopicPartition(name, partition) for partition in range(first, end)]
        try:
            self.log_manager.create_logs(partitions, log_config, topic_id, on_created=become_leader)
        except BaseException:
            # All or nothing: a half-created topic would resurface at the next
            # start with partitions the table never knew about. (Only new partitions are
            # asked for: every one of them that has a log now was made by this call.)
            for _ in partitions:  # (a partition whose deletion failed has left the registry: bounded)
                try:
                    self.log_manager.delete_partition_logs(partitions)
                    break
                except Exception:  # noqa: BLE001 - report the original failure, undo the others
                    log.exception("Could not roll back a partition of %s", name)
            raise

    async def delete_topic(self, name: str) -> TopicMetadata:
        """Delete a topic's partitions (renamed `-delete`, removed later) and its overrides."""
        async with self._lock:
            meta = self._topics.get(name)
            if meta is None:
                raise UnknownTopicOrPartitionError(f"Topic {name} not found.")
            self._check_deletion_enabled()
            tiered = self.log_config(name).remote_storage_enable
            # Gone from the table first: new requests stop seeing the topic at once.
            self._drop(name)
            # Kafka aborts cleaning of the partitions before renaming them `-delete`, so the
            # cleaner never swaps segments into a directory on its way out. The seam for
            # cleaner.LogCleanerManager (plain or async method).
            cleaner = self._cleaner_manager()
            if cleaner is not None:
                await cleaner.abort_cleaning(meta.topic_partitions())
            await self._run_blocking(self._delete_logs_blocking, meta)
            log.info("Deleted topic %s (id %s)", name, meta.topic_id)
            self._stop_remote_partitions(meta, tiered)
            # Committed offsets go with the partitions (Kafka's onPartitionsDeleted).
            if self._on_partitions_deleted is not None and not meta.is_internal:
                await self._on_partitions_deleted((tp.topic, tp.partition) for tp in meta.topic_partitions())
            return meta

    async def delete_topic_by_id(self, topic_id: uuid.UUID) -> TopicMetadata:
        meta = self.by_id(topic_id)
        if meta is None:
            from wire.errors import UnknownTopicIdError

            raise UnknownTopicIdError(f"Topic id {topic_id} not found.")
        return await self.delete_topic(meta.name)

    def _check_deletion_enabled(self) -> None:
        if not self.config.delete_topic_enable:
            raise TopicDeletionDisabledError("Topic deletion is disabled.")

    def _delete_logs_blocking(self, meta: TopicMetadata) -> None:
        self.log_manager.delete_partition_logs(meta.topic_partitions())
        self.log_manager.set_topic_config(meta.name, {})

    async def create_partitions(self, name: str, total: int, validate_only: bool = False,
                                assignments: Sequence[Sequence[int]] | None = None) -> TopicMetadata:
        """Grow a topic to `total` partitions (never shrink), optionally placing the new ones
        by hand (`assignments`: one replica list per new partition). Checked in the order of
        Kafka's controller, with its texts."""
        async with self._lock:
            meta = self._topics.get(name)
            if meta is None:
                raise UnknownTopicOrPartitionError(f"Topic {name} not found.")
            if total == meta.partitions:
                raise InvalidPartitionsError(f"Topic already has {meta.partitions} partition(s).")
            if total < meta.partitions:
                raise InvalidPartitionsError(
                    f"The topic {name} currently has {meta.partitions} partition(s); {total} would not be an increase."
                )
            if assignments is not None:
                if len(assignments) != total - meta.partitions:
                    raise InvalidReplicaAssignmentError(
                        f"Attempted to add {total - meta.partitions} additional partition(s), but only "
                        f"{len(assignments)} assignment(s) were specified.")
                for broker_ids in assignments:
                    # Every existing partition here has one replica, on this node.
                    check_manual_assignment(broker_ids, (self.config.node_id,), 1)
            _check_partition_limit(total - meta.partitions)
            if validate_only:
                return msgspec.structs.replace(meta, partitions=total)
            log_config = self.log_config(name)
            await self._run_blocking(
                self._create_logs_blocking, name, meta.topic_id, meta.partitions, total, None, log_config
            )
            grown = msgspec.structs.replace(meta, partitions=total)
            self._put(grown)
            self._log_configs[name] = log_config
            log.info("Increased partitions of %s from %d to %d", name, meta.partitions, total)
            return grown

    async def incremental_alter_configs(
        self,
        name: str,
        ops: Sequence[tuple[str, int, str | None]],
        validate_only: bool = False,
    ) -> TopicMetadata:
        """Apply (key, AlterConfigOp, value) operations to a topic's overrides.

        The new configs take effect at once: every partition's Log gets
        `update_config`, and the overrides are persisted for the next start.
        """
        async with self._lock:
            meta = self._topics.get(name)
            if meta is None:
                raise UnknownTopicOrPartitionError(f"The topic '{name}' does not exist.")
            seen: set[str] = set()
            overrides = dict(meta.configs)
            for key, _, _ in ops:
                if key in seen:
                    raise InvalidRequestError("Error due to duplicate config keys")
                seen.add(key)
            for key, op, value in ops:
                overrides = self._apply_op(name, overrides, key, op, value)
            overrides, log_config = self._validate_configs(
                overrides, was_remote=self.log_config(name).remote_storage_enable)
            if validate_only or overrides == meta.configs:
                return msgspec.structs.replace(meta, configs=overrides)
            updated = msgspec.structs.replace(meta, configs=overrides)
            was_tiered = self.log_config(name).remote_storage_enable
            await self._run_blocking(self._apply_configs_blocking, updated, log_config)
            self._put(updated)
            self._log_configs[name] = log_config
            if was_tiered and not log_config.remote_storage_enable:
                # remote.log.delete.on.disable: the remote segments go and the log starts locally.
                await self._run_blocking(self._start_locally_blocking, updated)
                self._stop_remote_partitions(updated, True)
            log.info("Updated configs of topic %s: %s", name, overrides)
            return updated

    async def alter_broker_configs(self, resource_name: str, changes: Sequence[tuple[str, int, str | None]]) -> None:
        """Apply checked dynamic broker config changes (this node's, or the cluster-wide
        defaults for resource ""): persist the layers, then push the new topic defaults to
        every log, each with its topic's overrides on top."""
        async with self._lock:
            broker_layer, cluster_layer = changed_layers(self.config, resource_name, changes)
            candidate = msgspec.structs.replace(self.config, dynamic_broker=broker_layer, dynamic_cluster=cluster_layer)
            defaults = candidate.log_config_defaults()  # cross-key rules: InvalidConfigurationError
            await self._run_blocking(self._apply_defaults_blocking, broker_layer, cluster_layer, defaults,
                                     list(self._topics.values()))
            # The config object is shared (broker, log jobs, handlers): its layers change in place.
            self.config.dynamic_broker, self.config.dynamic_cluster = broker_layer, cluster_layer
            self.defaults = defaults
            self._log_configs.clear()
            log.info("Dynamic broker configs now %s (this node), %s (cluster)", broker_layer, cluster_layer)
            self._on_broker_configs_changed()

    def _apply_defaults_blocking(self, broker_layer: dict[str, str], cluster_layer: dict[str, str],
                                 defaults: LogConfig, topics: list[TopicMetadata]) -> None:
        write_dynamic_configs(self.config.log_dirs, broker_layer, cluster_layer)
        self.log_manager.default_config = defaults
        for meta in topics:
            config = LogConfig.from_props(meta.configs, defaults) if meta.configs else defaults
            for tp in meta.topic_partitions():
                partition_log = self.log_manager.get_log(tp)
                if partition_log is not None:
                    partition_log.update_config(config)
        self.log_manager.note_compaction(self.log_manager.all_logs())  # defaults now compact: the cleaner

    async def replace_configs(self, name: str, configs: Sequence[tuple[str, str | None]],
                              validate_only: bool = False) -> TopicMetadata:
        """AlterConfigs: `configs` become the topic's whole override set (the keys it does not
        name go back to their defaults)."""
        meta = self._topics.get(name)
        if meta is None:
            raise UnknownTopicOrPartitionError(f"The topic '{name}' does not exist.")
        given = {key for key, _ in configs}
        ops = [(key, int(AlterConfigOp.SET), value) for key, value in configs]
        ops += [(key, int(AlterConfigOp.DELETE), None) for key in meta.configs if key not in given]
        return await self.incremental_alter_configs(name, ops, validate_only)

    def _apply_op(self, name: str, overrides: dict[str, str], key: str, op: int,
                  value: str | None) -> dict[str, str]:
        return apply_op(TOPIC_KEYS, "topic", overrides, key, op, value,
                        lambda: str(self.log_config(name).to_props()[key]) if name in self._topics else "")

    def _stop_remote_partitions(self, meta: TopicMetadata, tiered: bool) -> None:
        rlm = self._remote_log_manager()
        if rlm is None or not tiered or meta.topic_id is None:
            return
        from wire.remote_log_metadata_records import TopicIdPartition

        rlm.stop_partitions([TopicIdPartition(meta.topic_id, meta.name, p) for p in range(meta.partitions)],
                            delete=True)

    def _start_locally_blocking(self, meta: TopicMetadata) -> None:
        for tp in meta.topic_partitions():
            partition_log = self.log_manager.get_log(tp)
            first = partition_log.segments.first_segment() if partition_log is not None else None
            if partition_log is not None and first is not None:
                partition_log.maybe_increment_log_start_offset(first.base_offset, "remote storage disabled")
                partition_log.forget_remote_storage()

    def _apply_configs_blocking(self, meta: TopicMetadata, log_config: LogConfig) -> None:
        self.log_manager.set_topic_config(meta.name, meta.configs)
        for tp in meta.topic_partitions():
            partition_log = self.log_manager.get_log(tp)
            if partition_log is not None:
                partition_log.update_config(log_config)

    # ------------------------------------------------------------ describing

    def describe_configs(
        self, name: str, keys: Collection[str] | None = None
    ) -> list[ConfigEntry]:
        """DescribeConfigs for a TOPIC resource: every topic key (or `keys`), with
        its source and synonyms the way Kafka reports them."""
        meta = self._topics.get(name)
        if meta is None:
            raise UnknownTopicOrPartitionError(f"Topic {name} not found.")
        return self.describe_overrides(meta.configs, keys, self.log_config(name))

    def describe_overrides(
        self,
        overrides: Mapping[str, str],
        keys: Collection[str] | None = None,
        log_config: LogConfig | None = None,
    ) -> list[ConfigEntry]:
        """The config entries of a topic with these overrides (also for a topic that
        CreateTopics only validated and that therefore does not exist)."""
        if log_config is None:
            log_config = LogConfig.from_props(overrides, self.defaults)
        effective = log_config.to_props()
        # Internal keys (internal.segment.bytes) are described only when set, as Kafka does.
        wanted = (sorted(k for k, key in TOPIC_KEYS.items() if not key.internal or k in overrides) if keys is None
                  else [k for k in keys if k in TOPIC_KEYS])
        entries: list[ConfigEntry] = []
        for key in wanted:
            definition = TOPIC_KEYS[key]
            synonyms: list[ConfigSynonym] = []
            if key in overrides:
                synonyms.append(ConfigSynonym(key, overrides[key], ConfigSource.DYNAMIC_TOPIC_CONFIG))
            # Kafka lists the synonyms of the topic key's primary broker key (log.retention.ms),
            # so a default that log.retention.hours supplies shows none.
            primary = TOPIC_DEFAULT_SYNONYMS.get(key, ())[:1]
            for broker_key in primary:
                synonyms.extend(self.config.synonyms(broker_key))
            entries.append(
                ConfigEntry(
                    name=key,
                    value=overrides[key] if key in overrides else effective.get(key),
                    source=synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
                    read_only=False,
                    is_sensitive=False,
                    synonyms=tuple(synonyms),
                    type=definition.type,
                    documentation=definition.doc,
                )
            )
        return entries


def check_manual_assignment(broker_ids: Sequence[int], registered: Collection[int],
                            replication_factor: int | None) -> None:
    """One partition's manual replica list, checked as Kafka's controller does (its order of
    checks and its texts): not empty, only registered brokers, none twice, and as many
    replicas as the partitions before it."""
    if not broker_ids:
        raise InvalidReplicaAssignmentError("The manual partition assignment includes an empty replica list.")
    previous: int | None = None
    for broker_id in sorted(broker_ids):
        if broker_id not in registered:
            raise InvalidReplicaAssignmentError(
                f"The manual partition assignment includes broker {broker_id}, but no such broker is registered.")
        if broker_id == previous:
            raise InvalidReplicaAssignmentError(
                f"The manual partition assignment includes the broker {previous} more than once.")
        previous = broker_id
    if replication_factor is not None and replication_factor != len(broker_ids):
        raise InvalidReplicaAssignmentError(
            f"The manual partition assignment includes a partition with {len(broker_ids)} replica(s), but this is "
            f"not consistent with previous partitions, which have {replication_factor} replica(s).")


def _partition_count(info: Any) -> int:
    """Partitions of a discovered topic, whatever shape storage's TopicInfo has."""
    for attr in ("partition_count", "partitions", "num_partitions"):
        value = getattr(info, attr, None)
        if value is None:
            continue
        if isinstance(value, int):
            return value
        return len(value)
    raise TypeError(f"cannot tell the partition count of {info!r}")


MAX_PARTITIONS_PER_REQUEST = 10_000
"""Kafka's controller refuses a single operation creating more than 10,000 records
(QuorumController.MAX_RECORDS_PER_USER_OP); without it one hostile CreateTopics asking for
2**31-1 partitions would make the broker create directories until the disk is full."""


def _check_partition_limit(new_partitions: int) -> None:
    if new_partitions > MAX_PARTITIONS_PER_REQUEST:
        raise PolicyViolationError(
            f"Unable to create {new_partitions} partitions in one request: the limit is {MAX_PARTITIONS_PER_REQUEST}."
        )
