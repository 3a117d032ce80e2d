"""Tiered storage (KIP-405) compared with Kafka 4.4.

Both brokers of the `tiered_brokers` pair run their RemoteLogManager every 500 ms with a
local directory as the remote tier, laid out alike (storage/local_tiered_storage.py and
tests/jvm/rsm's plugin for Kafka): `<topic>-<partition>-<topic id>/<start offset, 20
digits>-<segment id>.<suffix>`. So besides what clients see (CreateTopics and config
answers, ListOffsets -2/-4/-5/-1/-3 and by timestamp, Fetch below the local log start,
DeleteRecords, retention) the scenarios compare the remote tiers themselves: the segments'
start offsets, the files each one has and their contents (segment ids are random on both
sides; the segments hold the same batches, indexes, producer snapshot and leader-epoch slice).

The segments are small and rolled by size: `internal.segment.bytes` (Kafka 4.4's topic config
"for testing only", with no lower bound; segment.bytes stays at least 1 MiB) is 10,000, and
every batch of these scenarios is 10 records of 400-byte values (4,211 bytes on disk), so a
segment holds two batches, 20 offsets. With `local.retention.bytes=1` each rolled segment is
deleted locally once it is copied, and the active one stays: 20 batches end with segments
[0, 20), ... [160, 180) remote and [180, 200) local, which is the state the scenarios wait
for (ListOffsets -4 at 180) before they record anything. Kafka takes about 2 s to get there.

Record timestamps are T0 + one minute per batch: T0 is two hours before the current hour began,
so retention.ms can be set to cut between two segments whatever the time of day.

Kafka alone: `pytest tests/oracle/test_tiered_storage.py --kafka-only` (and ORACLE_TRANSCRIPTS=<dir>
to keep what it answered).
"""

from __future__ import annotations

import re
import time
import uuid
import zlib
from pathlib import Path
from typing import Any

import pytest

import txn_steps as ts
from admin_steps import TOPIC, SET, DELETE, alter_configs, create_topics, creatable, describe_configs, describe_log_dirs, \
    incremental_alter_configs, wait_for_topic_config
from differential import BASE_TIMESTAMP, ScenarioRun, batch
from logs_steps import delete_records, list_offset, read_all
from steps import create_topic, fetch, list_offsets, produce
from storage.partition_metadata import uuid_to_base64

pytestmark = pytest.mark.timeout(300)

MINUTE = 60_000
T0 = BASE_TIMESTAMP - 2 * 3_600_000
TIERED = {"remote.storage.enable": "true", "internal.segment.bytes": "10000", "local.retention.bytes": "1"}
BATCHES = 20  # 200 offsets: ten segments, nine of them remote once tiered
LOCAL_START = 180
EARLIEST, LATEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -2, -1, -3, -4, -5
TIER_TIMEOUT = 60.0


# -- records ------------------------------------------------------------------------------------


def rows(n: int) -> list[tuple[bytes, bytes]]:
    """Batch n's records: keys b<n>-k<j>, 400-byte values that name the batch and record."""
    return [(f"b{n:02d}-k{j}".encode(), (f"batch {n:02d} record {j} ".encode() * 23)[:400]) for j in range(10)]


def tiered_batch(n: int, *, minute: int | None = None) -> bytes:
    """Batch n, stamped T0 + n minutes (or + `minute` minutes), records 1 ms apart."""
    return batch(rows(n), base_timestamp=T0 + (n if minute is None else minute) * MINUTE)


def produce_batches(run: ScenarioRun, symbol: str, numbers: range, *, partition: int = 0,
                    minutes: dict[int, int] | None = None) -> None:
    """One Produce per batch, its base offset noted (not the whole answer: its log_start_offset
    moves whenever a retention task happens to run between two Produces)."""
    bases: list[Any] = []
    for n in numbers:
        data = tiered_batch(n, minute=(minutes or {}).get(n))
        p = produce(run, symbol, {partition: data}, record=False).responses[0].partition_responses[0]
        assert p.error_code.value == 0 or run.broker != "kafka", f"kafka: produce batch {n}: {p.error_code.name}"
        bases.append(p.base_offset if p.error_code.value == 0 else p.error_code.name)
    run.note(f"produce {symbol}-{partition} batches {numbers.start}..{numbers.stop - 1}: base offsets", bases)


