"""SSL listeners (issue 20): TLS with PEM stores beside a PLAINTEXT listener, each answering
Metadata with its own advertised address; confluent-kafka, kcat and the Java client over
TLS; `ssl.client.auth=required` with and without a client certificate; and the refusals
clients make or meet (an untrusted CA, an expired broker certificate, plaintext spoken to
the TLS port), after which the broker keeps serving. Bad TLS settings stop startup with a
message naming the key, before any log directory is touched."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from asyncbroker.testing import BrokerProcess, TlsFiles
from topic_reader import java_round_trip, round_trip

pytestmark = pytest.mark.timeout(180)

BOTH = "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return TlsFiles.create(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def broker(tls: TlsFiles, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with BrokerProcess([*tls.broker_overrides(), BOTH], log_dir=tmp_path_factory.mktemp("tls-data")) as b:
        yield b


def test_both_listeners_serve_and_advertise_themselves(broker: BrokerProcess, tls: TlsFiles) -> None:
    ports = broker.listener_ports
    assert set(ports) == {"PLAINTEXT", "SSL"} and ports["PLAINTEXT"] != ports["SSL"]
    for name, extra in (("PLAINTEXT", {}), ("SSL", tls.librdkafka_client())):
        conf = {"bootstrap.servers": broker.bootstrap_for(name), **extra}
        brokers = AdminClient(conf).list_topics(timeout=10).brokers
        assert [(b.host, b.port) for b in brokers.values()] == [("127.0.0.1", ports[name])], name
        # The client then connects to the advertised address: over TLS only if it is SSL's.
        topic = f"tls-{name.lower()}-{uuid.uuid4().hex[:6]}"
        assert round_trip(conf, topic, [b"a", b"b", b"c"]) == [b"a", b"b", b"c"]


def test_large_fetches_over_tls(broker: BrokerProcess, tls: TlsFiles) -> None:
    """Answers big enough for the plaintext path's sendfile go through TLS whole."""
    conf = {"bootstrap.servers": broker.bootstrap_for("SSL"), **tls.librdkafka_client()}
    values = [bytes([i]) * 300_000 for i in range(8)]
    assert round_trip(conf, f"tls-large-{uuid.uuid4().hex[:6]}", values) == values


def test_kcat_over_tls(broker: BrokerProcess, tls: TlsFiles) -> None:
    topic = f"tls-kcat-{uuid.uuid4().hex[:6]}"
    common = ["kcat", "-b", broker.bootstrap_for("SSL"), "-X", "security.protocol=ssl",
              "-X", f"ssl.ca.location={tls.ca}"]
    produced = subprocess.run([*common, "-P", "-t", topic, "-p", "0"], input="one\ntwo\n", capture_output=True,
                              text=True, timeout=60, check=False)
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run([*common, "-C", "-t", topic, "-o", "beginning", "-e", "-f", "%o %s\n"],
                              capture_output=True, text=True, timeout=60, check=False)
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.splitlines() == ["0 one", "1 two"]


def test_java_client_over_tls(broker: BrokerProcess, tls: TlsFiles, tmp_path: Path) -> None:
    """Kafka's console producer and consumer (the Java client) with PEM trust stores and
    host name verification on (the certificate names 127.0.0.1)."""
    topic = f"tls-java-{uuid.uuid4().hex[:6]}"
    java_round_trip(broker.bootstrap_for("SSL"), topic, tls.java_client(), tmp_path / "client.properties")


def test_refused_by_clients_and_the_broker_keeps_serving(broker: BrokerProcess, tls: TlsFiles,
                                                        tmp_path: Path) -> None:
    """A client trusting another CA fails its handshake; so does plaintext sent to the TLS
    port. Neither disturbs the broker."""
    other = TlsFiles.create(tmp_path / "other")
    conf = {"bootstrap.servers": broker.bootstrap_for("SSL"), **other.librdkafka_client(),
            "socket.timeout.ms": "3000"}
    with pytest.raises(KafkaException):
        AdminClient(conf).list_topics(timeout=5)
    with pytest.raises(KafkaException):
        AdminClient({"bootstrap.servers": broker.bootstrap_for("SSL")}).list_topics(timeout=5)
    assert broker.returncode is None
    conf = {"bootstrap.servers": broker.bootstrap_for("SSL"), **tls.librdkafka_client()}
    assert round_trip(conf, f"tls-after-{uuid.uuid4().hex[:6]}", [b"still"]) == [b"still"]


def test_an_expired_broker_certificate_is_refused(tmp_path: Path) -> None:
    tls = TlsFiles.create(tmp_path / "tls", expired_broker=True)
    with BrokerProcess([*tls.broker_overrides()], log_dir=tmp_path / "data", listener="SSL") as b:
        with pytest.raises(KafkaException):
            AdminClient({"bootstrap.servers": b.bootstrap, **tls.librdkafka_client()}).list_topics(timeout=5)
        assert b.returncode is None


def test_client_certificates_required(tmp_path: Path) -> None:
    """ssl.client.auth=required: a client with a certificate the trust store vouches for
    is served, one without is refused in the handshake."""
    tls = TlsFiles.create(tmp_path / "tls")
    with BrokerProcess([*tls.broker_overrides("required")], log_dir=tmp_path / "data", listener="SSL") as b:
        with_cert = {"bootstrap.servers": b.bootstrap, **tls.librdkafka_client(with_certificate=True)}
        assert round_trip(with_cert, "mtls", [b"x"]) == [b"x"]
        without = {"bootstrap.servers": b.bootstrap, **tls.librdkafka_client(), "socket.timeout.ms": "3000"}
        with pytest.raises(KafkaException):
            AdminClient(without).list_topics(timeout=5)
        assert b.returncode is None
        assert round_trip(with_cert, "mtls", [b"y"]) == [b"x", b"y"]


@pytest.mark.parametrize("overrides, message", [
    (["ssl.keystore.type=PEM"], "ssl.keystore.location"),
    (["ssl.keystore.location=/nonexistent/broker.pem", "ssl.keystore.type=PEM"], "Cannot read the key store"),
    (["ssl.keystore.location=/etc/hostname"], "JKS stores are not read here"),
    (["ssl.client.auth=sometimes"], "String must be one of: required, requested, none"),
], ids=["no-keystore", "missing-file", "jks", "client-auth"])
def test_bad_tls_settings_stop_startup(tmp_path: Path, overrides: list[str], message: str) -> None:
    data = tmp_path / "data"
    result = subprocess.run([sys.executable, "-m", "asyncbroker", "serve", "--override", "listeners=SSL://127.0.0.1:0",
                             "--override", f"log.dirs={data}", *[a for o in overrides for a in ("--override", o)]],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 1 and message in result.stdout + result.stderr, result.stdout + result.stderr
    assert not data.exists() or not any(data.iterdir())  # no log directory touched


def test_readme_tls_broker_snippet(tmp_path: Path) -> None:
    """The README's one-line TLS broker for tests runs as written (it asserts its record is
    delivered over TLS)."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    (code,) = [b.split("```")[0] for b in readme.split("```python\n")[1:] if "TlsFiles.create(tmp_path)" in b]
    scope: dict[str, object] = {"tmp_path": tmp_path}
    exec(code, scope)  # noqa: S102 - the README's own snippet
    assert scope["broker"].listener_ports.keys() == {"SSL"}  # type: ignore[attr-defined]
