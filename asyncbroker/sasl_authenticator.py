"""SaslServerAuthenticator: a SASL listener's connection proving who its client is.

As Kafka's SaslServerAuthenticator: the client may send ApiVersions, then SaslHandshake
(v1: it names a mechanism from `sasl.enabled.mechanisms`), then SaslAuthenticate requests
carrying the mechanism's tokens until the exchange completes. Any other request before that
closes the connection, and so does a failed authentication, right after its answer.

Mechanisms:
    PLAIN          `authzid NUL user NUL password`, checked against the users of the
                   listener's JAAS config (PlainLoginModule's `user_<name>="<password>"`
                   options, in `listener.name.<listener>.plain.sasl.jaas.config`)
    SCRAM-SHA-256  RFC 5802/7677 over the credentials of asyncbroker.scram_credentials
    SCRAM-SHA-512  (AlterUserScramCredentials), by `scramp`'s server
    OAUTHBEARER    RFC 7628 with unsecured JWS tokens (`alg: none`), checked as Kafka's
                   default validator for development checks them: an unexpired `exp`, the
                   principal claim (`sub`, or the JAAS option unsecuredValidatorPrincipalClaimName)
                   and the scopes of unsecuredValidatorRequiredScope; or, on a listener whose
                   server callback handler is Kafka's OAuthBearerValidatorCallbackHandler,
                   tokens signed by an identity provider (asyncbroker.jwks_token_validator).
                   A bad token gets the `{"status":"invalid_token"}` challenge, then the failure.
The principal is then `User:<name>`.
"""
from __future__ import annotations

import base64
import json
import re
import time
from typing import TYPE_CHECKING

import msgspec
from scramp import ScramException, ScramMechanism

from asyncbroker.jwks_token_validator import InvalidToken

from storage.config_def import ConfigException

if TYPE_CHECKING:
    from asyncbroker.broker import Broker
    from asyncbroker.config import KafkaConfig

__all__ = ["JaasEntry", "parse_jaas_config", "plain_users", "SaslServerAuthenticator", "AuthenticationFailed"]

_JAAS = re.compile(r'^\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\s*(.*?)\s*;\s*$', re.S)
_OPTION = re.compile(r'\s*([\w.-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s";]+))')
PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"


class JaasEntry(msgspec.Struct, frozen=True):
    login_module: str
    options: dict[str, str]


def parse_jaas_config(key: str, text: str) -> JaasEntry:
    """`<LoginModule> <flag> key="value" ...;` (one login module, as Kafka's sasl.jaas.config)."""
    m = _JAAS.match(text)
    if m is None:
        raise ConfigException(key, f"Invalid value for configuration {key}: expected "
                              '"<LoginModule> required key=\\"value\\" ...;"')
    options: dict[str, str] = {}
    rest = m.group(3)
    pos = 0
    while pos < len(rest):
        o = _OPTION.match(rest, pos)
        if o is None:
            raise ConfigException(key, f"Invalid value for configuration {key}: cannot read the options after "
                                  f"{rest[:pos]!r}")
        # A quoted value's backslash escapes its next character, as Java's StreamTokenizer reads it.
        options[o.group(1)] = re.sub(r"\\(.)", r"\1", o.group(2)) if o.group(2) is not None else o.group(3)
        pos = o.end()
        while pos < len(rest) and rest[pos].isspace():
            pos += 1
    return JaasEntry(m.group(1), options)


def plain_users(config: "KafkaConfig", listener: str) -> dict[str, str]:
    """The PLAIN users of a listener's JAAS config; ConfigException when PLAIN is enabled
    and the listener has none (Kafka refuses to start then too)."""
    key = f"listener.name.{listener.lower()}.plain.sasl.jaas.config"
    text = config.listener_jaas_configs.get(f"{listener} PLAIN")
    if text is None:
        raise ConfigException(key, f"{key} is missing: PLAIN on listener {listener} needs its users "
                              f'({PLAIN_LOGIN_MODULE} required user_alice="alice-secret";)')
    entry = parse_jaas_config(key, text)
    if entry.login_module != PLAIN_LOGIN_MODULE:
        raise ConfigException(key, f"Invalid value for configuration {key}: PLAIN needs {PLAIN_LOGIN_MODULE}")
    return {k[len("user_"):]: v for k, v in entry.options.items() if k.startswith("user_")}


