"""The Java client harness (tests/jvm/harness, kafka-clients 4.4) as a long-running process.

One JVM per pytest session: it reads JSON-lines commands on stdin and answers
JSON lines on stdout (see Main.java). A scenario is a Java method that does what
a user does with the client, asserts inside Java (a failed check comes back as
`ok: false` with its message and stack trace) and returns facts that the tests
here compare between Kafka and asyncbroker. Commands may be in flight together
(Targets runs each scenario on both brokers at once): answers are matched by id.
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
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jvm.kafka_jvm import KafkaServer, java_command
from side_by_side import side_by_side

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
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        # command id -> where its answer goes (None: the harness exited); id 0 is the greeting.
        self._answers: dict[int, queue.Queue[dict[str, Any] | None]] = {0: queue.Queue()}
        self._exited = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        hello = self._answer(0, STARTUP_TIMEOUT_S)
        self.scenarios: list[str] = hello["scenarios"]

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            answer = json.loads(line)
            with self._lock:
                waiting = self._answers.get(int(answer.get("id", 0)))
            if waiting is not None:  # else its caller gave up waiting (and said so)
                waiting.put(answer)
        with self._lock:
            self._exited = True
            for waiting in self._answers.values():
                waiting.put(None)

    def _answer(self, command_id: int, timeout: float) -> dict[str, Any]:
        try:
            answer = self._answers[command_id].get(timeout=timeout)
        except queue.Empty:
            raise ScenarioFailed(f"the Java harness did not answer within {timeout}s\n{self.stderr_tail()}") from None
        finally:
            with self._lock:
                self._answers.pop(command_id, None)
        if answer is None:
            raise ScenarioFailed(f"the Java harness exited ({self.process.poll()})\n{self.stderr_tail()}")
        return answer

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
            self._answers[command_id] = queue.Queue()
            if self._exited:
                self._answers[command_id].put(None)
            command = {"id": command_id, "scenario": scenario,
                       "args": {"bootstrap": bootstrap, "run": run_id,
                                "timeout_ms": int(timeout_s * 1000), **args}}
            assert self.process.stdin is not None
            self.process.stdin.write(json.dumps(command) + "\n")
            self.process.stdin.flush()
        # The Java side enforces timeout_s itself; a little more here covers its answer.
        answer = self._answer(command_id, timeout_s + 15)
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
        """The scenario on Kafka and on asyncbroker at once (most of a scenario's time is
        waiting on heartbeats and timeouts); returns both sets of facts. Kafka's failure is
        reported first: its checks passing there prove the scenario right."""
        args.setdefault("t0", BASE_TIMESTAMP)
        return side_by_side(partial(self.java.run, scenario, self.kafka.bootstrap, broker="Kafka 4.4", **args),
                            partial(self.java.run, scenario, self.ours.bootstrap, broker="asyncbroker", **args))
