"""The handler registry: one module per Kafka API, listed with its versions in SERVED_APIS.

Each handler module defines `API_KEY` and `async def handle(ctx, header, request)` (ctx: a
RequestContext); it is imported with the first request for its API, so a broker no client asks
for groups, transactions or ACLs never loads their code (issue 17's idle memory and start time).
ApiVersions advertises exactly the ranges below. Clients pick versions from that list and must
never be offered one we cannot decode: every range lies within the versions kio has schemas for
(or a hand-written codec reads), which the registry's tests check rather than the broker's
start, so that starting never loads kio.
`error_code_for` is the single place where typed exceptions become Kafka error codes.
"""

from __future__ import annotations

import datetime
import importlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from wire.errors import ErrorCode, KafkaError
from wire.messages import ApiKey

log = logging.getLogger(__name__)

# (ctx: RequestContext, header: RequestHeader, request: kio request entity) -> response
HandleFn = Callable[[Any, Any, Any], Awaitable[Any]]


# API -> (handler module, lowest version, highest version served).
SERVED_APIS: dict[ApiKey, tuple[str, int, int]] = {
    ApiKey.PRODUCE: ("produce", 3, 12),
    ApiKey.FETCH: ("fetch", 4, 17),
    ApiKey.LIST_OFFSETS: ("list_offsets", 1, 9),
    ApiKey.METADATA: ("metadata", 0, 13),
    ApiKey.OFFSET_COMMIT: ("offset_commit", 2, 10),
    ApiKey.OFFSET_FETCH: ("offset_fetch", 1, 10),
    ApiKey.FIND_COORDINATOR: ("find_coordinator", 0, 6),
    ApiKey.JOIN_GROUP: ("join_group", 0, 9),
    ApiKey.HEARTBEAT: ("heartbeat", 0, 4),
    ApiKey.LEAVE_GROUP: ("leave_group", 0, 5),
    ApiKey.SYNC_GROUP: ("sync_group", 0, 5),
    ApiKey.DESCRIBE_GROUPS: ("describe_groups", 0, 6),
    ApiKey.LIST_GROUPS: ("list_groups", 0, 5),
    # v0: the tokens that follow come without Kafka request framing
    ApiKey.SASL_HANDSHAKE: ("sasl_handshake", 0, 1),
    ApiKey.API_VERSIONS: ("api_versions", 0, 5),
    ApiKey.CREATE_TOPICS: ("create_topics", 2, 7),
    ApiKey.DELETE_TOPICS: ("delete_topics", 1, 6),
    ApiKey.DELETE_RECORDS: ("delete_records", 0, 2),
    ApiKey.INIT_PRODUCER_ID: ("init_producer_id", 0, 5),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: ("offset_for_leader_epoch", 2, 4),
    ApiKey.ADD_PARTITIONS_TO_TXN: ("add_partitions_to_txn", 0, 5),
    ApiKey.ADD_OFFSETS_TO_TXN: ("add_offsets_to_txn", 0, 4),
    ApiKey.END_TXN: ("end_txn", 0, 5),
    ApiKey.TXN_OFFSET_COMMIT: ("txn_offset_commit", 0, 5),
    ApiKey.DESCRIBE_ACLS: ("describe_acls", 1, 3),
    ApiKey.CREATE_ACLS: ("create_acls", 1, 3),
    ApiKey.DELETE_ACLS: ("delete_acls", 1, 3),
    ApiKey.DESCRIBE_CONFIGS: ("describe_configs", 1, 4),
    ApiKey.ALTER_CONFIGS: ("alter_configs", 0, 2),
    ApiKey.DESCRIBE_LOG_DIRS: ("describe_log_dirs", 1, 5),
    ApiKey.SASL_AUTHENTICATE: ("sasl_authenticate", 0, 2),
    ApiKey.CREATE_PARTITIONS: ("create_partitions", 0, 3),
    ApiKey.DELETE_GROUPS: ("delete_groups", 0, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: ("incremental_alter_configs", 0, 1),
    ApiKey.OFFSET_DELETE: ("offset_delete", 0, 0),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: ("describe_client_quotas", 0, 1),
    ApiKey.ALTER_CLIENT_QUOTAS: ("alter_client_quotas", 0, 1),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: ("describe_user_scram_credentials", 0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: ("alter_user_scram_credentials", 0, 0),
    ApiKey.DESCRIBE_CLUSTER: ("describe_cluster", 0, 2),
    ApiKey.DESCRIBE_PRODUCERS: ("describe_producers", 0, 0),
    ApiKey.DESCRIBE_TRANSACTIONS: ("describe_transactions", 0, 0),
    ApiKey.LIST_TRANSACTIONS: ("list_transactions", 0, 2),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: ("consumer_group_heartbeat", 0, 1),
    ApiKey.CONSUMER_GROUP_DESCRIBE: ("consumer_group_describe", 0, 1),
    ApiKey.SHARE_GROUP_HEARTBEAT: ("share_group_heartbeat", 1, 1),
    ApiKey.SHARE_GROUP_DESCRIBE: ("share_group_describe", 1, 1),
    ApiKey.SHARE_FETCH: ("share_fetch", 1, 2),
    ApiKey.SHARE_ACKNOWLEDGE: ("share_acknowledge", 1, 2),
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: ("describe_share_group_offsets", 0, 1),
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: ("alter_share_group_offsets", 0, 0),
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: ("delete_share_group_offsets", 0, 0),
}


class HandlerSpec(msgspec.Struct):
    """One API as served here: its key, the version range we answer, its handler module and,
    once the first request for it came, the module's coroutine."""

    api_key: int
    min_version: int
    max_version: int
    name: str
    handle: Any = None  # HandleFn; msgspec cannot type-check callables


class HandlerRegistry:
    """API key -> HandlerSpec for every API in SERVED_APIS."""

    def __init__(self, specs: dict[int, HandlerSpec]) -> None:
        self._specs = specs

    @classmethod
    def discover(cls) -> "HandlerRegistry":
        return cls({int(api_key): HandlerSpec(int(api_key), lo, hi, name)
                    for api_key, (name, lo, hi) in SERVED_APIS.items()})

    def get(self, api_key: int) -> HandlerSpec | None:
        """The API's spec, its handler module imported with the first request for it."""
        spec = self._specs.get(api_key)
        if spec is not None and spec.handle is None:
            spec.handle = importlib.import_module(f"{__name__}.{spec.name}").handle
        return spec

    def supported_versions(self) -> dict[int, tuple[int, int]]:
        return {k: (s.min_version, s.max_version) for k, s in sorted(self._specs.items())}


def error_code_for(exc: BaseException) -> ErrorCode:
    """The one boundary where exceptions become Kafka error codes.

    Typed errors carry their code; anything else is a bug on our side, logged
    with its traceback and reported as UNKNOWN_SERVER_ERROR like Kafka does.
    """
    if isinstance(exc, KafkaError):
        return exc.error_code
    log.error("Unexpected error while handling a request", exc_info=exc)
    return ErrorCode.UNKNOWN_SERVER_ERROR


def error_message_for(exc: BaseException) -> str | None:
    if isinstance(exc, KafkaError):
        return exc.wire_message
    return None


def millis(value: Any) -> int:
    """A duration field of a decoded request (kio gives timedeltas) in milliseconds."""
    if isinstance(value, datetime.timedelta):
        return (value.days * 86_400_000) + (value.seconds * 1000) + (value.microseconds // 1000)
    return int(value)
