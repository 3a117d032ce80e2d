"""RequestContext: what a handler knows about the request beyond its header and body.

As Kafka's RequestContext does, it names the broker serving the request and who sent
it: the group coordinator records each member's client host ("/127.0.0.1") and
DescribeGroups shows it. The connection builds one per connection; every handler is
`async def handle(ctx: RequestContext, header: RequestHeader, request) -> response`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from asyncbroker.broker import Broker

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
