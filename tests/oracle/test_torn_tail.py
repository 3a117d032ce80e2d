"""The torn tail after a clean shutdown, on Kafka 4.4 and on asyncbroker.

Produce three batches, stop cleanly (the clean-shutdown marker is written), cut 7 bytes off
the active segment's .log, restart, then: what each broker serves, which offset the next
append gets, what it serves after that, and what DumpLogSegments says of the files.

Kafka trusts the marker and skips recovery: its next offset is read from the last whole
batch (the torn batch's offsets are handed out again), the torn bytes stay in the file and
the next append lands behind them, so a fetch from the start reads a batch whose length
runs into the new one. asyncbroker checks that the active segment ends on a whole batch even
after a clean shutdown and recovers it when it does not (issue 20): KD-500.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from asyncbroker.testing import BrokerProcess
from differential import BASE_TIMESTAMP, ScenarioRun, batch, compare
from jvm.dump_log_check import check_files, segment_files
from jvm.kafka_jvm import ORACLE_SETTINGS, KafkaServer
from steps import create_topic, fetch, list_offsets, produce
from storage.log_file_utils import CLEAN_SHUTDOWN_FILE

pytestmark = pytest.mark.timeout(300)

CUT = 7


class TornTailBroker:
    """A broker of this test alone (it is restarted), with the log dir the scenario cuts."""

    def __init__(self, log_dir: Path, restart: Callable[[Callable[[], None]], object],
                 shutdown: Callable[[], int]) -> None:
        self.log_dir = log_dir
        self.restart = restart  # stop cleanly, call the argument, start
        self.shutdown = shutdown

    def marker_present(self) -> None:
        assert (self.log_dir / CLEAN_SHUTDOWN_FILE).exists(), f"no clean-shutdown marker in {self.log_dir}"


def cut_active_segment(partition_dir: Path) -> Path:
    active = sorted(partition_dir.glob("*.log"))[-1]
    size = active.stat().st_size
    with open(active, "r+b") as f:
        f.truncate(size - CUT)
    return active


def torn_tail(brokers: dict[str, TornTailBroker]) -> Callable[[ScenarioRun], None]:
    def scenario(run: ScenarioRun) -> None:
        broker = brokers[run.broker]
        create_topic(run, "t", record=False)
        for i, n in enumerate((3, 4, 2)):
            produce(run, "t", {0: batch([(b"k%d-%d" % (i, j), b"v%d" % j) for j in range(n)],
                                        base_timestamp=BASE_TIMESTAMP + i * 10)}, label=f"produce {i}")
        fetch(run, "t", {0: 0}, label="fetch before the cut")

        def cut() -> None:
            broker.marker_present()
            cut_active_segment(broker.log_dir / f"{run.topic('t')}-0")

        broker.restart(cut)
        run.conn = run.connect()
        run.wait_until(lambda: list_offsets(run, "t", [(0, -1)], record=False).topics[0].partitions[0]
                       .error_code.value == 0, "the partition served after the restart")

        list_offsets(run, "t", [(0, -2)], label="earliest after the restart")
        list_offsets(run, "t", [(0, -1)], label="latest after the restart")
        fetch(run, "t", {0: 0}, label="fetch from 0 after the restart")
        produce(run, "t", {0: batch([(b"after", b"the-cut"), (b"after2", b"x")], base_timestamp=BASE_TIMESTAMP + 30)},
                label="produce after the restart")
        fetch(run, "t", {0: 0}, label="fetch from 0 after the append")
        fetch(run, "t", {0: 7}, label="fetch from 7 after the append")
        list_offsets(run, "t", [(0, -1)], label="latest after the append")

        assert broker.shutdown() in (0, 143)
        broker.marker_present()
        report = check_files([f for f in segment_files(broker.log_dir) if f.parent.name == f"{run.topic('t')}-0"])
        run.note("DumpLogSegments findings", sorted({f"{f.kind.name} {f.file.name if f.file else ''}"
                                                      for f in report.findings}))
    return scenario


def test_torn_tail_after_clean_shutdown_compared_with_kafka() -> None:
    overrides = ["node.id=1", *(f"{k}={ORACLE_SETTINGS[k]}" for k in (
        "num.partitions", "auto.create.topics.enable", "log.initial.task.delay.ms", "log.segment.delete.delay.ms"))]
    with KafkaServer() as kafka, BrokerProcess(overrides) as ours:
        def restart_ours(between: Callable[[], None]) -> None:
            assert ours.stop() == 0
            between()
            ours.start()

        brokers = {
            "kafka": TornTailBroker(kafka.log_dir, kafka.restart, kafka.shutdown),
            "asyncbroker": TornTailBroker(ours.log_dir, restart_ours, ours.stop),
        }
        compare(torn_tail(brokers), kafka.bootstrap, ours.bootstrap, known=TORN_TAIL_KNOWN)


_TORN_BATCH = "responses[0].partitions[0].records"
TORN_TAIL_KNOWN = {
    # Kafka serves the torn batch's bytes after the restart, and after the next append (which
    # reuses the torn batch's offsets behind its bytes) a batch whose length runs into the new
    # one; asyncbroker recovered the segment and serves the new batch whole. Kafka's files then
    # fail DumpLogSegments (an invalid batch, and the tool's exceptions on it); ours pass.
    "KD-500": {
        f"6:.{_TORN_BATCH}.trailing_partial_bytes",
        *(f"{step}:.{_TORN_BATCH}.batches[{i}].{field}" for step, i in ((8, 2), (9, 0))
          for field in ("length", "crc", "base_timestamp", "max_timestamp", "records")),
        f"8:.{_TORN_BATCH}.trailing_partial_bytes",
        f"9:.{_TORN_BATCH}.trailing_partial_bytes",
        "11:[len]",
    },
    # Kafka's controller bumps the leader epoch when its only broker shuts down and again when
    # it returns; asyncbroker has no controller and stays leader at epoch 0.
    "KD-501": {"5:.topics[t].partitions[0].leader_epoch", "10:.topics[t].partitions[0].leader_epoch"},
}
