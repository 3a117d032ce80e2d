"""Fetch (key 1): read record batches, long-polling until min_bytes or max_wait.

The ReplicaManager reads, in one executor hop for all partitions (segment
reads may hit the disk), and long-polls. `max_bytes` bounds the whole response and `partition_max_bytes`
each partition, except that the first partition with data returns at least
one whole batch even when that batch is larger (KIP-74), so a consumer can
always make progress; a later partition whose first batch does not fit its
share returns nothing rather than part of a batch, as Kafka does for v3+.

When fewer than min_bytes are available the fetch parks on the fetch
waiters (registered before the first read, so no append is missed) until
appends bring enough bytes, max_wait passes, or the broker shuts down; then
it reads once more and answers.

Fetch sessions (KIP-227) are not kept. A full fetch (session epoch 0 or -1)
is answered sessionless with session id 0, which tells a client asking for a
session (epoch 0) to keep sending full fetches; an incremental fetch (any
other epoch) names a session this broker cannot have: FETCH_SESSION_ID_NOT_FOUND.

Every partition is led here in leader epoch 0 (Metadata says so): a client's
current_leader_epoch above it is UNKNOWN_LEADER_EPOCH, last_fetched_epoch is
checked the way Kafka's leader checks a follower's (diverging epoch, or
OFFSET_OUT_OF_RANGE when that epoch's end is unknown), and a fetch from a
replica id is refused, as no other broker replicates from this one.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.messages import ApiKey
from wire.response_encoders import FetchPartitionData, FetchTopicData, encode_fetch_response

from asyncbroker.acl_binding import AclOperation
from asyncbroker.encoded_response import EncodedResponse
from asyncbroker.handlers import millis
from asyncbroker.replica_manager import PartitionRead
from asyncbroker.request_context import RequestContext

if TYPE_CHECKING:
    from asyncbroker.broker import Broker

API_KEY = ApiKey.FETCH

READ_COMMITTED = 1
# Fetch session epochs of a full fetch (KIP-227): open a session, or fetch without one.
INITIAL_EPOCH, FINAL_EPOCH = 0, -1


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    version = header.api_version
    session_epoch = getattr(request, "session_epoch", FINAL_EPOCH)
    if session_epoch not in (INITIAL_EPOCH, FINAL_EPOCH):
        # An incremental fetch: it names a session, and this ctx.broker keeps none.
        return _response(ctx.broker, version, [], error=ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
    replica_state = getattr(request, "replica_state", None)
    replica_id = replica_state.replica_id if replica_state is not None else getattr(request, "replica_id", -1)

    reads: list[PartitionRead] = []
    # Kafka keys the request by partition (insertion-ordered): a partition named twice is
    # read once, where it first appeared, with the fields of its later entry.
    requested: dict[tuple[Any, int], tuple[Any, Any]] = {}
    for t in request.topics:
        for p in t.partitions:
            requested[(t.topic_id if version >= 13 else t.topic, p.partition)] = (t, p)
    # READ on each topic, asked once per topic (Kafka's filterByAuthorized).
    may_read: dict[str, bool] = {}
    for (_key, _index), (t, p) in requested.items():
        if version >= 13:
            # Topic ids (v13+) are resolved here, as KafkaApis does before the ReplicaManager.
            meta = ctx.broker.topics.by_id(t.topic_id) if t.topic_id is not None else None
            name = meta.name if meta is not None else None
            topic_id = t.topic_id
            unknown_topic = ErrorCode.UNKNOWN_TOPIC_ID if meta is None else ErrorCode.NONE
        else:
            name = t.topic
            meta = ctx.broker.topics.get(name)
            topic_id = meta.topic_id if meta is not None else None
            unknown_topic = ErrorCode.NONE
        r = PartitionRead(name, topic_id, p.partition, p.fetch_offset, p.partition_max_bytes,
                          current_leader_epoch=getattr(p, "current_leader_epoch", -1),
                          last_fetched_epoch=getattr(p, "last_fetched_epoch", -1) if version >= 12 else -1)
        r.error = unknown_topic
        if not unknown_topic and name is not None:
            allowed = may_read.get(name)
            if allowed is None:
                allowed = may_read[name] = ctx.authorize_topic(AclOperation.READ, name)
            if not allowed:
                r.error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        reads.append(r)
    # fetch.max.bytes caps what one response may carry, whatever the client asks; so does a
    # consumer_byte_rate quota (what one window allows: more would be throttled for sure).
    max_bytes = min(request.max_bytes, ctx.broker.config.fetch_max_bytes)
    quotas, session, client_id = ctx.broker.quota_managers, ctx.session, header.client_id or ""
    if quotas.quotas:
        window_bytes = quotas.fetch.max_value_in_quota_window(session.quota_user, client_id)
        if window_bytes is not None:
            max_bytes = min(max_bytes, max(1, int(window_bytes)))

    def parked(ns: int) -> None:
        session.parked_ns += ns

    reads = await ctx.broker.replica_manager.fetch_messages(
        reads, replica_id=replica_id, max_wait_ms=millis(request.max_wait), min_bytes=request.min_bytes,
        max_bytes=max_bytes, read_committed=request.isolation_level == READ_COMMITTED,
        use_file_regions=ctx.broker.use_sendfile, on_parked=parked)
    response = _response(ctx.broker, version, reads)
    if quotas.quotas:
        now_ms = time.monotonic() * 1000
        throttle = quotas.fetch.record_and_get_throttle_time_ms(session.quota_user, client_id, response.size, now_ms)
        if throttle:
            # Over its quota: an empty answer (its bytes never leave, so they are not counted),
            # and the connection muted for the throttle time (asyncbroker.connection).
            quotas.fetch.unrecord(session.quota_user, client_id, response.size, now_ms)
            response.close_files()
            session.throttle_ms = throttle
            return EncodedResponse.of(encode_fetch_response(version, [], throttle_time_ms=throttle))
    return response


def _response(broker: Broker, version: int, reads: list[PartitionRead], error: int = ErrorCode.NONE) -> EncodedResponse:
    return EncodedResponse.of(encode_fetch_response(version, fetch_topics(reads), error_code=error))


def fetch_topics(reads: list[PartitionRead]) -> list[FetchTopicData]:
    """Group reads into response topics (consecutive reads of one topic share an entry, as in Kafka).

    Record data goes in untouched (bytes, or a FileRegion the connection
    sendfiles). Tagged fields: only a diverging epoch (last_fetched_epoch checks); this
    node is the leader, so there is no leader change or snapshot to report.
    """
    topics: list[FetchTopicData] = []
    last_key: object = None
    partitions: list[FetchPartitionData] = []
    for r in reads:
        key = (r.topic, r.topic_id)
        if key != last_key:
            partitions = []
            topics.append(FetchTopicData(r.topic or "", partitions, r.topic_id))
            last_key = key
        partitions.append(FetchPartitionData(
            r.index, r.error, r.high_watermark, r.last_stable_offset, r.log_start_offset, r.aborted,
            records=(r.records,) if r.size else (), diverging_epoch=r.diverging_epoch,
        ))
    return topics
