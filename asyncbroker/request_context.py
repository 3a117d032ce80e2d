"""RequestContext: what a handler knows about the request beyond its header and body.

As Kafka's RequestContext does, it names the broker serving the request and who sent
it: the group coordinator records each member's client host ("/127.0.0.1") and
DescribeGroups shows it. The connection builds one per connection; every handler is
`async def handle(ctx: RequestContext, header: RequestHeader, request) -> response`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from asyncbroker.broker import Broker


class RequestContext(msgspec.Struct, frozen=True):
    """The serving broker and the peer, fixed for a connection."""

    broker: Broker
    # The peer's address as Kafka reports it ("/127.0.0.1"); empty outside a connection
    # (no peer to report), never a made-up address.
    client_host: str = ""
