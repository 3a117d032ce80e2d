"""The sockets of each broker, as the kernel sees them: Kafka's SocketServer sets SO_SNDBUF from
socket.send.buffer.bytes and TCP keepalive on every accepted socket, and SO_RCVBUF from
socket.receive.buffer.bytes on its listening socket, which accepted sockets inherit (102400
each by default; the kernel keeps twice that); its listening socket's backlog is
socket.listen.backlog.size (50)."""

from __future__ import annotations

from socket_stats import SocketStats, accepted_socket_of, listen_backlog


def test_accepted_sockets_configured_as_kafka_configures_them(brokers) -> None:  # type: ignore[no-untyped-def]
    kafka = accepted_socket_of(brokers.kafka.bootstrap)
    assert kafka == SocketStats(receive_buffer=204800, send_buffer=204800, keepalive=True)
    if brokers.ours is not None:  # (--kafka-only runs Kafka alone)
        assert accepted_socket_of(brokers.ours.bootstrap) == kafka


def test_listen_backlog_as_kafka_sets_it(brokers) -> None:  # type: ignore[no-untyped-def]
    assert listen_backlog(brokers.kafka.bootstrap) == 50
    if brokers.ours is not None:
        assert listen_backlog(brokers.ours.bootstrap) == 50