REQUEST_TIMED_OUT = 7


def remote_lookups_answered(run: ScenarioRun, symbol: str, timestamps: tuple[int, ...]) -> bool:
    """Whether ListOffsets by each of `timestamps` (partition 0) comes back without
    REQUEST_TIMED_OUT, unrecorded. Kafka looks a timestamp up in the remote tier on its
    remote-reader threads and, under load (seen once in CI), answers that retriable error, which
    clients ask again after; a lookup that was answered leaves its remote indexes cached."""
    return all(list_offsets(run, symbol, [(0, ts)], record=False).topics[0].partitions[0].error_code.value
               != REQUEST_TIMED_OUT for ts in timestamps)


def wait_for(run: ScenarioRun, what: str, condition: Any, timeout: float = TIER_TIMEOUT) -> None:
    """Wait (unrecorded) for a state of the background tasks, then note that it was reached. On
    asyncbroker a timeout is noted instead, so the transcripts show where the two diverge; after
    one, later waits of the run only look once (the test fails anyway, and sooner)."""
    started = time.monotonic()
    diverged = getattr(run, "tiered_wait_failed", False)
    try:
        run.wait_until(condition, what, timeout=0 if diverged else timeout)
    except AssertionError:
        if run.broker == "kafka":
            raise
        run.tiered_wait_failed = True  # type: ignore[attr-defined]
        run.note(f"reached: {what}", False)
        return
    run.note(f"reached: {what}", True)
    if run.broker == "kafka":
        print(f"kafka reached {what!r} in {time.monotonic() - started:.2f}s")


def wait_tiered(run: ScenarioRun, symbol: str, local_start: int, partition: int = 0) -> None:
    wait_for(run, f"{symbol}-{partition} remote below {local_start}, local from it",
             lambda: list_offset(run, symbol, EARLIEST_LOCAL, partition) == local_start)


# -- the remote tier's files ---------------------------------------------------------------------

_REMOTE_FILE = re.compile(r"^(\d{20})-([A-Za-z0-9_-]{22})\.(log|index|timeindex|txnindex|snapshot|"
                          r"leader_epoch_checkpoint)$")


def remote_partition_dir(root: Path, run: ScenarioRun, symbol: str, partition: int) -> Path | None:
    """<topic>-<partition>-<topic id>, or None while the run knows no id for the topic."""
    try:
        topic_id = run.topic_id(symbol)
    except KeyError:
        return None
    return root / f"{run.topic(symbol)}-{partition}-{uuid_to_base64(topic_id)}"


def remote_segments(root: Path, run: ScenarioRun, symbol: str, partition: int = 0) -> dict[int, dict[str, Path]]:
    """start offset -> {suffix: file} of the partition's directory in the remote tier; asserts
    every name has the layout and that one start offset has one segment id."""
    directory = remote_partition_dir(root, run, symbol, partition)
    if directory is None or not directory.is_dir():
        return {}
    segments: dict[int, dict[str, Path]] = {}
    ids: dict[int, set[str]] = {}
    for path in directory.iterdir():
        m = _REMOTE_FILE.match(path.name)
        assert m is not None, f"{run.broker}: unexpected file in the remote tier: {path}"
        start = int(m.group(1))
        segments.setdefault(start, {})[m.group(3)] = path
        ids.setdefault(start, set()).add(m.group(2))
    assert all(len(v) == 1 for v in ids.values()), f"{run.broker}: several segment ids at one offset: {ids}"
    return {start: dict(sorted(files.items())) for start, files in sorted(segments.items())}


def _file_view(path: Path, contents: bool) -> Any:
    data = path.read_bytes()
    if not contents:
        return len(data)
    if path.suffix == ".leader_epoch_checkpoint":
        return data.decode()  # "0\n<entries>\n<epoch> <start offset>\n...": Kafka's checkpoint text
    return f"{len(data)} bytes, crc32 {zlib.crc32(data):08x}"


