"""SaslAuthenticate (key 36): one token of the mechanism's exchange.

When the exchange completes the connection is authenticated as the principal the mechanism
proved (asyncbroker.sasl_authenticator); when the credentials fail, the answer carries
SASL_AUTHENTICATION_FAILED with Kafka's message and the connection closes after it.
"""
from __future__ import annotations

import time
from typing import Any

from wire.errors import IllegalSaslStateError, KafkaError, SaslAuthenticationError
from wire.headers import RequestHeader
from wire.messages import ApiKey

from asyncbroker.handlers import error_code_for
from asyncbroker.request_context import RequestContext
from asyncbroker.response_builder import ResponseBuilder

API_KEY = ApiKey.SASL_AUTHENTICATE


async def handle(ctx: RequestContext, header: RequestHeader, request: Any) -> Any:
    from asyncbroker.sasl_authenticator import AuthenticationFailed

    b = ResponseBuilder(API_KEY, header.api_version)
    session = ctx.session
    sasl = session.sasl
    error: KafkaError | None = None
    token = b""
    lifetime = 0
    if sasl is None or (session.authenticated and not sasl.reauthenticating):
        error = IllegalSaslStateError("SaslAuthenticate request received after successful authentication")
    elif sasl.mechanism is None:
        error = IllegalSaslStateError("Unexpected SaslAuthenticate request before SaslHandshake")
    else:
        try:
            token, principal = sasl.authenticate(bytes(request.auth_bytes))
        except AuthenticationFailed as exc:
            error = SaslAuthenticationError(str(exc))
        else:
            if principal is not None and sasl.reauthenticating and principal != session.principal:
                error = SaslAuthenticationError(f"Cannot change principals during re-authentication from "
                                                f"{session.principal}: {principal}")
            elif principal is not None:
                session.principal, session.authenticated, sasl.reauthenticating = principal, True, False
                lifetime = sasl.session_lifetime_ms()
                session.expires_at = time.monotonic() + lifetime / 1000 if lifetime > 0 else None
    if error is not None and sasl is not None and (not session.authenticated or sasl.reauthenticating):
        session.close_after_response = True
    return b.entity("SaslAuthenticateResponse", error_code=error_code_for(error) if error else 0,
                    error_message=error.wire_message if error else None, auth_bytes=token, session_lifetime=lifetime)
