"""What a broker loads only when it is first needed, seen in its own process maps: the
CRC-32C extension at the first batch it checks, the compression codecs (cramjam) at the first
batch whose records it must read (a compacted topic's keys; a batch it only stores, it never
inflates). A broker serving Metadata alone pays for neither (start time, RSS). The group,
transaction and SCRAM code load with the first request that needs them, seen in the broker's
own import log."""

from __future__ import annotations

import os
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

from asyncbroker.testing import BrokerProcess
from asyncbroker.testing.broker import free_port_block
from test_kcat import kcat
from wait_for import wait_until

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess(["num.partitions=1"]) as b:
        yield b


def loaded(broker: BrokerProcess, package: str) -> bool:
    """Whether the broker process has mapped an extension module of `package`."""
    assert broker.process is not None
    maps = Path(f"/proc/{broker.process.pid}/maps").read_text()
    return f"/site-packages/{package}/" in maps


def produce(bootstrap: str, topic: str, **conf: object) -> None:
    p = Producer({"bootstrap.servers": bootstrap, **conf})
    p.produce(topic, key=b"k", value=b"v" * 100)
    assert p.flush(30) == 0


def test_codecs_and_crc_load_at_their_first_use(broker: BrokerProcess) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic("compacted", 1, 1, config={"cleanup.policy": "compact"})]).values():
        future.result(timeout=30)
    assert not loaded(broker, "cramjam") and not loaded(broker, "crc32c")
    produce(broker.bootstrap, "plain", **{"compression.type": "none"})
    assert loaded(broker, "crc32c") and not loaded(broker, "cramjam")
    produce(broker.bootstrap, "compacted", **{"compression.type": "gzip"})
    assert loaded(broker, "cramjam")


def mapped(broker: BrokerProcess, fragment: str) -> bool:
    """Whether any file whose path contains `fragment` is mapped into the broker process."""
    assert broker.process is not None
    return fragment in Path(f"/proc/{broker.process.pid}/maps").read_text()


def test_the_cleaner_stack_loads_with_its_first_worker() -> None:
    """An idle broker has neither multiprocessing's shared memory (ctypes) nor the cleaner's
    offset-map extension, nor the idna codec's tables (unicodedata) that binding a listener by
    a str host name would bring. A compacted log with something to clean starts the worker."""
    settings = ["num.partitions=1", "log.cleaner.backoff.ms=50", "log.cleaner.min.cleanable.ratio=0.01"]
    with BrokerProcess(settings) as b:
        assert not mapped(b, "/_ctypes.") and not mapped(b, "/cleaner/_offset_map")
        assert not mapped(b, "/unicodedata.")
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        topic = NewTopic("compacted", 1, 1, config={"cleanup.policy": "compact", "segment.bytes": "1048576"})
        admin.create_topics([topic])["compacted"].result(timeout=30)
        p = Producer({"bootstrap.servers": b.bootstrap})
        for i in range(130):  # 1.3 MB: the first (smallest allowed) segment rolls
            p.produce("compacted", key=b"k%d" % (i % 4), value=b"v" * 10_240)
        assert p.flush(30) == 0
        wait_until(lambda: "cleaned log compacted-0" in b.output(), timeout=60, message="no clean of compacted-0")
        assert mapped(b, "/_ctypes.")