def note_remote_tier(run: ScenarioRun, root: Path, symbol: str, partitions: tuple[int, ...] = (0,),
                     label: str = "remote tier", contents: bool = True) -> None:
    """The remote tier of this run's topic: its partition directories, and per partition each
    segment's start offset and files, with their contents (size and crc32; the leader-epoch
    checkpoint as text: the segments hold the same batches on both brokers, and their indexes,
    producer snapshots and epochs are Kafka's formats) or, without `contents`, their sizes (a
    transaction's files carry its producer id and its marker the broker's clock)."""
    prefix = run.topic(symbol) + "-"
    others = sorted(p.name[len(prefix):].split("-")[0] for p in root.iterdir() if p.name.startswith(prefix)) \
        if root.is_dir() else []
    run.note(f"{label}: {symbol} partition directories", others)
    for p in partitions:
        run.note(f"{label}: {symbol}-{p} segments",
                 [[start, {suffix: _file_view(path, contents) for suffix, path in files.items()}]
                  for start, files in remote_segments(root, run, symbol, p).items()])


def remote_starts(root: Path, run: ScenarioRun, symbol: str, partition: int = 0) -> list[int]:
    """Start offsets of the segments with any file left in the remote tier. A deletion removes a
    segment's files one by one, its .log first (in both brokers' storage managers): waiting for
    the .log alone let note_remote_tier catch a deleted segment's indexes still there."""
    return list(remote_segments(root, run, symbol, partition))


# -- recorded reads ------------------------------------------------------------------------------


def offsets(run: ScenarioRun, symbol: str, label: str, partition: int = 0,
            targets: tuple[int, ...] = (EARLIEST, EARLIEST_LOCAL, LATEST_TIERED, LATEST)) -> None:
    """ListOffsets v9, one request per target (a request names a partition once)."""
    names = {EARLIEST: "earliest", LATEST: "latest", MAX_TIMESTAMP: "max timestamp", EARLIEST_LOCAL: "earliest local",
             LATEST_TIERED: "latest tiered"}
    for t in targets:
        list_offsets(run, symbol, [(partition, t)], label=f"{label}: ListOffsets {names.get(t, t)} {symbol}-{partition}")


def note_reading(run: ScenarioRun, label: str, read: Any) -> None:
    """Note what `read()` returns; on asyncbroker a failed read is noted instead (it fails the
    comparison at this step, with what Kafka read beside it)."""
    try:
        value = read()
    except (AssertionError, ConnectionError, TimeoutError) as exc:
        if run.broker == "kafka":
            raise
        value = f"<failed: {exc}>"
    run.note(label, value)


def digest(records: list[tuple[int, bytes | None, bytes | None, int | None]]) -> list[list[Any]]:
    """[offset, key, value length and crc32, timestamp] per record: what a reader saw, compactly."""
    return [[o, k.decode() if k is not None else None,
             None if v is None else f"{len(v)}:{zlib.crc32(v):08x}", t] for o, k, v, t in records]


