"""A throwaway certificate authority and the certificates a TLS broker and its clients need.

    from asyncbroker.testing import BrokerProcess, TlsFiles

    tls = TlsFiles.create(tmp_path)                      # CA, broker and client certs (PEM)
    with BrokerProcess(tls.broker_overrides(), listener="SSL") as broker:
        Producer({"bootstrap.servers": broker.bootstrap, **tls.librdkafka_client()})

Everything is PEM, as Kafka reads it with `ssl.keystore.type=PEM` /
`ssl.truststore.type=PEM`, and as librdkafka and the Java client read it. The broker's
certificate names 127.0.0.1, ::1 and localhost, so clients verifying host names accept it.
"""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

import msgspec
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["TlsFiles"]

_DAY = datetime.timedelta(days=1)


class TlsFiles(msgspec.Struct, frozen=True):
    """Paths of PEM files: the CA's certificate, and for the broker and one client each a
    file with the private key followed by the certificate (Kafka's PEM key store layout)."""

    ca: Path
    broker: Path
    client: Path
    client_dn: str  # the client certificate's subject, as Kafka's principal builder prints it

    @classmethod
    def create(cls, directory: Path, *, client_cn: str = "client", expired_broker: bool = False) -> "TlsFiles":
        """A new CA in `directory` and certificates signed by it. `expired_broker` makes a
        broker certificate whose validity ended yesterday (for clients' refusal)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "asyncbroker tests"),
                             x509.NameAttribute(NameOID.COMMON_NAME, "asyncbroker test CA")])
        now = datetime.datetime.now(datetime.timezone.utc)
        ca_cert = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
                   .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - _DAY).not_valid_after(now + 30 * _DAY)
                   .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                   .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False),
                                  critical=True)
                   .sign(ca_key, hashes.SHA256()))
        (directory / "ca.pem").write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))

        def issue(name: str, cn: str, server: bool, expired: bool = False) -> Path:
            key = ec.generate_private_key(ec.SECP256R1())
            subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "asyncbroker tests"),
                                 x509.NameAttribute(NameOID.COMMON_NAME, cn)])
            start, end = (now - 10 * _DAY, now - _DAY) if expired else (now - _DAY, now + 30 * _DAY)
            builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(ca_name)
                       .public_key(key.public_key()).serial_number(x509.random_serial_number())
                       .not_valid_before(start).not_valid_after(end)
                       .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                       .add_extension(x509.ExtendedKeyUsage(
                           [ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]),
                           critical=False))
            if server:
                builder = builder.add_extension(x509.SubjectAlternativeName([
                    x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                    x509.IPAddress(ipaddress.ip_address("::1"))]), critical=False)
            cert = builder.sign(ca_key, hashes.SHA256())
            path = directory / f"{name}.pem"
            path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption())
                             + cert.public_bytes(serialization.Encoding.PEM))
            path.chmod(0o600)
            return path

        broker = issue("broker", "localhost", True, expired_broker)
        client = issue("client", client_cn, False)
        return cls(directory / "ca.pem", broker, client, f"CN={client_cn},O=asyncbroker tests")

    def broker_overrides(self, client_auth: str = "none") -> list[str]:
        """The broker keys for an SSL listener with these files (BrokerProcess overrides)."""
        return [
            "ssl.keystore.type=PEM", f"ssl.keystore.location={self.broker}",
            "ssl.truststore.type=PEM", f"ssl.truststore.location={self.ca}",
            f"ssl.client.auth={client_auth}",
        ]

    def librdkafka_client(self, *, with_certificate: bool = False) -> dict[str, str]:
        """confluent-kafka / kcat settings to connect over TLS (and present the client cert)."""
        settings = {"security.protocol": "SSL", "ssl.ca.location": str(self.ca)}
        if with_certificate:
            settings |= {"ssl.certificate.location": str(self.client), "ssl.key.location": str(self.client)}
        return settings

    def java_client(self, *, with_certificate: bool = False) -> dict[str, str]:
        """The Java client's settings (PEM stores, as Kafka's own clients read them)."""
        settings = {"security.protocol": "SSL", "ssl.truststore.type": "PEM",
                    "ssl.truststore.location": str(self.ca)}
        if with_certificate:
            settings |= {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(self.client)}
        return settings
