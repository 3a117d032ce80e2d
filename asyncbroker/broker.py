"""The Broker: what every handler reaches through, and the broker's lifecycle.

It composes storage's LogManager (synchronous, called from executor
threads), ADMIN's TopicManager, the fetch waiters and the periodic jobs.
The event loop never waits on the disk: every storage call that may block
(append, read, fsync, file open/rename, checkpoint write) goes through
`run_blocking`, a thread pool of `num.io.threads` workers.

Appends are the one exception, and only when they provably cannot block:
most appends are a page-cache write that takes microseconds, but any of
them may roll a segment (file creates, index mmap resize, an fsync of the
old segment), write the leader-epoch checkpoint, fsync when
`flush.messages` is reached, or wait on the Log's lock while the flusher,
retention or a DeleteRecords holds it. Storage's nonblocking append checks
all of these before changing anything and refuses (AppendWouldBlock); the
ReplicaManager then appends from the pool, one executor hop for all the
partitions left. Compacted logs (keys are checked per record), topics that
recompress and requests above 1 MiB (replica_manager.INLINE_APPEND_MAX_BYTES:
a whole batch of the default message.max.bytes) always take the hop, so the
loop's share stays bounded. Measured on the 2-core VM, a sequential 100 B acks=-1
produce round trip on a raw socket went from ~0.53 ms p50 with the hop to
~0.31 ms inline (a uvloop echo server answers in ~0.11 ms here): the two
thread wake-ups of a hop cost more than the append itself.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import logging
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from storage.clock import Clock
from storage.topic_name import OFFSETS_TOPIC, SHARE_GROUP_STATE_TOPIC, TRANSACTION_STATE_TOPIC
from storage.topic_partition import TopicPartition
from wire.errors import TopicExistsError

from asyncbroker.adjustable_clock import AdjustableClock
from asyncbroker.config import KafkaConfig
from asyncbroker.fetch_session import FetchManager
from asyncbroker.fetch_waiters import FetchWaiters
from asyncbroker.handlers import HandlerRegistry
from asyncbroker.log_jobs import LogJobs
from asyncbroker.memory_pool import MemoryPool
from asyncbroker.metadata_response_cache import MetadataResponseCache

if TYPE_CHECKING:  # the parts are imported where they are built (startup), to keep the first answer fast
    from cleaner.cleaner_config import CleanerConfig
    from cleaner.log_cleaner import LogCleaner
    from cleaner.log_cleaner_manager import LogCleanerManager
    from storage.log import Log
    from storage.log_manager import LogManager

    from asyncbroker.group_coordinator import GroupCoordinator
    from asyncbroker.offsets_topic import CoordinatorTopic
    from asyncbroker.share_partition_manager import SharePartitionManager
    from asyncbroker.producer_id_expiration import ProducerIdExpiration
    from asyncbroker.remote_log_manager import RemoteLogManager
    from asyncbroker.replica_manager import ReplicaManager
    from asyncbroker.scram_credentials import ScramCredentials
    from asyncbroker.client_quota_manager import QuotaManagers
    from asyncbroker.jwks_token_validator import JwksTokenValidator
    from asyncbroker.standard_authorizer import StandardAuthorizer
    from asyncbroker.topics import TopicManager, TopicMetadata
    from asyncbroker.transaction_coordinator import TransactionCoordinator

log = logging.getLogger(__name__)

T = TypeVar("T")


class Broker:
    """State shared by all connections of one broker process: the composition root.

    Every part is built by `startup()`, in dependency order (logs, topics, cleaner, jobs,
    replica manager, coordinators), and never replaced; handlers reach them as typed
    attributes. Before startup only the config, clock, executor and handler registry exist.
    The cleaner alone may be absent: None with log.cleaner.enable=false, and until its
    background start has imported it.
    """

    def __init__(self, config: KafkaConfig, *, clock: Clock | None = None) -> None:
        self.config = config
        # The system clock, which the retention levers (LogJobs.advance_clock) can move forward.
        self.clock: Clock = clock if clock is not None else AdjustableClock()
        self.node_id: int = config.node_id
        self.socket_request_max_bytes: int = config.socket_request_max_bytes
        # queued.max.request.bytes: the received requests' budget of every connection; unset, none.
        self.memory_pool: MemoryPool | None = (MemoryPool(config.queued_max_request_bytes)
                                               if config.queued_max_request_bytes > 0 else None)
        # sendfile from executor threads for large fetch slices (see connection.py).
        self.use_sendfile = True
        self.handlers = HandlerRegistry.discover()
        self.fetch_waiters = FetchWaiters()
        self.fetch_manager = FetchManager(config.max_incremental_fetch_session_cache_slots, self.clock.milliseconds,
                                          self._topic_name, lambda: self.topics.generation)
        # listener name -> (host, port) clients that came in on it are told (Metadata).
        # The first one's is the broker's address outside a connection (logs, tests).
        self.advertised: dict[str, tuple[str, int]] = {
            e.listener_name: config.advertised_endpoint(e) for e in config.served_listeners()}
        self._scram_credentials: ScramCredentials | None = None
        # The ACL authorizer with authorizer.class.name set (built by startup()); None: every
        # principal may do everything, as in Kafka without an authorizer.
        self.authorizer: StandardAuthorizer | None = None
        # listener name -> the validator of signed OAUTHBEARER tokens on that listener (the
        # server starts them: they fetch the JWKS).
        self.jwks_validators: dict[str, JwksTokenValidator] = {}
        # Client quotas (DescribeClientQuotas/AlterClientQuotas) and the rates measured against
        # them; built by startup().
        self.quota_managers: QuotaManagers
        # Called after a dynamic broker config changed (the server's connection quotas).
        self.config_change_listeners: list[Callable[[], None]] = []
        self.started_at = time.monotonic()
        self.io_executor = ThreadPoolExecutor(
            max_workers=max(2, config.num_io_threads), thread_name_prefix="asyncbroker-io"
        )
        # The parts startup() builds (declared here, assigned there; see the class docstring).
        self.log_manager: LogManager
        self.topics: TopicManager
        self.metadata_responses: MetadataResponseCache  # encoded Metadata answers, per topics generation
        self.log_jobs: LogJobs  # retention, flush, checkpoints, delete-logs
        self.replica_manager: ReplicaManager
        # The coordinators are built on first use (see `group_coordinator`), or at startup when
        # their internal topics exist: a broker no client asks for groups or transactions never
        # imports them (issue 17's idle memory).
        self._group_coordinator: GroupCoordinator | None = None
        self._share_partitions: SharePartitionManager | None = None
        self._transaction_coordinator: TransactionCoordinator | None = None
        self.producer_id_expiration: ProducerIdExpiration
        # Tiered storage (remote.log.storage.system.enable), else None.
        self.remote_log_manager: RemoteLogManager | None = None
        self._started = False
        # Log compaction, None with log.cleaner.enable=false or until its background start
        # (with the first compacted log) has built it. `cleaner_manager` is the seam LogJobs
        # (retention pauses) and TopicManager (deletion aborts) use.
        self.cleaner: LogCleaner | None = None
        self.cleaner_manager: LogCleanerManager | None = None
        self._cleaner_started: asyncio.Task[None] | None = None
        self._shutting_down = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self._auto_creating: dict[str, asyncio.Future[TopicMetadata | None]] = {}
        # Producer ids: milliseconds since the epoch x 1000 at startup, then +1 per
        # producer. A restart starts above every id handed out before it (unless
        # more than 1000 producers per millisecond of uptime were initialised).
        self._next_producer_id = self.clock.milliseconds() * 1000

    # -- executor ---------------------------------------------------------

    async def run_blocking(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a blocking call (storage, file IO) on the IO thread pool."""
        loop = asyncio.get_running_loop()
        if kwargs:
            fn = functools.partial(fn, *args, **kwargs)
            args = ()
        return await loop.run_in_executor(self.io_executor, fn, *args)

    # -- identity ---------------------------------------------------------

    @property
    def started(self) -> bool:
        """Whether startup() has built every part (the cleaner may still be starting)."""
        return self._started

    @property
    def cluster_id(self) -> str | None:
        return self.log_manager.cluster_id if self._started else None

    def set_advertised_port(self, port: int, listener_name: str | None = None) -> None:
        """A listener was bound on port 0: advertise the port the OS picked (for the first
        listener when none is named)."""
        name = listener_name or next(iter(self.advertised))
        self.advertised[name] = (self.advertised[name][0], port)

    @property
    def advertised_host(self) -> str:
        return self.advertised_for("")[0]

    @property
    def advertised_port(self) -> int:
        return self.advertised_for("")[1]

    @property
    def scram_credentials(self) -> ScramCredentials:
        """The SCRAM users (read from the log directories on first use: only SASL
        connections and the SCRAM admin APIs need them)."""
        if self._scram_credentials is None:
            from asyncbroker.scram_credentials import ScramCredentials

            self._scram_credentials = ScramCredentials(self.config.log_dirs)
        return self._scram_credentials

    def _topic_name(self, topic_id: uuid.UUID) -> str | None:
        """The name of the topic with this id now (fetch sessions kept by id); None: none has it."""
        meta = self.topics.by_id(topic_id)
        return meta.name if meta is not None else None

    def advertised_for(self, listener_name: str) -> tuple[str, int]:
        """The (host, port) Metadata, DescribeCluster and FindCoordinator give a client that
        came in on `listener_name` (the first listener's outside a connection)."""
        return self.advertised.get(listener_name) or next(iter(self.advertised.values()))

    def allocate_producer_id(self) -> int:
        pid = self._next_producer_id
        self._next_producer_id += 1
        return pid

    # -- logs -------------------------------------------------------------

    def get_log(self, tp: TopicPartition) -> Log | None:
        """The Log of a partition, or None. Never blocks (a dict lookup in storage)."""
        return self.log_manager.get_log(tp)

    async def auto_create_topic(self, name: str) -> TopicMetadata | None:
        """Create `name` with broker defaults when auto.create.topics.enable allows.

        Returns the topic's metadata, or None when auto-creation is off.
        Concurrent requests for the same new topic share one creation.
        Invalid names raise InvalidTopicError (callers map it).
        """
        if not self.config.auto_create_topics_enable:
            return None
        existing = self.topics.get(name)
        if existing is not None:
            return existing
        if name == OFFSETS_TOPIC:
            # Kafka creates its internal topic with the coordinator's settings (compacted, N partitions).
            await self.group_coordinator.offsets_topic.ensure_created()
            return self.topics.get(name)
        pending = self._auto_creating.get(name)
        if pending is not None:
            return await asyncio.shield(pending)
        fut: asyncio.Future[TopicMetadata | None] = asyncio.get_running_loop().create_future()
        self._auto_creating[name] = fut
        try:
            try:
                created = await self.topics.create_topic(name)
                log.info("Auto-created topic %s with %s partition(s)", name, created.partitions)
                meta: TopicMetadata | None = created
            except TopicExistsError:
                meta = self.topics.get(name)
            fut.set_result(meta)
            return meta
        except BaseException as exc:
            fut.set_exception(exc)
            fut.exception()  # mark retrieved: waiters re-raise it themselves
            raise
        finally:
            del self._auto_creating[name]

    # -- lifecycle --------------------------------------------------------

    async def startup(self) -> None:
        """Open (and if needed recover) every log, then start the periodic jobs."""
        from storage.log_manager import LogManager

        from asyncbroker.topics import TopicManager

        from asyncbroker.broker_config_changes import read_dynamic_configs

        config = self.config
        log_dirs = [Path(d) for d in config.log_dirs]
        # Dynamic broker configs set before the last shutdown win over the static ones again.
        config.dynamic_broker, config.dynamic_cluster = await self.run_blocking(read_dynamic_configs, log_dirs,
                                                                                config.node_id)
        if config.authorizer_class_name:
            from asyncbroker.standard_authorizer import StandardAuthorizer

            self.authorizer = await self.run_blocking(StandardAuthorizer, log_dirs, config.super_users,
                                                      config.allow_everyone_if_no_acl_found)
        from asyncbroker.client_quota_manager import QuotaManagers
        from asyncbroker.client_quotas import ClientQuotas

        self.quota_managers = QuotaManagers(await self.run_blocking(ClientQuotas, log_dirs),
                                            config.quota_window_size_seconds, config.quota_window_num)
        self.log_manager = LogManager(
            log_dirs,
            config.log_config_defaults(),
            clock=self.clock,
            node_id=config.node_id,
            cluster_id=None,
            recovery_threads_per_data_dir=config.num_recovery_threads_per_data_dir,
            remote_storage_system_enable=config.remote_log_storage_system_enable,
        )
        started = time.monotonic()
        await self.run_blocking(self._load_logs)
        log.info(
            "Loaded %d logs from %s in %.0f ms",
            len(self.log_manager.all_logs()), ",".join(config.log_dirs), (time.monotonic() - started) * 1000,
        )
        self.topics = TopicManager(
            config=config, log_manager=self.log_manager, run_blocking=self.run_blocking,
            cleaner_manager=lambda: self.cleaner_manager,
            on_partitions_deleted=self._on_partitions_deleted,
            on_broker_configs_changed=self._on_broker_configs_changed,
            remote_log_manager=lambda: self.remote_log_manager)
        topics = self.topics
        self.metadata_responses = MetadataResponseCache(lambda: topics.generation)
        self._start_cleaner()
        self._start_jobs()
        self._start_replica_manager()
        self._start_producer_id_expiration()
        # Groups and transactions whose internal topics exist are loaded now, as Kafka loads
        # the partitions it leads; otherwise their coordinators come with the first request.
        if self.topics.get(OFFSETS_TOPIC) is not None or self.topics.get(SHARE_GROUP_STATE_TOPIC) is not None:
            self._start_group_coordinator()
        if self.topics.get(TRANSACTION_STATE_TOPIC) is not None:
            self._start_transaction_coordinator()
        if config.remote_log_storage_system_enable:
            await self._start_remote_log_manager()
        self._started = True

    def _load_logs(self) -> None:
        """Blocking: open (recovering if needed) every log, and lead each in LEADER_EPOCH (a log
        without that epoch in its checkpoint gets it now, as on Kafka's makeLeader)."""
        from asyncbroker.leader_epoch import become_leader

        self.log_manager.startup(on_loaded=become_leader)

    def _start_replica_manager(self) -> None:
        from asyncbroker.replica_manager import ReplicaManager

        self.replica_manager = ReplicaManager(
            get_log=self.log_manager.get_log, topic_logs=self.log_manager.topic_logs, hosts_topic=self.topics.exists,
            fetch_waiters=self.fetch_waiters, run_blocking=self.run_blocking, cleaner=lambda: self.cleaner,
            checkpoint_log_start_offsets=self.log_jobs.checkpoint_log_start_offsets_now,
            clock_ms=self.clock.milliseconds, transaction_coordinator=lambda: self.transaction_coordinator,
            verification_enabled=self._transaction_verification_enabled,
            remote_log_manager=lambda: self.remote_log_manager)

    async def _start_remote_log_manager(self) -> None:
        """Tiered storage: the backend, `__remote_log_metadata` (created now, as Kafka's
        metadata manager does at start) and the RemoteLogManager's tasks."""
        from asyncbroker.remote_log_manager import RemoteLogManager, remote_storage_manager_for
        from asyncbroker.remote_log_metadata_manager import (
            REMOTE_LOG_METADATA_TOPIC,
            TopicBasedRemoteLogMetadataManager,
        )

        config = self.config
        rlmm_props = config.remote_log_metadata_manager_props
        topic = self._coordinator_topic(REMOTE_LOG_METADATA_TOPIC,
                                        int(rlmm_props.get("remote.log.metadata.topic.num.partitions", "50")), {
                                            # Kafka 4.4's overrides on the topic, as its metadata manager creates it.
                                            "cleanup.policy": "delete", "min.insync.replicas": "2",
                                            "remote.storage.enable": "false",
                                            "retention.ms": rlmm_props.get("remote.log.metadata.topic.retention.ms",
                                                                           "-1")})
        await topic.ensure_created()
        rsm = await self.run_blocking(remote_storage_manager_for, config)
        self.remote_log_manager = RemoteLogManager(
            config, rsm, TopicBasedRemoteLogMetadataManager(topic), self.log_manager, broker_id=config.node_id,
            clock_ms=self.clock.milliseconds,
            checkpoint_log_start_offsets=self.log_jobs.checkpoint_log_start_offsets_now)
        await self.remote_log_manager.startup()

    def _transaction_verification_enabled(self) -> bool:
        """transaction.partition.verification.enable, which is dynamic."""
        dynamic = self.config.dynamic_value("transaction.partition.verification.enable")
        return self.config.transaction_partition_verification_enable if dynamic is None else dynamic.lower() == "true"

    @property
    def group_coordinator(self) -> GroupCoordinator:
        """Consumer, classic and share groups; built on first use."""
        if self._group_coordinator is None:
            self._start_group_coordinator()
        assert self._group_coordinator is not None
        return self._group_coordinator

    @property
    def share_partitions(self) -> SharePartitionManager:
        """Share groups' records (ShareFetch); built with the first share group."""
        if self._share_partitions is None:
            self._start_share_partitions()
        assert self._share_partitions is not None
        return self._share_partitions

    @property
    def transaction_coordinator(self) -> TransactionCoordinator:
        """Transactions; built on first use."""
        if self._transaction_coordinator is None:
            self._start_transaction_coordinator()
        assert self._transaction_coordinator is not None
        return self._transaction_coordinator

    def close_group_requests(self) -> None:
        """Shutting down: parked group requests answer NOT_COORDINATOR (none without a
        coordinator)."""
        if self._group_coordinator is not None:
            self._group_coordinator.close()

    async def _on_partitions_deleted(self, partitions: Iterable[tuple[str, int]]) -> int:
        """Drop the groups' offsets of deleted partitions (the number dropped). No coordinator
        yet: no group holds any."""
        if self._group_coordinator is None:
            return 0
        return await self._group_coordinator.on_partitions_deleted(partitions)

    def _start_producer_id_expiration(self) -> None:
        from asyncbroker.producer_id_expiration import ProducerIdExpiration

        self.producer_id_expiration = ProducerIdExpiration(
            log_manager=self.log_manager, clock=self.clock, run_blocking=self.run_blocking,
            expiration_ms=self.config.producer_id_expiration_ms,
            interval_ms=self.config.producer_id_expiration_check_interval_ms)
        self.producer_id_expiration.start()

    def _start_group_coordinator(self) -> None:
        """Consumer and share groups (loading __consumer_offsets in the background; group
        requests wait for it)."""
        from asyncbroker.group_coordinator import GroupCoordinator

        from asyncbroker.offsets_topic import offsets_topic_configs

        coordinator = GroupCoordinator(
            self.config, self._coordinator_topic(*offsets_topic_configs(self.config)), clock=self.clock,
            run_blocking=self.run_blocking, transaction_coordinator=lambda: self.transaction_coordinator,
            share_partitions=lambda: self.share_partitions)
        self._group_coordinator = coordinator
        coordinator.start_loading()

    def _start_share_partitions(self) -> None:
        """Share groups' records: handed out by ShareFetch, released when a member leaves, with
        their durable state in the share coordinator's topic."""
        from asyncbroker.share_coordinator import ShareCoordinator
        from asyncbroker.share_partition_manager import SharePartitionManager

        state_topic = self._coordinator_topic(SHARE_GROUP_STATE_TOPIC,
                                              self.config.share_coordinator_state_topic_num_partitions, {
                                                  "cleanup.policy": "delete", "compression.type": "producer",
                                                  "retention.ms": "-1", "segment.bytes":
                                                  str(self.config.share_coordinator_state_topic_segment_bytes)})
        self._share_partitions = SharePartitionManager(self.replica_manager, self.topics,
                                                       self.group_coordinator.group_configs, self.clock,
                                                       ShareCoordinator(state_topic))

    def _start_transaction_coordinator(self) -> None:
        """Transactions: `__transaction_state` is loaded in the background (requests for a
        transactional id get COORDINATOR_LOAD_IN_PROGRESS until then, as from Kafka)."""
        from asyncbroker.transaction_coordinator import TransactionCoordinator
        from asyncbroker.transaction_state_manager import TRANSACTION_STATE_TOPIC_NAME, TransactionConfig

        config = self.config
        topic = self._coordinator_topic(TRANSACTION_STATE_TOPIC_NAME, config.transaction_state_log_num_partitions, {
            "cleanup.policy": "compact",
            "compression.type": "uncompressed",
            "min.insync.replicas": str(config.transaction_state_log_min_isr),
            "segment.bytes": str(config.transaction_state_log_segment_bytes),
            "unclean.leader.election.enable": "false",
        })
        coordinator = TransactionCoordinator(
            TransactionConfig.from_broker_config(config), topic, self, self.allocate_producer_id, self.clock,
            self.log_jobs.scheduler)
        self._transaction_coordinator = coordinator
        coordinator.startup()

    def _coordinator_topic(self, name: str, num_partitions: int, configs: dict[str, str]) -> CoordinatorTopic:
        """A coordinator's internal topic, created on first use through this broker's parts."""
        from asyncbroker.offsets_topic import CoordinatorTopic

        return CoordinatorTopic(name, num_partitions, configs, topics=self.topics,
                                replica_manager=self.replica_manager, fetch_waiters=self.fetch_waiters,
                                run_blocking=self.run_blocking, clock=self.clock)

    async def loaded_group_coordinator(self) -> GroupCoordinator:
        """The group coordinator once it has replayed `__consumer_offsets`: group requests
        wait for the load, so the handlers never see a half-loaded one."""
        await self.group_coordinator.ensure_loaded()
        return self.group_coordinator

    async def write_txn_markers(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                                result: Any, partitions: frozenset[TopicPartition]) -> dict[TopicPartition, Any]:
        """The transaction coordinator's markers, as KafkaApis handles WriteTxnMarkers: appended
        through the ReplicaManager, then the group coordinator applies or drops the offsets the
        transaction committed to `__consumer_offsets`."""
        from wire.errors import ErrorCode

        outcome = await self.replica_manager.write_txn_markers(producer_id, producer_epoch, coordinator_epoch,
                                                               result, partitions)
        offsets_partitions = [tp for tp, code in outcome.items()
                              if code == ErrorCode.NONE and tp.topic == OFFSETS_TOPIC]
        if offsets_partitions:
            self.group_coordinator.on_transaction_completed(producer_id, offsets_partitions, result)
        return outcome

    def _start_cleaner(self) -> None:
        """Kafka's LogCleaner, started with its first work: a compacted log with a segment
        before its active one (the cleaner never cleans the active segment). At startup when
        one was loaded, else when one rolls, or a log that has rolled becomes compacted by its
        topic's or the broker's configs (LogManager.compaction_listener), or when something
        asks for the cleaner (`cleaner_ready`: clean_now, a metrics scrape). Kafka starts its
        cleaner threads with the broker; here a broker whose compacted logs have nothing to
        clean does not import it: the first consumer group creates __consumer_offsets, which
        is compacted, and its 100 MB segments seldom roll (0.3 MB of 30, issue 17)."""
        self.loop = asyncio.get_running_loop()  # scrape threads reach the cleaner's state through it
        if not self.config.log_cleaner_enable:
            log.info("Log cleaner disabled (log.cleaner.enable=false): compacted topics are not compacted")
            return
        self.log_manager.compaction_listener = self._on_compacted_log
        if any(partition_log.config.compact and partition_log.num_segments > 1
               for partition_log in self.log_manager.all_logs()):
            self._ensure_cleaner_started()

    def _on_compacted_log(self) -> None:
        """LogManager.compaction_listener: called on the thread that rolled, created or
        reconfigured the log; the cleaner starts on the loop."""
        loop = self.loop
        if loop is None:
            return
        try:
            loop.call_soon_threadsafe(self._ensure_cleaner_started)
        except RuntimeError:  # the loop has closed (shutdown): no cleaner to start
            pass

    def _ensure_cleaner_started(self) -> None:
        """Start the cleaner in the background, once; never once shutdown has begun (shutdown
        waits only for a start it has seen). Callers have checked log.cleaner.enable."""
        if self._cleaner_started is not None or self._shutting_down:
            return
        self.log_manager.compaction_listener = None  # started: later compacted logs need no call
        self._cleaner_started = asyncio.create_task(self._run_cleaner_startup(), name="log-cleaner-startup")

    async def _run_cleaner_startup(self) -> None:
        # Imported on an IO thread: compiling/loading the cleaner must not stall the loop.
        module = await self.run_blocking(importlib.import_module, "cleaner.log_cleaner")
        cleaner = module.LogCleaner.for_log_manager(self._cleaner_config(), self.log_manager,
                                                    run_blocking=self.run_blocking)
        self.cleaner = cleaner
        self.cleaner_manager = cleaner.manager
        if "log_jobs" in vars(self):  # built before the cleaner unless startup failed first
            self.log_jobs.cleaner_manager = cleaner.manager  # retention pauses non-compacted logs from now on
        try:
            await cleaner.startup()
        except Exception:
            log.exception("The log cleaner failed to start: compacted topics will not be compacted")
            raise

    def _cleaner_config(self) -> CleanerConfig:
        """The cleaner's knobs as in force: dynamic broker configs over the static ones."""
        from cleaner.cleaner_config import CLEANER_CONFIG_KEYS, CleanerConfig

        return CleanerConfig.from_props({key: self.config.effective(key) for key in CLEANER_CONFIG_KEYS})

    def _on_broker_configs_changed(self) -> None:
        if self.cleaner is not None:
            self.cleaner.reconfigure(self._cleaner_config())
        for listener in self.config_change_listeners:
            listener()

    @property
    def cleaner_starting(self) -> bool:
        """The cleaner's start has begun (a compacted log, or a caller, asked for it)."""
        return self._cleaner_started is not None

    async def cleaner_ready(self) -> LogCleaner:
        """The started LogCleaner (starting it when no compacted log has yet, and waiting for
        its workers to come up); raises when disabled or shutting down."""
        if not self.config.log_cleaner_enable:
            raise RuntimeError("the log cleaner is disabled (log.cleaner.enable=false)")
        self._ensure_cleaner_started()
        if self._cleaner_started is None:
            raise RuntimeError("the broker is shutting down: the log cleaner does not start")
        await asyncio.shield(self._cleaner_started)
        assert self.cleaner is not None  # set before the start task returns
        return self.cleaner

    async def clean_now(self, topic: str, partition: int | None = None) -> dict[int, Any]:
        """Test/CI lever: roll and clean `topic` (one partition, or all) now, whatever the dirty
        ratio; waits for each swap. Returns partition -> CleanerStats (None: nothing cleanable)."""
        cleaner = await self.cleaner_ready()
        meta = self.topics.get(topic)
        if meta is None:
            from wire.errors import UnknownTopicOrPartitionError

            raise UnknownTopicOrPartitionError(f"Topic {topic} not found.")
        partitions = range(meta.partitions) if partition is None else [partition]
        return {p: await cleaner.clean_now(TopicPartition(topic, p), roll=True) for p in partitions}

    def connection_closed(self, connection_id: str) -> None:
        """A client connection is gone: what was bound to it ends (a share session)."""
        if self._share_partitions is not None:  # no share group was ever used: no share session
            self._share_partitions.connection_closed(connection_id)

    def _start_jobs(self) -> None:
        """LogManager's background jobs, on this loop with the work in executors (asyncbroker.log_jobs)."""
        self.log_jobs = LogJobs(self.log_manager, self.config, clock=self.clock,
                                cleaner_manager=self.cleaner_manager)
        self.log_jobs.start()

    async def shutdown(self) -> None:
        """Stop the jobs, then flush, checkpoint and mark a clean shutdown. After a startup
        that failed midway, the parts built so far are stopped."""
        self._shutting_down = True  # from here the cleaner does not start (_ensure_cleaner_started)
        built = vars(self)
        if self._transaction_coordinator is not None:
            await self._transaction_coordinator.shutdown()
        if self._group_coordinator is not None:
            self._group_coordinator.close()
        if "producer_id_expiration" in built:
            await self.producer_id_expiration.stop()
        if self.remote_log_manager is not None:
            await self.remote_log_manager.shutdown()
        if "log_jobs" in built:
            await self.log_jobs.stop()  # waits for a pass already running on its threads
        if self._cleaner_started is not None:
            await asyncio.gather(self._cleaner_started, return_exceptions=True)
        if self.cleaner is not None:
            # Before LogManager.shutdown: in-flight cleans abort, workers exit, no swap after close.
            await self.cleaner.shutdown()
        self.fetch_waiters.close()
        if "log_manager" in built:
            started = time.monotonic()
            await self.run_blocking(self.log_manager.shutdown)
            log.info("Shut down LogManager in %.0f ms", (time.monotonic() - started) * 1000)
        self.io_executor.shutdown(wait=True)
