"""SaslHandshake (key 17): the mechanism a SASL connection will authenticate with.

On a SASL listener the mechanism must be one of `sasl.enabled.mechanisms`; otherwise the
answer is UNSUPPORTED_SASL_MECHANISM (with the enabled ones) and the connection closes, as
it does after a second handshake. Elsewhere the request is out of place: ILLEGAL_SASL_STATE.
"""
from __future__ import annotations

from typing import Any

from wire.errors import IllegalSaslStateError, KafkaError, UnsupportedSaslMechanismError
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.handlers import error_code_for
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.SASL_HANDSHAKE


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    b = ResponseBuilder(API_KEY, header.api_version)
    sasl = ctx.session.sasl
    error: KafkaError | None = None
    mechanisms: tuple[str, ...] = ()
    if sasl is not None and ctx.session.authenticated and ctx.session.expires_at is not None:
        # Re-authentication (KIP-368): the same mechanism again, on the same connection.
        mechanisms = tuple(sasl.enabled_mechanisms)
        if not sasl.reauthenticate(request.mechanism):
            error = IllegalSaslStateError("Re-authentication must use the mechanism the connection authenticated with")
            ctx.session.close_after_response = True
    elif sasl is None or ctx.session.authenticated:
        error = IllegalSaslStateError("Unexpected SaslHandshake request")
    else:
        mechanisms = tuple(sasl.enabled_mechanisms)
        if not sasl.handshake(request.mechanism):
            error = UnsupportedSaslMechanismError(f"Unsupported SASL mechanism {request.mechanism}")
        elif header.api_version == 0:
            sasl.raw_tokens = True
    if error is not None and sasl is not None and not ctx.session.authenticated:
        ctx.session.close_after_response = True
    return b.entity("SaslHandshakeResponse", error_code=error_code_for(error) if error else 0, mechanisms=mechanisms)
