"""Hostile SASL exchanges against a live SASL listener (issue 20): handshakes naming random
mechanisms, SaslAuthenticate tokens of random, truncated or mangled PLAIN, SCRAM and
OAUTHBEARER messages, bare tokens after a v0 handshake, requests out of order and frames
larger than an unauthenticated connection may send. Each case ends with the broker alive;
a case that got no answer must have been closed (an exchange waiting for the client's next
token is left open, as Kafka leaves it). Afterwards real clients still authenticate."""
from __future__ import annotations

import os
import socket
import struct
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asyncbroker.testing import BrokerProcess
from asyncbroker.testing.process_stats import rss_kib
from wire.records import write_uvarint

pytestmark = pytest.mark.timeout(600)

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "0")) or 150
MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
JAAS = {"plain": 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";',
        "oauthbearer": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"}
TALLY: Counter[str] = Counter()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    overrides = ["listeners=SASL_PLAINTEXT://127.0.0.1:0", f"sasl.enabled.mechanisms={','.join(MECHANISMS)}",
                 *[f"listener.name.sasl_plaintext.{m}.sasl.jaas.config={j}" for m, j in JAAS.items()]]
    with BrokerProcess(overrides, log_dir=tmp_path_factory.mktemp("fuzz-sasl"), listener="SASL_PLAINTEXT") as b:
        yield b
    print(f"\nfuzz sasl: {sum(TALLY.values())} cases ({', '.join(f'{v} {k}' for k, v in sorted(TALLY.items()))})")


def request(api_key: int, version: int, body: bytes, correlation: int = 1) -> bytes:
    header = struct.pack(">hhih", api_key, version, correlation, 4) + b"fuzz"
    if api_key == 36 and version == 2:  # SaslAuthenticate v2 is flexible: header v2 (tagged fields)
        header += b"\x00"
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def handshake(mechanism: str, version: int = 1) -> bytes:
    data = mechanism.encode("utf-8", "replace")
    return request(17, version, struct.pack(">h", len(data)) + data)


def authenticate(token: bytes, version: int) -> bytes:
    if version == 2:  # compact bytes: uvarint length + 1, then no tagged fields
        body = bytearray()
        write_uvarint(body, len(token) + 1)
        return request(36, 2, bytes(body) + token + b"\x00")
    return request(36, version, struct.pack(">i", len(token)) + token)


tokens = st.one_of(
    st.binary(max_size=300),
    st.builds(lambda u, p, z: f"{z}\x00{u}\x00{p}".encode(), st.text(max_size=20), st.text(max_size=20),
              st.text(max_size=5)),
    st.builds(lambda u, r: f"n,,n={u},r={r}".encode(), st.text(max_size=30), st.text(max_size=30)),
    st.builds(lambda t: f"n,,\x01auth=Bearer {t}\x01\x01".encode(), st.text(max_size=120)),
    st.sampled_from([b"", b"\x00", b"\x00\x00", b"n,,", b"\x01", b"c=biws,r=x,p=AAAA", b"n,a=x,n=y,r=z"]),
)


@st.composite
def exchanges(draw: st.DrawFn) -> list[bytes]:
    frames: list[bytes] = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.integers(0, 5))
        if kind == 0:
            frames.append(handshake(draw(st.sampled_from(MECHANISMS) | st.text(max_size=30)), draw(st.integers(0, 1))))
        elif kind == 1:
            frames.append(authenticate(draw(tokens), draw(st.integers(0, 2))))
        elif kind == 2:  # a bare token, as after a v0 handshake (or a garbage frame otherwise)
            token = draw(tokens)
            frames.append(struct.pack(">i", len(token)) + token)
        elif kind == 3:  # a request before authentication
            frames.append(request(draw(st.sampled_from([3, 0, 1, 18])), draw(st.integers(0, 4)), draw(st.binary(max_size=40))))
        elif kind == 4:  # more than an unauthenticated connection may send
            frames.append(struct.pack(">i", draw(st.integers(600_000, 2**31 - 1))) + draw(st.binary(max_size=100)))
        else:
            frames.append(draw(st.binary(min_size=1, max_size=60)))
    return frames


def run_case(port: int, frames: list[bytes]) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        # A loopback answer takes milliseconds; a frame the broker keeps waiting on (a partial
        # one, an exchange mid-way) is only waited out, so a short wait keeps the cases quick.
        s.settimeout(0.25)
        outcome = "open"
        for frame in frames:
            try:
                s.sendall(frame)
                data = s.recv(65536)
            except TimeoutError:
                continue  # waiting for more (a partial frame, an exchange mid-way): allowed
            except (ConnectionResetError, BrokenPipeError):
                return "closed"
            if not data:
                return "closed"
            outcome = "answered"
        return outcome


@given(frames=exchanges())
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_hostile_sasl_exchanges(broker: BrokerProcess, frames: list[bytes]) -> None:
    TALLY[run_case(broker.port, frames)] += 1
    assert broker.returncode is None, broker.output()[-3000:]


def test_clients_still_authenticate_after_the_fuzzing(broker: BrokerProcess, tmp_path: Path) -> None:
    p = Producer({"bootstrap.servers": broker.bootstrap, "security.protocol": "SASL_PLAINTEXT",
                  "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-secret"})
    p.produce(f"after-fuzz-{uuid.uuid4().hex[:6]}", b"v")
    assert p.flush(30) == 0
    assert broker.returncode is None
    # Every hostile case was a typed refusal: none reached the connection's last-resort handler.
    assert "after an unexpected error" not in broker.output() and "Traceback" not in broker.output(), \
        broker.output()[-5000:]
    rss = rss_kib(broker.process.pid)  # type: ignore[union-attr]
    assert rss < 300_000, f"broker RSS {rss} KiB after the hostile exchanges"
