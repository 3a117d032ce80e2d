"""SslFactory: the TLS server context of SSL listeners, from Kafka's `ssl.*` keys.

Kafka reads its key and trust stores as JKS, PKCS12 or PEM. Here the stores are PEM
(`ssl.keystore.type=PEM`, as Kafka reads them since KIP-651): a key store file holding the
private key followed by its certificate chain (or the two inline, `ssl.keystore.key` and
`ssl.keystore.certificate.chain`), and a trust store of CA certificates (a file, or inline
`ssl.truststore.certificates`). PKCS12 stores are converted to the same in memory. JKS,
Java's own format, is refused with a message at startup.

`ssl.client.auth` decides whether a client presents a certificate (required, requested, or
none); its principal is then `User:` and the certificate's subject as Java's X500Principal
prints it (RFC 2253, most specific part first: `CN=client,O=Org`), which is what Kafka's
default principal builder (`ssl.principal.mapping.rules=DEFAULT`) gives. Without a
certificate the principal is `User:ANONYMOUS`.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from storage.config_def import ConfigException

from asyncbroker.request_context import ANONYMOUS

if TYPE_CHECKING:
    from asyncbroker.config import KafkaConfig

__all__ = ["SslFactory", "principal_of"]
_PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_CLIENT_AUTH = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}


class SslFactory:
    """Builds the server-side SSLContext once per listener configuration."""

    def __init__(self, config: "KafkaConfig") -> None:
        self.config = config

    def create_server_context(self) -> ssl.SSLContext:
        """ConfigException naming the key when a store is missing, unreadable or of a type
        not read here."""
        c = self.config
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        enabled = [p for p in c.ssl_enabled_protocols if p in _PROTOCOLS]
        unknown = [p for p in c.ssl_enabled_protocols if p not in _PROTOCOLS]
        if unknown or not enabled:
            raise ConfigException("ssl.enabled.protocols", f"Invalid value {','.join(c.ssl_enabled_protocols)} "
                                  "for configuration ssl.enabled.protocols: TLSv1.2 and TLSv1.3 are supported")
        context.minimum_version = min(_PROTOCOLS[p] for p in enabled)
        context.maximum_version = max(_PROTOCOLS[p] for p in enabled)
        if c.ssl_cipher_suites:
            try:
                context.set_ciphers(":".join(c.ssl_cipher_suites))
            except ssl.SSLError:
                raise ConfigException("ssl.cipher.suites", "none of the cipher suites in ssl.cipher.suites is "
                                      "known to OpenSSL") from None
        self._load_key_store(context)
        context.verify_mode = _CLIENT_AUTH[c.ssl_client_auth]
        if context.verify_mode != ssl.CERT_NONE:
            self._load_trust_store(context)
        return context

    def _load_key_store(self, context: ssl.SSLContext) -> None:
        c = self.config
        key_password = _secret(c.ssl_key_password) or _secret(c.ssl_keystore_password)
        if c.ssl_keystore_type == "PEM":
            if c.ssl_keystore_location:
                _load_chain(context, Path(c.ssl_keystore_location).read_bytes, "ssl.keystore.location", key_password)
            elif c.ssl_keystore_key and c.ssl_keystore_certificate_chain:
                inline = (_secret(c.ssl_keystore_key) + "\n" + _secret(c.ssl_keystore_certificate_chain)).encode()
                _load_chain(context, lambda: inline, "ssl.keystore.key", key_password)
            else:
                raise ConfigException("ssl.keystore.location", "An SSL listener needs a key store: "
                                      "ssl.keystore.location, or ssl.keystore.key with ssl.keystore.certificate.chain")
        elif c.ssl_keystore_type == "PKCS12":
            if not c.ssl_keystore_location:
                raise ConfigException("ssl.keystore.location", "A PKCS12 key store needs ssl.keystore.location")
            try:
                key, cert, chain = pkcs12.load_key_and_certificates(
                    Path(c.ssl_keystore_location).read_bytes(), (_secret(c.ssl_keystore_password) or "").encode() or None)
            except (OSError, ValueError) as exc:
                raise ConfigException("ssl.keystore.location", f"Cannot read the PKCS12 key store "
                                      f"{c.ssl_keystore_location}: {exc}") from None
            if key is None or cert is None:
                raise ConfigException("ssl.keystore.location", f"{c.ssl_keystore_location} holds no key and certificate")
            pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
            pem += b"".join(x.public_bytes(serialization.Encoding.PEM) for x in [cert, *chain])
            _load_chain(context, lambda: pem, "ssl.keystore.location", None)
        else:
            raise ConfigException("ssl.keystore.type", f"Invalid value {c.ssl_keystore_type} for configuration "
                                  "ssl.keystore.type: JKS stores are not read here; use PEM or PKCS12")

    def _load_trust_store(self, context: ssl.SSLContext) -> None:
        c = self.config
        if c.ssl_truststore_type not in ("PEM", "PKCS12"):
            raise ConfigException("ssl.truststore.type", f"Invalid value {c.ssl_truststore_type} for configuration "
                                  "ssl.truststore.type: JKS stores are not read here; use PEM or PKCS12")
        try:
            if c.ssl_truststore_certificates:
                context.load_verify_locations(cadata=_secret(c.ssl_truststore_certificates))
            elif c.ssl_truststore_location and c.ssl_truststore_type == "PEM":
                context.load_verify_locations(cafile=c.ssl_truststore_location)
            elif c.ssl_truststore_location:
                certs = pkcs12.load_pkcs12(Path(c.ssl_truststore_location).read_bytes(),
                                           (_secret(c.ssl_truststore_password) or "").encode() or None)
                context.load_verify_locations(cadata="".join(
                    x.certificate.public_bytes(serialization.Encoding.PEM).decode() for x in certs.additional_certs))
            else:
                raise ConfigException("ssl.truststore.location", "ssl.client.auth asks for client certificates: "
                                      "set ssl.truststore.location (or ssl.truststore.certificates)")
        except (OSError, ValueError, ssl.SSLError) as exc:
            raise ConfigException("ssl.truststore.location", f"Cannot read the trust store: {exc}") from None


def principal_of(ssl_object: ssl.SSLObject | ssl.SSLSocket | None) -> str:
    """Kafka's default SSL principal: `User:` + the peer certificate's subject (RFC 2253),
    or ANONYMOUS when the client presented none."""
    der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    if not der:
        return ANONYMOUS
    return "User:" + x509.load_der_x509_certificate(der).subject.rfc4514_string()


def _secret(value: str | None) -> str:
    """A password-typed key's text ('' when unset)."""
    return value or ""


def _load_chain(context: ssl.SSLContext, read: Callable[[], bytes], key: str, password: str | None) -> None:
    """load_cert_chain reads only files: PEM bytes go through a private temporary file."""
    try:
        data = read()
    except OSError as exc:
        raise ConfigException(key, f"Cannot read the key store: {exc}") from None
    fd, name = tempfile.mkstemp(prefix="asyncbroker-keystore-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        context.load_cert_chain(name, password=password or None)
    except ssl.SSLError as exc:
        raise ConfigException(key, f"The key store does not hold a usable private key and certificate: {exc}") from None
    finally:
        os.unlink(name)
