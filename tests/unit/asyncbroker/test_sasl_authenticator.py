"""asyncbroker.sasl_authenticator: JAAS configs as Kafka writes them, and the mechanisms'
exchanges against scramp's client (the other end of SCRAM as RFC 5802 specifies it)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from scramp import ScramClient

from asyncbroker.config import KafkaConfig
from asyncbroker.sasl_authenticator import AuthenticationFailed, SaslServerAuthenticator, parse_jaas_config
from asyncbroker.scram_credentials import ScramCredential, ScramCredentials
from storage.config_def import ConfigException


def test_jaas_config_options() -> None:
    entry = parse_jaas_config("k", 'org.apache.kafka.common.security.plain.PlainLoginModule required\n'
                                   '  username="admin" password="admin-secret" user_admin="admin-secret"\n'
                                   '  user_alice="with \\"quotes\\" and spaces" unquoted=yes;')
    assert entry.login_module == "org.apache.kafka.common.security.plain.PlainLoginModule"
    assert entry.options == {"username": "admin", "password": "admin-secret", "user_admin": "admin-secret",
                             "user_alice": 'with "quotes" and spaces', "unquoted": "yes"}
    for bad in ("PlainLoginModule", "PlainLoginModule required username=;", "x required a=\"b\""):
        with pytest.raises(ConfigException):
            parse_jaas_config("k", bad)


def authenticator(tmp_path: Path, mechanisms: str = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512") -> SaslServerAuthenticator:
    config = KafkaConfig.load(None, [
        "listeners=SASL_PLAINTEXT://127.0.0.1:0", f"sasl.enabled.mechanisms={mechanisms}",
        'listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule '
        'required user_alice="alice-secret";', f"log.dirs={tmp_path}"], {})
    store = ScramCredentials([tmp_path])
    store.apply({("carol", "SCRAM-SHA-512"): ScramCredential.from_password("sha512", "carol-secret", 4096)}, set())
    broker = SimpleNamespace(config=config, scram_credentials=store, jwks_validators={})
    return SaslServerAuthenticator(broker, "SASL_PLAINTEXT")  # type: ignore[arg-type]


def test_plain(tmp_path: Path) -> None:
    a = authenticator(tmp_path)
    assert not a.handshake("GSSAPI") and a.handshake("PLAIN") and not a.handshake("PLAIN")
    assert a.authenticate(b"\x00alice\x00alice-secret") == (b"", "User:alice")
    for token in (b"\x00alice\x00nope", b"\x00bob\x00alice-secret", b"other\x00alice\x00alice-secret", b"alice"):
        with pytest.raises(AuthenticationFailed):
            a.authenticate(token)


def test_scram_against_an_rfc_5802_client(tmp_path: Path) -> None:
    for password, ok in (("carol-secret", True), ("wrong", False)):
        a = authenticator(tmp_path)
        assert a.handshake("SCRAM-SHA-512")
        client = ScramClient(["SCRAM-SHA-512"], "carol", password)
        server_first, principal = a.authenticate(client.get_client_first().encode())
        assert principal is None
        client.set_server_first(server_first.decode())
        if not ok:
            with pytest.raises(AuthenticationFailed, match="invalid credentials with SASL mechanism SCRAM-SHA-512"):
                a.authenticate(client.get_client_final().encode())
            continue
        server_final, principal = a.authenticate(client.get_client_final().encode())
        client.set_server_final(server_final.decode())  # the client verified the server too
        assert principal == "User:carol"


def test_scram_credentials_persist(tmp_path: Path) -> None:
    store = ScramCredentials([tmp_path])
    credential = ScramCredential.from_password("sha256", "pw", 8192)
    store.apply({("u", "SCRAM-SHA-256"): credential}, set())
    assert ScramCredentials([tmp_path]).get("u", "SCRAM-SHA-256") == credential
    store.apply({}, {("u", "SCRAM-SHA-256")})
    assert ScramCredentials([tmp_path]).users() == {}


def bearer(header: dict[str, object], claims: dict[str, object]) -> bytes:
    import base64
    import json

    def part(value: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"n,,\x01auth=Bearer {part(header)}.{part(claims)}.\x01\x01".encode()


@pytest.mark.parametrize("header, claims, principal", [
    ({"alg": "none"}, {"sub": "alice", "exp": 4102444800}, "User:alice"),
    ({"alg": "HS256"}, {"sub": "alice", "exp": 4102444800}, None),
    ({"alg": "none"}, {"sub": "alice", "exp": 1}, None),
    ({"alg": "none"}, {"sub": "alice"}, None),
    ({"alg": "none"}, {"exp": 4102444800}, None),
], ids=["valid", "signed", "expired", "no-exp", "no-sub"])
def test_oauthbearer_unsecured_tokens(tmp_path: Path, header: dict[str, object], claims: dict[str, object],
                                      principal: str | None) -> None:
    a = authenticator(tmp_path, "OAUTHBEARER")
    assert a.handshake("OAUTHBEARER")
    answer, got = a.authenticate(bearer(header, claims))
    if principal is not None:
        assert (answer, got) == (b"", principal)
        return
    assert (answer, got) == (b'{"status":"invalid_token"}', None)
    with pytest.raises(AuthenticationFailed, match="Authentication failed"):
        a.authenticate(b"\x01")
