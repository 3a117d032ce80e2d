"""AlterClientQuotas (key 49): set and remove client quotas, one answer per entity.

Needs ALTER_CONFIGS on the cluster. As Kafka's controller does, an entity named in two entries
(or a key named twice in one entry) is answered once, refused; each other entity is checked on
its own (asyncbroker.client_quotas) and, unless validate_only, applied; the changes are written
to the log directories before the answer.
"""
from __future__ import annotations

from typing import Any

from wire.error_messages import default_message
from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.client_quotas import IP, Entity, QuotaError, entity_of, entity_text
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.ALTER_CLIENT_QUOTAS


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)
    alterations: dict[Entity, list[tuple[str, float, bool]]] = {}
    outcomes: dict[Entity, tuple[int, str | None]] = {}
    duplicates: set[Entity] = set()
    for entry in request.entries:
        entity = entity_of([(e.entity_type, e.entity_name) for e in entry.entity])
        ops = [(op.key, float(op.value), bool(op.remove)) for op in entry.ops]
        if entity in alterations or entity in duplicates or len({k for k, _, _ in ops}) < len(ops):
            # Kafka still applies the entity's first entry when it has one; it answers the refusal.
            duplicates.add(entity)
            continue
        alterations[entity] = ops
    refused = not ctx.authorize_cluster(AclOperation.ALTER_CONFIGS)
    quotas = ctx.broker.quota_managers.quotas
    changed = False
    for entity, ops in alterations.items():
        if refused:
            outcomes[entity] = (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, default_message(ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
            continue
        try:
            if any(t == IP for t, _ in entity):
                await ctx.broker.run_blocking(quotas.check, entity, ops)  # may resolve a host name
            else:
                quotas.check(entity, ops)
        except QuotaError as exc:
            outcomes[entity] = (exc.error_code, str(exc))
            continue
        if not request.validate_only:
            quotas.apply(entity, ops)
            changed = True
        outcomes[entity] = (ErrorCode.NONE, None)
    if changed:
        await quotas.persist(ctx.broker.run_blocking)
    for entity in duplicates:
        outcomes[entity] = (ErrorCode.INVALID_REQUEST, f"Ignoring duplicate entity {entity_text(entity)}")
    return b.entity("AlterClientQuotasResponse", throttle_time=0, entries=tuple(
        b.entity("EntryData", error_code=code, error_message=message,
                 entity=tuple(b.entity("EntityData", entity_type=t, entity_name=n) for t, n in entity))
        for entity, (code, message) in outcomes.items()))
