"""The console's "audit report for a topic" lever: `asyncbroker audit` (a Spark job, the
[spark] extra) as a child process of the broker.

The audit reads the live log dirs read-only (pipeline's scan never opens a Log), and a tiered
topic's remote tier through a broker-config file written from the broker's own settings
(remote.log.storage.manager.class.name and its rsm.config.* keys). asyncbroker never imports
pipeline: the child is `python -m asyncbroker.cli audit ...`, started with
asyncio.create_subprocess_exec, so the loop only waits on its pipes. One audit at a time per
broker, killed (its whole process group, the JVM included) after AUDIT_TIMEOUT_S or when the
console stops; the last STDERR_KEPT bytes of its stderr are kept for the page on failure."""

from __future__ import annotations

import asyncio
import contextlib
import enum
import importlib.util
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from asyncbroker.broker import Broker

AUDIT_TIMEOUT_S = 600.0
STDERR_KEPT = 64 * 1024


class AuditBusy(Exception):
    """An audit is already running on this broker."""


class AuditState(enum.Enum):
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


def spark_missing() -> str | None:
    """Why the audit cannot run from this broker's Python (None: it can)."""
    if importlib.util.find_spec("pyspark") is None:
        return ("The audit needs the [spark] extra (pyspark), which is not installed in the broker's Python: "
                "pip install 'asyncbroker[spark]' (and a Java runtime).")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "The audit runs Spark, which needs a Java runtime: none is on PATH and JAVA_HOME is not set."
    return None


def _escape_property(text: str, key: bool) -> str:
    out = []
    for i, ch in enumerate(text):
        if ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch in "=: #!" and (key or (i == 0 and ch in " #!")):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def remote_tier_properties(broker: Broker) -> dict[str, str]:
    """The broker's settings that locate its remote tier, as `--broker-config` reads them ({} when
    the broker has no tiered storage)."""
    config = broker.config
    name = config.remote_log_storage_manager_class_name
    if not config.remote_log_storage_system_enable or not name:
        return {}
    prefix = config.remote_log_storage_manager_impl_prefix
    out = {"remote.log.storage.manager.class.name": name, "remote.log.storage.manager.impl.prefix": prefix}
    out.update({prefix + k: v for k, v in config.remote_storage_manager_props.items()})
    return out


def audit_command(broker: Broker, topic: str, html: Path, broker_config: Path | None) -> list[str]:
    argv = [sys.executable, "-m", "asyncbroker.cli", "audit", *[str(d) for d in broker.config.log_dirs],
            "--topics", topic, "--html", str(html), "--quiet"]
    if broker_config is not None:
        argv += ["--broker-config", str(broker_config)]
    return argv


class AuditRunView(msgspec.Struct, frozen=True):
    """What a page shows of an AuditRun, read at once on the loop: the page renders on the
    console's render thread, while the run's task changes the run itself."""

    topic: str
    state: AuditState
    elapsed_s: float
    reason: str
    stderr: str


class AuditRun:
    """One audit: its topic, state, report file and what it said on failure."""

    def __init__(self, topic: str, workdir: Path, command: list[str]) -> None:
        self.topic = topic
        self.workdir = workdir
        self.command = command
        self.report = workdir / "audit.html"
        self.state = AuditState.RUNNING
        self.started = time.time()
        self.finished: float | None = None
        self.returncode: int | None = None
        self.stderr = ""
        self.reason = ""

    @property
    def elapsed_s(self) -> float:
        return (self.finished or time.time()) - self.started

    def view(self) -> AuditRunView:
        return AuditRunView(self.topic, self.state, self.elapsed_s, self.reason, self.stderr)


class AuditRunner:
    """The broker's audits: at most one running, the last one per topic remembered."""

    def __init__(self, broker: Broker, timeout_s: float = AUDIT_TIMEOUT_S) -> None:
        self.broker = broker
        self.timeout_s = timeout_s
        self.runs: dict[str, AuditRun] = {}
        self._task: asyncio.Task[None] | None = None
        self._root = Path(tempfile.mkdtemp(prefix="asyncbroker-console-audit-"))

    @property
    def running(self) -> AuditRun | None:
        return next((r for r in self.runs.values() if r.state is AuditState.RUNNING), None)

    def start(self, topic: str) -> AuditRun:
        busy = self.running
        if busy is not None:
            raise AuditBusy(f"An audit of {busy.topic} is running (started {busy.elapsed_s:.0f} s ago); "
                            "one runs at a time.")
        old = self.runs.pop(topic, None)
        if old is not None:
            shutil.rmtree(old.workdir, ignore_errors=True)
        workdir = Path(tempfile.mkdtemp(prefix="audit-", dir=self._root))
        broker_config: Path | None = None
        tier = remote_tier_properties(self.broker)
        if tier:
            broker_config = workdir / "server.properties"
            broker_config.write_text("".join(f"{_escape_property(k, True)}={_escape_property(v, False)}\n"
                                             for k, v in tier.items()), encoding="utf-8")
        run = AuditRun(topic, workdir, audit_command(self.broker, topic, workdir / "audit.html", broker_config))
        self.runs[topic] = run
        self._task = asyncio.create_task(self._run(run), name=f"console-audit-{topic}")
        return run

    async def _run(self, run: AuditRun) -> None:
        kept = bytearray()
        proc: asyncio.subprocess.Process | None = None
        try:
            proc = await asyncio.create_subprocess_exec(
                *run.command, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE, cwd=run.workdir, start_new_session=True)
            assert proc.stderr is not None

            async def drain() -> None:
                assert proc is not None and proc.stderr is not None
                while chunk := await proc.stderr.read(65536):
                    kept.extend(chunk)
                    if len(kept) > STDERR_KEPT:
                        del kept[:len(kept) - STDERR_KEPT]
                await proc.wait()

            try:
                await asyncio.wait_for(drain(), self.timeout_s)
            except TimeoutError:
                run.reason = f"The audit did not finish within {self.timeout_s:g} s and was stopped."
            run.returncode = proc.returncode
        except OSError as exc:
            run.reason = f"The audit could not be started: {exc}"
        finally:
            if proc is not None and proc.returncode is None:
                _kill_group(proc)
                with contextlib.suppress(TimeoutError, ProcessLookupError):
                    await asyncio.wait_for(proc.wait(), 10.0)
            run.stderr = kept.decode("utf-8", "replace")
            run.finished = time.time()
            if not run.reason and run.returncode == 0 and run.report.is_file():
                run.state = AuditState.DONE
            else:
                if not run.reason:
                    run.reason = f"The audit exited with status {run.returncode}." if run.returncode else \
                        "The audit wrote no report."
                run.state = AuditState.FAILED

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        shutil.rmtree(self._root, ignore_errors=True)


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL the audit and what it started (Spark's JVM): its own session, by its id."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
