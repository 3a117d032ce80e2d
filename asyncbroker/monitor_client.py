"""MonitorClient: run one aiomonitor console command on a live broker from a script.

The console (`asyncbroker serve --monitor`) is a telnet server driving an interactive
prompt_toolkit session; this client answers the terminal negotiation (terminal type "dumb",
a wide window), waits for the prompt, types the command and collects the printed lines up
to the command's last line. The broker's lever commands (`retention`, `advance-clock`, see
asyncbroker.monitor) end with a line starting `OK ` or `ERROR `; other commands end when
the prompt comes back.

    python -m asyncbroker.monitor_client --port 20101 "retention --advance 7d"

CI uses it to make a running broker apply `retention.ms=7d` at once; the test harness
(`BrokerProcess(monitor=True)`) uses it for `run_retention()` / `advance_clock()`.
"""
from __future__ import annotations

import argparse
import re
import socket
import sys
import time
from collections.abc import Sequence

PROMPT = "monitor >>> "

_IAC, _SB, _SE = 255, 250, 240
_TTYPE, _NAWS = 24, 31
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_TELNET = re.compile(rb"\xff\xfa.*?\xff\xf0|\xff[\xfb-\xfe].|\xff[\xf1-\xf9]", re.S)


class MonitorCommandError(RuntimeError):
    """The command printed an ERROR line, or never finished."""


class MonitorClient:
    """One telnet session with a broker's aiomonitor console."""

    def __init__(self, host: str = "127.0.0.1", port: int = 20101, *, timeout: float = 30.0) -> None:
        self.host = host
        self.port = port
        self.timeout = timeout
        self._sock: socket.socket | None = None
        self._raw = b""

    def connect(self) -> "MonitorClient":
        """Connect (retrying until `timeout`: the console starts just after the listener)."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                self._sock = socket.create_connection((self.host, self.port), timeout=1.0)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        # Answer the negotiation prompt_toolkit opens with: terminal type, then window size.
        self._sock.sendall(bytes([_IAC, _SB, _TTYPE, 0]) + b"dumb" + bytes([_IAC, _SE])
                           + bytes([_IAC, _SB, _NAWS, 0, 250, 0, 50, _IAC, _SE]))
        self._read_until(lambda text: PROMPT in text, deadline)
        return self

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> "MonitorClient":
        return self.connect()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def command(self, line: str, *, ends_with_status: bool = True) -> list[str]:
        """Type `line`; return the lines it printed. Raises MonitorCommandError on an ERROR line."""
        if self._sock is None:
            self.connect()
        assert self._sock is not None
        deadline = time.monotonic() + self.timeout
        self._raw = b""
        self._sock.sendall(line.encode() + b"\r")

        def finished(text: str) -> bool:
            lines = _output_lines(text, line)
            if ends_with_status:
                return any(ln.startswith(("OK ", "ERROR ")) for ln in lines)
            return text.count(PROMPT) >= 2  # the echo of the typed line, then a fresh prompt

        text = self._read_until(finished, deadline)
        lines = _output_lines(text, line)
        if ends_with_status:
            end = next(i for i, ln in enumerate(lines) if ln.startswith(("OK ", "ERROR ")))
            lines = lines[: end + 1]
            if lines[-1].startswith("ERROR "):
                raise MonitorCommandError(lines[-1][len("ERROR "):])
        return lines

    def _read_until(self, done, deadline: float) -> str:  # type: ignore[no-untyped-def]
        assert self._sock is not None
        while True:
            text = _clean(self._raw)
            if done(text):
                return text
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise MonitorCommandError(f"no answer from the monitor within {self.timeout}s: {text[-500:]!r}")
            self._sock.settimeout(min(remaining, 1.0))
            try:
                chunk = self._sock.recv(65536)
            except TimeoutError:
                continue
            if not chunk:
                raise MonitorCommandError(f"the monitor closed the connection: {text[-500:]!r}")
            self._raw += chunk


def _clean(raw: bytes) -> str:
    return _ANSI.sub("", _TELNET.sub(b"", raw).decode("utf-8", "replace"))


def _output_lines(text: str, typed: str = "") -> list[str]:
    """Printed lines, without prompts (redrawn before output that arrives asynchronously)
    and without the echo of the typed command."""
    typed = typed.strip()
    if typed:
        # The terminal may redraw the echo several times; the last one ends with the Enter.
        echoed = text.rfind(typed + "\r")
        if echoed < 0:
            return []
        text = text[echoed + len(typed):]
    out = []
    marker = PROMPT.strip()
    for line in text.replace("\r", "\n").split("\n"):
        line = line.strip()
        while line.startswith(marker):
            line = line[len(marker):].strip()
        if line:
            out.append(line)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m asyncbroker.monitor_client",
                                     description="Run one aiomonitor console command on a live broker.")
    parser.add_argument("command", help='e.g. "retention --advance 7d"')
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=20101)
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args(argv)
    lever = args.command.split()[0] in ("retention", "advance-clock", "clean")
    try:
        with MonitorClient(args.host, args.port, timeout=args.timeout) as client:
            for line in client.command(args.command, ends_with_status=lever):
                print(line)
    except (MonitorCommandError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
