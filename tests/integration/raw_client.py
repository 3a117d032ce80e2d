"""A minimal blocking Kafka client over a raw socket, for protocol-level tests.

Builds requests with kio entities and wire's header/message encoders, so a
test can send exactly the bytes it means to (including malformed ones) and
decode what the broker answers.
"""

from __future__ import annotations

import socket
import struct
import time
from typing import Any

from wire.headers import encode_request_header, response_header_version
from wire.messages import decode_response, encode_request


class RawClient:
    def __init__(self, bootstrap: str, timeout: float = 10.0) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._correlation = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "RawClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send_request(self, entity: Any, *, client_id: str | None = "raw-test") -> int:
        self._correlation += 1
        header = encode_request_header(entity.__api_key__, entity.__version__, self._correlation, client_id)
        body = header + encode_request(entity)
        self.sock.sendall(struct.pack(">i", len(body)) + body)
        return self._correlation

    def recv_frame(self) -> bytes:
        size = struct.unpack(">i", self._recv_exact(4))[0]
        return self._recv_exact(size)

    def _recv_exact(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(n)
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def recv_response(self, api_key: int, api_version: int, correlation_id: int) -> Any:
        frame = self.recv_frame()
        got = struct.unpack_from(">i", frame, 0)[0]
        assert got == correlation_id, f"correlation id {got} != {correlation_id}"
        offset = 4 + (1 if response_header_version(api_key, api_version) >= 1 else 0)
        return decode_response(api_key, api_version, frame[offset:])

    def request(self, entity: Any) -> Any:
        cid = self.send_request(entity)
        return self.recv_response(entity.__api_key__, entity.__version__, cid)

    def create_topic(self, topic: str, timeout: float = 10.0) -> None:
        """Create `topic` the way clients do, through Metadata with auto-creation (Produce never
        creates topics), then ask again until the topic is served (the creating request itself is
        answered UNKNOWN_TOPIC_OR_PARTITION, as Kafka 4.4 answers it)."""
        from kio.schema.metadata.v12 import request as meta12

        deadline = time.monotonic() + timeout
        while True:
            resp = self.request(meta12.MetadataRequest(
                topics=(meta12.MetadataRequestTopic(topic_id=None, name=topic),),
                allow_auto_topic_creation=True, include_topic_authorized_operations=False,
            ))
            if resp.topics[0].error_code == 0 and resp.topics[0].partitions:
                return
            assert time.monotonic() < deadline, f"{topic} not served after {timeout}s: {resp.topics[0].error_code}"
            time.sleep(0.01)  # polling a condition, bounded by the deadline

    def is_closed_by_peer(self, timeout: float = 5.0) -> bool:
        """True when the broker closed the connection (EOF or reset) within timeout."""
        self.sock.settimeout(timeout)
        try:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False