def consume_all(run: ScenarioRun, symbol: str, partition: int, count: int, timeout: float = 30.0) -> list[Any]:
    """Every record from offset 0 with confluent-kafka (librdkafka's fetcher), up to `count`."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": run.bootstrap, "group.id": f"tiered-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "fetch.max.bytes": 1_048_576, "max.partition.fetch.bytes": 1_048_576})
    out: list[tuple[int, bytes | None, bytes | None, int | None]] = []
    try:
        consumer.assign([TopicPartition(run.topic(symbol), partition, 0)])
        deadline = time.monotonic() + timeout
        while len(out) < count and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise AssertionError(f"{run.broker}: confluent-kafka: {m.error()}")
            out.append((m.offset(), m.key(), m.value(), m.timestamp()[1]))
    finally:
        consumer.close()
    return digest(out)


# -- a: tiered topic configs ---------------------------------------------------------------------


def test_tiered_topic_config_validation(tiered_brokers) -> None:  # type: ignore[no-untyped-def]
    """What Kafka 4.4 refuses of a tiered topic's configs, at creation and on alter: compaction,
    local retention above retention (ms and bytes, -1 under a finite one), turning remote storage
    off without remote.log.delete.on.disable=true (by SET, by DELETE, by AlterConfigs' full
    replacement), copy disabled with local.retention.ms unlike retention.ms. What it accepts:
    the same rules do not apply to a topic that is not tiered; enabling on a plain topic; turning
    off with the delete flag and on again."""
    R = {"remote.storage.enable": "true"}
    creations = [
        ("compact", {**R, "cleanup.policy": "compact"}),
        ("compact,delete", {**R, "cleanup.policy": "compact,delete"}),
        ("empty cleanup.policy", {**R, "cleanup.policy": ""}),
        ("local.retention.ms above retention.ms", {**R, "retention.ms": "1000", "local.retention.ms": "2000"}),
        ("local.retention.ms -1 under a finite retention.ms", {**R, "retention.ms": "1000", "local.retention.ms": "-1"}),
        ("local.retention.ms above the default retention.ms", {**R, "local.retention.ms": "700000000"}),
        ("local.retention.ms under unlimited retention.ms", {**R, "retention.ms": "-1", "local.retention.ms": "2000"}),
        ("not tiered: local.retention.ms above retention.ms", {"retention.ms": "1000", "local.retention.ms": "2000"}),
        ("local.retention.bytes above retention.bytes", {**R, "retention.bytes": "1000", "local.retention.bytes": "2000"}),
        ("local.retention.bytes -1 under a finite retention.bytes",
         {**R, "retention.bytes": "1000", "local.retention.bytes": "-1"}),
        ("local.retention.bytes under unlimited retention.bytes",
         {**R, "retention.bytes": "-1", "local.retention.bytes": "2000"}),
        ("local.retention.ms -3", {**R, "local.retention.ms": "-3"}),
        ("remote.storage.enable=yes", {"remote.storage.enable": "yes"}),
        ("copy disabled", {**R, "remote.log.copy.disable": "true"}),
        ("copy disabled, local.retention.ms unlike retention.ms",
         {**R, "remote.log.copy.disable": "true", "retention.ms": "5000", "local.retention.ms": "1000"}),
        ("copy disabled, local.retention.ms as retention.ms",
         {**R, "remote.log.copy.disable": "true", "retention.ms": "5000", "local.retention.ms": "5000"}),
        ("delete on disable, not tiered", {"remote.storage.enable": "false", "remote.log.delete.on.disable": "true"}),
        ("internal.segment.bytes", {**R, "internal.segment.bytes": "10000"}),
    ]

    def scenario(run: ScenarioRun) -> None:
        create_topics(run, [creatable(run, "v", configs=R)], validate_only=True, label="create tiered, validate only")
        for i, (label, configs) in enumerate(creations):
            create_topics(run, [creatable(run, f"c{i}", configs=configs)], label=f"create: {label}")

        create_topic(run, "t", configs=R, record=False)
        create_topic(run, "p", record=False)
        refused = [
            ("turn off", [("remote.storage.enable", SET, "false")]),
            ("turn off by DELETE", [("remote.storage.enable", DELETE, None)]),
            ("turn off, copy disabled", [("remote.storage.enable", SET, "false"), ("remote.log.copy.disable", SET, "true")]),
            ("compact", [("cleanup.policy", SET, "compact")]),
            ("local.retention.ms above the default retention.ms", [("local.retention.ms", SET, "999999999999")]),
            ("local.retention.ms above retention.ms", [("retention.ms", SET, "1000"), ("local.retention.ms", SET, "2000")]),
            ("local.retention.bytes above retention.bytes",
             [("retention.bytes", SET, "1000"), ("local.retention.bytes", SET, "2000")]),
        ]
        for label, ops in refused:
            incremental_alter_configs(run, [(TOPIC, "t", ops)], label=label)
        incremental_alter_configs(run, [(TOPIC, "t", [("local.retention.ms", SET, "1000")])], label="local.retention.ms 1000")
        wait_for_topic_config(run, "t", "local.retention.ms", "1000")
        incremental_alter_configs(run, [(TOPIC, "t", [("retention.ms", SET, "500")])],
                                  label="retention.ms under local.retention.ms")
        incremental_alter_configs(run, [(TOPIC, "t", [("remote.log.copy.disable", SET, "true")])],
                                  label="copy disabled, local.retention.ms unlike retention.ms")
        incremental_alter_configs(run, [(TOPIC, "t", [("remote.log.copy.disable", SET, "true"),
                                                      ("local.retention.ms", DELETE, None)])],
                                  label="copy disabled, local.retention.ms back to retention.ms")
        wait_for_topic_config(run, "t", "remote.log.copy.disable", "true")
        incremental_alter_configs(run, [(TOPIC, "t", [("local.retention.ms", SET, "1000")])],
                                  label="copy disabled: local.retention.ms 1000")
        alter_configs(run, [(TOPIC, "t", {})], label="AlterConfigs: no configs")
        alter_configs(run, [(TOPIC, "t", {"remote.storage.enable": "true"})], label="AlterConfigs: tiered only")
        wait_for_topic_config(run, "t", "remote.log.copy.disable", None)
        off = [("remote.storage.enable", SET, "false"), ("remote.log.delete.on.disable", SET, "true")]
        incremental_alter_configs(run, [(TOPIC, "t", off)], validate_only=True, label="turn off with delete, validate only")
        incremental_alter_configs(run, [(TOPIC, "t", off)], label="turn off with delete")
        wait_for_topic_config(run, "t", "remote.storage.enable", "false")
        incremental_alter_configs(run, [(TOPIC, "t", [("remote.storage.enable", SET, "true")])], label="turn on again")
        wait_for_topic_config(run, "t", "remote.storage.enable", "true")
        describe_configs(run, [(TOPIC, "t", ("remote.storage.enable", "remote.log.delete.on.disable",
                                             "remote.log.copy.disable", "local.retention.ms", "local.retention.bytes"))],
                         label="t at the end")

        incremental_alter_configs(run, [(TOPIC, "p", [("remote.storage.enable", SET, "true")])], label="plain topic: turn on")
        wait_for_topic_config(run, "p", "remote.storage.enable", "true")
        incremental_alter_configs(run, [(TOPIC, "p", [("remote.storage.enable", SET, "false")])],
                                  label="plain topic turned on: turn off")

    tiered_brokers.compare(scenario)


# -- b: produce, tier, list offsets, fetch below the local log start ------------------------------


def test_tiered_list_offsets_and_fetch(tiered_brokers) -> None:  # type: ignore[no-untyped-def]
    """200 offsets in ten segments on two partitions; once nine are remote: ListOffsets -2, -4,
    -5, -1, -3 and by timestamp (in remote segments and in the local one); Fetch from remote
    segments (from 0, from inside a batch, with small partition and response limits, both
    partitions in one request) and from the local one; every record read back from 0 by raw
    fetches and by confluent-kafka; and the two remote tiers' files.

    Partition 1's batch 3 (offsets 30..39) is stamped 25 minutes after the others' first: its
    max timestamp is the partition's, in a remote segment."""
    def scenario(run: ScenarioRun) -> None:
        root = tiered_brokers.remote_dir(run.broker)
        create_topic(run, "t", 2, configs=TIERED)
        produce_batches(run, "t", range(BATCHES), partition=0)
        produce_batches(run, "t", range(BATCHES), partition=1, minutes={3: 25})
        for p in (0, 1):
            wait_tiered(run, "t", LOCAL_START, p)
        note_remote_tier(run, root, "t", (0, 1))

        offsets(run, "t", "tiered", 0, (EARLIEST, EARLIEST_LOCAL, LATEST_TIERED, LATEST, MAX_TIMESTAMP))
        offsets(run, "t", "tiered", 1, (MAX_TIMESTAMP,))
        list_offsets(run, "t", [(0, MAX_TIMESTAMP), (1, MAX_TIMESTAMP)], label="max timestamp of both partitions")
        for label, ts_, p in [("the first record's", T0, 0), ("inside remote batch 5", T0 + 5 * MINUTE + 5, 0),
                              ("between remote batches 5 and 6", T0 + 5 * MINUTE + 30_000, 0),
                              ("inside local batch 18", T0 + 18 * MINUTE + 3, 0),
                              ("after every record", T0 + 30 * MINUTE, 0),
                              ("matched first by the late remote batch", T0 + 20 * MINUTE, 1)]:
            list_offsets(run, "t", [(p, ts_)], label=f"by timestamp, {label}")
        for version, target in [(8, EARLIEST_LOCAL), (8, LATEST_TIERED), (7, EARLIEST_LOCAL), (7, LATEST_TIERED)]:
            list_offsets(run, "t", [(0, target)], version=version, label=f"ListOffsets v{version} {target}")

        for offset in (0, 5, 15, 45, 55, 175, 179, 180, 185, 200, 201):
            fetch(run, "t", {0: offset}, label=f"fetch from {offset}")
        fetch(run, "t", {0: 0}, partition_max_bytes=100, label="fetch from 0, partition max bytes 100")
        fetch(run, "t", {0: 0}, partition_max_bytes=5000, label="fetch from 0, partition max bytes 5000")
        fetch(run, "t", {0: 0}, partition_max_bytes=9000, label="fetch from 0, partition max bytes 9000")
        fetch(run, "t", {0: 0}, max_bytes=100, label="fetch from 0, max bytes 100")
        fetch(run, "t", {0: 0}, isolation_level=1, label="fetch from 0, read_committed")
        fetch(run, "t", {0: 0}, version=4, label="fetch v4 from 0")
        fetch(run, "t", {0: 0, 1: 0}, label="fetch both partitions from 0")
        fetch(run, "t", {0: 0, 1: 0}, max_bytes=6000, label="fetch both partitions from 0, max bytes 6000")
        fetch(run, "t", {0: 180, 1: 20}, label="fetch partition 0 locally, partition 1 remotely")

        # DescribeLogDirs: the partition's size is its local log's, the remote part left out.
        describe_log_dirs(run, 4, {"t": (0, 1)})
        note_reading(run, "read back from 0 by fetches",
                     lambda: digest([(r.offset, r.key, r.value, None) for r in read_all(run, "t", 0, 0)]))
        note_reading(run, "read back from 0 by confluent-kafka", lambda: consume_all(run, "t", 0, BATCHES * 10))
        note_reading(run, "partition 1 read back from 0 by confluent-kafka",
                     lambda: consume_all(run, "t", 1, BATCHES * 10))

    # The remote reads cut by a limit after their first batch: Kafka ends them with a piece.
    tiered_brokers.compare(scenario, known={"KD-215": {
        f"{step}:.responses[0].partitions[0].records.trailing_partial_bytes" for step in (37, 43)}})


