"""OffsetFetch (key 9): a group's committed offsets (all of them when topics is null).

v8+ asks for several groups at once; v10 names topics by id (an unknown id
is UNKNOWN_TOPIC_ID). Offsets never committed read -1 with no error, as in
Kafka. With require_stable (v7+), a partition whose offset an open transaction
has written is UNSTABLE_OFFSET_COMMIT until the transaction ends.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, NamedTuple

from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.messages import ApiKey
from wire.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
    encode_offset_fetch_response,
)

from asyncbroker.acl_binding import AclOperation
from asyncbroker.encoded_response import EncodedResponse
from asyncbroker.handlers import error_code_for
from asyncbroker.request_context import RequestContext

if TYPE_CHECKING:
    from asyncbroker.broker import Broker
    from asyncbroker.offset_metadata_manager import FetchedOffset

API_KEY = ApiKey.OFFSET_FETCH
ZERO_UUID = uuid.UUID(int=0)


def _fetch(coordinator: Any, group_id: str, topics: Any, require_stable: bool,
           member: tuple[str | None, int] | None) -> tuple[int, list[FetchedOffset]]:
    wanted = None if topics is None else [(t.name, p) for t in topics for p in t.partition_indexes]
    try:
        return ErrorCode.NONE, coordinator.fetch_offsets(group_id, wanted, require_stable=require_stable,
                                                         member=member)
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        return error_code_for(exc), []


def _by_topic(rows: list[FetchedOffset]) -> dict[str, list[FetchedOffset]]:
    out: dict[str, list[FetchedOffset]] = {}
    for row in rows:
        out.setdefault(row.topic, []).append(row)
    return out


class _NamedTopic(NamedTuple):
    name: str
    partition_indexes: Any


def _fetch_by_id(broker: Broker, group: Any, result: Any) -> tuple[int, dict[Any, list[FetchedOffset]]]:
    """v10 names topics by id: resolve them, answer unknown ids with UNKNOWN_TOPIC_ID in
    their place in the request, and key the answer by id."""
    from asyncbroker.offset_metadata_manager import FetchedOffset  # with the group coordinator
    if group.topics is None:
        error, rows = result(group.group_id, None)
        out: dict[Any, list[FetchedOffset]] = {}
        for name, parts in _by_topic(rows).items():
            meta = broker.topics.get(name)
            if meta is not None:  # offsets of a topic that is gone have no id to show
                out[meta.topic_id] = parts
        return error, out
    known = []
    for t in group.topics:
        meta = broker.topics.by_id(t.topic_id or ZERO_UUID)
        if meta is not None:
            known.append(_NamedTopic(meta.name, t.partition_indexes))
    error, rows = result(group.group_id, known)
    if error != ErrorCode.NONE:
        return error, {}
    fetched = _by_topic(rows)
    out = {}
    for t in group.topics:
        topic_id = t.topic_id or ZERO_UUID
        meta = broker.topics.by_id(topic_id)
        if meta is None:
            out[t.topic_id] = [FetchedOffset("", p, -1, -1, "", ErrorCode.UNKNOWN_TOPIC_ID) for p in t.partition_indexes]
        else:
            out[t.topic_id] = fetched.get(meta.name, [])
    return error, out


def _topic(key: str | uuid.UUID | None, rows: list[FetchedOffset]) -> OffsetFetchResponseTopic:
    """A topic's answer: `key` is its name, or (v10) its id."""
    return OffsetFetchResponseTopic(
        key if isinstance(key, str) else "", key if isinstance(key, uuid.UUID) else None,
        tuple(OffsetFetchResponsePartition(r.partition, r.offset, r.leader_epoch, r.metadata, r.error) for r in rows))


async def handle(ctx: RequestContext, header: RequestHeader, request: OffsetFetchRequest) -> EncodedResponse:
    from asyncbroker.offset_metadata_manager import FetchedOffset  # with the group coordinator, on first use

    version = header.api_version
    coordinator = None
    load_error: int = ErrorCode.NONE
    try:
        coordinator = await ctx.broker.loaded_group_coordinator()
    except Exception as exc:  # noqa: BLE001 - mapped at the boundary
        load_error = error_code_for(exc)

    require_stable = request.require_stable

    member: tuple[str | None, int] | None = None

    def result(group_id: str, topics: Any) -> tuple[int, list[FetchedOffset]]:
        """DESCRIBE on the group, then on each topic: offsets of topics the principal may not
        describe are left out of a listing of all, and refused (after the others) when named.
        From v9 a consumer-protocol member's id and epoch are checked (`member`)."""
        if not ctx.authorize_group(AclOperation.DESCRIBE, group_id):
            return ErrorCode.GROUP_AUTHORIZATION_FAILED, []
        if coordinator is None:
            return load_error, []
        if topics is None:
            error, rows = _fetch(coordinator, group_id, None, require_stable, member)
            return error, [r for r in rows if ctx.authorize_topic(AclOperation.DESCRIBE, r.topic, log_denial=False)]
        may_describe = {t.name: ctx.authorize_topic(AclOperation.DESCRIBE, t.name) for t in topics}
        error, rows = _fetch(coordinator, group_id, [t for t in topics if may_describe[t.name]], require_stable,
                             member)
        if error != ErrorCode.NONE:
            return error, rows
        return error, rows + [FetchedOffset(t.name, p, -1, -1, "", ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                              for t in topics if not may_describe[t.name] for p in t.partition_indexes]

    if version >= 8:
        groups = []
        for g in request.groups:
            member = (g.member_id, g.member_epoch) if version >= 9 else None
            if version >= 10:
                error, by_topic = _fetch_by_id(ctx.broker, g, result)
            else:
                error, rows = result(g.group_id, g.topics)
                by_topic = _by_topic(rows)
            topics = tuple(_topic(key, parts) for key, parts in by_topic.items())
            groups.append(OffsetFetchResponseGroup(g.group_id, topics, error))
        return _encoded(version, OffsetFetchResponse(groups=tuple(groups)))
    error, rows = result(request.group_id, request.topics)
    if error != ErrorCode.NONE and version < 2:
        # v0/v1 have no top-level error: report it on every requested partition.
        rows = [FetchedOffset(t.name, p, -1, -1, "", error) for t in (request.topics or ()) for p in t.partition_indexes]
    topics = tuple(_topic(name, parts) for name, parts in _by_topic(rows).items())
    return _encoded(version, OffsetFetchResponse(topics=topics, error_code=error))


def _encoded(version: int, response: OffsetFetchResponse) -> EncodedResponse:
    body = encode_offset_fetch_response(version, response)
    return EncodedResponse([body], len(body))
