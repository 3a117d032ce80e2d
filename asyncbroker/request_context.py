"""RequestContext: what a handler knows about the request beyond its header and body.

As Kafka's RequestContext does, it names the broker serving the request and who sent
it: the group coordinator records each member's client host ("/127.0.0.1") and
DescribeGroups shows it. The connection builds one per connection; every handler is
`async def handle(ctx: RequestContext, header: RequestHeader, request) -> response`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import msgspec
from wire.error_messages import default_message
from wire.errors import (
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    KafkaError,
    ThrottlingQuotaExceededError,
    TopicAuthorizationFailedError,
)

from asyncbroker.acl_binding import CLUSTER_NAME, EVERY_OPERATION, AclOperation, ResourceType

if TYPE_CHECKING:
    from asyncbroker.broker import Broker

# ConfigResource types that are not the cluster's.
_CONFIG_TOPIC, _CONFIG_GROUP = 2, 32

# Kafka's principal of a client that did not authenticate.
ANONYMOUS = "User:ANONYMOUS"


class Session(msgspec.Struct):
    """What a connection learns about its peer as it goes: who it is (a TLS client
    certificate's subject at once, a SASL identity after SaslAuthenticate) and, on a SASL
    listener, the authentication under way (asyncbroker.sasl_authenticator)."""

    principal: str = ANONYMOUS
    # On a SASL listener: False until SaslAuthenticate succeeds; only ApiVersions,
    # SaslHandshake and SaslAuthenticate are served before (Kafka closes on anything else).
    authenticated: bool = True
    sasl: Any = None  # the SaslServerAuthenticator of a SASL connection
    # Set by a handler whose answer must be the connection's last (a failed authentication).
    close_after_response: bool = False
    # With connections.max.reauth.ms: when (time.monotonic()) the session ends unless the
    # client re-authenticates (KIP-368); None: it never does.
    expires_at: float | None = None
    # Client quotas, for the request being served (a connection serves one at a time): its
    # size in bytes, the throttle its handler's byte-rate quota called for, and the time it
    # spent parked (a long-polling fetch) that is not request time.
    request_size: int = 0
    throttle_ms: int = 0
    parked_ns: int = 0

    @property
    def quota_user(self) -> str:
        """The user client quotas know: the principal's name ("alice" of "User:alice")."""
        return self.principal.partition(":")[2]


class RequestContext(msgspec.Struct, frozen=True):
    """The serving broker and the peer, fixed for a connection."""

    broker: Broker
    # The peer's address as Kafka reports it ("/127.0.0.1"); empty outside a connection
    # (no peer to report), never a made-up address.
    client_host: str = ""
    # The listener the connection came in on ("" outside a connection: the first one's
    # answers); Metadata tells clients that listener's advertised address.
    listener_name: str = ""
    session: Session = msgspec.field(default_factory=Session)
    # Kafka's connection id, "<local address>-<peer address>-<index>" (error messages name it).
    connection_id: str = ""

    @property
    def host(self) -> str:
        """The peer's address as ACLs name hosts ("127.0.0.1")."""
        return self.client_host.lstrip("/")

    def authorize(self, operation: AclOperation, resource_type: ResourceType, name: str, *,
                  log_denial: bool = True) -> bool:
        """Whether this connection's principal may perform `operation` on the resource
        (always, without an authorizer)."""
        authorizer = self.broker.authorizer
        return authorizer is None or authorizer.authorize(self.session.principal, self.host, operation,
                                                          resource_type, name, log_denial=log_denial)

    def authorize_by_resource_type(self, operation: AclOperation, resource_type: ResourceType) -> bool:
        """Whether some resource of the type allows `operation` (InitProducerId's WRITE on any topic)."""
        authorizer = self.broker.authorizer
        return authorizer is None or authorizer.authorize_by_resource_type(self.session.principal, self.host,
                                                                           operation, resource_type)

    def config_resource_refusal(self, operation: AclOperation, config_resource_type: int,
                                name: str) -> KafkaError | None:
        """Why the principal may not touch a config resource (DescribeConfigs, AlterConfigs),
        None when it may: brokers, loggers and client metrics are the cluster's. The error's
        wire message is what Kafka's controller sends when it refuses an alteration."""
        if config_resource_type == _CONFIG_TOPIC:
            return None if self.authorize_topic(operation, name) else TopicAuthorizationFailedError(
                default_message(TopicAuthorizationFailedError.error_code) or "")
        if config_resource_type == _CONFIG_GROUP:
            return None if self.authorize_group(operation, name) else GroupAuthorizationFailedError(
                default_message(GroupAuthorizationFailedError.error_code) or "", wire_message=None)
        return None if self.authorize_cluster(operation) else ClusterAuthorizationFailedError(
            default_message(ClusterAuthorizationFailedError.error_code) or "", wire_message=None)

    def authorize_cluster(self, operation: AclOperation, *, log_denial: bool = True) -> bool:
        return self.authorize(operation, ResourceType.CLUSTER, CLUSTER_NAME, log_denial=log_denial)

    def authorize_topic(self, operation: AclOperation, topic: str, *, log_denial: bool = True) -> bool:
        return self.authorize(operation, ResourceType.TOPIC, topic, log_denial=log_denial)

    def authorize_group(self, operation: AclOperation, group: str, *, log_denial: bool = True) -> bool:
        return self.authorize(operation, ResourceType.GROUP, group, log_denial=log_denial)

    def authorize_transactional_id(self, operation: AclOperation, transactional_id: str, *,
                                   log_denial: bool = True) -> bool:
        return self.authorize(operation, ResourceType.TRANSACTIONAL_ID, transactional_id, log_denial=log_denial)

    def authorized_operations(self, resource_type: ResourceType, name: str) -> int:
        """The authorized-operations bit field of a resource (all it supports without an authorizer)."""
        authorizer = self.broker.authorizer
        if authorizer is None:
            return EVERY_OPERATION[resource_type]
        return authorizer.authorized_operations(self.session.principal, self.host, resource_type, name)

    def not_authorized_message(self, operation: AclOperation) -> str:
        """The text of the ClusterAuthorizationException Kafka throws when a request needs an
        operation on the cluster (ACL and SCRAM administration): it names the request as
        Kafka's RequestChannel.Request prints itself."""
        protocol = self.broker.config.security_protocol(self.listener_name) or "PLAINTEXT"
        return (f"Request Request(processor=0, connectionId={self.connection_id}, session=Session("
                f"{self.session.principal},{self.client_host}), listenerName=ListenerName({self.listener_name}), "
                f"securityProtocol={protocol}, buffer=null, envelope=None) needs {operation.name} permission.")

    def mutations_limited(self, client_id: str) -> bool:
        """Whether a controller_mutation_rate quota applies to this client's topic changes."""
        quota = self.broker.quota_managers.controller_mutation
        return bool(quota.quotas) and quota.applies(self.session.quota_user, client_id)

    def record_mutations(self, client_id: str, partitions: int, strict: bool) -> None:
        """Charge a topic change of `partitions` partitions to the client's
        controller_mutation_rate quota (KIP-599). Strict (the versions that know the error):
        ThrottlingQuotaExceededError while the quota is spent, the connection throttled as long;
        permissive: charged, and the client throttled until its quota recovers."""
        quota = self.broker.quota_managers.controller_mutation
        now_ms = time.monotonic() * 1000
        user, session = self.session.quota_user, self.session
        throttle = quota.try_record(user, client_id, partitions, now_ms, strict=strict)
        if throttle:
            session.throttle_ms = max(session.throttle_ms, throttle)
            raise ThrottlingQuotaExceededError(default_message(ThrottlingQuotaExceededError.error_code) or "",
                                               wire_message=None)
        if not strict:
            session.throttle_ms = max(session.throttle_ms, quota.throttle_time_ms(user, client_id, now_ms))
