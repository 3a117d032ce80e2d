"""The Java client harness (tests/jvm/harness, kafka-clients 4.4) as a long-running process.

One JVM per pytest session: it reads JSON-lines commands on stdin and answers
JSON lines on stdout (see Main.java). A scenario is a Java method that does what
a user does with the client, asserts inside Java (a failed check comes back as
`ok: false` with its message and stack trace) and returns facts that the tests
here compare between Kafka and asyncbroker.
"""

from __future__ import annotations

import itertools
import json
import queue
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jvm.kafka_jvm import KafkaServer, java_command

if TYPE_CHECKING:
    from asyncbroker.testing import BrokerProcess

MAIN = "asyncbroker.harness.Main"
STARTUP_TIMEOUT_S = 60.0


class ScenarioFailed(AssertionError):
    """A Java scenario's check failed (or it threw): the message is Java's."""


class JavaHarness:
    def __init__(self) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="java-harness-"))
        self._stderr_path = self._dir / "stderr.log"
        self._stderr = open(self._stderr_path, "wb")
        self.process = subprocess.Popen(
            java_command("harness", MAIN, heap="512m",
                         jvm_args=["-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                                   "-Dorg.slf4j.simpleLogger.showDateTime=true"]),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, text=True, bufsize=1,
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        hello = self._next_line(STARTUP_TIMEOUT_S)
        self.scenarios: list[str] = hello["scenarios"]

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _next_line(self, timeout: float) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise ScenarioFailed(f"the Java harness did not answer within {timeout}s\n{self.stderr_tail()}") from None
        if line is None:
            raise ScenarioFailed(f"the Java harness exited ({self.process.poll()})\n{self.stderr_tail()}")
        return json.loads(line)

    def stderr_tail(self, chars: int = 6000) -> str:
        self._stderr.flush()
        return self._stderr_path.read_text(errors="replace")[-chars:]

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def run(self, scenario: str, bootstrap: str, *, broker: str = "", timeout_s: float = 90.0,
            **args: Any) -> dict[str, Any]:
        """Run one scenario against `bootstrap` and return its facts; raise ScenarioFailed on a failed check.

        Each run gets its own `run` id: topic and group names are unique to it, so scenarios
        share the session's brokers.
        """
        assert scenario in self.scenarios, f"no scenario {scenario!r} in the harness: {self.scenarios}"
        run_id = uuid.uuid4().hex[:10]
        with self._lock:
            command_id = next(self._ids)
            command = {"id": command_id, "scenario": scenario,
                       "args": {"bootstrap": bootstrap, "run": run_id,
                                "timeout_ms": int(timeout_s * 1000), **args}}
            assert self.process.stdin is not None
            self.process.stdin.write(json.dumps(command) + "\n")
            self.process.stdin.flush()
            # The Java side enforces timeout_s itself; a little more here covers its answer.
            answer = self._next_line(timeout_s + 15)
        assert answer["id"] == command_id, answer
        if not answer["ok"]:
            raise ScenarioFailed(f"{scenario} on {broker or bootstrap}: {answer['error']}\n{answer.get('trace', '')}")
        return _without_run_id(answer["facts"], run_id)

    def close(self) -> None:
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        self._stderr.close()


def _without_run_id(value: Any, run_id: str) -> Any:
    """Facts with the run's id replaced by "<run>": names are unique per run by design, so
    they must differ between the Kafka run and the asyncbroker run."""
    if isinstance(value, dict):
        return {_without_run_id(k, run_id): _without_run_id(v, run_id) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_run_id(v, run_id) for v in value]
    if isinstance(value, str):
        return value.replace(run_id, "<run>")
    return value


# Record timestamps of every scenario (t0): one value for the session, so both brokers see the
# same ones; ten minutes before the start of the session's hour, inside every retention.
BASE_TIMESTAMP = (time.time_ns() // 1_000_000 // 3_600_000) * 3_600_000 - 600_000


class Targets:
    """The two brokers every Java scenario runs on."""

    def __init__(self, java: JavaHarness, kafka: KafkaServer, ours: "BrokerProcess") -> None:
        self.java = java
        self.kafka = kafka
        self.ours = ours

    def run(self, scenario: str, **args: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """The scenario on Kafka first (its checks passing there prove the scenario right),
        then on asyncbroker; returns both sets of facts."""
        args.setdefault("t0", BASE_TIMESTAMP)
        kafka_facts = self.java.run(scenario, self.kafka.bootstrap, broker="Kafka 4.4", **args)
        our_facts = self.java.run(scenario, self.ours.bootstrap, broker="asyncbroker", **args)
        return kafka_facts, our_facts
