"""Stateful random scenarios: hypothesis generates sequences of operations, each one sent to
Kafka 4.4 and to asyncbroker and the two normalised answers compared at every step.

Operations: create topic (few partitions, configs from a safe set), produce (random
batches: codecs, keys, null values, headers, several partitions, request versions), fetch
(random offsets and byte limits), list offsets (-1/-2/-3/timestamps), delete records,
alter configs, delete topic. The safe set leaves out what works in the background on a
timer (compaction, retention by time or size): those answers depend on when each broker's
job ran, and test_compaction_retention.py compares them in defined states.

Reproducible and bounded: derandomized (the same sequences on every run), no example
database, no shrinking (every shrink step would replay against two live brokers); a
failure prints the steps of the failing sequence.
"""

from __future__ import annotations

import datetime
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, multiple, precondition, rule

from differential import DEFAULT_TIMEOUT_MS, ScenarioRun, batch, diff, entity
from logs_steps import alter_topic_configs, delete_records
from steps import DELETE_TOPICS, create_topic, fetch, list_offsets, metadata, produce
from wire.records import CompressionType, read_batch_header

pytestmark = pytest.mark.timeout(300)

SYMBOLS = ("a", "b", "c")
GHOST = "ghost"  # never created: every operation on it meets UNKNOWN_TOPIC_OR_PARTITION
# Topic configs whose effect is synchronous and the same on both brokers (validation, rolls,
# conversion). Not LogAppendTime: its stamps are each broker's clock, and with segment.ms they
# would decide segment rolls (which a fetch, reading one segment, shows).
SAFE_CONFIGS: dict[str, list[str]] = {
    "segment.ms": ["100", "604800000"],
    "index.interval.bytes": ["1", "4096"],
    "compression.type": ["producer", "uncompressed"],
    "message.timestamp.before.max.ms": ["3600000", "9223372036854775807"],
    "message.timestamp.after.max.ms": ["3600000"],
    "min.insync.replicas": ["1"],
    # A full offset index rolls the segment (and a fetch reads from one segment at a time).
    "segment.index.bytes": ["24", "10485760"],
    "flush.messages": ["1", "9223372036854775807"],
}

keys = st.one_of(st.none(), st.sampled_from([b"k0", b"k1", b"k2"]), st.binary(max_size=8))
values = st.one_of(st.none(), st.binary(max_size=40), st.builds(lambda n: b"v" * n, st.integers(0, 300)))
header_sets = st.lists(st.tuples(st.sampled_from(["h", "trace", ""]), st.one_of(st.none(), st.binary(max_size=6))),
                       max_size=2).map(tuple)
codecs = st.sampled_from(list(CompressionType))
# Record timestamps, as offsets from the sequence's start (see BrokerOperations.base): recent,
# within every timestamp window (message.timestamp.before/after.max.ms of an hour). ListOffsets
# also looks two hours into the past and the future.
timestamp_offsets = st.integers(-50_000, 50_000)
target_offsets = st.one_of(timestamp_offsets, st.sampled_from([-7_200_000, 7_200_000]))


@st.composite
def record_batches(draw: st.DrawFn, produce_version: int, base: int) -> bytes:
    records = draw(st.lists(st.tuples(keys, values), min_size=1, max_size=6))
    # zstd needs Produce v7+ (older requests get UNSUPPORTED_COMPRESSION_TYPE).
    codec = draw(codecs.filter(lambda c: produce_version >= 7 or c != CompressionType.ZSTD))
    return batch(records, base_timestamp=base + draw(timestamp_offsets), compression=codec, headers=draw(header_sets),
                 timestamp_step=draw(st.sampled_from([0, 1, 1000])))


@dataclass
class TopicModel:
    partitions: int
    # Log end offset per partition, from Kafka's answers (both brokers must agree).
    ends: list[int] = field(default_factory=list)


