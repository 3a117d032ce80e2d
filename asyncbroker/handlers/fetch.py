"""Fetch (key 1): read record batches, long-polling until min_bytes or max_wait.

The ReplicaManager reads, in one executor hop for all partitions (segment
reads may hit the disk), and long-polls. `max_bytes` bounds the whole response and `partition_max_bytes`
each partition, except that the first partition with data returns at least
one whole batch even when that batch is larger (KIP-74), so a consumer can
always make progress; a later partition whose first batch does not fit its
share returns nothing rather than part of a batch, as Kafka does for v3+.
Where Kafka ends a partition's records with the piece of a batch that reached
its limit, asyncbroker ends them at the last whole batch (no client reads a
piece; KD-215 in tests/oracle/KNOWN_DIFFERENCES.md).

When fewer than min_bytes are available the fetch parks on the fetch
waiters (registered before the first read, so no append is missed) until
appends bring enough bytes, max_wait passes, or the broker shuts down; then
it reads once more and answers.

Fetch sessions (KIP-227): the FetchManager (asyncbroker.fetch_session) gives
each Fetch its context, which says what to read (an incremental fetch reads
every partition of its session) and which partitions the answer carries. A
session id that no cache shard can hold fails the request, as Kafka's lookup
does: UNKNOWN_SERVER_ERROR at the top, and before v13 in each partition asked for.

Every partition is led here in leader epoch 0 (Metadata says so): a client's
current_leader_epoch above it is UNKNOWN_LEADER_EPOCH, last_fetched_epoch is
checked the way Kafka's leader checks a follower's (diverging epoch, or
OFFSET_OUT_OF_RANGE when that epoch's end is unknown), and a fetch from a
replica id is refused, as no other broker replicates from this one.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from wire.errors import ErrorCode
from wire.fetch_request import FetchRequest
from wire.headers import RequestHeader
from wire.messages import ApiKey
from wire.response_encoders import (FetchPartitionData, FetchTopicData, encode_fetch_response,
                                    encode_idle_fetch_partition)

from asyncbroker.acl_binding import AclOperation
from asyncbroker.encoded_response import EncodedResponse
from asyncbroker.fetch_session import INVALID_SESSION_ID, UnknownShardError
from asyncbroker.replica_manager import PartitionRead
from asyncbroker.request_context import RequestContext

if TYPE_CHECKING:
    from asyncbroker.broker import Broker

API_KEY = ApiKey.FETCH

log = logging.getLogger(__name__)

READ_COMMITTED = 1
_NO_TOPIC = object()  # before the first read's topic


async def handle(ctx: RequestContext, header: RequestHeader, request: FetchRequest) -> Any:
    version = header.api_version
    broker = ctx.broker
    replica_id = request.replica_id

    by_id = version >= 13
    forgotten = [(ft.topic_id if by_id else ft.topic, index)
                 for ft in request.forgotten_topics_data for index in ft.partitions]
    try:
        context = broker.fetch_manager.new_context(
            version, request.session_id, request.session_epoch, replica_id >= 0, _partition_reads(broker, request, by_id),
            forgotten, may_skip_idle=broker.authorizer is None)
    except UnknownShardError as exc:
        # Kafka's shard lookup throws (an index out of bounds) and its request fails.
        log.error("[KafkaApi-%d] Unexpected error handling request %s: fetch session id %s names no fetch "
                  "session cache shard", broker.node_id, header, exc)
        return _failed(version, request, ErrorCode.UNKNOWN_SERVER_ERROR)
    if context.error:
        return _response(version, [], error=context.error)

    reads = context.reads()
    if broker.authorizer is not None:
        # READ on each topic, asked once per topic (Kafka's filterByAuthorized). A read of an id
        # no topic has (v13+) is the ReplicaManager's UNKNOWN_TOPIC_ID.
        may_read: dict[str, bool] = {}
        for r in reads:
            if r.topic is None:
                continue
            allowed = may_read.get(r.topic)
            if allowed is None:
                allowed = may_read[r.topic] = ctx.authorize_topic(AclOperation.READ, r.topic)
            if not allowed:
                r.error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    # fetch.max.bytes caps what one response may carry, whatever the client asks; so does a
    # consumer_byte_rate quota (what one window allows: more would be throttled for sure).
    max_bytes = min(request.max_bytes, broker.config.fetch_max_bytes)
    quotas, session, client_id = broker.quota_managers, ctx.session, header.client_id or ""
    if quotas.quotas:
        window_bytes = quotas.fetch.max_value_in_quota_window(session.quota_user, client_id)
        if window_bytes is not None:
            max_bytes = min(max_bytes, max(1, int(window_bytes)))

    def parked(ns: int) -> None:
        session.parked_ns += ns

    reads = await broker.replica_manager.fetch_messages(
        reads, replica_id=replica_id, max_wait_ms=request.max_wait_ms, min_bytes=request.min_bytes,
        max_bytes=max_bytes, read_committed=request.isolation_level == READ_COMMITTED,
        use_file_regions=broker.use_sendfile, on_parked=parked, skipped=context.skipped())
    if quotas.quotas:
        # Sized as it would go out, without touching the session: a throttled answer is empty.
        error, session_id, carried = context.answer(reads, update=False)
        size = _response(version, carried, error=error, session_id=session_id).size
        now_ms = time.monotonic() * 1000
        throttle = quotas.fetch.record_and_get_throttle_time_ms(session.quota_user, client_id, size, now_ms)
        if throttle:
            # Over its quota: an empty answer (its bytes never leave, so they are not counted),
            # and the connection muted for the throttle time (asyncbroker.connection).
            quotas.fetch.unrecord(session.quota_user, client_id, size, now_ms)
            for r in reads:
                r.release()
            session.throttle_ms = throttle
            error, session_id = context.throttled()
            return EncodedResponse.of(encode_fetch_response(version, [], throttle_time_ms=throttle, error_code=error,
                                                            session_id=session_id))
    error, session_id, carried = context.answer(reads)
    if len(carried) != len(reads):
        holding = [r for r in reads if r.size]  # (an answer leaves out partitions with no records, mostly)
        if holding:
            kept = {id(r) for r in carried}
            for r in holding:
                if id(r) not in kept:
                    r.release()  # left out of the answer (a session's duplicate): its file region closes
    return _response(version, carried, error=error, session_id=session_id)


def _partition_reads(broker: Broker, request: FetchRequest, by_id: bool) -> list[PartitionRead]:
    """The request's partitions as reads, in request order. Kafka keys them by partition
    (insertion-ordered): a partition named twice is read once, where it first appeared, with
    the fields of its later entry. Topic ids (v13+) are resolved here, as KafkaApis does
    before the ReplicaManager."""
    reads: list[PartitionRead] = []
    add = reads.append
    keys: set[object] = set()
    repeated = False  # a topic named twice, or a partition not after the one before it
    key: object  # the topic's id from v13, else its name
    for t in request.topics:
        if by_id:
            meta = broker.topics.by_id(t.topic_id) if t.topic_id is not None else None
            name, topic_id, key = (meta.name if meta is not None else None), t.topic_id, t.topic_id
        else:
            name, topic_id, key = t.topic, None, t.topic  # by name: no id to hold the log to (Kafka's zero id)
        repeated = repeated or key in keys
        keys.add(key)
        last = -1
        for p in t.partitions:  # (a field the version lacks is -1: wire.fetch_request)
            index = p.partition
            repeated = repeated or index <= last
            last = index
            add(PartitionRead(name, topic_id, index, p.fetch_offset, p.partition_max_bytes, p.current_leader_epoch,
                              p.last_fetched_epoch))
    if not repeated:  # (clients list each topic once, its partitions in order)
        return reads
    by_partition: dict[tuple[Any, int], PartitionRead] = {}
    for r in reads:
        by_partition[(r.topic_id if by_id else r.topic, r.index)] = r
    return list(by_partition.values())


def _failed(version: int, request: FetchRequest, error: int) -> EncodedResponse:
    """Kafka's error answer to a Fetch that failed as a whole: the error at the top, the
    request's session id, and before v13 the error in each partition asked for (as asked:
    duplicates too); from v13 no partitions."""
    topics = [] if version >= 13 else [
        FetchTopicData(t.topic or "", [FetchPartitionData(p.partition, error, aborted_transactions=())
                                       for p in t.partitions])
        for t in request.topics]
    return EncodedResponse.of(encode_fetch_response(version, topics, error_code=error, session_id=request.session_id))


def _response(version: int, reads: list[PartitionRead], *, error: int = ErrorCode.NONE,
              session_id: int = INVALID_SESSION_ID) -> EncodedResponse:
    return EncodedResponse.of(encode_fetch_response(version, fetch_topics(version, reads), error_code=error,
                                                    session_id=session_id))


def fetch_topics(version: int, reads: list[PartitionRead]) -> list[FetchTopicData]:
    """Group reads into response topics of `version` (consecutive reads of one topic share an
    entry, as in Kafka).

    Record data goes in untouched (bytes, or a FileRegion the connection
    sendfiles). Tagged fields: only a diverging epoch (last_fetched_epoch checks); this
    node is the leader, so there is no leader change or snapshot to report. A partition with
    none of these (most of a consumer's) goes in encoded already.
    """
    topics: list[FetchTopicData] = []
    last_topic: object = _NO_TOPIC
    last_id: object = _NO_TOPIC
    partitions: list[FetchPartitionData | bytes] = []
    for r in reads:
        if r.topic != last_topic or r.topic_id != last_id:
            partitions = []
            topics.append(FetchTopicData(r.topic or "", partitions, r.topic_id))
            last_topic, last_id = r.topic, r.topic_id
        aborted = r.aborted
        if not r.size and not aborted and r.diverging_epoch is None:
            partitions.append(encode_idle_fetch_partition(version, r.index, r.error, r.high_watermark,
                                                          r.last_stable_offset, r.log_start_offset, aborted is None))
            continue
        partitions.append(FetchPartitionData(
            r.index, r.error, r.high_watermark, r.last_stable_offset, r.log_start_offset, aborted,
            records=(r.records,) if r.size else (), diverging_epoch=r.diverging_epoch,
        ))
    return topics
