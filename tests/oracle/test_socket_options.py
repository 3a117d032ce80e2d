"""The sockets each broker accepts, as the kernel sees them: Kafka's SocketServer sets
SO_SNDBUF from socket.send.buffer.bytes and TCP keepalive on every accepted socket, and
SO_RCVBUF from socket.receive.buffer.bytes on its listening socket, which accepted sockets
inherit (102400 each by default; the kernel keeps twice that)."""

from __future__ import annotations

from socket_stats import SocketStats, accepted_socket_of


def test_accepted_sockets_configured_as_kafka_configures_them(brokers) -> None:  # type: ignore[no-untyped-def]
    kafka = accepted_socket_of(brokers.kafka.bootstrap)
    assert kafka == SocketStats(receive_buffer=204800, send_buffer=204800, keepalive=True)
    if brokers.ours is not None:  # (--kafka-only runs Kafka alone)
        assert accepted_socket_of(brokers.ours.bootstrap) == kafka