def test_tiered_aborted_transaction_in_a_remote_segment(tiered_brokers) -> None:  # type: ignore[no-untyped-def]
    """An aborted transaction at the start of what becomes a remote segment: its .txnindex goes to
    the remote tier with it, and a read_committed Fetch from that segment lists the aborted
    transaction as a local one would."""
    def scenario(run: ScenarioRun) -> None:
        root = tiered_brokers.remote_dir(run.broker)
        create_topic(run, "t", configs=TIERED)
        ts.wait_for_coordinator(run)
        p = ts.init(run, "tx")
        aborted = batch(rows(0), base_timestamp=T0, producer_id=p.producer_id, producer_epoch=p.producer_epoch,
                        base_sequence=0, transactional=True)
        ts.send(run, "t", 0, "tx", aborted, version=12, label="transactional batch")
        ts.end_txn(run, "tx", p.producer_id, p.producer_epoch, False)
        ts.wait_for_state(run, "tx", "CompleteAbort")
        # Offsets 0..9 aborted, 10 the marker; then 7 batches: [0, 21), [21, 41), [41, 61) remote.
        produce_batches(run, "t", range(1, 8))
        wait_tiered(run, "t", 61)
        note_remote_tier(run, root, "t", contents=False)
        offsets(run, "t", "tiered")
        for offset in (0, 5, 11, 25):
            ts.read(run, "t", 0, committed=True, offset=offset, label=f"read_committed from {offset}")
            ts.read(run, "t", 0, committed=False, offset=offset, label=f"read_uncommitted from {offset}")
        ts.lso(run, "t", 0, label="last stable offset")

    tiered_brokers.compare(scenario)


