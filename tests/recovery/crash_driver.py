"""Crash torture: produce durably into a broker subprocess, SIGKILL it, restart, prove nothing was lost.

Each round starts the broker, checks everything acknowledged so far, lets several producers
(acks=-1, one request in flight each, every value unique) write to plain, retention and
compacted topics while segments roll, retention deletes, checkpoints are written and an admin
thread creates and deletes scratch topics, then kills the broker: with SIGKILL at a random
moment, or by arming a fault point (storage/fault_injection.py) so the broker kills itself
inside an append, a torn append, a roll, a flush, a checkpoint write, a topic deletion or the
cleaner's swap. While it is down the driver checks the files (checkpoints never point past
the data); after the restart, over the wire, that

  * every acknowledged record is at its offset, exactly once (unless retention removed it),
  * every served record was acknowledged or was in flight at the kill (no invented data),
  * every served batch is intact (CRC) and plain partitions have no offset holes,
  * on compacted topics each key's latest acknowledged value is still readable,
  * offset and time indexes agree with the log.

Run by tests/recovery/test_crash_torture.py (25 kills; 1,000 with --torture) or directly:

    .venv/bin/python tests/recovery/crash_driver.py --kills 100 [--flush os] [--seed N]
"""
from __future__ import annotations

import argparse
import datetime
import os
import random
import shutil
import socket
import struct
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kio.schema.create_topics.v5 import request as ct5  # noqa: E402
from kio.schema.delete_topics.v4 import request as dt4  # noqa: E402
from kio.schema.fetch.v12 import request as fetch12  # noqa: E402
from kio.schema.list_offsets.v7 import request as lo7  # noqa: E402
from kio.schema.produce.v9 import request as produce9  # noqa: E402

from asyncbroker.testing import BrokerProcess, BrokerStartError  # noqa: E402
from storage.offset_checkpoint import CorruptCheckpointError, OffsetCheckpointFile  # noqa: E402
from wire.headers import encode_request_header, response_header_version  # noqa: E402
from wire.messages import decode_response, encode_request  # noqa: E402
from wire.records import LOG_OVERHEAD, Record, build_batch, decode_records, iter_batch_headers, read_batch_header, validate_batch  # noqa: E402

PLAIN, RETAIN, COMPACT = "torture-plain", "torture-retain", "torture-compact"
TOPICS: dict[str, tuple[int, dict[str, str]]] = {
    PLAIN: (3, {"segment.ms": "250"}),
    RETAIN: (2, {"segment.ms": "250", "retention.ms": "1500", "file.delete.delay.ms": "100"}),
    COMPACT: (2, {"cleanup.policy": "compact", "segment.ms": "250", "min.cleanable.dirty.ratio": "0.01",
                  "min.compaction.lag.ms": "0", "delete.retention.ms": "100", "file.delete.delay.ms": "100"}),
}
BROKER_OVERRIDES = [
    "log.initial.task.delay.ms=0",
    "log.retention.check.interval.ms=200",
    "log.flush.offset.checkpoint.interval.ms=100",
    "log.flush.start.offset.checkpoint.interval.ms=100",
    "log.cleaner.backoff.ms=100",
    "num.partitions=1",
]
# Fault points and the pass on which to die (drawn uniformly from the range).
FAULTS: dict[str, tuple[int, int]] = {
    "append": (1, 120),
    "append.torn": (1, 120),
    "roll": (1, 4),
    "flush": (1, 120),
    "checkpoint": (1, 8),
    "checkpoint.torn": (1, 8),
    "delete.topic": (1, 2),
    "cleaner.swap.renamed_to_swap": (1, 1),
    "cleaner.swap.added_to_index": (1, 1),
    "cleaner.swap.old_renamed_deleted": (1, 1),
    "cleaner.swap.renamed_live": (1, 1),
    "cleaner.swap.dir_flushed": (1, 1),
}
NUM_KEYS = 40


