"""The kernel's view of a broker's TCP sockets, read with `ss` (iproute2) from outside the
broker's process: the accepted sockets' buffer sizes and whether TCP keepalive is on, the
listening socket's backlog. Kafka's settings (socket.send.buffer.bytes,
socket.receive.buffer.bytes, SO_KEEPALIVE, socket.listen.backlog.size) show only there."""

from __future__ import annotations

import re
import socket
import struct
import subprocess
from typing import NamedTuple


class SocketStats(NamedTuple):
    receive_buffer: int  # skmem rb: the kernel's SO_RCVBUF (twice what was set)
    send_buffer: int  # skmem tb: the kernel's SO_SNDBUF (twice what was set)
    keepalive: bool  # a keepalive timer runs


_SOCKET = re.compile(r"^\S.*?(?P<timer>timer:\((?P<kind>\w+)[^)]*\))?\s*\n\s+skmem:\(.*?rb(?P<rb>\d+),.*?tb(?P<tb>\d+),",
                     re.M)


def accepted_sockets(port: int, peer_port: int | None = None) -> list[SocketStats]:
    """The established sockets whose local port is `port` (a listener's accepted connections),
    only the one from `peer_port` when given."""
    match = f"( sport = :{port} )" if peer_port is None else f"( sport = :{port} and dport = :{peer_port} )"
    out = subprocess.run(["ss", "-H", "-t", "-n", "-m", "-o", "state", "established", match],
                         capture_output=True, text=True, timeout=10, check=True).stdout
    return [SocketStats(int(m["rb"]), int(m["tb"]), m["kind"] == "keepalive") for m in _SOCKET.finditer(out)]


def listen_backlog(bootstrap: str) -> int:
    """The backlog of the socket listening at `bootstrap` (ss shows it as a listener's Send-Q)."""
    port = int(bootstrap.rsplit(":", 1)[1])
    out = subprocess.run(["ss", "-H", "-l", "-t", "-n", f"( sport = :{port} )"],
                         capture_output=True, text=True, timeout=10, check=True).stdout
    (line,) = out.splitlines()
    return int(line.split()[2])  # State Recv-Q Send-Q Local Peer


def served_connection(bootstrap: str) -> socket.socket:
    """A connection the broker has accepted and answered (an ApiVersions v0 round trip): by
    then the broker has set whatever it sets on the socket."""
    host, port = bootstrap.rsplit(":", 1)
    sock = socket.create_connection((host.strip("[]"), int(port)), timeout=10)
    header = struct.pack(">hhih", 18, 0, 1, 4) + b"test"  # ApiVersions v0, client id "test"
    sock.sendall(struct.pack(">i", len(header)) + header)
    (size,) = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))
    sock.recv(size, socket.MSG_WAITALL)
    return sock


def accepted_socket_of(bootstrap: str) -> SocketStats:
    """How the broker at `bootstrap` configured a connection it accepted and served."""
    with served_connection(bootstrap) as sock:
        (found,) = accepted_sockets(int(bootstrap.rsplit(":", 1)[1]), sock.getsockname()[1])
        return found

