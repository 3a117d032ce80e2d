"""OffsetMetadataManager: the offsets groups commit, as Kafka's group coordinator keeps them.

- OffsetCommit writes one OffsetCommit record per partition to the group's
  `__consumer_offsets` partition and applies it once appended; OffsetFetch
  reads the applied ones (-1 where none), with UNSTABLE_OFFSET_COMMIT for a
  partition a transaction has written but not yet ended when the consumer
  asks for stable offsets.
- TxnOffsetCommit writes them inside the producer's transaction; they are held
  per producer id and applied at the COMMIT marker (dropped at ABORT).
- OffsetDelete and topic deletion write tombstones; offsets of empty groups
  expire after `offsets.retention.minutes` (every
  `offsets.retention.check.interval.ms`), and an empty group left without
  offsets is removed with its group tombstone.

The group checks an offset commit needs (member, generation, state) are the
GroupMetadataManager's; this manager owns only the offsets.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from storage.clock import Clock
from storage.topic_partition import TopicPartition
from wire.errors import (
    CoordinatorNotAvailableError,
    ErrorCode,
    GroupIdNotFoundError,
    IllegalGenerationError,
    NonEmptyGroupError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)

from asyncbroker.classic_group import CONSUMER_PROTOCOL_TYPE, ClassicGroup, ClassicGroupState, OffsetAndMetadata
from asyncbroker.coordinator_records import (
    OffsetCommitKey,
    OffsetCommitValue,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from asyncbroker.group_metadata_manager import GroupMetadataManager, require_group_id
from asyncbroker.offsets_topic import CoordinatorTopic, append_error_code

if TYPE_CHECKING:
    from asyncbroker.config import KafkaConfig
    from asyncbroker.consumer_group import ConsumerGroup
    from asyncbroker.consumer_group_manager import ConsumerGroupManager
    from asyncbroker.lazy_group_manager import LazyGroupManager
    from asyncbroker.transaction_coordinator import TransactionCoordinator

log = logging.getLogger(__name__)

_S = ClassicGroupState
TopicPartitionKey = tuple[str, int]


class FetchedOffset(msgspec.Struct, frozen=True):
    """One partition of an OffsetFetch answer."""
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None
    error: int = ErrorCode.NONE


class OffsetMetadataManager:
    """Every group's committed offsets, the transactional ones pending their markers, and their expiry."""

    def __init__(self, group_manager: GroupMetadataManager, config: KafkaConfig, offsets_topic: CoordinatorTopic,
                 clock: Clock, transaction_coordinator: Callable[[], TransactionCoordinator],
                 consumer_groups: LazyGroupManager[ConsumerGroupManager, ConsumerGroup]) -> None:
        self.group_manager = group_manager
        self.consumer_groups = consumer_groups
        self.offsets_topic = offsets_topic
        self.clock = clock
        # Built after the group coordinator (it needs the producer-id allocator); read when used.
        self._transaction_coordinator = transaction_coordinator
        self.offsets: dict[str, dict[TopicPartitionKey, OffsetAndMetadata]] = {}
        # TxnOffsetCommit's offsets, per producer id and group, until its transaction's marker.
        self.pending_txn_offsets: dict[int, dict[str, dict[TopicPartitionKey, OffsetAndMetadata]]] = {}
        self.offset_metadata_max_bytes: int = config.offset_metadata_max_bytes
        self.offsets_retention_ms: int = config.offsets_retention_minutes * 60_000

    def _now(self) -> int:
        now: int = self.clock.milliseconds()
        return now

    # ================================================================ load

    def replay(self, key: OffsetCommitKey, value: OffsetCommitValue | None, producer_id: int,
               record_offset: int) -> None:
        """An offset record read back at load; a transaction's waits for its marker
        (`complete_pending`), and a tombstone removes the offset."""
        if producer_id >= 0:
            per_group = self.pending_txn_offsets.setdefault(producer_id, {}).setdefault(key.group, {})
        else:
            per_group = self.offsets.setdefault(key.group, {})
        if value is None:
            per_group.pop((key.topic, key.partition), None)
        else:
            per_group[(key.topic, key.partition)] = OffsetAndMetadata(
                value.offset, value.leader_epoch, value.metadata, value.commit_timestamp, value.expire_timestamp,
                record_offset)

    def groups_with_offsets(self) -> list[str]:
        """After a load: the groups left holding committed offsets (emptied ones are dropped)."""
        for group_id in [g for g, per_group in self.offsets.items() if not per_group]:
            del self.offsets[group_id]
        return list(self.offsets)

    # ================================================================ OffsetCommit and OffsetFetch

    def _validate_offset_commit(self, group: ClassicGroup, member_id: str, group_instance_id: str | None,
                                generation_id: int) -> None:
        if group.is_in_state(_S.DEAD):
            raise CoordinatorNotAvailableError(f"Group {group.group_id} is being removed")
        if generation_id < 0 and group.is_in_state(_S.EMPTY):
            return  # admin client / manual assignment: allowed while the group has no members
        if generation_id >= 0 or member_id or group_instance_id is not None:
            self.group_manager.validate_member(group, member_id, group_instance_id)
            if generation_id != group.generation_id:
                raise IllegalGenerationError(f"Generation {generation_id} is not the group's {group.generation_id}")
        elif not group.is_in_state(_S.EMPTY):
            raise UnknownMemberIdError("Commits without member id are accepted only while the group is empty")
        if group.is_in_state(_S.COMPLETING_REBALANCE):
            raise RebalanceInProgressError(f"Group {group.group_id} is completing a rebalance")

    async def commit_offsets(
        self,
        *,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        retention_time_ms: int,
        offsets: Sequence[tuple[str, int, int, int, str | None]],
        api_version: int,
    ) -> dict[TopicPartitionKey, int]:
        """Commit (topic, partition, offset, leader epoch, metadata) items; an error code per partition."""
        consumer_group = self.consumer_groups.groups.get(group_id)
        if consumer_group is not None:
            # A consumer-protocol group: the member epoch stands in the generation's place.
            self.consumer_groups.manager.validate_offset_commit(consumer_group, member_id, generation_id, api_version)
            return await self._append_commit(group_id, offsets, retention_time_ms, create_classic=False)
        # The empty group id is valid here, as in Kafka: simple consumers of old commit to it.
        group = self.group_manager.groups.get(group_id)
        if group is None:
            if generation_id < 0:
                group = self.group_manager.get_or_create_simple_group(group_id)
            elif api_version >= 9:
                raise GroupIdNotFoundError(f"Group {group_id} does not exist")
            else:
                raise IllegalGenerationError(f"Group {group_id} does not exist")
        self._validate_offset_commit(group, member_id, group_instance_id, generation_id)
        member = group.members.get(member_id)
        if member is not None and generation_id == group.generation_id and not member.is_new:
            # A commit from a live member counts as a heartbeat.
            self.group_manager.complete_and_schedule_next_heartbeat(group, member)
        return await self._append_commit(group_id, offsets, retention_time_ms, create_classic=True)

    async def _append_commit(self, group_id: str, offsets: Sequence[tuple[str, int, int, int, str | None]],
                             retention_time_ms: int, *, create_classic: bool) -> dict[TopicPartitionKey, int]:
        now = self._now()
        expire = now + retention_time_ms if retention_time_ms is not None and retention_time_ms >= 0 else -1
        results, records, staged = self._stage(group_id, offsets, now, expire)
        if records:
            try:
                first = await self.offsets_topic.append(self.offsets_topic.partition_for(group_id), records)
            except Exception as exc:  # noqa: BLE001 - reported per partition, as Kafka does
                code = append_error_code(exc)
                for tp, _ in staged:
                    results[tp] = code
                return results
            current = self.group_manager.groups.get(group_id)
            if create_classic and (current is None or current.is_in_state(_S.DEAD)):
                current = self.group_manager.get_or_create_simple_group(group_id)
            per_group = self.offsets.setdefault(group_id, {})
            for i, (tp, value) in enumerate(staged):
                per_group[tp] = msgspec.structs.replace(value, record_offset=first + i)
                results[tp] = ErrorCode.NONE
        return results

    def _stage(self, group_id: str, offsets: Sequence[tuple[str, int, int, int, str | None]], now: int,
               expire: int) -> tuple[dict[TopicPartitionKey, int], list[tuple[bytes, bytes | None]],
                                     list[tuple[TopicPartitionKey, OffsetAndMetadata]]]:
        """A commit's records and the offsets they become once appended; a partition whose
        metadata is over offset.metadata.max.bytes gets OFFSET_METADATA_TOO_LARGE instead."""
        results: dict[TopicPartitionKey, int] = {}
        records: list[tuple[bytes, bytes | None]] = []
        staged: list[tuple[TopicPartitionKey, OffsetAndMetadata]] = []
        for topic, partition, offset, leader_epoch, metadata in offsets:
            meta = metadata or ""
            if len(meta.encode("utf-8")) > self.offset_metadata_max_bytes:
                results[(topic, partition)] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                continue
            records.append((encode_offset_commit_key(OffsetCommitKey(group_id, topic, partition)),
                            encode_offset_commit_value(OffsetCommitValue(offset, meta, now, leader_epoch, expire))))
            staged.append(((topic, partition), OffsetAndMetadata(offset, leader_epoch, meta, now, expire)))
        return results, records, staged

    def fetch_offsets(self, group_id: str, partitions: Iterable[TopicPartitionKey] | None, *,
                      require_stable: bool = False,
                      member: tuple[str | None, int] | None = None) -> list[FetchedOffset]:
        """Committed offsets; all of the group's when `partitions` is None. Unknown ones read -1.

        With `require_stable` (OffsetFetch v7+) a partition whose offset a transaction has
        written but not yet committed or aborted is UNSTABLE_OFFSET_COMMIT, so the consumer
        retries instead of starting from an offset about to change.
        """
        group = self.group_manager.groups.get(group_id)
        if group is not None and group.is_in_state(_S.DEAD):
            raise GroupIdNotFoundError(f"Group {group_id} is in dead state")
        if member is not None and group_id in self.consumer_groups.groups:
            self.consumer_groups.manager.validate_offset_fetch(group_id, *member)
        per_group = self.offsets.get(group_id, {})
        unstable = self._pending_partitions(group_id) if require_stable else set()
        if partitions is None:
            keys = sorted(set(per_group) | unstable)
        else:
            keys = list(partitions)
        out: list[FetchedOffset] = []
        for t, p in keys:
            o = per_group.get((t, p))
            if (t, p) in unstable:
                out.append(FetchedOffset(t, p, -1, -1, "", ErrorCode.UNSTABLE_OFFSET_COMMIT))
            elif o is None:
                out.append(FetchedOffset(t, p, -1, -1, ""))
            else:
                out.append(FetchedOffset(t, p, o.committed_offset, o.leader_epoch, o.metadata))
        return out

    def _pending_partitions(self, group_id: str) -> set[TopicPartitionKey]:
        return {tp for groups in self.pending_txn_offsets.values() for tp in groups.get(group_id, {})}

    # ================================================================ transactional offsets

    async def commit_transactional_offsets(
        self,
        *,
        group_id: str,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        offsets: Sequence[tuple[str, int, int, int, str | None]],
        api_version: int,
    ) -> dict[TopicPartitionKey, int]:
        """TxnOffsetCommit: offsets written in the producer's transaction, applied at its COMMIT marker."""
        group = self.group_manager.groups.get(group_id) or self.group_manager.get_or_create_simple_group(group_id)
        if group.is_in_state(_S.DEAD):
            raise CoordinatorNotAvailableError(f"Group {group_id} is being removed")
        # Producers before KIP-447 send no member: their commits are not checked against the group.
        if not (generation_id < 0 and not member_id and group_instance_id is None):
            self.group_manager.validate_member(group, member_id, group_instance_id)
            if generation_id != group.generation_id:
                raise IllegalGenerationError(f"Generation {generation_id} is not the group's {group.generation_id}")
        partition = self.offsets_topic.partition_for(group_id)
        offsets_tp = TopicPartition(self.offsets_topic.name, partition)
        coordinator = self._transaction_coordinator()
        if api_version >= 5:
            # Transactions v2: the offsets partition joins the transaction here (no AddOffsetsToTxn).
            await coordinator.handle_add_partitions_to_transaction(transactional_id, producer_id, producer_epoch,
                                                                   [offsets_tp], 2)
        else:
            verified = coordinator.handle_verify_partitions_in_transaction(transactional_id, producer_id,
                                                                           producer_epoch, [offsets_tp])
            code = verified[offsets_tp]
            if code == ErrorCode.TRANSACTION_ABORTABLE:
                code = ErrorCode.INVALID_TXN_STATE  # TRANSACTION_ABORTABLE is known from TxnOffsetCommit v5
            if code != ErrorCode.NONE:
                return {(t, p): code for t, p, *_ in offsets}
        results, records, staged = self._stage(group_id, offsets, self._now(), -1)
        if not records:
            return results
        try:
            first = await self.offsets_topic.append(partition, records, (producer_id, producer_epoch))
        except Exception as exc:  # noqa: BLE001 - reported per partition, as Kafka does
            failed = append_error_code(exc)
            return {**results, **{tp: failed for tp, _ in staged}}
        pending = self.pending_txn_offsets.setdefault(producer_id, {}).setdefault(group_id, {})
        for i, (tp, value) in enumerate(staged):
            pending[tp] = msgspec.structs.replace(value, record_offset=first + i)
            results[tp] = ErrorCode.NONE
        return results

    def on_transaction_completed(self, producer_id: int, partitions: Iterable[TopicPartition],
                                 result: Any) -> None:
        """A COMMIT or ABORT marker reached these `__consumer_offsets` partitions."""
        self.complete_pending(producer_id, {tp.partition for tp in partitions}, result)

    def complete_pending(self, producer_id: int, partitions: set[int], result: Any) -> None:
        groups = self.pending_txn_offsets.get(producer_id)
        if not groups:
            return
        commit = int(result) == 1  # ControlRecordType.COMMIT
        for group_id in [g for g in groups if self.offsets_topic.partition_for(g) in partitions]:
            pending = groups.pop(group_id)
            if not commit:
                continue
            per_group = self.offsets.setdefault(group_id, {})
            for tp, value in pending.items():
                current = per_group.get(tp)
                # A plain commit written after the transactional one wins, as in the log's order.
                if current is None or current.record_offset < value.record_offset:
                    per_group[tp] = value
            self.group_manager.get_or_create_simple_group(group_id)
        if not groups:
            del self.pending_txn_offsets[producer_id]

    # ================================================================ OffsetDelete and group removal

    async def delete_offsets(self, group_id: str, partitions: Sequence[TopicPartitionKey]) -> dict[TopicPartitionKey, int]:
        """OffsetDelete: remove committed offsets of topics the group does not consume."""
        require_group_id(group_id)
        group = self.group_manager.groups.get(group_id)
        if group is None or group.is_in_state(_S.DEAD):
            raise GroupIdNotFoundError(f"Group {group_id} does not exist")
        subscribed: set[str] | None = None
        if group.state in (_S.STABLE, _S.PREPARING_REBALANCE, _S.COMPLETING_REBALANCE):
            if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
                raise NonEmptyGroupError(f"Group {group_id} is not empty")
            subscribed = group.subscribed_topics()
        per_group = self.offsets.get(group_id, {})
        results: dict[TopicPartitionKey, int] = {}
        records: list[tuple[bytes, bytes | None]] = []
        to_remove: list[TopicPartitionKey] = []
        for tp in partitions:
            topic, partition = tp
            if group.state is not _S.EMPTY and (subscribed is None or topic in subscribed):
                results[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                continue
            results[tp] = ErrorCode.NONE
            if tp in per_group:
                records.append((encode_offset_commit_key(OffsetCommitKey(group_id, topic, partition)), None))
                to_remove.append(tp)
        if records:
            await self.offsets_topic.append(self.offsets_topic.partition_for(group_id), records)
            for tp in to_remove:
                per_group.pop(tp, None)
        return results

    def tombstones(self, group_id: str) -> list[tuple[bytes, bytes | None]]:
        """The records that remove every committed offset of a group."""
        return [(encode_offset_commit_key(OffsetCommitKey(group_id, t, p)), None) for (t, p) in self.offsets.get(group_id, {})]

    def remove_group(self, group_id: str) -> None:
        """Forget a group and its offsets once their tombstones are written."""
        self.offsets.pop(group_id, None)
        self.group_manager.remove_group(group_id)

    # ================================================================ expiration

    async def cleanup_group_metadata(self) -> int:
        """Expire offsets (offsets.retention.minutes) and remove empty groups left without offsets.

        Returns the number of offsets expired.
        """
        removed = await self._cleanup_group_metadata(self._expired_offsets, "expired")
        return removed + await self._cleanup_consumer_groups(self._expired_consumer_offsets, "expired")

    async def on_partitions_deleted(self, deleted: set[TopicPartitionKey]) -> int:
        """Kafka's onPartitionsDeleted: every group's offsets on deleted partitions are
        tombstoned and dropped, so a topic recreated under the same name starts with no
        committed position; a group left empty without offsets is removed, as on expiry.

        Returns the number of offsets removed.
        """
        removed = await self._cleanup_group_metadata(
            lambda group, per_group, now: [tp for tp in per_group if tp in deleted], "deleted-partition")
        return removed + await self._cleanup_consumer_groups(
            lambda group, per_group, now: [tp for tp in per_group if tp in deleted], "deleted-partition")

    def _expired_consumer_offsets(self, group: ConsumerGroup, per_group: dict[TopicPartitionKey, Any],
                                  now: int) -> list[TopicPartitionKey]:
        """Kafka's rule for a consumer-protocol group: an offset expires retention after its
        commit, unless the group has members subscribed to its topic."""
        subscribed = set(group.subscribed_topics) if group.members else set()
        return self._expired_by(per_group, now, subscribed, lambda o: o.commit_timestamp_ms)

    async def _cleanup_consumer_groups(self, select: Callable[[ConsumerGroup, dict[TopicPartitionKey, Any], int],
                                                              list[TopicPartitionKey]], kind: str) -> int:
        """The same cleanup for consumer-protocol groups: offsets `select` picks are tombstoned,
        and an empty group left without offsets is removed with its records."""
        now = self._now()
        removed_total = 0
        for group_id, group in list(self.consumer_groups.groups.items()):
            per_group = self.offsets.get(group_id, {})
            removed = select(group, per_group, now)
            delete_group = len(removed) == len(per_group) and not group.members and kind == "expired"
            if not removed and not delete_group:
                continue
            await self._remove_offsets(group_id, per_group, removed,
                                       self.consumer_groups.manager.tombstones(group_id) if delete_group else [], kind)
            removed_total += len(removed)
            if delete_group and not group.members and not self.offsets.get(group_id):
                self.offsets.pop(group_id, None)
                self.consumer_groups.manager.remove_group(group_id)
                log.info("Group %s transitioned to Dead and was removed (empty, no offsets)", group_id)
        return removed_total

    def _expired_offsets(self, group: ClassicGroup, per_group: dict[TopicPartitionKey, Any],
                         now: int) -> list[TopicPartitionKey]:
        base = self._expiration_base(group)
        if base is None:
            return []
        subscribed = group.subscribed_topics() if group.is_in_state(_S.STABLE) else None
        return self._expired_by(per_group, now, subscribed or set(), base)

    def _expired_by(self, per_group: dict[TopicPartitionKey, Any], now: int, subscribed: set[str] | frozenset[str],
                    base: Callable[[Any], int]) -> list[TopicPartitionKey]:
        """Offsets past their own expire timestamp, or `offsets.retention.ms` past `base`, except
        on topics the group's members subscribe to."""
        expired: list[TopicPartitionKey] = []
        for tp, o in per_group.items():
            if tp[0] in subscribed:
                continue
            if o.expire_timestamp_ms >= 0:
                if now >= o.expire_timestamp_ms:
                    expired.append(tp)
            elif now - base(o) >= self.offsets_retention_ms:
                expired.append(tp)
        return expired

    async def _cleanup_group_metadata(self, select: Callable[[ClassicGroup, dict[TopicPartitionKey, Any], int],
                                                             list[TopicPartitionKey]], kind: str) -> int:
        """Kafka's cleanupGroupMetadata: remove the offsets `select` picks from each group
        (tombstones first, then memory) and remove empty groups left without offsets."""
        now = self._now()
        removed_total = 0
        for group_id, group in list(self.group_manager.groups.items()):
            if group.is_in_state(_S.DEAD):
                continue
            per_group = self.offsets.get(group_id, {})
            removed = select(group, per_group, now)
            delete_group = len(removed) == len(per_group) and group.is_in_state(_S.EMPTY)
            if not removed and not delete_group:
                continue
            await self._remove_offsets(group_id, per_group, removed,
                                       [self.group_manager.tombstone(group_id)] if delete_group else [], kind)
            removed_total += len(removed)
            if delete_group and self.group_manager.groups.get(group_id) is group and group.is_in_state(_S.EMPTY) \
                    and not self.offsets.get(group_id):
                self.remove_group(group_id)
                log.info("Group %s transitioned to Dead and was removed (empty, no offsets)", group_id)
        return removed_total

    async def _remove_offsets(self, group_id: str, per_group: dict[TopicPartitionKey, Any],
                              removed: list[TopicPartitionKey], group_tombstones: list[tuple[bytes, bytes | None]],
                              kind: str) -> None:
        """Tombstone `removed` offsets (and the group's own records, when given), then forget them."""
        records = [(encode_offset_commit_key(OffsetCommitKey(group_id, t, p)), None) for t, p in removed]
        await self.offsets_topic.append(self.offsets_topic.partition_for(group_id), [*records, *group_tombstones])
        for tp in removed:
            per_group.pop(tp, None)
        if removed:
            log.info("Removed %d %s offset(s) of group %s", len(removed), kind, group_id)

    def _expiration_base(self, group: ClassicGroup) -> Any:
        """Kafka's offset expiration condition: what an offset's age is measured from, or None."""
        if group.protocol_type:
            if group.is_in_state(_S.EMPTY):
                ts = group.current_state_timestamp_ms
                return (lambda o: ts) if ts is not None else (lambda o: o.commit_timestamp_ms)
            if group.protocol_type == CONSUMER_PROTOCOL_TYPE and group.is_in_state(_S.STABLE) \
                    and group.subscribed_topics() is not None:
                return lambda o: o.commit_timestamp_ms
            return None
        return lambda o: o.commit_timestamp_ms