def fault_points() -> list[str]:
    """The armable points; the cleaner's only once the broker runs the cleaner."""
    broker_src = (ROOT / "asyncbroker" / "broker.py").read_text()
    runs_cleaner = "LogCleaner" in broker_src or "log_cleaner" in broker_src
    return sorted(p for p in FAULTS if runs_cleaner or not p.startswith("cleaner."))


class BrokerGone(Exception):
    """The broker closed the connection (it was killed)."""


class Conn:
    """One blocking Kafka connection speaking kio entities."""

    def __init__(self, bootstrap: str, timeout: float = 10.0) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.cid = 0

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def request(self, entity: Any) -> Any:
        self.cid += 1
        header = encode_request_header(entity.__api_key__, entity.__version__, self.cid, "torture")
        body = header + encode_request(entity)
        try:
            self.sock.sendall(struct.pack(">i", len(body)) + body)
            size = struct.unpack(">i", self._recv(4))[0]
            frame = self._recv(size)
        except (OSError, struct.error) as exc:
            raise BrokerGone(str(exc)) from None
        offset = 4 + (1 if response_header_version(entity.__api_key__, entity.__version__) >= 1 else 0)
        return decode_response(entity.__api_key__, entity.__version__, frame[offset:])

    def _recv(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(min(n, 1 << 20))
            if not chunk:
                raise ConnectionError("closed")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)


def produce_request(topic: str, partition: int, records: bytes) -> Any:
    return produce9.ProduceRequest(
        transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=10),
        topic_data=(produce9.TopicProduceData(name=topic, partition_data=(
            produce9.PartitionProduceData(index=partition, records=records),)),))


def create_topic(conn: Conn, name: str, partitions: int, configs: dict[str, str]) -> int:
    resp = conn.request(ct5.CreateTopicsRequest(topics=(ct5.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=1, assignments=(),
        configs=tuple(ct5.CreatableTopicConfig(name=k, value=v) for k, v in configs.items())),),
        timeout=datetime.timedelta(seconds=10), validate_only=False))
    return resp.topics[0].error_code


def earliest_offset(conn: Conn, topic: str, partition: int) -> int:
    """The partition's log start offset, by ListOffsets (timestamp -2)."""
    resp = conn.request(lo7.ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=(lo7.ListOffsetsTopic(
        name=topic, partitions=(lo7.ListOffsetsPartition(partition_index=partition, current_leader_epoch=-1,
                                                         timestamp=-2),)),)))
    p = resp.topics[0].partitions[0]
    if p.error_code != 0:
        raise AssertionError(f"list offsets {topic}-{partition}: error {p.error_code}")
    return int(p.offset)


def fetch_partition(conn: Conn, topic: str, partition: int) -> tuple[int, int, list[tuple[int, bytes | None, bytes | None]], int]:
    """(log start, HW, [(offset, key, value)], batches) of everything the broker serves."""
    out: list[tuple[int, bytes | None, bytes | None]] = []
    offset = -1
    log_start = hw = 0
    batches = 0
    while True:
        req = fetch12.FetchRequest(
            cluster_id=None, replica_id=-1, max_wait=datetime.timedelta(0), min_bytes=0, max_bytes=8 << 20,
            isolation_level=0, session_id=0, session_epoch=-1,
            topics=(fetch12.FetchTopic(topic=topic, partitions=(fetch12.FetchPartition(
                partition=partition, current_leader_epoch=-1, fetch_offset=max(offset, 0), last_fetched_epoch=-1,
                log_start_offset=-1, partition_max_bytes=4 << 20),)),),
            forgotten_topics_data=(), rack_id="")
        p = conn.request(req).responses[0].partitions[0]
        if p.error_code == 1:
            # Below the log start (retention deleted segments, possibly while we page through):
            # continue from the new start, as a consumer resets; what lay below it is gone.
            # (An OFFSET_OUT_OF_RANGE answer carries no offsets, as Kafka's does not.)
            start = earliest_offset(conn, topic, partition)
            if start > max(offset, 0):
                offset = start
                continue
        if p.error_code != 0:
            raise AssertionError(f"fetch {topic}-{partition}@{offset}: error {p.error_code}")
        log_start, hw = p.log_start_offset, p.high_watermark
        if offset < 0:
            offset = log_start
        data = p.records or b""
        advanced = False
        for bp in iter_batch_headers(data):
            if bp.position + bp.header.size_in_bytes > len(data):
                break  # a batch cut by max_bytes: fetched again from its offset
            header = validate_batch(data, bp.position)  # CRC: nothing torn or corrupt is served
            batches += 1
            for rec in decode_records(data, bp.position):
                if rec.offset >= offset:
                    out.append((rec.offset, rec.key, rec.value))
            offset = max(offset, header.next_offset)
            advanced = True
        if offset >= hw:
            return log_start, hw, out, batches
        if not advanced:
            raise AssertionError(f"fetch {topic}-{partition}@{offset} below HW {hw} returned no complete batch")


