"""DescribeClientQuotas (key 48): the quota entities a filter matches, with their values.

Needs DESCRIBE_CONFIGS on the cluster (else CLUSTER_AUTHORIZATION_FAILED with no entries). A
filter Kafka refuses (an entity type twice, an unknown match type, IP next to user or client
id, ...) answers its error and message for the whole request.
"""
from __future__ import annotations

from typing import Any

from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AclOperation
from asyncbroker.client_quotas import QuotaError
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.DESCRIBE_CLIENT_QUOTAS


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)
    if not ctx.authorize_cluster(AclOperation.DESCRIBE_CONFIGS):
        return b.entity("DescribeClientQuotasResponse", throttle_time=0,
                        error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=None, entries=None)
    components = [(c.entity_type, int(c.match_type), c.match) for c in request.components]
    try:
        found = ctx.broker.quota_managers.quotas.describe(components, request.strict)
    except QuotaError as exc:
        return b.entity("DescribeClientQuotasResponse", throttle_time=0, error_code=exc.error_code,
                        error_message=str(exc), entries=None)
    return b.entity("DescribeClientQuotasResponse", throttle_time=0, error_code=ErrorCode.NONE, error_message="",
                    entries=tuple(
                        b.entity("EntryData", entity=tuple(b.entity("EntityData", entity_type=t, entity_name=n)
                                                           for t, n in entity),
                                 values=tuple(b.entity("ValueData", key=k, value=v) for k, v in values.items()))
                        for entity, values in found))
