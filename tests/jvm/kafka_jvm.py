"""Apache Kafka 4.4 and its tools, run from the jars `make test` fetched.

`make jvm` (a prerequisite of `make test`) runs Maven over tests/jvm/pom.xml:
the jars land in the git-ignored .cache/m2 and each module writes the
classpath it runs with to tests/jvm/<module>/target/classpath.txt. This
module only reads those files; it never downloads anything.

    KafkaServer      a single-node KRaft Kafka (combined broker+controller) on
                     free loopback ports and a temporary log dir: the oracle
                     (with tiered_storage=True, a remote tier in a directory:
                     the rsm module's plugin)
    run_tool         a main class of Kafka's tools, as kafka-*.sh runs it
    dump_log_segments  Kafka's DumpLogSegments over files we wrote

The JVM takes seconds to start, so the test suite starts one KafkaServer per
session (tests/conftest.py) and shares it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

JVM_DIR = Path(__file__).resolve().parent
REPO = JVM_DIR.parents[1]
LOG4J_CONFIG = JVM_DIR / "log4j2.properties"
JAVA = shutil.which("java") or "java"

KAFKA_MAIN = "kafka.Kafka"
STORAGE_TOOL = "kafka.tools.StorageTool"
DUMP_LOG_SEGMENTS = "org.apache.kafka.tools.DumpLogSegments"


class JvmSetupError(RuntimeError):
    """The Maven-built classpaths are missing: run `make test` (or `make jvm`) first."""


def classpath(module: str) -> str:
    """The runtime classpath Maven wrote for tests/jvm/<module> (plus the module's own jar)."""
    path = JVM_DIR / module / "target" / "classpath.txt"
    if not path.exists():
        raise JvmSetupError(f"{path} is missing: `make jvm` fetches Kafka's jars and writes it")
    entries = [e for e in path.read_text().strip().split(os.pathsep) if e]
    own = sorted((JVM_DIR / module / "target").glob(f"{module}-*.jar"))
    missing = [e for e in entries if not Path(e).exists()]
    if missing:
        raise JvmSetupError(f"{len(missing)} jar(s) of {module} are missing (first: {missing[0]}): run `make jvm`")
    return os.pathsep.join([str(p) for p in own] + entries)


QUICK_START_OPTS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData")
"""The suite's JVMs: C1 only and the serial collector start a test's Kafka or a short tool run
sooner, at the cost of the code C2 would compile for a long run. No perf data file in
/tmp/hsperfdata_<user> (nothing here reads it with jstat): a JVM that found its pid's file still
locked printed a warning, and DumpLogSegments' checker rightly counts any line it does not know."""

SCRIPT_PERFORMANCE_OPTS = ("-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                           "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                           "-XX:MaxInlineLevel=15")
"""kafka-run-class.sh's KAFKA_JVM_PERFORMANCE_OPTS: how Kafka's own scripts run the broker and
its tools, and so how bench/ measures them (`as_scripts`)."""


def java_command(module: str, main: str, args: Sequence[str] = (), *, heap: str = "256m",
                 jvm_args: Sequence[str] = (), as_scripts: bool = False) -> list[str]:
    """The java command line for `main` on the module's classpath: with the suite's quick-start
    options, or with `as_scripts` the options Kafka's scripts use (a benchmark's)."""
    options = SCRIPT_PERFORMANCE_OPTS if as_scripts else QUICK_START_OPTS
    return [
        JAVA, f"-Xmx{heap}", *options, "-Xshare:auto",
        f"-Dlog4j2.configurationFile={LOG4J_CONFIG}", "-Djava.awt.headless=true",
        *jvm_args, "-cp", classpath(module), main, *args,
    ]


# Class data sharing (AppCDS): the first tool run of a module's classpath archives the classes it
# loaded, and later runs map that archive instead of reading and verifying the classes from the
# jars: a tool's run takes ~0.45 s here instead of ~1.1 s. The archive's name is a digest of the
# JVM and of every jar's path, size and mtime (which the JVM checks as well), so an archive of
# other jars is never picked up. Runs to completion write it; a long-lived JVM (Kafka itself)
# only maps one, since it would write its archive when the session ends.
CDS_DIR = REPO / ".cache" / "cds"


@contextlib.contextmanager
def shared_classes(module: str, *, use: bool = True, write: bool = True) -> Iterator[list[str]]:
    """The JVM arguments that map the module's class-data archive, or, while there is none and
    `write` is set, write one when the JVM exits; it is moved into place once the block ends.
    With `use` unset: none (the JVM as Kafka's scripts start it)."""
    if not use:
        yield []
        return
    entries = [os.path.realpath(JAVA), *classpath(module).split(os.pathsep)]
    stamp = "\n".join(f"{e} {st.st_size} {st.st_mtime_ns}" for e in entries for st in (os.stat(e),))
    archive = CDS_DIR / f"{module}-{hashlib.sha256(stamp.encode()).hexdigest()[:16]}.jsa"
    quiet = "-Xlog:cds*=off"  # a warning about an archive it cannot use would be in the tool's stdout
    if archive.exists():
        yield [f"-XX:SharedArchiveFile={archive}", quiet]
        return
    if not write:
        yield []
        return
    CDS_DIR.mkdir(parents=True, exist_ok=True)
    # Its own name until complete: another worker's JVM may be mapping or writing the final one.
    partial = archive.with_name(f"{archive.stem}.{uuid.uuid4().hex}.partial.jsa")
    try:
        yield [f"-XX:ArchiveClassesAtExit={partial}", quiet]
        if partial.exists():
            os.replace(partial, archive)
    finally:
        partial.unlink(missing_ok=True)


def run_tool(main: str, args: Sequence[str], *, module: str = "tools", timeout: float = 120.0,
             input: str | None = None, heap: str = "256m", as_scripts: bool = False) -> subprocess.CompletedProcess[str]:
    """Run one of Kafka's command-line tools to completion and capture its output; with
    `as_scripts`, with its script's JVM options and no class-data archive (a benchmark's)."""
    with shared_classes(module, use=not as_scripts) as cds:
        return subprocess.run(
            java_command(module, main, args, heap=heap, jvm_args=cds, as_scripts=as_scripts), input=input,
            capture_output=True, text=True, timeout=timeout, check=False,
            stdin=None if input is not None else subprocess.DEVNULL,
        )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# The settings that make the oracle comparable with asyncbroker's defaults on one node.
ORACLE_SETTINGS: dict[str, str] = {
    "num.partitions": "1",
    "auto.create.topics.enable": "true",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "50",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    # A consumer-protocol group's target assignment is computed in the heartbeat that needs
    # it (Kafka's default waits up to 1 s): the scenarios' epochs do not depend on timing.
    "group.consumer.assignment.interval.ms": "0",
    "group.share.assignment.interval.ms": "0",
    # Share-group tests lower a group's record lock to 1 s (Kafka's floor is 15 s by default).
    "group.share.min.record.lock.duration.ms": "1000",
    "log.cleaner.backoff.ms": "200",
    "log.retention.check.interval.ms": "500",
    "log.initial.task.delay.ms": "0",
    "log.segment.delete.delay.ms": "0",
}

# The broker keys asyncbroker shares with the oracle's settings (the rest are about replication
# and Kafka's own internal topics): the differential and Java tests start asyncbroker with them.
ASYNCBROKER_ORACLE_OVERRIDES: list[str] = ["node.id=1", *(f"{k}={ORACLE_SETTINGS[k]}" for k in (
    "num.partitions", "auto.create.topics.enable", "offsets.topic.num.partitions",
    "group.initial.rebalance.delay.ms", "log.cleaner.backoff.ms", "log.retention.check.interval.ms",
    "log.initial.task.delay.ms", "log.segment.delete.delay.ms", "group.consumer.assignment.interval.ms",
    "group.share.assignment.interval.ms", "group.share.min.record.lock.duration.ms",
))]


# Tiered storage (KIP-405) on the oracle: Kafka's RemoteLogManager with the topic-based metadata
# manager (__remote_log_metadata) and, as the remote tier, a directory laid out as asyncbroker's
# LocalTieredStorage lays out its own (tests/jvm/rsm: Kafka's own LocalTieredStorage lives in a
# test jar Maven does not serve here). The tasks run every 500 ms instead of 30 s.
RSM_CLASS = "asyncbroker.oracle.LocalDirRemoteStorageManager"
REMOTE_LOG_MANAGER_TASK_INTERVAL_MS = "500"
REMOTE_LOG_METADATA_TOPIC = "__remote_log_metadata"
REMOTE_LOG_METADATA_PARTITIONS = 50  # Kafka's default (rlmm.config.remote.log.metadata.topic.num.partitions)


def rsm_jar() -> Path:
    """The remote storage plugin's jar, which Kafka loads through remote.log.storage.manager.class.path."""
    jar = JVM_DIR / "rsm" / "target" / "rsm-0.jar"
    if not jar.exists():
        raise JvmSetupError(f"{jar} is missing: `make jvm` builds it")
    return jar


def tiered_storage_settings(remote_dir: Path) -> dict[str, str]:
    """The broker settings that turn tiered storage on for a single-node Kafka 4.4."""
    return {
        "remote.log.storage.system.enable": "true",
        "remote.log.storage.manager.class.name": RSM_CLASS,
        "remote.log.storage.manager.class.path": str(rsm_jar()),
        "rsm.config.dir": str(remote_dir),
        "remote.log.manager.task.interval.ms": REMOTE_LOG_MANAGER_TASK_INTERVAL_MS,
        # The topic-based metadata manager's clients connect to this broker's own listener.
        "remote.log.metadata.manager.listener.name": "PLAINTEXT",
        # Its topic's default is 3 replicas, which one node cannot place.
        "rlmm.config.remote.log.metadata.topic.replication.factor": "1",
    }


def asyncbroker_tiered_overrides(remote_dir: Path) -> list[str]:
    """asyncbroker's counterpart of tiered_storage_settings (with ASYNCBROKER_ORACLE_OVERRIDES):
    the same keys, its directory backend named as Kafka's test plugin is."""
    return [
        "remote.log.storage.system.enable=true",
        "remote.log.storage.manager.class.name=org.apache.kafka.server.log.remote.storage.LocalTieredStorage",
        f"rsm.config.dir={remote_dir}",
        f"remote.log.manager.task.interval.ms={REMOTE_LOG_MANAGER_TASK_INTERVAL_MS}",
    ]


class KafkaServer:
    """A single-node KRaft Apache Kafka 4.4 on 127.0.0.1, in its own temporary directory.

    start() formats the log dir with StorageTool, starts kafka.Kafka and
    returns once Metadata is answered on the broker listener (a condition,
    never a fixed sleep); stop() shuts it down and removes the directory.
    """

    def __init__(self, settings: dict[str, str] | None = None, *, heap: str = "768m",
                 startup_timeout: float = 90.0, sasl_plain_users: dict[str, str] | None = None,
                 tiered_storage: bool = False, as_scripts: bool = False) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="kafka-oracle-"))
        # True (bench/): run Kafka as kafka-server-start.sh does: its JVM options, a heap fixed at
        # `heap` (its -Xms equal to -Xmx), GC logging to a file (its -loggc), and without the
        # suite's class-data archive or quick-start options. The suite's log4j configuration stays.
        self.as_scripts = as_scripts
        # With tiered storage: the remote tier's directory (rsm.config.dir), inside self.dir.
        self.remote_dir: Path | None = self.dir / "remote-tier" if tiered_storage else None
        tiered = tiered_storage_settings(self.remote_dir) if self.remote_dir is not None else {}
        self.settings = {**ORACLE_SETTINGS, **tiered, **(settings or {})}
        # With users: a second listener, SASL_PLAINTEXT with PLAIN and these user -> password
        # pairs, on sasl_port (the PLAINTEXT one stays the broker's and the harness's).
        self.sasl_plain_users = sasl_plain_users
        self.sasl_port = 0
        self.heap = heap
        self.startup_timeout = startup_timeout
        self.log_dir = self.dir / "data"
        self.port = 0
        self.controller_port = 0
        self.cluster_id = ""
        self.process: subprocess.Popen[bytes] | None = None
        self._output = self.dir / "kafka.out"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def properties(self) -> str:
        base = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(self.log_dir),
        }
        if self.sasl_plain_users is not None:
            users = " ".join(f'user_{u}="{p}"' for u, p in self.sasl_plain_users.items())
            base["listeners"] += f",SASL_PLAINTEXT://127.0.0.1:{self.sasl_port}"
            base["advertised.listeners"] += f",SASL_PLAINTEXT://127.0.0.1:{self.sasl_port}"
            base["listener.security.protocol.map"] += ",SASL_PLAINTEXT:SASL_PLAINTEXT"
            base["sasl.enabled.mechanisms"] = "PLAIN"
            base["listener.name.sasl_plaintext.plain.sasl.jaas.config"] = (
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};")
        return "".join(f"{k}={v}\n" for k, v in {**base, **self.settings}.items())

    @property
    def sasl_bootstrap(self) -> str:
        return f"127.0.0.1:{self.sasl_port}"

    def start(self) -> "KafkaServer":
        for attempt in range(3):
            self.port, self.controller_port, self.sasl_port = free_port(), free_port(), free_port()
            if len({self.port, self.controller_port, self.sasl_port}) < 3:
                continue
            try:
                return self._start_once()
            except _PortTaken:
                self._kill()
                continue
        raise RuntimeError("could not start Kafka on free loopback ports")

    def _start_once(self) -> "KafkaServer":
        self.format()
        self._output.write_bytes(b"")  # a restart appends; a fresh start (or a retry) begins empty
        return self._launch()

    def format(self) -> None:
        """Write server.properties for the ports chosen and format a new log dir (StorageTool)."""
        props = self.dir / "server.properties"
        props.write_text(self.properties())
        shutil.rmtree(self.log_dir, ignore_errors=True)
        self.cluster_id = _kafka_uuid()
        with shared_classes("kafka", use=not self.as_scripts) as cds:
            fmt = subprocess.run(
                java_command("kafka", STORAGE_TOOL, ["format", "-t", self.cluster_id, "-c", str(props)],
                             jvm_args=cds),
                capture_output=True, text=True, timeout=120, check=False,
            )
        if fmt.returncode != 0:
            raise RuntimeError(f"StorageTool format failed ({fmt.returncode}):\n{fmt.stdout}\n{fmt.stderr}")

    def start_unformatted(self, log_dir: Path) -> "KafkaServer":
        """Start on an existing log dir (not formatted here: a directory another tool made a
        KRaft node's, such as `asyncbroker migrate`), on free loopback ports."""
        self.log_dir = Path(log_dir)
        for attempt in range(3):
            self.port, self.controller_port, self.sasl_port = free_port(), free_port(), free_port()
            if len({self.port, self.controller_port, self.sasl_port}) < 3:
                continue
            (self.dir / "server.properties").write_text(self.properties())
            self._output.write_bytes(b"")
            try:
                return self._launch()
            except _PortTaken:
                self._kill()
        raise RuntimeError("could not start Kafka on free loopback ports")

    def restart(self, between: Callable[[], None] | None = None, timeout: float = 60.0) -> "KafkaServer":
        """Shut Kafka down cleanly (SIGTERM: it writes its clean-shutdown marker), call `between`
        (a test's change to the stopped broker's files), and start it again on the same ports,
        log dir and cluster id, without formatting."""
        code = self.shutdown(timeout)
        if code not in (0, 143):  # 143: the JVM's exit on SIGTERM after its shutdown hooks ran
            raise RuntimeError(f"Kafka did not shut down cleanly ({code}):\n{self.output()[-4000:]}")
        if between is not None:
            between()
        return self._launch()

    def shutdown(self, timeout: float = 60.0) -> int:
        """SIGTERM and wait, keeping the directory (stop() also removes it); the exit status."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self._kill()
        return self.process.returncode if self.process is not None else 0

    def _launch(self) -> "KafkaServer":
        props = self.dir / "server.properties"
        out = open(self._output, "ab")
        scripts = [f"-Xms{self.heap}", f"-Xlog:gc*:file={self.dir / 'kafkaServer-gc.log'}:time,tags:filecount=10,"
                   "filesize=100M"] if self.as_scripts else []
        with shared_classes("kafka", use=not self.as_scripts, write=False) as cds:
            self.process = subprocess.Popen(
                java_command("kafka", KAFKA_MAIN, [str(props)], heap=self.heap, as_scripts=self.as_scripts,
                             jvm_args=[f"-Dkafka.logs.dir={self.dir}", *scripts, *cds]),
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            )
        out.close()
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                text = self.output()
                if "Address already in use" in text:
                    raise _PortTaken()
                raise RuntimeError(f"Kafka exited with {self.process.returncode}:\n{text[-4000:]}")
            if metadata_answers(self.port) and self._remote_log_metadata_ready():
                return self
            time.sleep(0.1)  # polling a condition with a deadline
        text = self.output()
        self._kill()
        raise RuntimeError(f"Kafka did not answer Metadata within {self.startup_timeout}s:\n{text[-4000:]}")

    def _remote_log_metadata_ready(self) -> bool:
        """With tiered storage: the metadata manager has created __remote_log_metadata and this
        broker holds every partition of it (it does so a moment after Metadata is answered;
        until then a tiered topic's partitions wait for it)."""
        if self.remote_dir is None:
            return True
        partitions = int(self.settings.get("rlmm.config.remote.log.metadata.topic.num.partitions",
                                           REMOTE_LOG_METADATA_PARTITIONS))
        return all((self.log_dir / f"{REMOTE_LOG_METADATA_TOPIC}-{p}").is_dir() for p in range(partitions))

    def output(self) -> str:
        """Everything Kafka has logged."""
        return self.output_since(0)

    def output_size(self) -> int:
        """How many bytes Kafka has logged so far (where `output_since` starts reading)."""
        try:
            return self._output.stat().st_size
        except FileNotFoundError:
            return 0

    def output_since(self, position: int) -> str:
        """What Kafka logged after `position` (an `output_size()` taken earlier)."""
        try:
            with open(self._output, "rb") as f:
                f.seek(position)
                return f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def _kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)

    def stop(self, timeout: float = 60.0) -> None:
        self.shutdown(timeout)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "KafkaServer":
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _PortTaken(Exception):
    pass


