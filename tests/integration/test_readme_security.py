"""The README's TLS and SASL server.properties snippets, run as written but for the ports
(0: free ones) and the store paths (a throwaway CA's files): a broker starts with each, and
a client with matching settings produces through the listener the snippet adds."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from asyncbroker.testing import BrokerProcess, TlsFiles
from jvm.kafka_jvm import run_tool

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
    with BrokerProcess(properties("SCRAM-SHA-512", tls), log_dir=tmp_path / "data") as b:
        assert set(b.listener_ports) == {"PLAINTEXT", "SASL_PLAINTEXT"}
        assert delivered({"bootstrap.servers": b.bootstrap_for("SASL_PLAINTEXT"), "security.protocol": "SASL_PLAINTEXT",
                          "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-secret"})


def test_acl_snippet(tmp_path: Path) -> None:
    """The ACL snippet's broker and its kafka-acls.sh line, run as written (but for the port
    and the admin's client settings): alice may then write `orders`, and nothing else."""
    tls = TlsFiles.create(tmp_path / "tls")
    section = (REPO / "README.md").read_text().split("## Configure it", 1)[1].split("\n## ", 1)[0]
    (command,) = re.findall(r"```sh\n(kafka-acls\.sh.*?)```", section, re.S)
    args = shlex.split(command.replace("\\\n", " "))[1:]
    with BrokerProcess(properties("StandardAuthorizer", tls), log_dir=tmp_path / "data") as b:
        admin_config = tmp_path / "admin.properties"
        admin_config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                                "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
                                'username="admin" password="admin-secret";\n')
        args = [b.bootstrap_for("SASL_PLAINTEXT") if a == "127.0.0.1:9094" else str(admin_config)
                if a == "admin.properties" else a for a in args]
        added = run_tool("org.apache.kafka.tools.AclCommand", args)
        assert added.returncode == 0, added.stderr[-2000:]
        alice = {"bootstrap.servers": b.bootstrap_for("SASL_PLAINTEXT"), "security.protocol": "SASL_PLAINTEXT",
                 "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-secret",
                 "allow.auto.create.topics": False, "message.timeout.ms": 10000}
        admin = AdminClient({**alice, "sasl.username": "admin", "sasl.password": "admin-secret"})
        for name in ("orders", "payments"):
            admin.create_topics([NewTopic(name, 1)])[name].result(30)
        outcomes: dict[str, object] = {}
        producer = Producer(alice)
        for name in ("orders", "payments"):
            producer.produce(name, b"v", on_delivery=lambda err, msg: outcomes.__setitem__(msg.topic(), err))
        producer.flush(30)
        assert outcomes["orders"] is None
        refused = outcomes["payments"]
        assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED  # type: ignore[attr-defined]
