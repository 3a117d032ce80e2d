"""The README's TLS and SASL server.properties snippets, run as written but for the ports
(0: free ones) and the store paths (a throwaway CA's files): a broker starts with each, and
a client with matching settings produces through the listener the snippet adds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from confluent_kafka import Producer

from asyncbroker.testing import BrokerProcess, TlsFiles

pytestmark = pytest.mark.timeout(120)

REPO = Path(__file__).resolve().parents[2]


def properties(containing: str, tls: TlsFiles) -> list[str]:
    section = (REPO / "README.md").read_text().split("## Configure it", 1)[1].split("\n## ", 1)[0]
    (block,) = [b for b in re.findall(r"```properties\n(.*?)```", section, re.S) if containing in b]
    block = re.sub(r":90\d\d\b", ":0", block)
    block = block.replace("/etc/asyncbroker/broker.pem", str(tls.broker)).replace("/etc/asyncbroker/ca.pem", str(tls.ca))
    return [line for line in block.splitlines() if line.strip()]


def delivered(conf: dict[str, str]) -> bool:
    p = Producer(conf)
    p.produce("readme-security", b"v")
    return p.flush(30) == 0


def test_tls_snippet(tmp_path: Path) -> None:
    tls = TlsFiles.create(tmp_path / "tls")
    with BrokerProcess(properties("ssl.keystore.location", tls), log_dir=tmp_path / "data") as b:
        assert set(b.listener_ports) == {"PLAINTEXT", "SSL"}
        # ssl.client.auth=required: the client presents its certificate.
        assert delivered({"bootstrap.servers": b.bootstrap_for("SSL"), **tls.librdkafka_client(with_certificate=True)})


def test_sasl_snippet(tmp_path: Path) -> None:
    tls = TlsFiles.create(tmp_path / "tls")
    with BrokerProcess(properties("sasl.enabled.mechanisms", tls), log_dir=tmp_path / "data") as b:
        assert set(b.listener_ports) == {"PLAINTEXT", "SASL_PLAINTEXT"}
        assert delivered({"bootstrap.servers": b.bootstrap_for("SASL_PLAINTEXT"), "security.protocol": "SASL_PLAINTEXT",
                          "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-secret"})