class Twin:
    """One ScenarioRun per broker: every operation goes to both and their new steps are
    compared at once."""

    def __init__(self, kafka: str, ours: str) -> None:
        run_id = uuid.uuid4().hex[:10]
        self.kafka = ScenarioRun("kafka", kafka, run_id)
        self.ours = ScenarioRun("asyncbroker", ours, run_id)
        self.log: list[str] = []

    def both(self, what: str, operation: Any) -> Any:
        """Run `operation(run)` on each broker; assert equal new steps; Kafka's result."""
        self.log.append(what)
        k_before, o_before = len(self.kafka.transcript), len(self.ours.transcript)
        result = operation(self.kafka)
        operation(self.ours)
        k_steps, o_steps = self.kafka.transcript[k_before:], self.ours.transcript[o_before:]
        differences = [f"{k.label}{path}: kafka={a!r} asyncbroker={b!r}"
                       for k, o in zip(k_steps, o_steps) for path, a, b in diff(k.response, o.response)]
        if len(k_steps) != len(o_steps):
            differences.append(f"steps: kafka={[s.label for s in k_steps]} asyncbroker={[s.label for s in o_steps]}")
        if differences:
            steps = "\n    ".join(self.log)
            raise AssertionError(f"asyncbroker differs from Kafka 4.4 at step {len(self.log)} ({what}):\n  "
                                 + "\n  ".join(differences[:30]) + f"\n  the steps:\n    {steps}")
        return result

    def close(self) -> None:
        self.kafka.close()
        self.ours.close()