def test_tiered_fetch_of_a_corrupt_remote_batch(tiered_brokers) -> None:  # type: ignore[no-untyped-def]
    """The second batch of remote segment [20, 40) declares a length of -12 (on both brokers'
    remote tiers, the same bytes): a Fetch from inside it, and one walking to it, answer what
    Kafka answers for that partition, and the broker goes on serving: a Fetch from the batch
    before it, from the other remote segment and from the local log."""
    def scenario(run: ScenarioRun) -> None:
        root = tiered_brokers.remote_dir(run.broker)
        create_topic(run, "t", configs=TIERED)
        produce_batches(run, "t", range(6))  # [0, 20) and [20, 40) remote, [40, 60) local
        wait_tiered(run, "t", 40)
        path = remote_segments(root, run, "t")[20]["log"]
        with path.open("r+b") as f:
            first_size = 12 + int.from_bytes(f.read(12)[8:], "big")
            f.seek(first_size + 8)
            f.write((-12).to_bytes(4, "big", signed=True))
        for offset in (30, 35, 20, 25, 0, 45):
            fetch(run, "t", {0: offset}, label=f"corrupt batch at 30: fetch from {offset}")
        fetch(run, "t", {0: 30}, isolation_level=1, label="corrupt batch at 30: fetch from 30, read_committed")
        fetch(run, "t", {0: 20}, partition_max_bytes=100, label="corrupt batch at 30: fetch from 20, 100 bytes")

    tiered_brokers.compare(scenario)


