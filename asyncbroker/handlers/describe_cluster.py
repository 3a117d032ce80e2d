"""DescribeCluster (API 60): the cluster id and its one broker, which is also the controller."""
from __future__ import annotations

from typing import Any

from wire.errors import ErrorCode
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.acl_binding import AUTHORIZED_OPERATIONS_OMITTED, CLUSTER_NAME, ResourceType
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.DESCRIBE_CLUSTER

ENDPOINT_TYPE_BROKER = 1
ENDPOINT_TYPE_CONTROLLER = 2


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    rb = ResponseBuilder(API_KEY, header.api_version)
    endpoint_type = getattr(request, "endpoint_type", ENDPOINT_TYPE_BROKER)
    code, message = ErrorCode.NONE, None
    brokers: tuple[Any, ...] = ()
    # No ACL is needed: a client learns the cluster's brokers from it (and from Metadata).
    if endpoint_type == ENDPOINT_TYPE_CONTROLLER:
        code = ErrorCode.MISMATCHED_ENDPOINT_TYPE
        message = "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
    elif endpoint_type != ENDPOINT_TYPE_BROKER:
        code = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
        message = f"Unsupported endpoint type {endpoint_type}"
    else:
        host, port = ctx.broker.advertised_for(ctx.listener_name)
        brokers = (
            rb.entity(
                "DescribeClusterBroker",
                broker_id=ctx.broker.node_id,
                host=host,
                port=port,
                rack=None,
                is_fenced=False,  # v2: a serving single node is never fenced
            ),
        )
    return rb.entity(
        "DescribeClusterResponse",
        throttle_time=0,
        error_code=code,
        error_message=message,
        endpoint_type=ENDPOINT_TYPE_BROKER,  # the type of the endpoint that answers, as Kafka echoes it
        cluster_id=ctx.broker.cluster_id or "",
        controller_id=ctx.broker.node_id if code == ErrorCode.NONE else -1,
        brokers=brokers,
        cluster_authorized_operations=(
            ctx.authorized_operations(ResourceType.CLUSTER, CLUSTER_NAME)
            if request.include_cluster_authorized_operations and code == ErrorCode.NONE else AUTHORIZED_OPERATIONS_OMITTED
        ),
    )