def _descendants(pid: int) -> list[str]:
    """Command lines of the processes below `pid` (the forkserver is a child, workers its children)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parents[int(entry)] = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        for child, p in parents.items():
            if p == parent:
                frontier.append(child)
                try:
                    found.append(Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode())
                except OSError:
                    continue
    return found


def test_a_consumer_group_starts_no_cleaner() -> None:
    """A group's first offset commit creates __consumer_offsets, a compacted topic. With nothing
    to clean (its 100 MB segments seldom roll) the cleaner does not start: the broker loads none
    of it, starts no worker, no forkserver and no resource tracker (some 20 MB each), and loads
    no multiprocessing."""
    from confluent_kafka import TopicPartition

    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    with BrokerProcess(["num.partitions=1"], env=env) as broker:
        produce(broker.bootstrap, "grouped")
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "lazy", "enable.auto.commit": False})
        try:
            c.commit(offsets=[TopicPartition("grouped", 0, 1)], asynchronous=False)
            assert c.committed([TopicPartition("grouped", 0)], timeout=30)[0].offset == 1
        finally:
            c.close()
        produce_and_wait_for_the_log(broker, "after-the-group")
        assert "Created internal topic __consumer_offsets" in broker.output()
        assert not {name for name in imported(broker) if name.startswith("cleaner.")}
        assert "Started log cleaner" not in broker.output()
        assert broker.process is not None
        assert _descendants(broker.process.pid) == []
        assert not mapped(broker, "/_ctypes.") and not mapped(broker, "/_multiprocessing.")


def test_the_web_console_loads_only_with_console_port(broker: BrokerProcess) -> None:
    """aiohttp (and its C parser) and Jinja2's MarkupSafe speedups are mapped only by a broker
    started with --console-port: a plain start pays for neither."""
    assert not loaded(broker, "aiohttp") and not loaded(broker, "markupsafe")
    with BrokerProcess(["num.partitions=1"], console=True) as with_console:
        assert loaded(with_console, "aiohttp") and loaded(with_console, "markupsafe")


# Installed as the broker's sitecustomize: aiohttp's module body waits until the gate file exists,
# after leaving a file that says it got there. It waits in exec_module, where a real import spends
# its time, holding aiohttp's own module lock only (a finder's find_spec runs under the global
# import lock, which would stop every other thread's imports too).
IMPORT_GATE = """
import importlib.abc, importlib.util, os, sys, time

class _Gate(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "aiohttp":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run_body = spec.loader.exec_module

        def exec_module(module):
            gate = os.environ["BROKER_TEST_IMPORT_GATE"]
            open(gate + ".reached", "w").close()
            deadline = time.monotonic() + 60
            while not os.path.exists(gate) and time.monotonic() < deadline:
                time.sleep(0.01)
            run_body(module)

        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, _Gate())