@dataclass
class Ledger:
    """What the producers know: acknowledged records and those whose fate the kill decided."""

    acked: dict[tuple[str, int], dict[int, tuple[bytes | None, bytes]]] = field(default_factory=lambda: defaultdict(dict))
    maybe: set[bytes] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class Tally:
    rounds: int = 0
    kills: Counter = field(default_factory=Counter)
    acked: int = 0
    lost: int = 0
    duplicated: int = 0
    invented: int = 0
    in_flight_at_kill: int = 0
    in_flight_persisted: int = 0
    at_risk_unflushed: int = 0  # acked records above the checkpointed recovery point at kill time
    max_at_risk: int = 0
    index_entries_checked: int = 0
    checkpoints_checked: int = 0
    torn_tails_seen: int = 0
    failures: list[str] = field(default_factory=list)

    def summary(self) -> str:
        kinds = ", ".join(f"{k}={v}" for k, v in sorted(self.kills.items()))
        return (f"crash torture: {self.rounds} kills ({kinds}); {self.acked} acked records, lost={self.lost}, "
                f"duplicated={self.duplicated}, invented={self.invented}; in flight at kill {self.in_flight_at_kill} "
                f"(persisted {self.in_flight_persisted}); torn tails on disk {self.torn_tails_seen}; "
                f"{self.checkpoints_checked} checkpoint entries and {self.index_entries_checked} index entries checked; "
                f"acked-but-unflushed at kill (what a power cut could cost): total {self.at_risk_unflushed}, "
                f"worst kill {self.max_at_risk}; failures={len(self.failures)}")


class Producer(threading.Thread):
    def __init__(self, driver: "CrashDriver", ident: int, seed: int) -> None:
        super().__init__(daemon=True, name=f"torture-producer-{ident}")
        self.driver = driver
        self.number = ident
        self.rng = random.Random(seed)
        self.seq = 0

    def run(self) -> None:
        d = self.driver
        try:
            conn = Conn(d.broker.bootstrap)
        except OSError:
            return
        try:
            while not d.stop.is_set():
                topic = self.rng.choice((PLAIN, PLAIN, RETAIN, COMPACT))
                partition = self.rng.randrange(TOPICS[topic][0])
                now = int(time.time() * 1000)
                records = []
                for _ in range(self.rng.randint(1, 3)):
                    self.seq += 1
                    value = f"p{self.number}-r{d.round}-{self.seq}-".encode() + b"x" * self.rng.randint(10, 400)
                    key = f"k{self.rng.randrange(NUM_KEYS)}".encode() if topic == COMPACT else None
                    records.append(Record(offset=len(records), timestamp=now, key=key, value=value, headers=[]))
                batch = build_batch(records)
                values = [r.value for r in records]
                with d.ledger.lock:
                    d.ledger.maybe.update(values)  # in flight: may or may not survive the kill
                try:
                    resp = conn.request(produce_request(topic, partition, batch))
                except BrokerGone:
                    return
                p = resp.responses[0].partition_responses[0]
                if p.error_code != 0:
                    continue  # not acknowledged; stays "maybe" (an error means nothing was appended)
                with d.ledger.lock:
                    acked = d.ledger.acked[(topic, partition)]
                    for i, r in enumerate(records):
                        acked[p.base_offset + i] = (r.key, r.value)  # type: ignore[assignment]
                        d.ledger.maybe.discard(r.value)  # type: ignore[arg-type]
                    d.tally.acked += len(records)
        finally:
            conn.close()