class BrokerOperations(RuleBasedStateMachine):
    """The operations, on a model of the topics (symbol -> partitions, log end offsets)."""

    topics = Bundle("topics")
    bootstraps: tuple[str, str] = ("", "")

    def __init__(self) -> None:
        super().__init__()
        self.twin = Twin(*self.bootstraps)
        self.model: dict[str, TopicModel] = {}
        # Timestamps are drawn around the start of the sequence (whole seconds), not the session's
        # BASE_TIMESTAMP: an hour-long window must hold however long the session has run.
        self.base = time.time_ns() // 1_000_000_000 * 1000

    def teardown(self) -> None:
        self.twin.close()

    @initialize(target=topics)
    def ghost(self) -> str:
        return GHOST

    @rule(target=topics, symbol=st.sampled_from(SYMBOLS), partitions=st.integers(1, 3),
          configs=st.dictionaries(st.sampled_from(sorted(SAFE_CONFIGS)), st.just(None), max_size=3).flatmap(
              lambda d: st.fixed_dictionaries({k: st.sampled_from(SAFE_CONFIGS[k]) for k in d})))
    def create(self, symbol: str, partitions: int, configs: dict[str, str]) -> Any:
        response = self.twin.both(f"create {symbol} x{partitions} {configs}", lambda run: create_topic(
            run, symbol, partitions, configs, version=4))
        if response.topics[0].error_code.value != 0:
            return multiple()
        self.model[symbol] = TopicModel(partitions, [0] * partitions)
        return symbol

    def _partition(self, symbol: str, data: st.DataObject) -> int:
        count = self.model[symbol].partitions if symbol in self.model else 1
        return data.draw(st.integers(0, count), label="partition")  # == count: one that does not exist

    def _offset(self, symbol: str, partition: int, data: st.DataObject) -> int:
        model = self.model.get(symbol)
        end = model.ends[partition] if model and partition < model.partitions else 0
        return data.draw(st.one_of(st.integers(0, end), st.sampled_from([-1, end + 1, end + 100])), label="offset")

    # Produce sends valid records to partitions that exist: the answers Produce gives to bad
    # input (missing topics or partitions, timestamps out of the window, oversized records)
    # are the Produce scenarios' (KD-100..199); this machine follows the data they accept.
    @precondition(lambda self: bool(self.model))
    @rule(data=st.data(), version=st.integers(3, 11), acks=st.sampled_from([-1, 1]))
    def produce(self, data: st.DataObject, version: int, acks: int) -> None:
        symbol = data.draw(st.sampled_from(sorted(self.model)), label="topic")
        count = self.model[symbol].partitions
        parts = data.draw(st.lists(st.integers(0, count - 1), min_size=1, max_size=count, unique=True),
                          label="partitions")
        batches = {p: data.draw(record_batches(version, self.base), label=f"batch {p}") for p in parts}
        response = self.twin.both(f"produce {symbol} {sorted(batches)} v{version} acks={acks}", lambda run: produce(
            run, symbol, batches, version=version, acks=acks))
        model = self.model[symbol]
        for t in response.responses:
            for p in t.partition_responses:
                if p.error_code.value == 0:
                    model.ends[p.index] = p.base_offset + read_batch_header(batches[p.index], 0).last_offset_delta + 1

    @rule(symbol=topics, data=st.data(), version=st.integers(4, 12),
          max_bytes=st.sampled_from([1, 100, 52_428_800]), partition_max_bytes=st.sampled_from([1, 150, 1_048_576]),
          isolation=st.sampled_from([0, 1]))
    def fetch(self, symbol: str, data: st.DataObject, version: int, max_bytes: int, partition_max_bytes: int,
              isolation: int) -> None:
        partition = self._partition(symbol, data)
        offset = self._offset(symbol, partition, data)
        self.twin.both(f"fetch {symbol}-{partition} @{offset} v{version} max={max_bytes}/{partition_max_bytes}",
                       lambda run: fetch(run, symbol, {partition: offset}, version=version, max_bytes=max_bytes,
                                         partition_max_bytes=partition_max_bytes, isolation_level=isolation))

    @rule(symbol=topics, data=st.data(), version=st.integers(1, 9))
    def list_offsets(self, symbol: str, data: st.DataObject, version: int) -> None:
        partition = self._partition(symbol, data)
        target = data.draw(st.one_of(st.sampled_from([-1, -2] + ([-3] if version >= 7 else [])),
                                     target_offsets.map(lambda d: self.base + d)), label="target")
        self.twin.both(f"list offsets {symbol}-{partition} {target} v{version}", lambda run: list_offsets(
            run, symbol, [(partition, target)], version=version, isolation_level=0))

    @rule(symbol=topics, data=st.data(), version=st.integers(0, 2))
    def delete_records(self, symbol: str, data: st.DataObject, version: int) -> None:
        partition = self._partition(symbol, data)
        offset = self._offset(symbol, partition, data)
        self.twin.both(f"delete records {symbol}-{partition} before {offset} v{version}", lambda run: delete_records(
            run, symbol, {partition: offset}, version=version))

    # The admin operations go to existing topics: their answers for unknown ones are the admin
    # scenarios' (tests/oracle, KD-200..299), and this machine's concern is the data path.
    @precondition(lambda self: bool(self.model))
    @rule(name=st.sampled_from(sorted(SAFE_CONFIGS)), data=st.data())
    def alter_config(self, name: str, data: st.DataObject) -> None:
        symbol = data.draw(st.sampled_from(sorted(self.model)), label="topic")
        value = data.draw(st.one_of(st.none(), st.sampled_from(SAFE_CONFIGS[name])), label="value")
        self.twin.both(f"alter {symbol} {name}={value}", lambda run: alter_topic_configs(run, symbol, {name: value}))

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data())
    def delete_topic(self, data: st.DataObject) -> None:
        symbol = data.draw(st.sampled_from(sorted(self.model)), label="topic")

        def delete(run: ScenarioRun) -> Any:
            state = entity(DELETE_TOPICS, 6, "DeleteTopicState", name=run.topic(symbol), topic_id=None)
            response = run.call(DELETE_TOPICS, 6, topics=(state,),
                                timeout=datetime.timedelta(milliseconds=DEFAULT_TIMEOUT_MS))
            # Deletion completes in the background on Kafka: wait until Metadata no longer has it.
            run.wait_until(lambda: metadata(run, [symbol], record=False).topics[0].error_code.value != 0,
                           f"{symbol} deleted")
            return response

        self.twin.both(f"delete topic {symbol}", delete)
        del self.model[symbol]


def test_random_operations_agree_with_kafka(brokers) -> None:  # type: ignore[no-untyped-def]
    from hypothesis.stateful import run_state_machine_as_test

    class Operations(BrokerOperations):
        bootstraps = (brokers.kafka.bootstrap, brokers.ours.bootstrap)

    run_state_machine_as_test(Operations, settings=settings(
        max_examples=20, stateful_step_count=50, deadline=None, derandomize=True, database=None,
        phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
    ))
