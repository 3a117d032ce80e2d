"""asyncbroker → Apache Kafka: a stopped broker's log directories, made a KRaft node's own.

The partition directories are already Kafka's format (segments, indexes, producer
snapshots, leader-epoch and offset checkpoints, `partition.metadata` with the topic id).
What a Kafka 4.4 node lacks is its metadata: a KRaft broker serves only partitions whose
topic ids its metadata log knows, renaming the others `-stray`, and CreateTopics cannot
choose an id. So `asyncbroker migrate` writes what `kafka-storage.sh format` writes for a
new node, the bootstrap snapshot `__cluster_metadata-0/00000000000000000000-0000000000.checkpoint`,
with Kafka 4.4's feature levels followed by the records that create every topic of the
directories: TopicRecord (our topic id), PartitionRecord (this node leads, in the log
directory holding the partition, at the partition's latest leader epoch), ConfigRecord
(topic overrides, and the dynamic broker configs), ProducerIdsRecord (Kafka hands out
producer ids above every id asyncbroker gave), and the security state: an
AccessControlEntryRecord per ACL, a UserScramCredentialRecord per SCRAM user and mechanism,
and a ClientQuotaRecord per client quota value. The controller of a node whose metadata log
is empty appends those records as its first; the broker then finds its partitions.

`meta.properties` (v1: cluster id, node id, directory id) is ours already and stays. The
committed offsets need nothing: `__consumer_offsets` is a topic like the others, with the
partition count it was created with and Java's `String.hashCode` placement on both sides.

Everything is checked before anything is written, and what is written last is the one file
that makes the directory Kafka's; asyncbroker's own config files are removed after it, so
the metadata log is the only copy of the configs (asyncbroker reads it too when it opens a
directory Kafka wrote).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import msgspec

from storage.cluster_metadata import CLUSTER_METADATA_DIR, write_bootstrap_snapshot
from storage.errors import KafkaStorageError
from storage.leader_epoch_cache import LEADER_EPOCH_CHECKPOINT_FILE, LeaderEpochCheckpointFile
from storage.log_dir_file import LogDirFile
from storage.log_file_utils import CLEAN_SHUTDOWN_FILE
from storage.log_manager import LOCK_FILE, REMOTE_INDEX_CACHE_DIR, TOPIC_CONFIGS_FILE
from storage.meta_properties import META_PROPERTIES_FILE, read_meta_properties
from storage.offset_checkpoint import (
    CLEANER_OFFSET_CHECKPOINT_FILE,
    LOG_START_OFFSET_CHECKPOINT_FILE,
    RECOVERY_POINT_CHECKPOINT_FILE,
    REPLICATION_OFFSET_CHECKPOINT_FILE,
    OffsetCheckpointFile,
)
from storage.partition_metadata import PartitionMetadataFile, uuid_from_base64
from storage.topic_partition import TopicPartition
from wire.metadata_records import (
    BROKER_RESOURCE,
    GROUP_RESOURCE,
    TOPIC_RESOURCE,
    AccessControlEntryRecord,
    ClientQuotaRecord,
    ConfigRecord,
    FeatureLevelRecord,
    PartitionRecord,
    UserScramCredentialRecord,
    ProducerIdsRecord,
    TopicRecord,
    encode_metadata_record,
)

from asyncbroker.acl_binding import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from asyncbroker.broker_config_changes import BROKER_CONFIGS_FILE
from asyncbroker.client_quotas import CLIENT_QUOTAS_FILE, ClientQuotas
from asyncbroker.group_configs import GROUP_CONFIGS_FILE
from asyncbroker.scram_credentials import MECHANISMS, SCRAM_CREDENTIALS_FILE, ScramCredential, ScramCredentials
from asyncbroker.standard_authorizer import ACLS_FILE, AclFileError, StandardAuthorizer

__all__ = ["KAFKA_RELEASE", "KAFKA_FEATURE_LEVELS", "MigrationError", "MigrationPlan", "plan_migration",
           "migrate_to_kafka"]

log = logging.getLogger(__name__)

KAFKA_RELEASE = "4.4"
# What `kafka-storage.sh format --release-version 4.4` bootstraps (`kafka-storage.sh
# version-mapping --release-version 4.4`); metadata.version first, as Kafka requires.
KAFKA_FEATURE_LEVELS: tuple[tuple[str, int], ...] = (
    ("metadata.version", 33),
    ("eligible.leader.replicas.version", 1),
    ("group.version", 1),
    ("share.version", 2),
    ("streams.version", 1),
    ("transaction.version", 2),
)
_META_PROPERTIES_VERSION = 1
_CHECKPOINTS = (RECOVERY_POINT_CHECKPOINT_FILE, LOG_START_OFFSET_CHECKPOINT_FILE,
                REPLICATION_OFFSET_CHECKPOINT_FILE, CLEANER_OFFSET_CHECKPOINT_FILE)
_SKIPPED_DIR_SUFFIXES = ("-delete", "-future", "-stray")
_EVERY_ACL = AclBindingFilter(ResourceType.ANY, None, PatternType.ANY, None, None, AclOperation.ANY,
                              AclPermissionType.ANY)


class MigrationError(Exception):
    """The directories cannot be handed to Kafka as they are; nothing was changed."""


class TopicPlan(msgspec.Struct, frozen=True):
    name: str
    topic_id: uuid.UUID
    # partition -> (directory id of the log dir holding it, its latest leader epoch)
    partitions: dict[int, tuple[uuid.UUID, int]]
    configs: dict[str, str]


class MigrationPlan(msgspec.Struct, frozen=True):
    log_dirs: list[Path]
    cluster_id: str
    node_id: int
    topics: list[TopicPlan]
    broker_configs: dict[str, dict[str, str]]  # "" (cluster-wide) or the node id -> key -> value
    next_producer_id: int
    acls: list[AclBinding] = msgspec.field(default_factory=list)
    # (user, mechanism id, credential)
    scram_credentials: list[tuple[str, int, ScramCredential]] = msgspec.field(default_factory=list)
    client_quotas: dict[tuple[tuple[str, str | None], ...], dict[str, float]] = msgspec.field(default_factory=dict)
    group_configs: dict[str, dict[str, str]] = msgspec.field(default_factory=dict)  # group id -> key -> value

    def metadata_records(self) -> list[bytes]:
        records: list[TopicRecord | PartitionRecord | ConfigRecord | FeatureLevelRecord | ProducerIdsRecord
                      | AccessControlEntryRecord | UserScramCredentialRecord | ClientQuotaRecord]
        records = [FeatureLevelRecord(name, level) for name, level in KAFKA_FEATURE_LEVELS]
        for topic in self.topics:
            records.append(TopicRecord(topic.name, topic.topic_id))
            for p, (dir_id, epoch) in sorted(topic.partitions.items()):
                node = [self.node_id]
                records.append(PartitionRecord(p, topic.topic_id, node, node, self.node_id, epoch, 0, [dir_id]))
            records += [ConfigRecord(TOPIC_RESOURCE, topic.name, k, v) for k, v in sorted(topic.configs.items())]
        for resource, layer in sorted(self.broker_configs.items()):
            records += [ConfigRecord(BROKER_RESOURCE, resource, k, v) for k, v in sorted(layer.items())]
        for group, layer in sorted(self.group_configs.items()):
            records += [ConfigRecord(GROUP_RESOURCE, group, k, v) for k, v in sorted(layer.items())]
        # Broker epoch -1: no broker asked for this block; Kafka's next block starts here.
        records.append(ProducerIdsRecord(self.node_id, -1, self.next_producer_id))
        records += [AccessControlEntryRecord(uuid.uuid4(), a.resource_type, a.resource_name, a.pattern_type,
                                             a.principal, a.host, a.operation, a.permission_type) for a in self.acls]
        records += [UserScramCredentialRecord(user, mechanism, c.salt, c.stored_key, c.server_key, c.iterations)
                    for user, mechanism, c in self.scram_credentials]
        records += [ClientQuotaRecord(list(entity), key, value, False)
                    for entity, values in self.client_quotas.items() for key, value in sorted(values.items())]
        return [encode_metadata_record(r) for r in records]

    def server_properties(self, listener_port: int = 9092, controller_port: int = 9093) -> str:
        """What a Kafka 4.4 node needs to serve these directories (combined mode, one node): a
        static quorum of itself, and the internal topics Kafka may still create (transactions,
        share groups) at replication factor 1 like the topics handed over."""
        return "\n".join([
            "process.roles=broker,controller",
            f"node.id={self.node_id}",
            f"controller.quorum.voters={self.node_id}@127.0.0.1:{controller_port}",
            f"listeners=PLAINTEXT://127.0.0.1:{listener_port},CONTROLLER://127.0.0.1:{controller_port}",
            "controller.listener.names=CONTROLLER",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            f"log.dirs={','.join(str(d) for d in self.log_dirs)}",
            "offsets.topic.replication.factor=1",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1",
            "share.coordinator.state.topic.replication.factor=1",
            "share.coordinator.state.topic.min.isr=1",
        ]) + "\n"


def plan_migration(log_dirs: Sequence[str | Path], now_ms: int | None = None) -> MigrationPlan:
    """Check the directories and read what Kafka's metadata must say; MigrationError when
    they cannot be migrated as they are. Reads only."""
    dirs = [Path(d).resolve() for d in log_dirs]
    if not dirs:
        raise MigrationError("no log directory given")
    if len(set(dirs)) != len(dirs):
        raise MigrationError("a log directory is named twice")
    metas = []
    for d in dirs:
        if not d.is_dir():
            raise MigrationError(f"{d} is not a directory")
        _check_not_in_use(d)
        try:
            meta = read_meta_properties(d)
        except KafkaStorageError as exc:
            raise MigrationError(f"{d}/{META_PROPERTIES_FILE}: {exc}") from None
        if meta is None:
            raise MigrationError(f"{d} has no {META_PROPERTIES_FILE}: it is not a log directory asyncbroker "
                                 "has run on")
        if meta.version != _META_PROPERTIES_VERSION:
            raise MigrationError(f"{d}/{META_PROPERTIES_FILE} has version {meta.version}; only version "
                                 f"{_META_PROPERTIES_VERSION} (KRaft) is known")
        if meta.directory_id is None:
            raise MigrationError(f"{d}/{META_PROPERTIES_FILE} has no directory.id")
        if (d / CLUSTER_METADATA_DIR).exists():
            raise MigrationError(f"{d} already holds a KRaft metadata log ({CLUSTER_METADATA_DIR}): it was "
                                 "written by Kafka or migrated before")
        if not (d / CLEAN_SHUTDOWN_FILE).exists():
            raise MigrationError(
                f"{d} was not shut down cleanly (no {CLEAN_SHUTDOWN_FILE}): start asyncbroker on it so that "
                "recovery runs, stop it with SIGTERM, and migrate then")
        for name in _CHECKPOINTS:
            try:
                OffsetCheckpointFile(d / name).read()
            except KafkaStorageError as exc:
                raise MigrationError(str(exc)) from None
        metas.append(meta)
    if len({(m.cluster_id, m.node_id) for m in metas}) != 1:
        raise MigrationError("the log directories belong to different clusters or nodes: "
                             + ", ".join(f"{d} ({m.cluster_id}, node {m.node_id})" for d, m in zip(dirs, metas)))
    found: dict[str, dict[int, tuple[uuid.UUID, int]]] = {}
    ids: dict[str, set[uuid.UUID]] = {}
    for d, meta in zip(dirs, metas):
        dir_id = uuid_from_base64(meta.directory_id or "")
        for child in sorted(d.iterdir()):
            # Kafka skips the tiered-storage index cache as well as these suffixes.
            if not child.is_dir() or child.name.endswith(_SKIPPED_DIR_SUFFIXES) or child.name == REMOTE_INDEX_CACHE_DIR:
                continue
            try:
                tp = TopicPartition.from_dir_name(child.name)
            except ValueError:
                raise MigrationError(f"{child} is not a partition directory; Kafka would take the whole log "
                                     "directory offline over it. Move it out first") from None
            if tp.partition in found.get(tp.topic, {}):
                raise MigrationError(f"partition {tp} is in two log directories")
            try:
                topic_id = PartitionMetadataFile(child).read()
                epochs = LeaderEpochCheckpointFile(child / LEADER_EPOCH_CHECKPOINT_FILE).read()
            except KafkaStorageError as exc:
                raise MigrationError(str(exc)) from None
            if topic_id is not None:
                ids.setdefault(tp.topic, set()).add(topic_id)
            found.setdefault(tp.topic, {})[tp.partition] = (dir_id, max((e for e, _ in epochs), default=0))
    topic_configs = _newest_json(dirs, TOPIC_CONFIGS_FILE)
    topics = []
    for name, partitions in sorted(found.items()):
        missing = sorted(set(range(max(partitions) + 1)) - set(partitions))
        if missing:
            raise MigrationError(f"topic {name} has no directory for partition(s) {missing}")
        topic_ids = ids.get(name, set())
        if len(topic_ids) > 1:
            raise MigrationError(f"the partitions of topic {name} carry different topic ids: {sorted(map(str, topic_ids))}")
        # A partition without partition.metadata takes the topic's id from the metadata (Kafka writes it).
        topic_id = next(iter(topic_ids)) if topic_ids else uuid.uuid4()
        configs = {str(k): str(v) for k, v in topic_configs.get(name, {}).items()}
        if configs.get("remote.storage.enable", "false").lower() == "true":
            # Kafka would need a RemoteStorageManager reading asyncbroker's remote layout, and
            # refuses to start with a tiered topic and tiered storage off.
            raise MigrationError(
                f"topic {name} is tiered (remote.storage.enable=true): its older segments are in remote storage, "
                "which Kafka cannot read without a plugin for asyncbroker's layout. Set remote.storage.enable=false "
                "with remote.log.delete.on.disable=true first (its remote records are then deleted) or move it with "
                "MirrorMaker 2")
        topics.append(TopicPlan(name, topic_id, partitions, configs))
    layers = _newest_json(dirs, BROKER_CONFIGS_FILE)
    node_id = metas[0].node_id
    broker_configs = {resource: {str(k): str(v) for k, v in layers.get(key, {}).items()}
                      for key, resource in (("broker", str(node_id)), ("cluster", ""))}
    now = int(time.time() * 1000) if now_ms is None else now_ms
    try:
        acls = StandardAuthorizer(dirs, "", False).acls(_EVERY_ACL)
    except AclFileError as exc:
        raise MigrationError(str(exc)) from None
    mechanism_ids = {name: i for i, (name, _) in MECHANISMS.items()}
    scram = [(user, mechanism_ids[m], c) for user, ms in sorted(ScramCredentials(dirs).users().items())
             for m, c in sorted(ms.items())]
    # asyncbroker hands out producer ids from (its start time in ms) * 1000 on (Broker), so
    # the migration's time * 1000 is above every id a producer could hold.
    return MigrationPlan(dirs, metas[0].cluster_id, node_id, topics,
                         {k: v for k, v in broker_configs.items() if v}, now * 1000, acls, scram,
                         ClientQuotas(dirs).entries(), _newest_json(dirs, GROUP_CONFIGS_FILE))


def migrate_to_kafka(log_dirs: Sequence[str | Path]) -> MigrationPlan:
    """Plan, then write the bootstrap snapshot into the first directory (Kafka's default
    metadata.log.dir) and remove asyncbroker's config files. MigrationError: nothing changed."""
    plan = plan_migration(log_dirs)
    now_ms = int(time.time() * 1000)
    path = write_bootstrap_snapshot(plan.log_dirs[0], plan.metadata_records(), now_ms)
    log.info("Wrote %s: %d topic(s), %d partition(s) for Kafka %s node %d of cluster %s", path,
             len(plan.topics), sum(len(t.partitions) for t in plan.topics), KAFKA_RELEASE, plan.node_id,
             plan.cluster_id)
    # The metadata log is now the configs' one copy (asyncbroker reads it when these are absent).
    for d in plan.log_dirs:
        for name in (TOPIC_CONFIGS_FILE, BROKER_CONFIGS_FILE, ACLS_FILE, SCRAM_CREDENTIALS_FILE, CLIENT_QUOTAS_FILE,
                     GROUP_CONFIGS_FILE):
            (d / name).unlink(missing_ok=True)
    return plan


def _check_not_in_use(d: Path) -> None:
    """Refuse a directory a running broker holds the `.lock` of: asyncbroker takes it with
    flock, Kafka's JVM with a POSIX record lock (FileChannel.tryLock); the two do not see
    each other, so both are tried."""
    lock = d / LOCK_FILE
    if not lock.exists():
        return
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        raise MigrationError(f"{d} is in use: another process holds {LOCK_FILE}. Stop the broker first") from None
    finally:
        os.close(fd)  # closing drops the locks taken just to test them


def _newest_json(dirs: Sequence[Path], name: str) -> dict[str, dict[str, str]]:
    """The newest copy of one of asyncbroker's JSON config files among the log dirs."""
    loaded = []
    for path, raw in LogDirFile(dirs, name).copies():
        try:
            loaded.append(json.loads(raw))
        except ValueError as exc:
            raise MigrationError(f"{path} is not valid JSON: {exc}") from None
    return loaded[0] if loaded else {}
