"""Compaction and retention compared with Kafka 4.4 on data.

The same records and topic configs on both brokers; their background cleaner and
retention jobs (the oracle runs log.cleaner.backoff.ms=200, log.retention.check.interval.ms
=500, and asyncbroker is configured alike) do the work, and the scenario waits until a
precisely defined state is reached on each before it records what the partition serves.

Every topic rolls a segment at every Produce: segment.ms=100, and each Produce's records
are stamped a second after the previous one's (`at(i)`); Kafka rolls when a batch's
timestamp is segment.ms past the first batch of the active segment (not by the wall
clock), so each Produce after the first starts a segment. The last Produce therefore
always sits alone in the active segment, which neither broker cleans; everything before
it is cleanable.

"Cleaned everything cleanable" (compaction): below the active segment's base offset every
key occurs once and no tombstone is left; see clean_everything_cleanable for how both
brokers are brought there whatever the timing of their cleaners.
"""

from __future__ import annotations

import time

import pytest

from differential import BASE_TIMESTAMP, ScenarioRun, batch
from logs_steps import (
    Survivor,
    delete_records,
    earliest,
    fetched_batches,
    partition_size,
    read_all,
    record_log_state,
    wait_for_state,
)
from steps import create_topic, fetch, produce
from wire.records import iter_batch_headers

pytestmark = pytest.mark.timeout(240)

DAY_MS = 86_400_000
ROLL_EVERY_PRODUCE = {"segment.ms": "100"}
COMPACT = {**ROLL_EVERY_PRODUCE, "cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01",
           "delete.retention.ms": "0", "min.compaction.lag.ms": "0"}


def at(i: int, base: int = BASE_TIMESTAMP) -> int:
    """The timestamp of the i-th Produce of a scenario: a second apart, so each one rolls."""
    return base + i * 1000


def produce_batches(run: ScenarioRun, symbol: str, batches: list[bytes], label: str) -> list[int]:
    """One Produce per batch (each lands in its own segment); their base offsets, recorded. The
    rest of a Produce answer is not: its log_start_offset moves whenever the retention job
    happens to run between two Produces, on either broker."""
    bases = []
    for i, raw in enumerate(batches):
        response = produce(run, symbol, {0: raw}, record=False)
        p = response.responses[0].partition_responses[0]
        assert p.error_code.value == 0, f"{run.broker}: produce {label} {i}: {p.error_code.name}"
        bases.append(p.base_offset)
    run.note(f"{label}: base offsets", bases)
    return bases


def keys_unique_below(records: list[Survivor], end: int) -> bool:
    keys = [r.key for r in records if r.offset < end]
    return len(keys) == len(set(keys))


# -- compaction -------------------------------------------------------------------------------

UPDATES: list[list[tuple[bytes | None, bytes | None]]] = [
    [(b"k0", b"a0"), (b"k1", b"a1"), (b"k2", b"a2"), (b"k3", b"a3")],
    [(b"k0", b"b0"), (b"k2", None), (b"k4", b"b4")],
    [(b"k1", b"c1"), (b"k1", b"c1'"), (b"k5", b"c5"), (b"k3", b"c3")],
    [(b"k2", b"d2"), (b"k4", None), (b"k0", b"d0")],
    [(b"k3", None), (b"k6", b"e6")],
]


def first_segment_end(run: ScenarioRun, symbol: str) -> int:
    """The offset after the last batch one fetch from the log start returns: a read stays within
    one segment, and these logs are far below the 1 MiB it may return."""
    start = earliest(run, symbol)
    answer = fetch(run, symbol, {0: start}, record=False).responses[0].partitions[0]
    return max([start] + [h.base_offset + h.last_offset_delta + 1 for h, _ in iter_batch_headers(answer.records or b"")])


def clean_everything_cleanable(run: ScenarioRun, symbol: str, first: int) -> None:
    """Bring a compacted log to the state this module compares: below the active segment one
    record per key and no tombstone. Two sentinel Produces (stamped at(first), at(first + 1)):

    1. the first rolls the last updates into a cleanable segment; wait until every key is
       unique below it: a clean covered all the updates and stamped every tombstone's delete
       horizon. What else that moment shows (which tombstones an earlier clean had already
       stamped and a later one removed) depends on when each broker's cleaner ran, so it is
       not compared;
    2. the second makes the log dirty again; wait until, below it, keys are unique and no
       tombstone is left (delete.retention.ms=0: every horizon has passed), and the clean that
       takes in the first sentinel's segment (rolled by the second) has run: a clean rewrites
       everything below the active segment into one segment when it fits, so the first
       segment then reaches the second sentinel. Without that last condition the layout
       compared depended on whether that clean had run yet (CI once saw Kafka's first segment
       hold two batches and asyncbroker's three, the same records).
    """
    (sentinel,) = produce_batches(run, symbol, [batch([(b"end1", b"1")], base_timestamp=at(first))], "sentinel")
    wait_for_state(run, f"a clean of {symbol} covered every update",
                   lambda: keys_unique_below(read_all(run, symbol), sentinel), symbol=symbol)
    (sentinel2,) = produce_batches(run, symbol, [batch([(b"end2", b"2")], base_timestamp=at(first + 1))],
                                   "sentinel")

    def cleaned() -> bool:
        below = [r for r in read_all(run, symbol) if r.offset < sentinel2]
        return keys_unique_below(below, sentinel2) and all(r.value is not None for r in below) \
            and first_segment_end(run, symbol) == sentinel2

    wait_for_state(run, f"{symbol} cleaned of duplicates and tombstones", cleaned, symbol=symbol)