class AuthenticationFailed(Exception):
    """The credentials were wrong; the message is what Kafka sends back."""


class _InvalidToken(Exception):
    """An OAUTHBEARER token that does not validate."""


class SaslServerAuthenticator:
    """One connection's authentication: the mechanism chosen, its exchange, its result."""

    def __init__(self, broker: "Broker", listener: str) -> None:
        self.broker = broker
        self.listener = listener
        self.mechanism: str | None = None
        # After a SaslHandshake v0 the tokens come as bare size-prefixed frames, not requests.
        self.raw_tokens = False
        self._scram: object | None = None  # scramp's ScramServer
        self._scram_user: str | None = None
        self._scram_step = 0
        self._oauth_error: str | None = None
        # Re-authentication (KIP-368) under way, and when the last token expires (OAUTHBEARER).
        self.reauthenticating = False
        self.token_expiry_ms: float | None = None

    def reauthenticate(self, mechanism: str) -> bool:
        """A SaslHandshake on an authenticated connection: a new exchange of the same mechanism."""
        if mechanism != self.mechanism:
            return False
        self.reauthenticating = True
        self._scram, self._scram_user, self._scram_step, self._oauth_error = None, None, 0, None
        return True

    def session_lifetime_ms(self) -> int:
        """connections.max.reauth.ms, shortened to the token's expiry; 0 when sessions do not expire."""
        lifetime = self.broker.config.connections_max_reauth_ms
        if lifetime > 0 and self.token_expiry_ms is not None:
            lifetime = max(0, min(lifetime, int(self.token_expiry_ms - time.time() * 1000)))
        return lifetime

    @property
    def enabled_mechanisms(self) -> list[str]:
        return list(self.broker.config.sasl_enabled_mechanisms)

    def handshake(self, mechanism: str) -> bool:
        """SaslHandshake: True when `mechanism` is enabled (it is then the one used)."""
        if self.mechanism is not None or mechanism not in self.enabled_mechanisms:
            return False
        self.mechanism = mechanism
        return True

    def authenticate(self, token: bytes) -> tuple[bytes, str | None]:
        """One SaslAuthenticate token: (the answer's token, the principal once complete, else
        None). AuthenticationFailed when the credentials do not hold."""
        if self.mechanism == "PLAIN":
            return b"", self._plain(token)
        if self.mechanism == "OAUTHBEARER":
            return self._oauthbearer(token)
        return self._scram_round(token)

    def _oauthbearer(self, message: bytes) -> tuple[bytes, str | None]:
        if self._oauth_error is not None:
            # The client acknowledged the error challenge (RFC 7628 section 3.2.3): fail now.
            raise AuthenticationFailed(self._oauth_error)
        try:
            principal = self._validate_bearer(message)
        except _InvalidToken as exc:
            self._oauth_error = f"Authentication failed: {exc}"
            return json.dumps({"status": "invalid_token"}, separators=(",", ":")).encode(), None
        return b"", f"User:{principal}"

    def _validate_bearer(self, message: bytes) -> str:
        """The principal of an RFC 7628 client response: its token checked by the listener's
        validator, Kafka's unsecured one unless the listener names the JWKS one."""
        text = message.decode("utf-8", "replace")
        gs2, sep, rest = text.partition("\x01")
        if not sep or not gs2.startswith(("n,", "y,")):
            raise _InvalidToken("Invalid OAUTHBEARER client first message")
        fields = dict(kv.split("=", 1) for kv in rest.split("\x01") if "=" in kv)
        auth = fields.get("auth", "")
        if not auth.startswith("Bearer "):
            raise _InvalidToken("Invalid OAUTHBEARER client first message: no Bearer token")
        token = auth[len("Bearer "):].strip()
        validator = self.broker.jwks_validators.get(self.listener)
        if validator is not None:
            try:
                principal, self.token_expiry_ms = validator.validate(token)
            except InvalidToken as exc:
                raise _InvalidToken(str(exc)) from None
            return principal
        return self._validate_unsecured(token)

    def _validate_unsecured(self, token: str) -> str:
        """Kafka's OAuthBearerUnsecuredValidatorCallbackHandler: an `alg: none` JWS."""
        parts = token.split(".")
        if len(parts) != 3 or parts[2]:
            raise _InvalidToken("An unsecured JWS has three parts and an empty signature")
        try:
            header, claims = (json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4))) for p in parts[:2])
        except ValueError:
            raise _InvalidToken("The token's header or claims are not base64url JSON") from None
        if not isinstance(header, dict) or header.get("alg") != "none" or not isinstance(claims, dict):
            raise _InvalidToken('An unsecured JWS must have "alg": "none"')
        options = self._oauth_options()
        skew_ms = int(options.get("unsecuredValidatorAllowableClockSkewMs", "0"))
        exp = claims.get("exp")
        if not isinstance(exp, (int, float)) or exp * 1000 + skew_ms <= time.time() * 1000:
            raise _InvalidToken("The token's exp claim is missing or in the past")
        self.token_expiry_ms = exp * 1000
        principal = claims.get(options.get("unsecuredValidatorPrincipalClaimName", "sub"))
        if not isinstance(principal, str) or not principal:
            raise _InvalidToken("The token has no principal claim")
        scope = claims.get("scope", [])
        scopes = set(scope.split() if isinstance(scope, str) else scope)
        required = set(options.get("unsecuredValidatorRequiredScope", "").replace(",", " ").split())
        if not required <= scopes:
            raise _InvalidToken(f"The token lacks the required scope(s) {sorted(required - scopes)}")
        return principal

    def _oauth_options(self) -> dict[str, str]:
        text = self.broker.config.listener_jaas_configs.get(f"{self.listener} OAUTHBEARER")
        return parse_jaas_config("sasl.jaas.config", text).options if text else {}

    def _plain(self, token: bytes) -> str:
        parts = token.split(b"\x00")
        if len(parts) != 3:
            raise AuthenticationFailed("Invalid SASL/PLAIN response: expected 3 tokens")
        authzid, user, password = (p.decode("utf-8", "replace") for p in parts)
        if not user or not password:
            raise AuthenticationFailed("Authentication failed: username or password is empty")
        if authzid and authzid != user:
            raise AuthenticationFailed("Authentication failed: Client requested an authorization id that is "
                                       "different from username")
        expected = plain_users(self.broker.config, self.listener).get(user)
        if expected is None or not _equal(expected, password):
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        return f"User:{user}"

    def _scram_round(self, token: bytes) -> tuple[bytes, str | None]:
        assert self.mechanism is not None
        failed = AuthenticationFailed(f"Authentication failed during authentication due to invalid credentials "
                                      f"with SASL mechanism {self.mechanism}")
        try:
            if self._scram_step == 0:
                credentials = self.broker.scram_credentials

                def lookup(user: str) -> tuple[bytes, bytes, bytes, int]:
                    self._scram_user = user
                    found = credentials.get(user, self.mechanism or "")
                    if found is None:
                        raise failed
                    return found.salt, found.stored_key, found.server_key, found.iterations

                server = ScramMechanism(self.mechanism).make_server(lookup)
                server.set_client_first(token.decode("utf-8"))
                self._scram, self._scram_step = server, 1
                return server.get_server_first().encode(), None
            if self._scram_step == 1:
                server = self._scram
                server.set_client_final(token.decode("utf-8"))  # type: ignore[attr-defined]
                self._scram_step = 2
                return server.get_server_final().encode(), f"User:{self._scram_user}"  # type: ignore[attr-defined]
        except (ScramException, UnicodeDecodeError):
            raise failed from None
        raise AuthenticationFailed("Unexpected SASL request after the SCRAM exchange completed")


def _equal(a: str, b: str) -> bool:
    import hmac

    return hmac.compare_digest(a.encode(), b.encode())