# -- c: DeleteRecords and retention on remote segments ---------------------------------------------


def test_tiered_delete_records(tiered_brokers) -> None:  # type: ignore[no-untyped-def]
    """DeleteRecords below the local log start: the log start moves into a remote segment, the
    remote segments wholly below it are deleted (the one containing it stays); then above the
    local log start, which moves too, and every remote segment goes; below the log start and
    past the end."""
    def scenario(run: ScenarioRun) -> None:
        root = tiered_brokers.remote_dir(run.broker)
        create_topic(run, "t", configs=TIERED)
        produce_batches(run, "t", range(BATCHES))
        wait_tiered(run, "t", LOCAL_START)
        delete_records(run, "t", {0: 55}, label="DeleteRecords to 55, in remote segment [40, 60)")
        wait_for(run, "remote segments below 40 deleted", lambda: remote_starts(root, run, "t")[:1] == [40])
        note_remote_tier(run, root, "t", label="after DeleteRecords to 55")
        offsets(run, "t", "after DeleteRecords to 55")
        for offset in (0, 40, 54, 55, 59, 60):
            fetch(run, "t", {0: offset}, label=f"after DeleteRecords to 55: fetch from {offset}")
        wait_for(run, "lookups by timestamp in the remote tier answered in time",
                 lambda: remote_lookups_answered(run, "t", (T0, T0 + 5 * MINUTE + 5)))
        list_offsets(run, "t", [(0, T0)], label="after DeleteRecords to 55: by the first record's timestamp")
        list_offsets(run, "t", [(0, T0 + 5 * MINUTE + 5)], label="after DeleteRecords to 55: by the timestamp of 55")
        delete_records(run, "t", {0: 30}, label="DeleteRecords to 30, below the log start")
        delete_records(run, "t", {0: 185}, label="DeleteRecords to 185, above the local log start")
        wait_for(run, "every remote segment deleted", lambda: remote_starts(root, run, "t") == [])
        note_remote_tier(run, root, "t", label="after DeleteRecords to 185")
        offsets(run, "t", "after DeleteRecords to 185")
        fetch(run, "t", {0: 185}, label="after DeleteRecords to 185: fetch from 185")
        fetch(run, "t", {0: 179}, label="after DeleteRecords to 185: fetch from 179")
        delete_records(run, "t", {0: 201}, label="DeleteRecords past the end")
        delete_records(run, "t", {0: -1}, label="DeleteRecords to the high watermark")
        offsets(run, "t", "after DeleteRecords to the high watermark")

    tiered_brokers.compare(scenario)


