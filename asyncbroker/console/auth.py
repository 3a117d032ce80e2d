"""Who is using the console, and what they may see and change: the broker's own users and ACLs.

With an authorizer (authorizer.class.name), the console asks for HTTP Basic credentials and
checks them as the broker's SASL listeners would: each SASL_PLAINTEXT/SASL_SSL listener's
PLAIN users and the SCRAM credentials, through SaslServerAuthenticator itself (PLAIN's token,
or a full SCRAM exchange driven by scramp's client), so a login the broker refuses is refused
here too. OAUTHBEARER is not offered (a browser has no token to send). Without a SASL
listener, the console's user is `User:ANONYMOUS`, as every client of a PLAINTEXT listener is.
SCRAM's key derivation runs on the broker's IO pool; a verified login is remembered for
LOGIN_TTL_S under an HMAC of the credentials (never the password itself).

Every page and form then asks the authorizer the operation the Kafka API it mirrors asks
(ConsoleAccess.require/can). Without an authorizer every principal may do everything, as
in Kafka, and the console needs no login (it binds to loopback by default)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import time
from typing import TYPE_CHECKING

from asyncbroker.acl_binding import AclOperation, ResourceType
from asyncbroker.request_context import ANONYMOUS

if TYPE_CHECKING:
    from asyncbroker.broker import Broker

LOGIN_TTL_S = 300.0
_LOGINS_MAX = 1024
PASSWORD_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
REALM = 'Basic realm="asyncbroker console", charset="UTF-8"'


class LoginRequired(Exception):
    """No credentials, or credentials the broker does not accept (HTTP 401)."""


class NotAuthorized(Exception):
    """The principal lacks the operation (HTTP 403); the message is Kafka's exception's."""


_KAFKA_MESSAGES = {
    ResourceType.TOPIC: "Not authorized to access topics: [{name}]",
    ResourceType.GROUP: "Not authorized to access group: {name}",
    ResourceType.CLUSTER: "Cluster authorization failed.",
}


class ConsoleAccess:
    """One request's principal and its decisions."""

    def __init__(self, broker: Broker, principal: str, host: str) -> None:
        self.broker = broker
        self.principal = principal
        self.host = host

    @property
    def open(self) -> bool:
        return self.broker.authorizer is None

    def can(self, operation: AclOperation, resource_type: ResourceType, name: str = "kafka-cluster") -> bool:
        authorizer = self.broker.authorizer
        if authorizer is None:
            return True
        return authorizer.authorize(self.principal, self.host, operation, resource_type, name, log_denial=False)

    def require(self, operation: AclOperation, resource_type: ResourceType, name: str = "kafka-cluster") -> None:
        authorizer = self.broker.authorizer
        if authorizer is None:
            return
        if not authorizer.authorize(self.principal, self.host, operation, resource_type, name):
            text = _KAFKA_MESSAGES.get(resource_type, "Not authorized: {name}").format(name=name)
            raise NotAuthorized(f"{text} ({self.principal} needs {operation.name})")

    def can_describe_topic(self, name: str) -> bool:
        return self.can(AclOperation.DESCRIBE, ResourceType.TOPIC, name)

    def can_create_topic(self, name: str) -> bool:
        """CreateTopics: CREATE on the cluster, or on the topic."""
        return self.can(AclOperation.CREATE, ResourceType.CLUSTER) or \
            self.can(AclOperation.CREATE, ResourceType.TOPIC, name)

    def can_create_some_topic(self) -> bool:
        authorizer = self.broker.authorizer
        if authorizer is None or self.can(AclOperation.CREATE, ResourceType.CLUSTER):
            return True
        return authorizer.authorize_by_resource_type(self.principal, self.host, AclOperation.CREATE,
                                                     ResourceType.TOPIC)


class ConsoleAuthenticator:
    """Checks HTTP Basic credentials against the broker's SASL users."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self._key = secrets.token_bytes(32)
        self._logins: dict[bytes, tuple[str, float]] = {}
        config = broker.config
        self.listeners = [e.listener_name for e in config.served_listeners()
                          if (config.security_protocol(e.listener_name) or "").startswith("SASL_")]
        self.mechanisms = [m for m in config.sasl_enabled_mechanisms if m in PASSWORD_MECHANISMS] \
            if self.listeners else []

    @property
    def login_required(self) -> bool:
        return self.broker.authorizer is not None and bool(self.mechanisms)

    async def principal(self, authorization: str | None) -> str:
        """The principal of a request's Authorization header; LoginRequired when it proves none."""
        if not self.login_required:
            return ANONYMOUS
        if not authorization or not authorization.lower().startswith("basic "):
            raise LoginRequired("Log in with a user of the broker (its SASL PLAIN or SCRAM credentials).")
        try:
            user, sep, password = base64.b64decode(authorization[6:].strip(), validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            raise LoginRequired("The Authorization header is not Basic base64(user:password).") from None
        if not sep or not user or not password:
            raise LoginRequired("Both a user name and a password are needed.")
        digest = hmac.digest(self._key, f"{user}\x00{password}".encode(), hashlib.sha256)
        now = time.monotonic()
        known = self._logins.get(digest)
        if known is not None and known[1] > now:
            return known[0]
        found = await self.broker.run_blocking(self._verify, user, password)
        if found is None:
            raise LoginRequired(f"Authentication failed: Invalid username or password for {user!r}.")
        if len(self._logins) >= _LOGINS_MAX:
            self._logins = {k: v for k, v in self._logins.items() if v[1] > now}
            if len(self._logins) >= _LOGINS_MAX:
                self._logins.clear()
        self._logins[digest] = (found, now + LOGIN_TTL_S)
        return found

    def _verify(self, user: str, password: str) -> str | None:
        """On the IO pool: the principal of the first listener and mechanism that accepts the
        credentials, through the broker's SaslServerAuthenticator."""
        from asyncbroker.sasl_authenticator import AuthenticationFailed, SaslServerAuthenticator
        from storage.config_def import ConfigException

        for listener in self.listeners:
            for mechanism in self.mechanisms:
                server = SaslServerAuthenticator(self.broker, listener)
                if not server.handshake(mechanism):
                    continue
                try:
                    if mechanism == "PLAIN":
                        _, principal = server.authenticate(b"\x00" + user.encode() + b"\x00" + password.encode())
                    else:
                        principal = _scram_exchange(server, mechanism, user, password)
                except (AuthenticationFailed, ConfigException):
                    continue
                if principal is not None:
                    return principal
        return None


def _scram_exchange(server: object, mechanism: str, user: str, password: str) -> str | None:
    """A SCRAM client's side (scramp) against the broker's server side; the principal, or None."""
    from scramp import ScramClient, ScramException

    from asyncbroker.sasl_authenticator import AuthenticationFailed, SaslServerAuthenticator

    assert isinstance(server, SaslServerAuthenticator)
    client = ScramClient([mechanism], user, password)
    try:
        server_first, _ = server.authenticate(client.get_client_first().encode())
        client.set_server_first(server_first.decode())
        server_final, principal = server.authenticate(client.get_client_final().encode())
        client.set_server_final(server_final.decode())
    except ScramException:
        raise AuthenticationFailed("SCRAM exchange failed") from None
    return principal