def compacted_with_tombstones(run: ScenarioRun) -> None:
    create_topic(run, "c", configs=COMPACT, record=False)
    produce_batches(run, "c", [batch(u, base_timestamp=at(i)) for i, u in enumerate(UPDATES)], "updates")
    clean_everything_cleanable(run, "c", 10)
    record_log_state(run, "c", "after cleaning")


def test_compaction_keyed_updates_and_tombstones(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(compacted_with_tombstones)


def compact_delete(run: ScenarioRun) -> None:
    """cleanup.policy=compact,delete: Kafka's cleaner thread both deletes by retention and
    compacts. The old records go first (so whether the cleaner merged them with newer
    segments before retention saw them is not a matter of timing), then newer ones compact."""
    create_topic(run, "cd", configs={**COMPACT, "cleanup.policy": "compact,delete", "retention.ms": str(DAY_MS)},
                 record=False)
    old = [batch([(b"k%d" % j, b"old%d-%d" % (i, j)) for j in range(3)], base_timestamp=at(i, BASE_TIMESTAMP - 3 * DAY_MS))
           for i in range(3)]
    produce_batches(run, "cd", old, "old")
    # Retention deletes every old segment, the active one too (it is rolled first).
    wait_for_state(run, "the old records of cd deleted", lambda: earliest(run, "cd") == 9)
    record_log_state(run, "cd", "after retention")
    updates = [batch([(b"k0", b"new0"), (b"k3", b"new3")], base_timestamp=at(10)),
               batch([(b"k0", b"newer0"), (b"k3", None)], base_timestamp=at(11)),
               batch([(b"k4", b"new4")], base_timestamp=at(12))]
    produce_batches(run, "cd", updates, "updates")
    clean_everything_cleanable(run, "cd", 13)
    record_log_state(run, "cd", "after cleaning")


def test_compact_delete_retention_then_compaction(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(compact_delete)


# -- retention --------------------------------------------------------------------------------


def three(i: int, base: int = BASE_TIMESTAMP, value_size: int = 20) -> bytes:
    """Three records of fixed sizes (every such batch has the same length)."""
    return batch([(b"k%d" % j, (b"%d" % i) * value_size) for j in range(3)], base_timestamp=at(i, base))


def retention_by_time(run: ScenarioRun) -> None:
    create_topic(run, "r", configs={**ROLL_EVERY_PRODUCE, "retention.ms": str(DAY_MS)}, record=False)
    produce_batches(run, "r", [three(i, BASE_TIMESTAMP - 3 * DAY_MS) for i in range(3)], "old")
    produce_batches(run, "r", [three(10 + i) for i in range(2)], "recent")
    wait_for_state(run, "the old segments of r deleted", lambda: earliest(run, "r") == 9)
    record_log_state(run, "r", "after retention")


def retention_breached_by_the_active_segment(run: ScenarioRun) -> None:
    """Only records older than retention.ms: the active segment is breached too, and Kafka
    rolls it to delete it; the log restarts empty at its end offset."""
    create_topic(run, "ra", configs={**ROLL_EVERY_PRODUCE, "retention.ms": str(DAY_MS)}, record=False)
    produce_batches(run, "ra", [three(i, BASE_TIMESTAMP - 3 * DAY_MS) for i in range(2)], "old")
    wait_for_state(run, "every segment of ra deleted", lambda: earliest(run, "ra") == 6)
    record_log_state(run, "ra", "after retention")
    produce_batches(run, "ra", [three(10)], "recent")
    record_log_state(run, "ra", "after a new produce")


def retention_by_size(run: ScenarioRun) -> None:
    """retention.bytes: the oldest segments go while the rest still holds retention.bytes."""
    size = len(three(0))
    create_topic(run, "rb", configs={**ROLL_EVERY_PRODUCE, "retention.bytes": str(2 * size + size // 2)},
                 record=False)
    produce_batches(run, "rb", [three(i) for i in range(5)], "produce")
    # 5 segments of `size`: 2.5 sizes over the limit, so two segments go (a third would leave
    # less than retention.bytes).
    wait_for_state(run, "two segments of rb deleted", lambda: earliest(run, "rb") == 6)
    record_log_state(run, "rb", "after retention")


def delete_records_then_retention(run: ScenarioRun) -> None:
    """DeleteRecords moves the log start into a segment; retention then deletes the segments
    wholly below it (and keeps the one holding the new log start)."""
    size = len(three(0))
    create_topic(run, "dr", configs=ROLL_EVERY_PRODUCE, record=False)
    produce_batches(run, "dr", [three(i) for i in range(4)], "produce")
    delete_records(run, "dr", {0: 7}, label="delete records before 7")
    wait_for_state(run, "the segments of dr below 6 deleted", lambda: partition_size(run, "dr") == 2 * size)
    record_log_state(run, "dr", "after retention")


@pytest.mark.parametrize("scenario", [retention_by_time, retention_breached_by_the_active_segment,
                                      retention_by_size, delete_records_then_retention],
                         ids=lambda s: s.__name__)
def test_retention(brokers, scenario) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(scenario)


# -- compaction and transactions ---------------------------------------------------------------


def transactions_compacted(run: ScenarioRun) -> None:
    """Seed 003's transaction rules on both brokers: a committed transaction's records compact
    like any others and its marker stays while they do; an aborted transaction's records go,
    its batch stays empty while its producer is active (so its marker stays too); records of a
    transaction still open are never cleaned (the cleaner stops at the LSO)."""
    import txn_steps as ts

    create_topic(run, "c", configs=COMPACT, record=False)
    ts.wait_for_coordinator(run)
    committed, aborted, still_open = ts.init(run, "ta"), ts.init(run, "tb"), ts.init(run, "tc")
    produce_batches(run, "c", [batch([(b"k0", b"a0"), (b"k1", b"a1")], base_timestamp=at(0))], "plain")
    ts.send(run, "c", 0, "ta", ts.txn_batch(committed.producer_id, 0, 0, [(b"k0", b"A0"), (b"k2", b"A2")]),
            version=12, label="committed transaction")
    ts.send(run, "c", 0, "tb", ts.txn_batch(aborted.producer_id, 0, 0, [(b"k1", b"B1"), (b"k3", b"B3")]),
            version=12, label="aborted transaction")
    # One after the other: markers are written after EndTxn is answered, so two open at once
    # could land in either order.
    ts.end_txn(run, "ta", committed.producer_id, 0, True)
    ts.wait_for_state(run, "ta", "CompleteCommit")
    ts.end_txn(run, "tb", aborted.producer_id, 0, False)
    ts.wait_for_state(run, "tb", "CompleteAbort")
    # Markers carry the broker's clock: later records are stamped after it, so each Produce
    # still rolls (the stamps differ between the two runs; no recorded step shows them).
    late = int((time.time() * 1000 - BASE_TIMESTAMP) // 1000) + 2
    produce_batches(run, "c", [batch([(b"k2", b"p2")], base_timestamp=at(late))], "plain after")
    clean_everything_cleanable(run, "c", late + 2)
    # A clean that finds no batch of the aborted transaction left rewrites the txn index
    # without it (the marker stays until its delete horizon): wait for that clean.
    wait_for_state(run, "a clean that dropped the aborted transaction from the txn index",
                   lambda: not _aborted_listed(run, "c"))
    run.note("cleaned: data survivors", _data_survivors(run, "c"))
    # An open transaction's records stay, whatever the dirty ratio, until it ends.
    ts.send(run, "c", 0, "tc", ts.txn_batch(still_open.producer_id, 0, 0, [(b"k0", b"C0"), (b"k1", b"C1")]),
            version=12, label="open transaction")
    produce_batches(run, "c", [batch([(b"k0", b"z0"), (b"k1", b"z1")], base_timestamp=at(late + 10 + i))
                               for i in range(3)], "updates after the open transaction")
    wait_for_state(run, "a clean up to the open transaction",
                   lambda: keys_unique_below(read_all(run, "c"), _first_offset_of(run, "c", b"C0")))
    ts.lso(run, "c", 0)
    run.note("with an open transaction: data survivors", _data_survivors(run, "c"))


def _data_survivors(run: ScenarioRun, symbol: str) -> list[list[object]]:
    """Every data record from the log start to the high watermark, across segments (a Fetch
    reads one), without the markers: whether a marker whose horizon passed is gone yet is a
    matter of when each broker's cleaner last ran, and the data is what consumers see."""
    from wire.records import decode_records

    return [[r.offset, r.key, r.value] for data, b, position in fetched_batches(run, symbol)
            if not b.header.is_control for r in decode_records(data, b.position) if r.offset >= position]


def _aborted_listed(run: ScenarioRun, symbol: str) -> bool:
    from steps import fetch

    r = fetch(run, symbol, {0: earliest(run, symbol)}, isolation_level=1, record=False)
    return bool(r.responses[0].partitions[0].aborted_transactions)


def _first_offset_of(run: ScenarioRun, symbol: str, value: bytes) -> int:
    return next(r.offset for r in read_all(run, symbol) if r.value == value)


def test_compaction_of_transactions(brokers) -> None:  # type: ignore[no-untyped-def]
    brokers.compare(transactions_compacted)