def test_tiered_retention_bytes_and_ms(tiered_brokers) -> None:  # type: ignore[no-untyped-def]
    """retention.bytes and retention.ms set on a tiered topic once its segments are remote: both
    delete remote segments, oldest first, and move the log start offset; the local segment stays.

    retention.bytes 40,000 against 84,220 bytes (ten segments of 8,422: nine remote, the local
    active one counted too) leaves five. retention.ms is set at run time to cut 13.5 minutes after
    T0, between segment [120, 140) (last record at T0 + 13 min) and [140, 160)."""
    def scenario(run: ScenarioRun) -> None:
        root = tiered_brokers.remote_dir(run.broker)
        create_topic(run, "t", configs=TIERED)
        produce_batches(run, "t", range(BATCHES))
        wait_tiered(run, "t", LOCAL_START)
        offsets(run, "t", "tiered")
        incremental_alter_configs(run, [(TOPIC, "t", [("retention.bytes", SET, "40000")])], label="retention.bytes 40000")
        wait_for(run, "log start at 100", lambda: list_offset(run, "t", EARLIEST) == 100)
        wait_for(run, "remote segments below 100 deleted", lambda: remote_starts(root, run, "t")[:1] == [100])
        note_remote_tier(run, root, "t", label="after retention.bytes")
        offsets(run, "t", "after retention.bytes")
        fetch(run, "t", {0: 99}, label="after retention.bytes: fetch from 99")
        fetch(run, "t", {0: 100}, label="after retention.bytes: fetch from 100")

        cut = T0 + 13 * MINUTE + 30_000
        retention_ms = time.time_ns() // 1_000_000 - cut  # differs between the runs: requests are not compared
        incremental_alter_configs(run, [(TOPIC, "t", [("retention.ms", SET, str(retention_ms))])],
                                  label="retention.ms to 13.5 minutes after T0")
        wait_for(run, "log start at 140", lambda: list_offset(run, "t", EARLIEST) == 140)
        wait_for(run, "remote segments below 140 deleted", lambda: remote_starts(root, run, "t")[:1] == [140])
        note_remote_tier(run, root, "t", label="after retention.ms")
        offsets(run, "t", "after retention.ms")
        fetch(run, "t", {0: 140}, label="after retention.ms: fetch from 140")
        list_offsets(run, "t", [(0, T0)], label="after retention.ms: by the first record's timestamp")

    tiered_brokers.compare(scenario)


def test_tiered_turn_off_with_delete_and_on_again(tiered_brokers) -> None:  # type: ignore[no-untyped-def]
    """remote.storage.enable=false with remote.log.delete.on.disable=true on a topic whose
    segments are remote: the remote segments are deleted and the log starts at the local log
    start; it stays readable locally. Turned on again, new segments are copied."""
    def scenario(run: ScenarioRun) -> None:
        root = tiered_brokers.remote_dir(run.broker)
        create_topic(run, "t", configs=TIERED)
        produce_batches(run, "t", range(BATCHES))
        wait_tiered(run, "t", LOCAL_START)
        incremental_alter_configs(run, [(TOPIC, "t", [("remote.storage.enable", SET, "false")])],
                                  label="turn off without the delete flag")
        incremental_alter_configs(run, [(TOPIC, "t", [("remote.storage.enable", SET, "false"),
                                                      ("remote.log.delete.on.disable", SET, "true")])],
                                  label="turn off with delete")
        wait_for(run, "every remote segment deleted", lambda: remote_starts(root, run, "t") == [])
        wait_for(run, "log start at the local log start", lambda: list_offset(run, "t", EARLIEST) == LOCAL_START)
        note_remote_tier(run, root, "t", label="turned off")
        offsets(run, "t", "turned off")
        fetch(run, "t", {0: 0}, label="turned off: fetch from 0")
        fetch(run, "t", {0: LOCAL_START}, label="turned off: fetch from the local log start")
        produce_batches(run, "t", range(BATCHES, BATCHES + 4))
        incremental_alter_configs(run, [(TOPIC, "t", [("remote.storage.enable", SET, "true")])], label="turn on again")
        wait_tiered(run, "t", 220)
        note_remote_tier(run, root, "t", label="turned on again")
        offsets(run, "t", "turned on again")
        fetch(run, "t", {0: LOCAL_START}, label="turned on again: fetch from the log start")

    tiered_brokers.compare(scenario)