def _kafka_uuid() -> str:
    """A random Kafka Uuid in its base64url form, as StorageTool random-uuid prints it.

    Like Kafka's Uuid.randomUuid, never one starting with '-': StorageTool would read
    `-t -xyz...` as an option and refuse to format (1 session in 64 failed so)."""
    import base64

    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def metadata_answers(port: int) -> bool:
    """True when a Metadata v1 request on `port` gets an answer that lists a broker."""
    import struct

    # Metadata v1 (header v1: api key 3, version 1, correlation 7, client id "probe"), all topics (-1).
    body = struct.pack(">hhih", 3, 1, 7, 5) + b"probe" + struct.pack(">i", -1)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(struct.pack(">i", len(body)) + body)
            size = struct.unpack(">i", _recv_exact(s, 4))[0]
            frame = _recv_exact(s, size)
    except OSError:
        return False
    # correlation id, then the brokers array: at least one broker.
    return len(frame) >= 8 and struct.unpack_from(">i", frame, 0)[0] == 7 and struct.unpack_from(">i", frame, 4)[0] >= 1


def _recv_exact(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def dump_log_segments(files: Sequence[Path | str], extra: Sequence[str] = (), *, timeout: float = 600.0) -> str:
    """Run Kafka's DumpLogSegments over `files` and return what it printed (stdout and stderr)."""
    result = run_tool(DUMP_LOG_SEGMENTS, ["--files", ",".join(str(f) for f in files), *extra],
                      timeout=timeout, heap="512m")
    return result.stdout + result.stderr

