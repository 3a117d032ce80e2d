"""The README's "Use it with ..." snippets run as written, but for the broker's address (and
the log directory): Spark through its Kafka connector, the Java client and a Kafka Streams
application as single-file programs, Kafka's CLI tools as the kafka-*.sh scripts run them,
and kafkajs on Node.js."""

from __future__ import annotations

import os
import re
import shutil
import signal
import struct
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from asyncbroker.testing import BrokerProcess
from jvm.kafka_jvm import JAVA, classpath, java_command

pytestmark = pytest.mark.timeout(300)

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
ADDRESS = "127.0.0.1:9092"
# The scripts of a Kafka distribution's bin/ that the README uses, and the class each runs.
SCRIPTS = {
    "kafka-topics.sh": "org.apache.kafka.tools.TopicCommand",
    "kafka-console-producer.sh": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer.sh": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-consumer-groups.sh": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-configs.sh": "org.apache.kafka.tools.ConfigCommand",
    "kafka-get-offsets.sh": "org.apache.kafka.tools.GetOffsetShell",
}


def snippet(language: str, containing: str) -> str:
    """The one README code block in `language` of the "Use it with ..." section holding `containing`."""
    section = README.split("## Use it with ...", 1)[1].split("\n## ", 1)[0]
    (block,) = [b for b in re.findall(rf"```{language}\n(.*?)```", section, re.S) if containing in b]
    return block


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker of the module's own: the snippets name their topics ("orders", "payments")."""
    with BrokerProcess(["num.partitions=1", "group.initial.rebalance.delay.ms=0"],
                       log_dir=tmp_path_factory.mktemp("readme")) as b:
        p = Producer({"bootstrap.servers": b.bootstrap})
        for i in (1, 2):
            p.produce("orders", key=b"order-%d" % i, value=b"created")
        assert p.flush(30) == 0
        yield b


def test_spark(broker: BrokerProcess, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pyspark", reason="the [spark] extra is not installed")
    code = snippet("python", "build_session").replace(ADDRESS, broker.bootstrap)
    code = code.replace('load("./data")', f'load({str(broker.log_dir)!r})')
    scope: dict[str, object] = {}
    exec(code, scope)  # noqa: S102 - the README's own snippet
    orders, on_disk = scope["orders"], scope["on_disk"]

    def rows(df) -> list[tuple[int, bytes, bytes]]:  # type: ignore[no-untyped-def]
        return sorted((r["offset"], r["key"], r["value"]) for r in df.select("offset", "key", "value").collect())

    assert rows(orders)[:2] == [(0, b"order-1", b"created"), (1, b"order-2", b"created")]
    assert rows(on_disk) == rows(orders)
    assert "order-1|created" in capsys.readouterr().out.replace(" ", "")


def test_java_client(broker: BrokerProcess, tmp_path: Path) -> None:
    source = tmp_path / "Orders.java"
    source.write_text(snippet("java", "public class Orders").replace(ADDRESS, broker.bootstrap))
    result = subprocess.run([JAVA, "-cp", classpath("harness"), str(source)], capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert "0/0 order-1=created" in lines and "0/1 order-2=created" in lines, result.stdout
    assert any(line.endswith(" order-3=shipped") for line in lines), result.stdout


def test_kafka_streams(broker: BrokerProcess, tmp_path: Path) -> None:
    """The word count runs until SIGTERM (Ctrl-C): its shutdown hook closes the application."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic("text-lines", 1, 1), NewTopic("word-counts", 1, 1)]).values():
        future.result(30)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for line in ("to be or not to be", "that is the question"):
        p.produce("text-lines", line.encode())
    assert p.flush(30) == 0
    source = tmp_path / "WordCount.java"
    source.write_text(snippet("java", "public class WordCount").replace(ADDRESS, broker.bootstrap))
    # Streams keeps its state under java.io.tmpdir: this run's own.
    log = tmp_path / "wordcount.log"  # a file, not a pipe nobody drains: Streams logs a lot
    app = subprocess.Popen([JAVA, f"-Djava.io.tmpdir={tmp_path}", "-cp", classpath("streams"), str(source)],
                           stdout=subprocess.DEVNULL, stderr=log.open("w"))
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "readme-word-counts",
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    try:
        consumer.subscribe(["word-counts"])
        counts: dict[str, int] = {}
        want = {"to": 2, "be": 2, "or": 1, "not": 1, "that": 1, "is": 1, "the": 1, "question": 1}
        deadline = time.monotonic() + 120
        while counts != want:
            assert app.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, f"word counts {counts} never became {want}"
            for m in consumer.consume(100, 0.2):
                if m.error() is None:
                    counts[m.key().decode()] = struct.unpack(">q", m.value())[0]
    finally:
        consumer.close()
        app.send_signal(signal.SIGTERM)
        try:
            app.wait(60)
        except subprocess.TimeoutExpired:
            app.kill()
            app.wait()
    assert app.returncode == 128 + signal.SIGTERM  # the JVM's exit on SIGTERM, after the hook closed Streams


def test_kafka_cli_tools(broker: BrokerProcess, tmp_path: Path) -> None:
    # Each script of the README becomes a shell function running its class, as bin/ does.
    functions = "".join(
        f"{script}() {{ {' '.join(java_command('tools', main))} \"$@\"; }}\n" for script, main in SCRIPTS.items())
    script = tmp_path / "readme.sh"
    script.write_text("set -euo pipefail\n" + functions + snippet("sh", "kafka-topics.sh").replace(ADDRESS, broker.bootstrap))
    result = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=240, check=False,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "Created topic payments." in out
    assert sorted(re.findall(r"^(p-\d)\t(.*)$", out, re.M)) == [("p-1", "10 EUR"), ("p-2", "20 EUR")], out
    # Both keys hash (murmur2, in the client) to partition 0; the consumer committed its
    # position in both partitions: PARTITION, CURRENT-OFFSET, LOG-END-OFFSET, LAG.
    rows = [line.split() for line in out.splitlines() if line.startswith("payments-audit ")]
    assert sorted((r[1], r[2], r[3], r[4], r[5]) for r in rows) == [
        ("payments", "0", "2", "2", "0"), ("payments", "1", "0", "0", "0")], out
    assert "Completed updating config for topic payments." in out
    assert [line for line in out.splitlines() if line.startswith("payments:")] == ["payments:0:2", "payments:1:0"], out


def test_kafkajs(broker: BrokerProcess, tmp_path: Path) -> None:
    modules = REPO / "tests" / "node" / "node_modules"
    if not (modules / "kafkajs").is_dir():
        raise RuntimeError("kafkajs is not installed: `make test` (target `node`) runs npm ci in tests/node")
    (tmp_path / "node_modules").symlink_to(modules)  # what an `npm install kafkajs` beside it gives
    program = tmp_path / "orders.mjs"
    program.write_text(snippet("js", "kafkajs").replace(ADDRESS, broker.bootstrap))
    env = {**os.environ, "KAFKAJS_NO_PARTITIONER_WARNING": "1"}
    result = subprocess.run([shutil.which("node") or "node", str(program)], capture_output=True, text=True,
                            timeout=120, env=env, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert "order-1=created" in lines and "order-4=packed" in lines, result.stdout