"""


def test_the_broker_answers_while_the_web_console_loads(tmp_path: Path) -> None:
    """--console-port loads aiohttp and Jinja2 (about 0.3 s here) once the listener serves, off
    the event loop: a client's first answers do not wait for them. Here the console's import of
    aiohttp is held at a gate; Metadata and a Produce are answered meanwhile, and the console
    comes up once the gate opens."""
    from confluent_kafka.admin import AdminClient

    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(IMPORT_GATE)
    gate = tmp_path / "gate"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASYNCBROKER_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(shim), env.get("PYTHONPATH", "")) if p)
    env["BROKER_TEST_IMPORT_GATE"] = str(gate)
    console_port = free_port_block(1)
    with BrokerProcess(["num.partitions=1"], log_dir=tmp_path / "logs", env=env,
                       serve_args=["--console-port", str(console_port), "--console-host", "127.0.0.1"]) as b:
        wait_until(lambda: (tmp_path / "gate.reached").exists(), timeout=30,
                   message="the broker never began loading the console")
        topics = AdminClient({"bootstrap.servers": b.bootstrap}).list_topics(timeout=10)
        assert topics.brokers, "no Metadata answer while the console loads"
        produce(b.bootstrap, "while-loading")
        assert "Web console listening" not in b.output()  # the gate held it all along
        gate.touch()
        wait_until(lambda: "Web console listening" in b.output(), timeout=30, message="the console never came up")
        with urllib.request.urlopen(f"http://127.0.0.1:{console_port}/", timeout=10) as page:
            assert page.status == 200


def imported(broker: BrokerProcess) -> set[str]:
    """The modules the broker has imported so far, from its import log (PYTHONPROFILEIMPORTTIME)."""
    return {line.rsplit("|", 1)[1].strip() for line in broker.output().splitlines()
            if line.startswith("import time:") and "|" in line}


def produce_and_wait_for_the_log(broker: BrokerProcess, topic: str, **conf: object) -> None:
    """Produce to `topic` (a producer of `conf`); return once the broker's log shows all the
    Produce imported. The log reaches the test through a reader thread: a line the broker
    writes after the Produce was answered (a second topic's creation) shows that it has caught
    up."""
    produce(broker.bootstrap, topic, **conf)
    produce(broker.bootstrap, f"{topic}-barrier")
    wait_until(lambda: f"Auto-created topic {topic}-barrier" in broker.output(), timeout=30,
               message="the broker never logged the second topic's creation")


def kio_modules(broker: BrokerProcess) -> set[str]:
    """The kio modules the broker has imported (kio holds some 2 MB once loaded)."""
    return {name for name in imported(broker) if name == "kio" or name.startswith("kio.")}

COORDINATORS = {"asyncbroker.group_coordinator", "asyncbroker.transaction_coordinator",
                "asyncbroker.share_partition_manager", "asyncbroker.scram_credentials"}


def test_coordinators_load_with_their_first_request(tmp_path: Path) -> None:
    # (importlib.import_module, which loads the handler modules, leaves no line in this log:
    # tests/unit/asyncbroker/test_handler_registry.py checks those.)
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    with BrokerProcess(["num.partitions=1"], log_dir=tmp_path, env=env) as b:
        produce_and_wait_for_the_log(b, "plain")
        assert not COORDINATORS & imported(b)

        consumer = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "g", "auto.offset.reset": "earliest",
                             "enable.auto.commit": False})
        try:
            consumer.subscribe(["plain"])
            message = wait_until(lambda: consumer.poll(0.5), timeout=60, message="nothing consumed")
            consumer.commit(message=message, asynchronous=False)
        finally:
            consumer.close()
        assert "asyncbroker.group_coordinator" in imported(b)
        assert "asyncbroker.transaction_coordinator" not in imported(b)
        # Every request of a producer and a classic consumer group has a hand-written codec:
        # kio is not loaded (the log sees its imports).
        assert not kio_modules(b)

        # An idempotent producer's id needs no transaction coordinator (nor in Kafka), and its
        # InitProducerId has a hand-written codec too.
        produce_and_wait_for_the_log(b, "idempotent", **{"enable.idempotence": True})
        assert "asyncbroker.transaction_coordinator" not in imported(b)
        assert not kio_modules(b)

        producer = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "t"})
        producer.init_transactions(30)
        assert "asyncbroker.transaction_coordinator" in imported(b)
        assert "asyncbroker.scram_credentials" not in imported(b)

    # The internal topics exist now: their coordinators load at startup, as Kafka loads the
    # partitions it leads (expirations and pending transactions go on without a request).
    with BrokerProcess(["num.partitions=1"], log_dir=tmp_path, env=env) as again:
        wait_until(lambda: {"asyncbroker.group_coordinator", "asyncbroker.transaction_coordinator"} <= imported(again),
                   timeout=30, message="coordinators not loaded at startup")


KIP848_AND_SHARE = {"asyncbroker.consumer_group_manager", "asyncbroker.share_group_manager",
                    "asyncbroker.share_coordinator", "asyncbroker.share_partition_manager", "xxhash"}
SHARE = {name for name in KIP848_AND_SHARE if "share" in name}


def consume_one(bootstrap: str, group: str, topic: str, **conf: object) -> None:
    """One record through a consumer of `group`, committed, then the consumer closed."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, **conf})
    try:
        consumer.subscribe([topic])
        message = wait_until(lambda: consumer.poll(0.5), timeout=60, message="nothing consumed")
        consumer.commit(message=message, asynchronous=False)
    finally:
        consumer.close()


def test_group_managers_load_with_the_first_group_of_their_kind(tmp_path: Path) -> None:
    """A classic group (librdkafka's and the Java client's default) loads none of KIP-848's or
    KIP-932's managers (asyncbroker.lazy_group_manager), and no kio (its requests have
    hand-written codecs): together some 3 MB of a broker's memory. A consumer-protocol group
    loads its manager, and so does loading one back from `__consumer_offsets`."""
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    with BrokerProcess(["num.partitions=1"], log_dir=tmp_path, env=env) as b:
        produce_and_wait_for_the_log(b, "plain")
        consume_one(b.bootstrap, "classic", "plain")
        assert "asyncbroker.group_coordinator" in imported(b)
        assert not KIP848_AND_SHARE & imported(b) and not kio_modules(b)

        consume_one(b.bootstrap, "kip848", "plain", **{"group.protocol": "consumer"})
        assert "asyncbroker.consumer_group_manager" in imported(b)
        assert not SHARE & imported(b)

    with BrokerProcess(["num.partitions=1"], log_dir=tmp_path, env=env) as again:
        wait_until(lambda: "asyncbroker.consumer_group_manager" in imported(again), timeout=30,
                   message="the consumer-protocol group's manager did not load with __consumer_offsets")
        wait_until(lambda: "Loaded 2 group(s)" in again.output(), timeout=30,
                   message="the two groups were not loaded back")
        assert not SHARE & imported(again)


def test_producing_and_reading_by_offset_never_load_kio(tmp_path: Path) -> None:
    """A client's first requests (ApiVersions, Metadata, which creates the topic, Produce, and a
    Fetch from an offset it names, or from the beginning or end, which ListOffsets finds) are read
    and answered by the hand-written codecs: kio, about 12 ms of a start and more for each API's
    schemas, stays unloaded until a request that needs it comes (here an admin's CreateTopics)."""
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    with BrokerProcess(["num.partitions=1"], log_dir=tmp_path, env=env) as b:
        produce_and_wait_for_the_log(b, "plain")
        # kcat without a group: a simple consumer, reading from offset 0 (Debian's kcat 1.7.1 also
        # reads the ApiVersions v3 answer its librdkafka 2.0.2 misreads some tags of).
        assert kcat(b.bootstrap, "-C", "-t", "plain", "-p", "0", "-o", "0", "-c", "1", "-e", "-q") == "v" * 100 + "\n"
        assert kcat(b.bootstrap, "-C", "-t", "plain", "-p", "0", "-o", "beginning", "-c", "1", "-e", "-q") \
            == "v" * 100 + "\n"
        assert kcat(b.bootstrap, "-C", "-t", "plain", "-p", "0", "-o", "-1", "-c", "1", "-e", "-q") \
            == "v" * 100 + "\n"  # (one before the end: ListOffsets for the latest offset)
        assert not kio_modules(b)
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic("created", 1, 1)])["created"].result(timeout=30)
        wait_until(lambda: any(n.startswith("kio.schema.create_topics.") for n in imported(b)), timeout=30,
                   message="CreateTopics did not load its kio schema")