class Admin(threading.Thread):
    """Creates and deletes scratch topics so topic deletion is in the crash mix."""

    def __init__(self, driver: "CrashDriver") -> None:
        super().__init__(daemon=True, name="torture-admin")
        self.driver = driver

    def run(self) -> None:
        d = self.driver
        try:
            conn = Conn(d.broker.bootstrap)
        except OSError:
            return
        n = 0
        try:
            while not d.stop.is_set():
                n += 1
                name = f"torture-scratch-{d.round}-{n}"
                create_topic(conn, name, 1, {"segment.ms": "100"})
                conn.request(produce_request(name, 0, build_batch(
                    [Record(offset=0, timestamp=int(time.time() * 1000), key=None, value=b"scratch", headers=[])])))
                conn.request(dt4.DeleteTopicsRequest(topic_names=(name,), timeout=datetime.timedelta(seconds=10)))
                d.stop.wait(0.05)
        except BrokerGone:
            return
        finally:
            conn.close()


class CrashDriver:
    def __init__(self, kills: int, *, seed: int | None = None, flush: str = "durable", producers: int = 4,
                 base_dir: Path | None = None, fresh_dir_every: int = 50, fault_share: float = 0.5,
                 verbose: bool = False, only_faults: list[str] | None = None) -> None:
        self.kills = kills
        self.only_faults = only_faults
        self.seed = seed if seed is not None else random.SystemRandom().randrange(1 << 30)
        self.rng = random.Random(self.seed)
        self.flush = flush
        self.producers = producers
        self._own_dir = base_dir is None
        self.base_dir = Path(base_dir) if base_dir is not None else Path(tempfile.mkdtemp(prefix="crash-torture-"))
        self.fresh_dir_every = fresh_dir_every
        self.fault_share = fault_share
        self.verbose = verbose
        self.tally = Tally()
        self.stop = threading.Event()
        self.round = 0
        self.ledger = Ledger()
        self.broker: BrokerProcess = None  # type: ignore[assignment]
        self.data_dir = self.base_dir

    # -- broker lifecycle ------------------------------------------------------------------------
    def _overrides(self) -> list[str]:
        out = list(BROKER_OVERRIDES)
        if self.flush == "durable":
            out.append("log.flush.interval.messages=1")
        return out

    def _start(self, fault: str | None = None) -> None:
        env = dict(os.environ)
        env.pop("BROKER_FAULT_POINT", None)
        if fault:
            env["BROKER_FAULT_POINT"] = fault
        self.broker = BrokerProcess(self._overrides(), log_dir=self.data_dir, env=env)
        self.broker.start()

    def _new_data_dir(self) -> None:
        self.data_dir = self.base_dir / f"data-{self.round}"
        self.data_dir.mkdir(parents=True)
        self.ledger = Ledger()
        self._start()
        conn = Conn(self.broker.bootstrap)
        try:
            for name, (partitions, configs) in TOPICS.items():
                err = create_topic(conn, name, partitions, configs)
                assert err in (0, 36), f"create {name}: error {err}"
        finally:
            conn.close()

    # -- the run ---------------------------------------------------------------------------------
    def run(self) -> Tally:
        print(f"crash torture: seed={self.seed} kills={self.kills} flush={self.flush} dir={self.base_dir}", flush=True)
        try:
            self._new_data_dir()
            while self.round < self.kills:
                if self.round and self.round % self.fresh_dir_every == 0:
                    self.broker.stop()
                    self._new_data_dir()
                self._one_round()
            self.verify("final")
            self.broker.stop()  # clean shutdown, then once more from the clean-shutdown marker
            self._start()
            self.verify("after clean restart")
            self.broker.stop()
        finally:
            if self.broker is not None:
                self.broker.kill()
            if self._own_dir and not self.tally.failures:
                shutil.rmtree(self.base_dir, ignore_errors=True)  # kept for a post-mortem otherwise
        print(self.tally.summary(), flush=True)
        return self.tally

    def _one_round(self) -> None:
        self.round += 1
        self.verify(f"round {self.round} start")
        fault = None
        if self.rng.random() < self.fault_share:
            point = self.rng.choice(self.only_faults or fault_points())
            lo, hi = FAULTS[point]
            fault = f"{point}:{self.rng.randint(lo, hi)}"
            self.broker.stop()  # restart armed (a clean stop: the next start skips recovery)
            try:
                self._start(fault)
            except BrokerStartError:
                if self.broker.returncode != -9:
                    raise
                # The point was reached during startup (e.g. the first checkpoint): a crash too.
                self.tally.rounds += 1
                self.tally.kills[f"fault {point} (startup)"] += 1
                self.check_files_after_kill()
                self._start()
                return
        self.stop.clear()
        threads: list[threading.Thread] = [Producer(self, i, self.rng.randrange(1 << 30)) for i in range(self.producers)]
        threads.append(Admin(self))
        for t in threads:
            t.start()
        window = self.rng.uniform(0.15, 1.0) if fault is None else 2.0
        died = self._wait_for_exit(window)
        kind = f"fault {fault.split(':')[0]}" if fault and died else "sigkill"
        if not died:
            if self.flush == "os":
                self._note_unflushed_at_risk()
            self.broker.kill()
        self.stop.set()
        for t in threads:
            t.join(15)
            if t.is_alive():
                self._fail(f"round {self.round}: thread {t.name} hung after the kill")
        self.tally.rounds += 1
        self.tally.kills[kind] += 1
        self.check_files_after_kill()
        self._start()
        if self.verbose:
            print(f"round {self.round}: {kind}", flush=True)

    def _wait_for_exit(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.broker.returncode is not None:
                return True
            time.sleep(0.01)
        return False

    def _fail(self, message: str) -> None:
        self.tally.failures.append(f"[seed {self.seed}] {message}")
        print("FAILURE:", message, flush=True)

    # -- checks on the files of a dead broker ----------------------------------------------------
    def _note_unflushed_at_risk(self) -> None:
        """With the OS flush policy, what a power cut (not a process kill) could cost right now:
        acknowledged records above the last checkpointed recovery point."""
        try:
            points = OffsetCheckpointFile(self.data_dir / "recovery-point-offset-checkpoint").read()
        except (CorruptCheckpointError, OSError):
            return
        with self.ledger.lock:
            at_risk = sum(1 for (t, p), recs in self.ledger.acked.items()
                          for off in recs if off >= points.get(_tp(t, p), 0))
        self.tally.at_risk_unflushed += at_risk
        self.tally.max_at_risk = max(self.tally.max_at_risk, at_risk)

    def check_files_after_kill(self) -> None:
        """Checkpoints never point past the data on disk (torn tails do not count as data)."""
        ends: dict[tuple[str, int], int] = {}
        for part in self.data_dir.iterdir():
            if not part.is_dir() or part.name.endswith("-delete") or "-" not in part.name:
                continue
            topic, _, p = part.name.rpartition("-")
            if not p.isdigit():
                continue
            end, torn = _data_end(part)
            ends[(topic, int(p))] = end
            self.tally.torn_tails_seen += torn
        for name in ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint", "cleaner-offset-checkpoint"):
            try:
                entries = OffsetCheckpointFile(self.data_dir / name).read()
            except CorruptCheckpointError as exc:
                self._fail(f"round {self.round}: corrupt {name}: {exc}")
                continue
            for tp, offset in entries.items():
                self.tally.checkpoints_checked += 1
                end = ends.get((tp.topic, tp.partition))
                if end is not None and offset > end:
                    self._fail(f"round {self.round}: {name} says {tp.topic}-{tp.partition} {offset} "
                               f"but the data ends at {end}")

    # -- checks over the wire after a restart ----------------------------------------------------
    def verify(self, when: str) -> None:
        conn = Conn(self.broker.bootstrap, timeout=30)
        try:
            with self.ledger.lock:
                acked = {tp: dict(recs) for tp, recs in self.ledger.acked.items()}
                maybe = set(self.ledger.maybe)
            seen_values: set[bytes] = set()
            survivors: dict[bytes, tuple[str, int, int, bytes | None]] = {}
            for topic, (partitions, _configs) in TOPICS.items():
                for partition in range(partitions):
                    log_start, hw, records, _ = fetch_partition(conn, topic, partition)
                    by_offset: dict[int, tuple[bytes | None, bytes | None]] = {}
                    latest_by_key: dict[bytes | None, int] = {}
                    prev = -1
                    for offset, key, value in records:
                        if offset <= prev:
                            self._fail(f"{when}: {topic}-{partition} offsets go back ({prev} -> {offset})")
                        prev = offset
                        by_offset[offset] = (key, value)
                        latest_by_key[key] = offset
                        if value in seen_values:
                            self.tally.duplicated += 1
                            self._fail(f"{when}: {topic}-{partition}@{offset} value served twice")
                        seen_values.add(value)  # type: ignore[arg-type]
                        if value in maybe:
                            survivors[value] = (topic, partition, offset, key)  # type: ignore[index]
                    if topic == PLAIN:
                        missing = [o for o in range(log_start, hw) if o not in by_offset]
                        if missing:
                            self._fail(f"{when}: {topic}-{partition} holes at {missing[:5]} (HW {hw})")
                    mine = acked.get((topic, partition), {})
                    acked_values = {v for _k, v in mine.values()}
                    for offset, (key, value) in mine.items():
                        if offset >= hw:
                            self.tally.lost += 1
                            self._fail(f"{when}: {topic}-{partition}@{offset} acked but HW is {hw}")
                            continue
                        if offset < log_start:
                            if topic == PLAIN:
                                self.tally.lost += 1
                                self._fail(f"{when}: {topic}-{partition}@{offset} below log start {log_start}")
                            continue
                        got = by_offset.get(offset)
                        if topic == COMPACT:
                            if got is None or got[1] != value:
                                # Compaction may drop it only for a newer record of the same key.
                                if latest_by_key.get(key, -1) <= offset:
                                    self.tally.lost += 1
                                    self._fail(f"{when}: {topic}-{partition} key {key!r}: latest acked value "
                                               f"@{offset} gone")
                            continue
                        if got is None or got[1] != value:
                            self.tally.lost += 1
                            self._fail(f"{when}: {topic}-{partition}@{offset} acked {value[:24]!r} "
                                       f"but served {None if got is None else got[1][:24]!r}")
                    for offset, (_key, value) in by_offset.items():
                        if value not in acked_values and value not in maybe:
                            self.tally.invented += 1
                            self._fail(f"{when}: {topic}-{partition}@{offset} serves a record nobody sent "
                                       f"in this life of the data ({value[:24]!r})")
            if when.startswith("round"):
                # The kill settled every in-flight record: a survivor must stay (as if acked at the
                # offset it got), the rest must never appear later.
                self.tally.in_flight_at_kill += len(maybe)
                self.tally.in_flight_persisted += len(survivors)
                with self.ledger.lock:
                    self.ledger.maybe -= maybe
                    for value, (topic, partition, offset, key) in survivors.items():
                        self.ledger.acked[(topic, partition)][offset] = (key, value)
            self.check_indexes(when)
        finally:
            conn.close()

    def check_indexes(self, when: str) -> None:
        """Every offset/time index entry points at the batch holding its offset."""
        for part in self.data_dir.iterdir():
            if not part.is_dir() or not part.name.startswith("torture-") or part.name.endswith("-delete"):
                continue
            for index in sorted(part.glob("*.index")):
                segment = _read_segment(index)
                if segment is None:
                    continue  # deleted by retention or the cleaner meanwhile
                index_bytes, log_bytes, time_index_bytes = segment
                entries = _index_entries(index_bytes, 8, ">ii")
                time_entries = _index_entries(time_index_bytes, 12, ">qi")
                base = int(index.stem)
                last = -1
                for rel, position in entries:
                    if rel == 0 and position == 0:
                        continue  # an empty first slot asserts nothing
                    self.tally.index_entries_checked += 1
                    offset = base + rel
                    if offset <= last or position + 61 > len(log_bytes):
                        self._fail(f"{when}: {index.name} entry ({rel},{position}) out of order or past the log "
                                   f"({len(log_bytes)} bytes)")
                        break
                    last = offset
                    h = read_batch_header(log_bytes, position)
                    if not h.base_offset <= offset <= h.last_offset:
                        self._fail(f"{when}: {part.name}/{index.name}: offset {offset} -> position {position} "
                                   f"holds [{h.base_offset}, {h.last_offset}]")
                        break
                prev_ts = -1
                for ts, rel in time_entries:
                    self.tally.index_entries_checked += 1
                    if ts < prev_ts:
                        self._fail(f"{when}: {part.name}/{index.stem}.timeindex timestamps go back")
                        break
                    prev_ts = ts


def _tp(topic: str, partition: int) -> Any:
    from storage.topic_partition import TopicPartition

    return TopicPartition(topic, partition)


def _read_segment(index: Path) -> tuple[bytes, bytes, bytes] | None:
    """The offset index, log and time index of one segment, all of one version of it (None once
    it is gone). The broker is live: the cleaner swaps in a cleaned segment by renaming new files
    over these names, so files read around a swap would mix the two versions; a swap changes
    their inodes, and the read is repeated until none changed. The index is read before the log:
    appends to the active segment only add entries and bytes after those already read."""
    files = (index, index.with_suffix(".log"), index.with_suffix(".timeindex"))
    for _ in range(100):
        try:
            before = [f.stat().st_ino for f in files]
            contents = [f.read_bytes() for f in files]
            after = [f.stat().st_ino for f in files]
        except FileNotFoundError:
            return None
        if before == after:
            return contents[0], contents[1], contents[2]
    raise AssertionError(f"{index}: swapped on every one of 100 reads")


def _index_entries(data: bytes, size: int, fmt: str) -> list[tuple[int, int]]:
    unpack = struct.Struct(fmt).unpack_from
    out = []
    for pos in range(0, len(data) - size + 1, size):
        a, b = unpack(data, pos)
        if a == 0 and b == 0 and (pos > 0 or size == 12):
            break  # the preallocated, never-written tail
        out.append((a, b))
    return out


def _data_end(part: Path) -> tuple[int, int]:
    """(next offset after the last intact batch on disk, or the active segment's base offset
    when it holds none; 1 if a torn tail follows it else 0)."""
    end = 0
    torn = 0
    logs = sorted(part.glob("*.log"))
    for i, log_path in enumerate(logs):
        data = log_path.read_bytes()
        pos = 0
        while pos + LOG_OVERHEAD <= len(data):
            try:
                h = validate_batch(data, pos)
            except Exception:  # noqa: BLE001 - any invalid batch ends the valid prefix
                break
            if pos + h.size_in_bytes > len(data):
                break
            end = h.next_offset
            pos += h.size_in_bytes
        if pos < len(data) and any(data[pos:]):
            torn = 1
        if i == len(logs) - 1 and pos == 0:
            # No intact batch in the active segment (empty, or only a torn first write): the
            # data ends at its base offset. Retention may have deleted every older segment, so
            # this can be the only file (seen: a torn first batch in the only segment of the
            # retention topic, whose recovery point rightly sat at that segment's base).
            end = max(end, int(log_path.stem))
    return end, torn


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=25)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--flush", choices=("durable", "os"), default="durable")
    parser.add_argument("--producers", type=int, default=4)
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--faults", help="comma-separated fault points to draw from (default: all)")
    parser.add_argument("--fault-share", type=float, default=0.5, help="share of kills done by a fault point")
    args = parser.parse_args(argv)
    tally = CrashDriver(args.kills, seed=args.seed, flush=args.flush, producers=args.producers,
                        verbose=args.verbose, fault_share=args.fault_share,
                        only_faults=args.faults.split(",") if args.faults else None).run()
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
