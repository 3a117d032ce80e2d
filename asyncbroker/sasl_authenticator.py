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
The principal is then `User:<name>`.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

import msgspec
from scramp import ScramException, ScramMechanism

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
        return self._scram_round(token)

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