def loaded_modules(broker: BrokerProcess) -> set[str]:
    """The modules the broker has loaded so far, from its verbose import log (PYTHONVERBOSE):
    unlike PYTHONPROFILEIMPORTTIME's, it shows no line for an import that failed."""
    return set(re.findall(r"^import '([\w.]+)' #", broker.output(), re.M))


def test_msgspec_is_loaded_without_typing_extensions(tmp_path: Path) -> None:
    """msgspec reads annotations with typing's get_type_hints in the broker, not with
    typing_extensions' (0.4 MB of an idle broker): a producer and a consumer group are served
    without it. It is not barred: kio, loaded by an admin request, loads it, and the broker
    serves on."""
    env = {**os.environ, "PYTHONVERBOSE": "1"}
    with BrokerProcess(["num.partitions=1"], log_dir=tmp_path, env=env) as b:
        produce_and_wait_for_the_log(b, "plain")
        consume_one(b.bootstrap, "classic", "plain")
        assert "msgspec" in loaded_modules(b) and "typing_extensions" not in loaded_modules(b)
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic("created", 1, 1)])["created"].result(timeout=30)
        wait_until(lambda: "typing_extensions" in loaded_modules(b), timeout=30,
                   message="kio's import of typing_extensions did not show")
        produce(b.bootstrap, "created")
        consume_one(b.bootstrap, "classic", "created")


