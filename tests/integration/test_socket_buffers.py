"""socket.send.buffer.bytes and socket.receive.buffer.bytes on the broker's accepted sockets
(read by the kernel's own tool, `ss`): a value sets SO_SNDBUF / SO_RCVBUF, which the kernel
keeps doubled; -1 leaves the buffer to the OS, as a plain listener's socket has it. TCP
keepalive is on either way, as Kafka sets it. socket.listen.backlog.size is the listening
socket's backlog. tests/oracle/test_socket_options.py compares the defaults with Kafka's."""

from __future__ import annotations

import socket

from asyncbroker.testing import BrokerProcess
from socket_stats import SocketStats, accepted_socket_of, accepted_sockets, listen_backlog


def _os_default() -> SocketStats:
    """An accepted socket on a listener that sets nothing."""
    with socket.create_server(("127.0.0.1", 0)) as listener, \
            socket.create_connection(listener.getsockname()) as client:
        accepted, _ = listener.accept()
        with accepted:
            (found,) = accepted_sockets(listener.getsockname()[1], client.getsockname()[1])
            return found


def test_configured_buffers_and_backlog() -> None:
    with BrokerProcess(["socket.send.buffer.bytes=65536", "socket.receive.buffer.bytes=32768",
                        "socket.listen.backlog.size=7"]) as broker:
        assert accepted_socket_of(broker.bootstrap) == SocketStats(receive_buffer=65536, send_buffer=131072,
                                                                   keepalive=True)
        assert listen_backlog(broker.bootstrap) == 7


def test_minus_one_leaves_the_buffers_to_the_os() -> None:
    default = _os_default()
    assert not default.keepalive
    with BrokerProcess(["socket.send.buffer.bytes=-1", "socket.receive.buffer.bytes=-1"]) as broker:
        assert accepted_socket_of(broker.bootstrap) == default._replace(keepalive=True)
