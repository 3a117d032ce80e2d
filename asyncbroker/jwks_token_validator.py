"""JwksTokenValidator: OAUTHBEARER tokens signed by an identity provider, checked as Kafka's
OAuthBearerValidatorCallbackHandler checks them.

A listener whose `listener.name.<l>.oauthbearer.sasl.server.callback.handler.class` is that
handler takes JWS tokens (RS256, ES256, ... as the key says) whose signature verifies with a
key of the JWKS at `sasl.oauthbearer.jwks.endpoint.url` (an https/http URL or a file) chosen by
the token's `kid`. The token must not be expired (`exp`, required) nor used before its `nbf`,
within `sasl.oauthbearer.clock.skew.seconds`; must name one of
`sasl.oauthbearer.expected.audience` and `sasl.oauthbearer.expected.issuer` when those are
set; and its principal is the `sasl.oauthbearer.sub.claim.name` claim.

The JWKS is fetched off the loop at startup and every
`sasl.oauthbearer.jwks.endpoint.refresh.ms`; a token signed by a key the set lacks fails and
makes the next fetch come at once (a rotated key), as Kafka's RefreshingHttpsJwks does. The
checks themselves are PyJWT's.
"""
from __future__ import annotations

import asyncio
import json
import logging
import urllib.request
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import jwt

if TYPE_CHECKING:
    from asyncbroker.config import KafkaConfig

__all__ = ["JwksTokenValidator", "InvalidToken"]

log = logging.getLogger(__name__)

# The signature algorithms a JWKS key may be used with (never "none", never HMAC: the broker
# holds no shared secret).
_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]
_FETCH_TIMEOUT_S = 10


class InvalidToken(Exception):
    """Why a token was refused (the broker logs it; the client hears invalid_token)."""


class JwksTokenValidator:
    def __init__(self, config: KafkaConfig) -> None:
        assert config.sasl_oauthbearer_jwks_endpoint_url is not None
        self.url = config.sasl_oauthbearer_jwks_endpoint_url
        self.refresh_s = config.sasl_oauthbearer_jwks_endpoint_refresh_ms / 1000
        self.audience = config.sasl_oauthbearer_expected_audience or None
        self.issuer = config.sasl_oauthbearer_expected_issuer
        self.sub_claim = config.sasl_oauthbearer_sub_claim_name
        self.skew_s = config.sasl_oauthbearer_clock_skew_seconds
        self._keys: dict[str, Any] = {}  # kid -> PyJWK
        self._refresh_now = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # -- the keys

    def _fetch(self) -> dict[str, Any]:
        """Blocking: read the JWKS and build its keys, by kid."""
        with urllib.request.urlopen(self.url, timeout=_FETCH_TIMEOUT_S) as answer:  # noqa: S310 - a configured URL
            document = json.loads(answer.read())
        keys = {}
        for jwk in jwt.PyJWKSet.from_dict(document).keys:
            if jwk.key_id is not None and jwk.public_key_use in (None, "sig"):
                keys[jwk.key_id] = jwk
        return keys

    async def start(self, run_blocking: Callable[..., Awaitable[Any]]) -> None:
        """Fetch the keys once (a failure is logged, and fetching goes on), then keep them fresh."""
        await self._refresh(run_blocking)
        self._task = asyncio.get_running_loop().create_task(self._keep_fresh(run_blocking), name="jwks-refresh")

    async def _refresh(self, run_blocking: Callable[..., Awaitable[Any]]) -> None:
        try:
            self._keys = await run_blocking(self._fetch)
            log.info("Fetched %d signing key(s) from %s", len(self._keys), self.url)
        except (OSError, ValueError, jwt.PyJWTError) as exc:
            log.warning("Could not fetch the JWKS from %s: %s", self.url, exc)

    async def _keep_fresh(self, run_blocking: Callable[..., Awaitable[Any]]) -> None:
        while True:
            try:
                await asyncio.wait_for(self._refresh_now.wait(), self.refresh_s)
            except asyncio.TimeoutError:
                pass
            self._refresh_now.clear()
            await self._refresh(run_blocking)

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    # -- the tokens

    def validate(self, token: str) -> tuple[str, int]:
        """(principal name, expiry in epoch ms) of a valid token; InvalidToken says why not."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise InvalidToken(f"Malformed JWT provided: {exc}") from None
        kid = header.get("kid")
        key = self._keys.get(kid) if isinstance(kid, str) else None
        if key is None:
            self._refresh_now.set()  # perhaps a key the provider rotated in since the last fetch
            raise InvalidToken(f"Unable to find a key in the JWKS at {self.url} for kid {kid!r}")
        try:
            claims = jwt.decode(token, key, algorithms=_ALGORITHMS, audience=self.audience, issuer=self.issuer,
                                leeway=self.skew_s, options={"require": ["exp"], "verify_aud": self.audience is not None})
        except jwt.PyJWTError as exc:
            raise InvalidToken(f"The token is not valid: {exc}") from None
        principal = claims.get(self.sub_claim)
        if not isinstance(principal, str) or not principal:
            raise InvalidToken(f"The token has no {self.sub_claim} claim")
        return principal, int(claims["exp"] * 1000)