def alter(bootstrap: str, kind: str, name: str, key: str, value: str) -> None:
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    resource = ConfigResource(kind, name, incremental_configs=[
        ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)])
    admin = AdminClient({"bootstrap.servers": bootstrap})  # alive until its answer: its futures need it
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=30)


CLEANER_STARTED = "Started log cleaner"


def test_the_cleaner_starts_with_its_first_work(tmp_path: Path) -> None:
    """The cleaner starts once a compacted log has a segment before its active one, the only
    kind it cleans. A broker with no compacted log has not imported it, nor some stdlib modules
    it does not use; nor has one whose compacted log holds only its active segment (as a new
    __consumer_offsets partition does for long: its segments are 100 MB). That log's roll starts
    it; so does a topic that has rolled altered to compact, such a log found at startup, and the
    broker's defaults altered to compact (every topic without its own cleanup.policy is then
    compacted). log.roll.ms=1: each produce after the first rolls."""
    from confluent_kafka.admin import AdminClient, NewTopic

    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    with BrokerProcess(["num.partitions=1", "log.roll.ms=1"], log_dir=tmp_path / "topic", env=env) as b:
        produce(b.bootstrap, "plain")
        produce_and_wait_for_the_log(b, "plain")  # a second segment
        assert "cleaner.log_cleaner_manager" not in imported(b) and CLEANER_STARTED not in b.output()
        # Nor has it imported shutil (argparse's help formatter would, for the terminal's width;
        # it brings bz2 and lzma) or random (only a segment.jitter.ms draws from it).
        assert not {"shutil", "bz2", "lzma", "random"} & imported(b)
        alter(b.bootstrap, "topic", "plain", "cleanup.policy", "compact")
        wait_until(lambda: CLEANER_STARTED in b.output(), timeout=30, message="the cleaner did not start")
        assert "cleaner.log_cleaner_manager" in imported(b)

    with BrokerProcess(["num.partitions=1"], log_dir=tmp_path / "topic") as b:
        wait_until(lambda: CLEANER_STARTED in b.output(), timeout=30,
                   message="a compacted log on disk did not start the cleaner")

    with BrokerProcess(["num.partitions=1", "log.roll.ms=1"], log_dir=tmp_path / "compacted") as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        for future in admin.create_topics([NewTopic("compacted", 1, 1, config={"cleanup.policy": "compact"})]).values():
            future.result(timeout=30)
        produce_and_wait_for_the_log(b, "compacted")  # its active segment only
        assert CLEANER_STARTED not in b.output()
        produce(b.bootstrap, "compacted")
        wait_until(lambda: CLEANER_STARTED in b.output(), timeout=30,
                   message="the compacted log's roll did not start the cleaner")

    with BrokerProcess(["num.partitions=1", "log.roll.ms=1"], log_dir=tmp_path / "defaults") as b:
        produce(b.bootstrap, "plain")
        produce_and_wait_for_the_log(b, "plain")
        assert CLEANER_STARTED not in b.output()
        alter(b.bootstrap, "broker", "1", "log.cleanup.policy", "compact")  # this node's default
        wait_until(lambda: CLEANER_STARTED in b.output(), timeout=30,
                   message="compacting defaults did not start the cleaner")
