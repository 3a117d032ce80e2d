"""CoordinatorLoader: the group coordinator's state read back from `__consumer_offsets`.

At startup (in the background; group requests wait for it) every record of
every partition is replayed in log order, as Kafka's CoordinatorLoaderImpl
replays a coordinator partition: an OffsetCommit record sets or (as a
tombstone) removes one offset, a transaction's records wait for its COMMIT or
ABORT marker, and a group's last GroupMetadata record is the group as it was
stored. A consumer-protocol group's records (types 3, 5 to 8 and 16) are applied one
by one (ConsumerGroupManager.replay). A group that holds offsets but no group record comes back as an empty
group, so it can be described, listed and deleted.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from storage.clock import Clock

from asyncbroker.coordinator_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    RecordFormatError,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
)
from asyncbroker.group_metadata_manager import GroupMetadataManager
from asyncbroker.lazy_group_manager import LazyGroupManager
from asyncbroker.offset_metadata_manager import OffsetMetadataManager
from asyncbroker.offsets_topic import CoordinatorTopic, StoredRecord

if TYPE_CHECKING:
    from asyncbroker.consumer_group import ConsumerGroup
    from asyncbroker.consumer_group_manager import ConsumerGroupManager
    from asyncbroker.share_group import ShareGroup
    from asyncbroker.share_group_manager import ShareGroupManager

log = logging.getLogger(__name__)



class CoordinatorLoader:
    """Replays `__consumer_offsets` into the group and offset managers."""

    def __init__(self, offsets_topic: CoordinatorTopic, group_manager: GroupMetadataManager,
                 offset_manager: OffsetMetadataManager, clock: Clock,
                 run_blocking: Callable[..., Awaitable[Any]],
                 consumer_groups: LazyGroupManager[ConsumerGroupManager, ConsumerGroup],
                 share_groups: LazyGroupManager[ShareGroupManager, ShareGroup]) -> None:
        self.consumer_groups = consumer_groups
        self.share_groups = share_groups
        self.offsets_topic = offsets_topic
        self.group_manager = group_manager
        self.offset_manager = offset_manager
        self.clock = clock
        self.run_blocking = run_blocking

    async def load(self) -> None:
        if not self.offsets_topic.exists():
            return
        started = self.clock.milliseconds()
        rows: list[StoredRecord] = await self.run_blocking(lambda: list(self.offsets_topic.read_all_blocking()))
        # Only a group's last record counts: its members' timers start once, from the one kept.
        group_values: dict[str, GroupMetadataValue] = {}
        for partition, offset, key_bytes, value_bytes, producer_id, control in rows:
            if control is not None:
                self.offset_manager.complete_pending(producer_id, {partition}, control)
                continue
            if key_bytes is None:
                continue
            try:
                key = decode_key(key_bytes)
                if isinstance(key, OffsetCommitKey):
                    commit = None if value_bytes is None else decode_offset_commit_value(value_bytes)
                    self.offset_manager.replay(key, commit, producer_id, offset)
                elif isinstance(key, GroupMetadataKey):
                    if value_bytes is None:
                        group_values.pop(key.group, None)
                    else:
                        group_values[key.group] = decode_group_metadata_value(value_bytes)
                else:
                    # A consumer-protocol or share group's record: their formats load with the first.
                    from asyncbroker import consumer_group_records as records

                    consumer_key = records.decode_consumer_group_key(key_bytes)
                    if consumer_key is not None:
                        decode = records.VALUE_DECODERS[consumer_key.record_type]
                        value = None if value_bytes is None else decode(value_bytes)
                        if consumer_key.record_type in records.SHARE_GROUP_RECORD_TYPES:
                            self.share_groups.manager.replay(consumer_key, value)  # type: ignore[arg-type]
                        else:
                            self.consumer_groups.manager.replay(consumer_key, value)
            except RecordFormatError as exc:
                log.warning("Skipping unreadable record at offset %d of %s-%d: %s", offset,
                            self.offsets_topic.name, partition, exc)
        now = self.clock.milliseconds()
        for group_id, value in group_values.items():
            if group_id not in self.consumer_groups.groups:
                self.group_manager.replay(group_id, value, now)
        for loaded in (self.consumer_groups.built, self.share_groups.built):
            if loaded is not None:  # None: no group of that kind was loaded
                loaded.after_load()
        offsets = 0
        for group_id in self.offset_manager.groups_with_offsets():
            if group_id not in self.consumer_groups.groups:
                self.group_manager.get_or_create_simple_group(group_id)
            offsets += len(self.offset_manager.offsets[group_id])
        log.info("Loaded %d group(s) and %d committed offset(s) from %s in %d ms",
                 len(self.group_manager.groups) + len(self.consumer_groups.groups),
                 offsets, self.offsets_topic.name, self.clock.milliseconds() - started)
