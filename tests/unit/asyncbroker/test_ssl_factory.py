"""asyncbroker.ssl_factory: the server context from Kafka's ssl.* keys, and the principal a
client certificate gives (the handshake runs in memory, the two ends over MemoryBIOs)."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from asyncbroker.config import KafkaConfig
from asyncbroker.ssl_factory import SslFactory, principal_of
from asyncbroker.testing.tls import TlsFiles
from storage.config_def import ConfigException


def config(*overrides: str) -> KafkaConfig:
    return KafkaConfig.load(None, ["listeners=SSL://127.0.0.1:0", *overrides], {})


def handshake(server: ssl.SSLContext, client: ssl.SSLContext) -> ssl.SSLObject:
    """Run a TLS handshake between the two contexts in memory; the server's end."""
    s_in, s_out, c_in, c_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    s = server.wrap_bio(s_in, s_out, server_side=True)
    c = client.wrap_bio(c_in, c_out, server_hostname="127.0.0.1")
    done = {"s": False, "c": False}
    for _ in range(20):
        for name, end in (("c", c), ("s", s)):
            if not done[name]:
                try:
                    end.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
        if all(done.values()):
            # TLS 1.3: the server learns of the client's certificate with the client's last flight.
            return s
    raise AssertionError("the handshake did not finish")


def client_context(tls: TlsFiles, with_certificate: bool) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(tls.ca))
    if with_certificate:
        context.load_cert_chain(str(tls.client))
    return context


def test_principal_from_the_client_certificate(tmp_path: Path) -> None:
    tls = TlsFiles.create(tmp_path, client_cn="billing-service")
    server = SslFactory(config(*tls.broker_overrides("requested"))).create_server_context()
    assert server.verify_mode == ssl.CERT_OPTIONAL
    assert principal_of(handshake(server, client_context(tls, True))) == "User:CN=billing-service,O=asyncbroker tests"
    assert tls.client_dn == "CN=billing-service,O=asyncbroker tests"
    assert principal_of(handshake(server, client_context(tls, False))) == "User:ANONYMOUS"


def test_client_auth_and_protocol_settings(tmp_path: Path) -> None:
    tls = TlsFiles.create(tmp_path)
    assert SslFactory(config(*tls.broker_overrides("required"))).create_server_context().verify_mode == ssl.CERT_REQUIRED
    none = SslFactory(config(*tls.broker_overrides())).create_server_context()
    assert none.verify_mode == ssl.CERT_NONE
    assert (none.minimum_version, none.maximum_version) == (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3)
    only13 = SslFactory(config(*tls.broker_overrides(), "ssl.enabled.protocols=TLSv1.3")).create_server_context()
    assert only13.minimum_version == ssl.TLSVersion.TLSv1_3


def test_inline_pem_stores(tmp_path: Path) -> None:
    tls = TlsFiles.create(tmp_path)
    pem = tls.broker.read_text()
    key, chain = pem[:pem.index("-----BEGIN CERTIFICATE-----")], pem[pem.index("-----BEGIN CERTIFICATE-----"):]
    server = SslFactory(config("ssl.keystore.type=PEM", f"ssl.keystore.key={key}",
                               f"ssl.keystore.certificate.chain={chain}", "ssl.truststore.type=PEM",
                               f"ssl.truststore.certificates={tls.ca.read_text()}",
                               "ssl.client.auth=required")).create_server_context()
    assert principal_of(handshake(server, client_context(tls, True))) == "User:" + tls.client_dn


@pytest.mark.parametrize("overrides, key", [
    (["ssl.keystore.type=PEM"], "ssl.keystore.location"),
    (["ssl.keystore.type=JKS", "ssl.keystore.location=/x"], "ssl.keystore.type"),
    (["ssl.enabled.protocols=TLSv1.1"], "ssl.enabled.protocols"),
], ids=["no-store", "jks", "tls11"])
def test_bad_settings_name_their_key(tmp_path: Path, overrides: list[str], key: str) -> None:
    tls = TlsFiles.create(tmp_path)
    base = [] if "ssl.keystore.type=PEM" in overrides or any("JKS" in o for o in overrides) else tls.broker_overrides()
    with pytest.raises(ConfigException) as err:
        SslFactory(config(*base, *overrides)).create_server_context()
    assert err.value.key == key
