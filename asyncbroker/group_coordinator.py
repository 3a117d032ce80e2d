"""The group coordinator for classic- and consumer-protocol groups, as Kafka's runs it.

This single node coordinates every group. Groups and committed offsets live in
memory and are persisted as records in `__consumer_offsets` (coordinator_records.py
formats; offsets_topic.py appends and reads), loaded back at startup. As in
Kafka's group coordinator, the state is split by what it is about:

- group_metadata_manager.py: GroupMetadataManager, the groups, their members
  and rebalances (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ListGroups,
  DescribeGroups);
- consumer_group_manager.py: ConsumerGroupManager, the groups of the consumer
  protocol (KIP-848: ConsumerGroupHeartbeat, ConsumerGroupDescribe);
- offset_metadata_manager.py: OffsetMetadataManager, the committed offsets
  (OffsetCommit, OffsetFetch, TxnOffsetCommit, OffsetDelete) and their expiry;
- share_group_manager.py: ShareGroupManager, the share groups (KIP-932), whose
  offset admin APIs (Describe/Alter/DeleteShareGroupOffsets) this coordinator runs
  with the share coordinator's state (share_coordinator.py), as Kafka's
  GroupCoordinatorService runs them with its persister;
- coordinator_loader.py: CoordinatorLoader, which replays `__consumer_offsets`
  into them.

The consumer-protocol and share managers are built with the first group of their
kind (lazy_group_manager.py): a broker whose clients use classic groups never
imports them.

This GroupCoordinator is what the handlers talk to: it loads the state, runs
the offset-expiration job, and answers each request with the manager that
owns it. Callers reach it through `Broker.loaded_group_coordinator()`, which
waits for the load, so no manager ever sees a half-loaded state.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from storage.clock import Clock
from storage.partition_metadata import uuid_to_base64
from wire.errors import CoordinatorNotAvailableError, ErrorCode, GroupIdNotFoundError, UnknownServerError

from asyncbroker.classic_group import ClassicGroup, ClassicGroupState, OffsetAndMetadata
from asyncbroker.coordinator_loader import CoordinatorLoader
from asyncbroker.coordinator_timer import CoordinatorTimer
from asyncbroker.group_configs import GroupConfigManager
from asyncbroker.group_metadata_manager import GroupMetadataManager, JoinGroupResult, ListedGroup, SyncGroupResult
from asyncbroker.lazy_group_manager import LazyGroupManager
from asyncbroker.offset_metadata_manager import OffsetMetadataManager, TopicPartitionKey
from asyncbroker.offsets_topic import CoordinatorTopic, append_error_code

if TYPE_CHECKING:
    from asyncbroker.config import KafkaConfig
    from asyncbroker.consumer_group import ConsumerGroup
    from asyncbroker.consumer_group_manager import ConsumerGroupManager
    from asyncbroker.share_coordinator import ShareCoordinator, ShareStateSummary
    from asyncbroker.share_group import ShareGroup
    from asyncbroker.share_group_manager import InitMap, ShareGroupManager
    from asyncbroker.share_partition_manager import SharePartitionManager
    from asyncbroker.transaction_coordinator import TransactionCoordinator

log = logging.getLogger(__name__)

_S = ClassicGroupState
_UNKNOWN_SERVER_ERROR = "The server experienced an unexpected error when processing the request."


class GroupCoordinator:
    """Every classic group of this broker and their offsets: loaded, expired, and asked."""

    def __init__(self, config: KafkaConfig, offsets_topic: CoordinatorTopic, *, clock: Clock,
                 run_blocking: Callable[..., Awaitable[Any]],
                 transaction_coordinator: Callable[[], TransactionCoordinator],
                 share_partitions: Callable[[], SharePartitionManager] | None = None) -> None:
        self.config = config
        self.offsets_topic = offsets_topic
        self.clock = clock
        # The share groups' records and durable state (Kafka's persister), given by the broker:
        # built with the first share group.
        self._share_partitions = share_partitions
        self.group_configs = GroupConfigManager(config, run_blocking)
        self.group_manager = GroupMetadataManager(config, offsets_topic, clock)
        # KIP-848's and KIP-932's groups: their managers are built with the first such group.
        self.consumer_groups: LazyGroupManager[ConsumerGroupManager, ConsumerGroup] = LazyGroupManager(
            self._build_consumer_manager)
        self.share_groups: LazyGroupManager[ShareGroupManager, ShareGroup] = LazyGroupManager(
            self._build_share_manager)
        self.offset_manager = OffsetMetadataManager(self.group_manager, config, offsets_topic, clock,
                                                    transaction_coordinator, self.consumer_groups)
        self.loader = CoordinatorLoader(offsets_topic, self.group_manager, self.offset_manager, clock, run_blocking,
                                        self.consumer_groups, self.share_groups)
        self.offsets_retention_check_interval_ms: int = config.offsets_retention_check_interval_ms
        self._loaded: asyncio.Future[None] | None = None
        self._expiry_task: asyncio.Task[None] | None = None
        self._closed = False
        # The requests, answered by the manager that owns their state.
        groups, offsets = self.group_manager, self.offset_manager
        self.describe_group = groups.describe_group
        self.commit_offsets = offsets.commit_offsets
        self.fetch_offsets = offsets.fetch_offsets
        self.commit_transactional_offsets = offsets.commit_transactional_offsets
        self.on_transaction_completed = offsets.on_transaction_completed
        self.delete_offsets = offsets.delete_offsets
        self.cleanup_group_metadata = offsets.cleanup_group_metadata

    def _build_consumer_manager(self) -> ConsumerGroupManager:
        from asyncbroker.consumer_group_manager import ConsumerGroupManager

        return ConsumerGroupManager(self.config, self.offsets_topic, self.clock, self.group_manager, self.group_configs)

    def _build_share_manager(self) -> ShareGroupManager:
        from asyncbroker.share_group_manager import ShareGroupManager

        manager = ShareGroupManager(self.config, self.offsets_topic, self.clock, self.group_manager.timer,
                                    self.group_configs)
        if self._share_partitions is not None:
            manager.share_coordinator = self._share_partitions().coordinator
        return manager

    async def _forget_share_state(self, group_id: str, partitions: list[tuple[uuid.UUID, int]]) -> None:
        """Share partitions whose state was set afresh are read again by the next ShareFetch."""
        if self._share_partitions is not None:
            await self._share_partitions().forget(group_id, partitions)

    @property
    def groups(self) -> dict[str, ClassicGroup]:
        return self.group_manager.groups

    @property
    def offsets(self) -> dict[str, dict[TopicPartitionKey, OffsetAndMetadata]]:
        return self.offset_manager.offsets

    @property
    def timer(self) -> CoordinatorTimer[tuple[str, str, str]]:
        return self.group_manager.timer

    # ================================================================ lifecycle

    async def startup(self) -> None:
        """Load groups and offsets from `__consumer_offsets`, then start the expiration job."""
        await self.ensure_loaded()

    def start_loading(self) -> None:
        """Begin loading in the background (broker startup does not wait; group requests do)."""
        if self._loaded is None and not self._closed:
            self._loaded = asyncio.ensure_future(self._load())
            self._loaded.add_done_callback(_log_load_failure)

    async def ensure_loaded(self) -> None:
        if self._closed:
            raise CoordinatorNotAvailableError("The group coordinator is shutting down")
        if self._loaded is None:
            self._loaded = asyncio.ensure_future(self._load())
        await asyncio.shield(self._loaded)

    async def _load(self) -> None:
        await self.loader.load()
        if self._expiry_task is None and not self._closed:
            self._expiry_task = asyncio.ensure_future(self._expiry_loop())

    async def _expiry_loop(self) -> None:
        while True:
            await asyncio.sleep(self.offsets_retention_check_interval_ms / 1000)
            try:
                await self.cleanup_group_metadata()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - the schedule must survive a failed run
                log.exception("Offset expiration failed")

    def close(self) -> None:
        """Stop the expiration job and the group timers, and answer parked requests with
        NOT_COORDINATOR (broker shutdown)."""
        self._closed = True
        if self._expiry_task is not None:
            self._expiry_task.cancel()
            self._expiry_task = None
        self.group_manager.close()

    # ================================================================ across groups and offsets

    async def consumer_group_heartbeat(self, **request: Any) -> Any:
        """ConsumerGroupHeartbeat; an empty classic group of that id is replaced, one with
        members is converted (Kafka's online upgrade, in ConsumerGroupManager)."""
        group_id = request["group_id"]
        # A bad request changes nothing, the classic group it names included.
        self.consumer_groups.manager.validate_heartbeat(**{k: v for k, v in request.items()
                                                           if k not in ("client_id", "client_host", "authorized_topics")})
        classic = self.group_manager.groups.get(group_id)
        classic_in_use = classic is not None and not classic.is_in_state(_S.DEAD) and bool(classic.members)
        if classic is not None and not classic_in_use and request["member_epoch"] == 0 and group_id \
                and group_id not in self.consumer_groups.groups:
            await self.offsets_topic.append(self.offsets_topic.partition_for(group_id),
                                            [self.group_manager.tombstone(group_id)])
            self.group_manager.remove_group(group_id)
        if group_id in self.share_groups.groups:
            raise GroupIdNotFoundError(f"Group {group_id} is not a consumer group.")
        return await self.consumer_groups.manager.heartbeat(classic_group=classic if classic_in_use else None,
                                                            **request)

    def consumer_group_describe(self, group_id: str) -> Any:
        """ConsumerGroupDescribe (Kafka 4's admin client asks it first, of classic groups too):
        an id no consumer-protocol group holds is answered here, without building that
        protocol's manager."""
        classic = self.group_manager.groups.get(group_id)
        if group_id in self.share_groups.groups or (
                group_id not in self.consumer_groups.groups and classic is not None
                and not classic.is_in_state(_S.DEAD)):
            raise GroupIdNotFoundError(f"Group {group_id} is not a consumer group.")
        if group_id not in self.consumer_groups.groups:
            raise GroupIdNotFoundError(f"Group {group_id} not found.")
        return self.consumer_groups.manager.describe(group_id)

    def share_group_describe(self, group_id: str) -> Any:
        classic = self.group_manager.groups.get(group_id)
        if group_id in self.consumer_groups.groups or (classic is not None and not classic.is_in_state(_S.DEAD)):
            raise GroupIdNotFoundError(f"Group {group_id} is not a share group.")
        if group_id not in self.share_groups.groups:  # (no share group manager is built to say so)
            raise GroupIdNotFoundError(f"Group {group_id} not found.")
        return self.share_groups.manager.describe(group_id)

    async def share_group_heartbeat(self, **request: Any) -> Any:
        """ShareGroupHeartbeat (KIP-932); an id held by a classic or consumer-protocol group is
        not a share group's."""
        self.share_groups.manager.validate_heartbeat(**{k: v for k, v in request.items()
                                                        if k not in ("client_id", "client_host")})
        group_id = request["group_id"]
        classic = self.group_manager.groups.get(group_id)
        other = group_id in self.consumer_groups.groups or (classic is not None and not classic.is_in_state(_S.DEAD))
        return await self.share_groups.manager.heartbeat(other_group_exists=other, **request)

    def _held_by_other_group_type(self, group_id: str) -> bool:
        classic = self.group_manager.groups.get(group_id)
        return group_id in self.consumer_groups.groups or (classic is not None and not classic.is_in_state(_S.DEAD))

    def _persister(self) -> ShareCoordinator:
        persister = self.share_groups.manager.share_coordinator
        if persister is None:
            raise CoordinatorNotAvailableError("The share coordinator is not available.")
        return persister

    # -- the share group offset admin APIs (KIP-932), as Kafka's GroupCoordinatorService runs them:
    # the group's records first, then the share coordinator's state, then the group's records again.

    async def describe_share_group_offsets(
            self, group_id: str, topics: Sequence[tuple[uuid.UUID, str, Sequence[int]]] | None,
    ) -> list[tuple[uuid.UUID, str, list[tuple[int, ShareStateSummary]]]]:
        """Each partition's share state summary; `topics` None: every partition with initialized
        share state. The group itself is not looked at (Kafka asks its share coordinator for
        whatever group id it is given)."""
        persister = self._persister()
        if topics is None:
            wanted = [(t, name, sorted(parts)) for t, (name, parts) in
                      self.share_groups.manager.initialized_partitions(group_id).items()]
        else:
            wanted = [(t, name, list(parts)) for t, name, parts in topics]
        if wanted:
            _check_persister_request("Read share group summary parameters", group_id, wanted)
        return [(t, name, [(p, await persister.summary(group_id, t, p)) for p in parts]) for t, name, parts in wanted]

    async def alter_share_group_offsets(self, group_id: str,
                                        topics: Mapping[uuid.UUID, tuple[str, Mapping[int, int]]]) -> None:
        """Set share-partition start offsets of an empty share group (created if unknown):
        recorded as initializing, written to the share coordinator with the group epoch as
        their state epoch, then recorded as initialized; the next fetch starts there. A
        negative partition fails it all once recorded as initializing (Kafka's persister
        refuses the request; nothing is written)."""
        persister = self._persister()
        init: InitMap = {t: (name, frozenset(offsets)) for t, (name, offsets) in topics.items()}
        epoch = await self.share_groups.manager.begin_alter_offsets(
            group_id, init, other_group_exists=self._held_by_other_group_type(group_id))
        written = [(t, p) for t, (_, offsets) in topics.items() for p in offsets]
        if written:
            _check_persister_request("Initialize share group parameters", group_id,
                                     [(t, name, list(offsets)) for t, (name, offsets) in topics.items() if offsets],
                                     show_message=True)
        now = self.clock.milliseconds()
        for t, (_, offsets) in topics.items():
            for p, start in offsets.items():
                await persister.initialize(group_id, t, p, start, epoch, now)
        await self._forget_share_state(group_id, written)
        await self.share_groups.manager.finish_initializing(group_id, {t: v for t, v in init.items() if v[1]})

    async def delete_share_group_offsets(
            self, group_id: str, topics: Sequence[tuple[str, uuid.UUID | None, int]],
    ) -> list[tuple[str, uuid.UUID | None, int, str | None]]:
        """Delete the share state of topics of an empty share group: (name, id or None, partition
        count) each; answers (name, id, error code, message) per topic: those deleted first,
        then those refused."""
        persister = self._persister()
        to_delete, refused = await self.share_groups.manager.begin_delete_offsets(
            group_id, topics, other_group_exists=self._held_by_other_group_type(group_id))
        for t, (_, parts) in to_delete.items():
            for p in sorted(parts):
                await persister.delete(group_id, t, p)
        await self._forget_share_state(group_id, [(t, p) for t, (_, parts) in to_delete.items() for p in parts])
        if to_delete:
            await self.share_groups.manager.finish_deleting(group_id, to_delete)
        answered: list[tuple[str, uuid.UUID | None, int, str | None]] = [
            (name, t, ErrorCode.NONE, None) for t, (name, _) in to_delete.items()]
        return answered + [(name, None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, message) for name, message in refused]

    # -- the classic protocol's requests: a consumer-protocol group's if it holds the id (mixed groups)

    async def join_group(self, **request: Any) -> JoinGroupResult:
        """JoinGroup; into a consumer-protocol group with members, as a classic member of it. An
        empty consumer-protocol group gives way to a classic group (Kafka's
        maybeDeleteEmptyConsumerGroup)."""
        group_id = request["group_id"]
        if group_id in self.share_groups.groups:
            return JoinGroupResult(error=ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id="")
        consumer = self.consumer_groups.groups.get(group_id)
        if consumer is not None and consumer.members:
            self.group_manager.check_session_timeout(request["session_timeout_ms"])
            return await self.consumer_groups.manager.classic_join(**{k: v for k, v in request.items()
                                                                       if k not in ("reason", "api_version")})
        if consumer is not None:
            await self.offsets_topic.append(self.offsets_topic.partition_for(group_id),
                                            self.consumer_groups.manager.tombstones(group_id))
            self.consumer_groups.manager.remove_group(group_id)
            log.info("[GroupId %s] Converted the empty consumer group to a classic group.", group_id)
        return await self.group_manager.join_group(**request)

    async def sync_group(self, **request: Any) -> SyncGroupResult:
        if request["group_id"] in self.consumer_groups.groups:
            return await self.consumer_groups.manager.classic_sync(**{k: v for k, v in request.items()
                                                                      if k != "assignments"})
        return await self.group_manager.sync_group(**request)

    async def heartbeat(self, **request: Any) -> None:
        if request["group_id"] in self.consumer_groups.groups:
            await self.consumer_groups.manager.classic_heartbeat(**request)
        else:
            await self.group_manager.heartbeat(**request)

    async def leave_group(self, group_id: str, members: Sequence[tuple[str, str | None, str | None]]) -> list[int]:
        if group_id in self.consumer_groups.groups:
            return await self.consumer_groups.manager.classic_leave(group_id, members)
        return await self.group_manager.leave_group(group_id, members)

    def list_groups(self, states: Sequence[str] = (), types: Sequence[str] = ()) -> list[ListedGroup]:
        """Classic and consumer groups (ListGroups v5 filters on both)."""
        listed = [g for g in self.group_manager.list_groups(states, types)
                  if g.group_id not in self.consumer_groups.groups]
        wanted_states = {s.lower() for s in states}
        wanted_types = {t.lower() for t in types}
        if not wanted_types or "consumer" in wanted_types:
            for group_id, group in self.consumer_groups.groups.items():
                state = group.state.value
                if wanted_states and state.lower() not in wanted_states:
                    continue
                listed.append(ListedGroup(group_id, "consumer", state, "consumer"))
        if not wanted_types or "share" in wanted_types:
            for group_id, share in self.share_groups.groups.items():
                state = share.state.value
                if wanted_states and state.lower() not in wanted_states:
                    continue
                listed.append(ListedGroup(group_id, "share", state, "share"))
        return listed

    async def delete_groups(self, group_ids: Sequence[str]) -> dict[str, int]:
        """DeleteGroups: an empty group's offsets and metadata are tombstoned together, then forgotten."""
        results: dict[str, int] = {}
        by_partition: dict[int, list[tuple[str, list[tuple[bytes, bytes | None]]]]] = {}
        share_states: dict[str, list[tuple[uuid.UUID, int]]] = {}  # a share group's state goes with it
        for group_id in group_ids:
            share = self.share_groups.groups.get(group_id)
            if share is not None:
                if share.members:
                    results[group_id] = ErrorCode.NON_EMPTY_GROUP
                    continue
                share_states[group_id] = [(t, p) for state in (share.initialized, share.initializing)
                                          for t, (_, parts) in state.items() for p in parts]
                by_partition.setdefault(self.offsets_topic.partition_for(group_id), []).append(
                    (group_id, self.share_groups.manager.tombstones(group_id)))
                continue
            consumer = self.consumer_groups.groups.get(group_id)
            if consumer is not None:
                if consumer.members:
                    results[group_id] = ErrorCode.NON_EMPTY_GROUP
                    continue
                by_partition.setdefault(self.offsets_topic.partition_for(group_id), []).append(
                    (group_id, [*self.offset_manager.tombstones(group_id),
                                *self.consumer_groups.manager.tombstones(group_id)]))
                continue
            group = self.group_manager.groups.get(group_id)
            if group is None or group.is_in_state(_S.DEAD):
                results[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
                continue
            if group.state in (_S.STABLE, _S.PREPARING_REBALANCE, _S.COMPLETING_REBALANCE):
                results[group_id] = ErrorCode.NON_EMPTY_GROUP
                continue
            by_partition.setdefault(self.offsets_topic.partition_for(group_id), []).append(
                (group_id, [*self.offset_manager.tombstones(group_id), self.group_manager.tombstone(group_id)])
            )
        for partition, items in by_partition.items():
            records = [r for _, recs in items for r in recs]
            try:
                await self.offsets_topic.append(partition, records)
            except Exception as exc:  # noqa: BLE001 - reported per group
                for group_id, _ in items:
                    results[group_id] = append_error_code(exc)
                continue
            for group_id, _ in items:
                self.offset_manager.remove_group(group_id)
                if (consumers := self.consumer_groups.built) is not None:
                    consumers.remove_group(group_id)
                if (shares := self.share_groups.built) is not None:
                    shares.remove_group(group_id)
                results[group_id] = ErrorCode.NONE
                log.info("Deleted group %s", group_id)
        for group_id, partitions in share_states.items():
            if results.get(group_id) != ErrorCode.NONE or self.share_groups.manager.share_coordinator is None:
                continue
            # Kafka's share coordinator deletes the state of every partition the group had.
            for topic_id, index in partitions:
                await self.share_groups.manager.share_coordinator.delete(group_id, topic_id, index)
            await self._forget_share_state(group_id, partitions)
        return results

    async def on_partitions_deleted(self, partitions: Iterable[TopicPartitionKey]) -> int:
        """Kafka's onPartitionsDeleted (topic deletion, which does not go through a group
        request, so it waits for the load itself); see OffsetMetadataManager."""
        deleted = set(partitions)
        if not deleted:
            return 0
        await self.ensure_loaded()
        return await self.offset_manager.on_partitions_deleted(deleted)


def _log_load_failure(fut: asyncio.Future[None]) -> None:
    if not fut.cancelled() and fut.exception() is not None:
        log.error("Loading __consumer_offsets failed", exc_info=fut.exception())


def _check_persister_request(prefix: str, group_id: str, topics: Sequence[tuple[uuid.UUID, str, Sequence[int]]], *,
                             show_message: bool = False) -> None:
    """Kafka's DefaultStatePersister refuses a request with no group id, a topic without
    partitions or a negative partition: UNKNOWN_SERVER_ERROR for the whole group (with the
    reason as its message where Kafka passes it on, `show_message`)."""
    problem = None
    if not group_id:
        problem = f"{prefix} groupId cannot be null or empty."
    for topic_id, _, parts in topics:
        if problem is not None:
            break
        if not parts:
            problem = f"{prefix} partitions cannot be null or empty."
        for p in parts:
            if p < 0:
                problem = f"{prefix} has invalid partitionId - {group_id} {uuid_to_base64(topic_id)} {p}"
                break
    if problem is not None:
        raise UnknownServerError(problem, wire_message=problem if show_message else _UNKNOWN_SERVER_ERROR)

