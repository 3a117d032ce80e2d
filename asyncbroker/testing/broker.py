"""Run a real asyncbroker in a subprocess for a test suite.

    with BrokerProcess() as broker:            # sync
        produce_to(broker.bootstrap)

    async with BrokerProcess() as broker:      # async (start/stop off the loop)
        ...

The broker binds a free loopback port (the OS picks it: `listeners` port 0,
no race with other processes) and logs into a fresh temporary log dir that
is removed afterwards unless you passed your own `log_dir`. A subprocess
rather than an in-process server keeps the broker's event loop, threads and
signal handling independent of the test's, and lets tests SIGTERM or
SIGKILL it. `restart()` starts it again on the same port and directory.

Retention levers (`monitor=True`): `advance_clock(ms)` moves the broker's
clock forward (and deletes whatever that made due: `.deleted` segment files,
`-delete` partition directories) and `run_retention()` runs a
kafka-log-retention pass now and returns what it deleted, so a test of
`retention.ms=7d` takes milliseconds. They drive the broker's aiomonitor
console (asyncbroker.monitor's `advance-clock` / `retention` commands, via
asyncbroker.monitor_client), the same commands an operator or a CI script
uses on a live broker. Why that channel and not a test-only one: the broker
under test stays the real subprocess, speaking only Kafka on its listener,
and the lever is one every deployed broker already has (`serve --monitor`).
Compaction lever (`monitor=True`): `clean_now(topic, partition=None)` rolls
and compacts a topic now and waits for the swap (the console's `clean`).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from asyncbroker.log_jobs import RetentionRun
    from asyncbroker.remote_log_manager import RemoteLogManagerStats
    from cleaner.cleaner_stats import CleanerStats
    from asyncbroker.monitor_client import MonitorClient

_ACCEPTOR = re.compile(r"Created data-plane acceptor and processors for endpoint : ListenerName\((\S+)\)")
_LISTENING = re.compile(r"Awaiting socket connections on (\S+):(\d+)\.")
_CONSOLE_READY = "[Console] Web console listening on "
_MONITOR_READY = "aiomonitor console on "
# The monitor's ports are chosen free here and bound by the broker a moment later: another
# process may take one meanwhile, and the broker then stops with this message.
_MONITOR_PORT_TAKEN = "The aiomonitor console could not start on "
MONITOR_START_ATTEMPTS = 3
_READY = re.compile(r"\[KafkaServer id=\d+\] started in ")


class BrokerStartError(RuntimeError):
    """The broker exited or did not listen within the startup timeout."""


def serve_command() -> list[str]:
    """`python -m asyncbroker serve` when the CLI is installed, else the server module."""
    if importlib.util.find_spec("asyncbroker.cli") is not None:
        return [sys.executable, "-m", "asyncbroker", "serve"]
    return [sys.executable, "-m", "asyncbroker.server"]


class BrokerProcess:
    """A broker subprocess on 127.0.0.1 with its own log directory."""

    def __init__(
        self,
        overrides: Sequence[str] = (),
        *,
        log_dir: str | Path | None = None,
        port: int = 0,
        startup_timeout: float = 30.0,
        env: dict[str, str] | None = None,
        echo: bool = False,
        monitor: bool = False,
        listener: str = "PLAINTEXT",
        serve_args: Sequence[str] = (),
        console: bool = False,
    ) -> None:
        self.overrides = list(overrides)
        # More `asyncbroker serve` arguments (--add-scram ...), after the overrides.
        self.serve_args = list(serve_args)
        # The listener `bootstrap` names (PLAINTEXT, or SSL with asyncbroker.testing.TlsFiles'
        # overrides); a `listeners=` override replaces it, and `listener_ports` has them all.
        self.listener = listener
        self.listener_ports: dict[str, int] = {}
        self._own_dir = log_dir is None
        self.log_dir = Path(log_dir) if log_dir is not None else Path(tempfile.mkdtemp(prefix="asyncbroker-"))
        self.port = port
        self.host = "127.0.0.1"
        self.startup_timeout = startup_timeout
        self.env = env
        self.echo = echo
        self.process: subprocess.Popen[bytes] | None = None
        self.log_lines: list[str] = []
        self._ready = threading.Event()
        self._reader: threading.Thread | None = None
        self.monitor = monitor
        self.monitor_port: int | None = None  # aiomonitor takes this port and the next two
        self._monitor_client: MonitorClient | None = None
        # The web console (`--console-port`) on a free loopback port; `console_url` is its address.
        self.console = console
        self.console_port: int | None = None

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def bootstrap_for(self, listener: str) -> str:
        """The address of one of several listeners (`listeners=A://...,B://...` override)."""
        return f"{self.host}:{self.listener_ports[listener]}"

    @property
    def returncode(self) -> int | None:
        return self.process.poll() if self.process is not None else None

    def command(self) -> list[str]:
        args = serve_command()
        if self.monitor:
            if args[-1] != "serve":
                raise RuntimeError("monitor=True needs the asyncbroker CLI (python -m asyncbroker serve)")
            if self.monitor_port is None:
                self.monitor_port = free_port_block(3)
            args += ["--monitor", "--monitor-host", self.host, "--monitor-port", str(self.monitor_port)]
        if self.console:
            if self.console_port is None:
                self.console_port = free_port_block(1)
            args += ["--console-port", str(self.console_port), "--console-host", self.host]
        settings = [
            f"listeners={self.listener}://{self.host}:{self.port}",
            f"log.dirs={self.log_dir}",
            *self.overrides,
        ]
        for item in settings:
            args += ["--override", item]
        return args + self.serve_args

    # -- lifecycle --------------------------------------------------------

    def start(self) -> "BrokerProcess":
        """Spawn the broker and block until it accepts connections (and its monitor and web
        console, when asked for, listen too)."""
        for attempt in range(1, MONITOR_START_ATTEMPTS + 1):
            try:
                return self._start()
            except BrokerStartError:
                if not (self.monitor and _MONITOR_PORT_TAKEN in self.output()) or attempt == MONITOR_START_ATTEMPTS:
                    raise
                self.monitor_port = None  # another block of ports next time
                self.log_lines.clear()
        raise AssertionError("not reached")

    def _start(self) -> "BrokerProcess":
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError("broker already running")
        env = dict(os.environ if self.env is None else self.env)
        env.setdefault("PYTHONUNBUFFERED", "1")
        self._ready.clear()
        self.process = subprocess.Popen(
            self.command(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, env=env,
        )
        self._reader = threading.Thread(target=self._read_output, args=(self.process,), daemon=True)
        self._reader.start()
        deadline = time.monotonic() + self.startup_timeout
        while not self._ready.wait(0.01):
            if self.process.poll() is not None:
                self._reader.join(1)
                raise BrokerStartError(f"broker exited with {self.process.returncode}:\n" + self.output())
            if time.monotonic() > deadline:
                self.kill()
                raise BrokerStartError(f"broker did not start in {self.startup_timeout}s:\n" + self.output())
        for wanted, ready in ((self.monitor, _MONITOR_READY), (self.console, _CONSOLE_READY)):
            while wanted and ready not in self.output():
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.kill()
                    raise BrokerStartError(f"the broker did not start ({ready.strip()!r} never came):\n"
                                           + self.output())
                time.sleep(0.01)
        return self

    @property
    def console_url(self) -> str:
        """The web console's address (console=True), ending in '/'."""
        return f"http://{self.host}:{self.console_port}/"

    def _read_output(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        acceptor = ""
        for raw in process.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self.log_lines.append(line)
            if self.echo:
                print(line, file=sys.stderr)
            if not self._ready.is_set():
                if (m := _ACCEPTOR.search(line)) is not None:
                    acceptor = m.group(1)
                elif (m := _LISTENING.search(line)) is not None:
                    self.listener_ports[acceptor] = int(m.group(2))
                    if acceptor == self.listener or len(self.listener_ports) == 1:
                        self.port = int(m.group(2))
                elif _READY.search(line):
                    self._ready.set()

    def output(self) -> str:
        """What the broker printed; once it has exited, all of it: its last lines may still be in
        the pipe when the exit is seen, so the reader is given time to drain it to its end."""
        if self.process is not None and self.process.poll() is not None and self._reader is not None:
            self._reader.join(10)
        return "\n".join(self.log_lines)

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM and wait: the broker flushes, checkpoints and exits."""
        return self._signal_and_wait(signal.SIGTERM, timeout)

    def kill(self) -> int:
        """SIGKILL: no shutdown at all (the next start recovers)."""
        return self._signal_and_wait(signal.SIGKILL, 10.0)

    def _signal_and_wait(self, sig: int, timeout: float) -> int:
        self._close_monitor_client()
        p = self.process
        if p is None:
            return 0
        if p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if self._reader is not None:
            self._reader.join(5)
        return p.returncode

    def restart(self, *, kill: bool = False) -> "BrokerProcess":
        """Stop (SIGTERM, or SIGKILL with kill=True) and start on the same port and dir."""
        if kill:
            self.kill()
        else:
            self.stop()
        return self.start()

    # -- retention levers (monitor=True) ------------------------------------

    def run_retention(self, timeout: float = 60.0) -> "RetentionRun":
        """Run a kafka-log-retention pass in the broker now; returns what it deleted."""
        import msgspec

        from asyncbroker.log_jobs import RetentionRun

        line = self._monitor_command("retention --json", timeout)[-1]
        return msgspec.json.decode(line[len("OK retention "):], type=RetentionRun)

    def run_tiering(self, timeout: float = 120.0) -> "RemoteLogManagerStats":
        """Run tiered storage's copy and expiration round now (remote.log.manager.task.interval.ms
        need not pass); returns the RemoteLogManager's totals since the broker started."""
        import msgspec

        from asyncbroker.remote_log_manager import RemoteLogManagerStats

        line = self._monitor_command("tier --json", timeout)[-1]
        return msgspec.json.decode(line[len("OK tier "):], type=RemoteLogManagerStats)

    def advance_clock(self, ms: int, timeout: float = 60.0) -> int:
        """Move the broker's clock `ms` forward and delete what that made due (`.deleted` files,
        `-delete` directories); returns the broker's new time in ms."""
        line = self._monitor_command(f"advance-clock {int(ms)}", timeout)[-1]
        m = re.search(r"now (\d+)", line)
        if m is None:
            raise RuntimeError(f"unexpected answer from the broker's monitor: {line!r}")
        return int(m.group(1))

    def clean_now(self, topic: str, partition: int | None = None, *, wait: bool = True,
                  timeout: float = 120.0) -> "dict[int, CleanerStats | None] | None":
        """Compact `topic` (or one partition) now, whatever its dirty ratio: the active segment is
        rolled first, so everything produced so far is cleanable. With wait=True returns, per
        partition, the CleanerStats of the clean (None: nothing to clean) once the cleaned
        segments are swapped in; with wait=False starts it and returns None. Needs monitor=True
        and the cleaner enabled (log.cleaner.enable=true, the default)."""
        import msgspec

        from cleaner.cleaner_stats import CleanerStats

        command = f"clean {topic}" + ("" if partition is None else f" {int(partition)}")
        if not wait:
            self._monitor_command(command + " --no-wait", timeout)
            return None
        line = self._monitor_command(command + " --json", timeout)[-1]
        return msgspec.json.decode(line[len("OK clean "):], type=dict[int, CleanerStats | None])

    def _monitor_command(self, line: str, timeout: float) -> list[str]:
        from asyncbroker.monitor_client import MonitorClient

        if not self.monitor or self.monitor_port is None:
            raise RuntimeError("start the BrokerProcess with monitor=True to use the retention levers")
        if self.process is None or self.process.poll() is not None:
            raise RuntimeError("the broker is not running")
        if self._monitor_client is None:
            self._monitor_client = MonitorClient(self.host, self.monitor_port, timeout=timeout).connect()
        self._monitor_client.timeout = timeout
        return self._monitor_client.command(line)

    def _close_monitor_client(self) -> None:
        if self._monitor_client is not None:
            self._monitor_client.close()
            self._monitor_client = None

    def cleanup(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.stop()
        if self._own_dir:
            shutil.rmtree(self.log_dir, ignore_errors=True)

    # -- context managers -------------------------------------------------

    def __enter__(self) -> "BrokerProcess":
        try:
            return self.start()
        except BaseException:
            self.cleanup()
            raise

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.cleanup()

    async def __aenter__(self) -> "BrokerProcess":
        try:
            return await asyncio.to_thread(self.start)
        except BaseException:
            await asyncio.to_thread(self.cleanup)
            raise

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        await asyncio.to_thread(self.cleanup)


def free_port_block(n: int) -> int:
    """A base port with `n` free consecutive loopback ports (aiomonitor binds port..port+2)."""
    import socket

    for _ in range(200):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base: int = probe.getsockname()[1]
        if base + n > 65535:
            continue
        try:
            for i in range(1, n):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", base + i))
        except OSError:
            continue
        return base
    raise RuntimeError(f"no block of {n} free ports found")
