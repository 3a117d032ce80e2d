"""Who sent the request being handled, for handlers that report it back.

Kafka's group coordinator records each member's client host ("/127.0.0.1")
and DescribeGroups shows it. The connection sets the peer once for its worker
task; handlers read it without every handler signature carrying it.
"""

from __future__ import annotations

import contextvars

# Empty outside a connection (no peer to report), never a made-up address.
CLIENT_HOST: contextvars.ContextVar[str] = contextvars.ContextVar("client_host", default="")
